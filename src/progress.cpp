#include "depthbatch/progress.h"

#include "depthbatch/error.h"
#include "depthbatch/log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>
#include <unistd.h>

namespace depthbatch {
namespace {

/// Collects characters up to '\n', then hands the line to the reporter (which erases and redraws the bar).
class LineAboveBar : public std::streambuf {
public:
    LineAboveBar(ProgressReporter& reporter, std::ostream& log) : reporter_(reporter), log_(log) {}

protected:
    int overflow(int ch) override {
        if (ch == traits_type::eof()) return 0;
        if (ch == '\n') {
            reporter_.print_above(log_, line_);
            line_.clear();
        } else {
            line_ += static_cast<char>(ch);
        }
        return ch;
    }
    int sync() override { return 0; }

private:
    ProgressReporter& reporter_;
    std::ostream& log_;
    std::string line_;
};

std::string clock_text(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "--:--";
    const long s = std::lround(seconds);
    std::ostringstream t;
    if (s >= 3600) t << s / 3600 << ":" << std::setw(2) << std::setfill('0') << (s / 60) % 60;
    else t << s / 60;
    t << ":" << std::setw(2) << std::setfill('0') << s % 60;
    return t.str();
}

}  // namespace

const char* progress_style_name(ProgressStyle style) {
    switch (style) {
    case ProgressStyle::Lines: return "lines";
    case ProgressStyle::Deadline: return "deadline";
    case ProgressStyle::Tractor: return "tractor";
    case ProgressStyle::OpenJD: return "openjd";
    case ProgressStyle::Bar: return "bar";
    case ProgressStyle::None: return "none";
    }
    return "lines";
}

ProgressStyle progress_style_from_name(const std::string& name) {
    for (ProgressStyle s : {ProgressStyle::Lines, ProgressStyle::Deadline, ProgressStyle::Tractor,
                            ProgressStyle::OpenJD, ProgressStyle::Bar, ProgressStyle::None})
        if (name == progress_style_name(s)) return s;
    throw ConfigError("--progress '" + printable(name) +
                      "': expected auto, lines, deadline, tractor, openjd, bar or none");
}

ProgressChoice progress_from_flag(const std::string& name, bool quiet,
                                  const std::function<const char*(const char*)>& getenv, bool stdout_is_tty) {
    ProgressChoice c = name == "auto" ? choose_progress_style(getenv, stdout_is_tty)
                                      : ProgressChoice{progress_style_from_name(name), "--progress " + name, ""};
    if (quiet && c.style == ProgressStyle::Bar) c.style = ProgressStyle::None;
    return c;
}

ProgressChoice choose_progress_style(const std::function<const char*(const char*)>& getenv, bool stdout_is_tty) {
    const auto set = [&](const char* name) {
        const char* v = getenv(name);
        return v != nullptr && *v != '\0';
    };
    std::string ignored;
    if (set("DEPTHBATCH_PROGRESS")) {
        const std::string want = getenv("DEPTHBATCH_PROGRESS");
        try {
            if (want != "auto") return {progress_style_from_name(want), "DEPTHBATCH_PROGRESS=" + want};
        } catch (const ConfigError&) {
            ignored = "; DEPTHBATCH_PROGRESS='" + printable(want) + "' names no dialect and was ignored";
        }
    }
    const std::string warning = ignored.empty() ? ""
                                                : "progress: " + ignored.substr(2) +
                                                      " (dialects: auto, lines, deadline, tractor, openjd, bar, none)";
    if (set("OPENJD_SESSION_WORKING_DIR"))
        return {ProgressStyle::OpenJD, "OPENJD_SESSION_WORKING_DIR is set: an Open Job Description session" + ignored,
                warning};
    if (set("TR_ENV_JID"))
        return {ProgressStyle::Tractor, "TR_ENV_JID is set: a Tractor blade's command" + ignored, warning};
    if (stdout_is_tty) return {ProgressStyle::Bar, "standard output is a terminal" + ignored, warning};
    return {ProgressStyle::Lines,
            "standard output is not a terminal and no engine that reads progress was found" + ignored, warning};
}

ProgressStyle progress_style_for(int fd) { return ::isatty(fd) ? ProgressStyle::Bar : ProgressStyle::Lines; }

void report_task_failure(std::ostream& out, ProgressStyle style, const std::string& why) {
    if (style != ProgressStyle::OpenJD) return;
    std::string line;  // one line: the message's lines joined with "; ", their indentation dropped
    for (size_t start = 0; start <= why.size();) {
        size_t nl = why.find('\n', start);
        if (nl == std::string::npos) nl = why.size();
        const std::string part = why.substr(start, nl - start);
        const size_t text = part.find_first_not_of(" \t");
        if (text != std::string::npos) line += (line.empty() ? "" : "; ") + part.substr(text);
        start = nl + 1;
    }
    out << "openjd_fail: " << printable(line.empty() ? std::string("depthbatch failed") : line) << std::endl;
}

ProgressReporter::ProgressReporter(std::ostream& out, ProgressStyle style, bool quiet)
    : out_(out), style_(style), quiet_(quiet), started_(std::chrono::steady_clock::now()) {}

ProgressReporter::~ProgressReporter() { finish(); }

void ProgressReporter::on_phase(const std::string& phase) {
    std::lock_guard<std::mutex> lock(mutex_);
    phase_ = phase;
    if (style_ == ProgressStyle::Bar) draw_bar_locked();
    if (style_ == ProgressStyle::OpenJD && !reader_gone_) out_ << "openjd_status: " << printable(phase) << std::endl;
}

void ProgressReporter::on_start(const std::vector<int>& todo, int skipped) {
    std::lock_guard<std::mutex> lock(mutex_);
    todo_ = todo;
    skipped_ = skipped;
    started_frames_ = true;
    started_ = std::chrono::steady_clock::now();
    const int total = static_cast<int>(todo_.size()) + skipped_;
    if (skipped_ > 0 || todo_.empty()) engine_line_locked(total > 0 ? 100.0 * skipped_ / total : 100.0);
    if (style_ == ProgressStyle::Bar) draw_bar_locked();
}

/// A progress reader that went away (`depthbatch JOB | head -1`, a wrapper that stopped reading): with SIGPIPE
/// ignored (main.cpp), writes fail with EPIPE and the stream goes bad. Said once on the log (stderr); the render
/// goes on and progress is no longer printed. Call after releasing mutex_ (the log may draw the bar).
void ProgressReporter::say_if_reader_gone() {
    bool tell = false;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!out_ && !reader_gone_) tell = reader_gone_ = true;
    }
    if (tell)
        log_warning(
            "progress: standard output is closed (the reader of the progress lines went away): rendering goes "
            "on, progress is no longer printed; the log and the summary still are");
}

void ProgressReporter::on_frame_done(const FrameResult& r) {
    on_frame_done_locked(r);
    say_if_reader_gone();
}

void ProgressReporter::on_frame_done_locked(const FrameResult& r) {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_.push_back(r);
    if (style_ == ProgressStyle::None || reader_gone_) return;
    if (style_ == ProgressStyle::Bar) {
        draw_bar_locked();
        return;
    }
    const int total = static_cast<int>(todo_.size()) + skipped_;
    const int done = static_cast<int>(finished_.size()) + skipped_;
    const double pct = total > 0 ? 100.0 * std::min(done, total) / total : 100.0;
    if (!quiet_) {
        out_ << "frame " << r.frame << (r.status == ExitCode::Ok ? " rendered " : " failed ") << done << "/" << total;
        if (r.status == ExitCode::Ok)
            out_ << " " << std::fixed << std::setprecision(2) << r.seconds << " s" << std::defaultfloat;
        else out_ << ": " << printable(r.message.substr(0, r.message.find('\n')));
        out_ << " (Progress: " << std::lround(std::floor(pct)) << "%)";  // Deadline's CommandLine plugin regex
        if (style_ == ProgressStyle::Lines || style_ == ProgressStyle::Deadline) {
            out_ << std::endl;
            return;
        }
        out_ << "\n";
    }
    engine_line_locked(pct);
}

/// The engine's own progress line (none for lines; deadline's only when quiet: its frame line carries it).
void ProgressReporter::engine_line_locked(double pct) {
    if (reader_gone_) return;
    const long whole = std::lround(std::floor(pct));
    switch (style_) {
    case ProgressStyle::Deadline:
        if (quiet_) out_ << "Progress: " << whole << "%" << std::endl;
        break;
    case ProgressStyle::Tractor: out_ << "TR_PROGRESS " << whole << "%" << std::endl; break;
    case ProgressStyle::OpenJD:
        out_ << "openjd_progress: " << std::fixed << std::setprecision(1) << pct << std::defaultfloat << std::endl;
        break;
    default: out_ << std::flush; break;
    }
}

std::string ProgressReporter::bar_text_locked() const {
    if (!started_frames_) return "depthbatch: " + phase_ + " ...";  // the frame count is not known yet
    const int total = static_cast<int>(todo_.size());
    const int done = static_cast<int>(finished_.size());
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    // The rate and the ETA count rendered frames only: a missing plate or a failed frame is "done" at once and would
    // make the rate (and so the ETA) look faster than the frames that are left will go.
    const int rendered = static_cast<int>(std::count_if(finished_.begin(), finished_.end(),
                                                        [](const FrameResult& r) { return r.status == ExitCode::Ok; }));
    const double fps = rendered > 0 && elapsed > 0 ? rendered / elapsed : 0.0;
    constexpr int width = 30;
    const int filled = total > 0 ? width * done / total : 0;
    std::ostringstream t;
    t << "[" << std::string(static_cast<size_t>(filled), '#') << std::string(static_cast<size_t>(width - filled), '.')
      << "] " << done << "/" << total << " frames";
    if (skipped_) t << " (+" << skipped_ << " skipped)";
    t << "  " << std::fixed << std::setprecision(2) << fps << " frames/s  ETA "
      << (fps > 0 ? clock_text((total - done) / fps) : std::string("--:--")) << "  " << phase_;
    return t.str();
}

void ProgressReporter::draw_bar_locked() {
    out_ << "\r\033[K" << bar_text_locked() << std::flush;
    bar_shown_ = true;
}

void ProgressReporter::print_above(std::ostream& log, const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bar_shown_) out_ << "\r\033[K" << std::flush;
    log << text << std::endl;
    if (bar_shown_) draw_bar_locked();
}

void ProgressReporter::finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (style_ == ProgressStyle::Bar && bar_shown_) {
        out_ << "\r\033[K" << bar_text_locked() << std::endl;  // the last state stays on screen
        bar_shown_ = false;
    }
}

std::ostream& ProgressReporter::log_stream(std::ostream& log) {
    if (style_ != ProgressStyle::Bar) return log;
    if (!log_stream_) {
        log_buf_ = std::make_unique<LineAboveBar>(*this, log);
        log_stream_ = std::make_unique<std::ostream>(log_buf_.get());
    }
    return *log_stream_;
}

std::vector<FrameResult> ProgressReporter::finished() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return finished_;
}
std::vector<int> ProgressReporter::todo() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return todo_;
}
int ProgressReporter::skipped() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return skipped_;
}

ProgressLogScope::ProgressLogScope(ProgressReporter& progress, ProgressStyle style, std::ostream& log, bool verbose,
                                   bool quiet)
    : progress_(progress), level_(quiet ? LogLevel::Warning : log_level()) {
    if (style == ProgressStyle::Bar) {  // log lines go above the bar; per-frame lines only with -v
        set_log_stream(&progress.log_stream(log));
        if (!verbose) set_log_level(LogLevel::Warning);
    }
}

ProgressLogScope::~ProgressLogScope() {
    progress_.finish();
    set_log_stream(nullptr);
    set_log_level(level_);
}

}  // namespace depthbatch
