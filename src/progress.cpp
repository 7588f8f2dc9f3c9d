#include "depthbatch/progress.h"

#include "depthbatch/log.h"

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

ProgressStyle progress_style_for(int fd) { return ::isatty(fd) ? ProgressStyle::Bar : ProgressStyle::Lines; }

ProgressReporter::ProgressReporter(std::ostream& out, ProgressStyle style)
    : out_(out), style_(style), started_(std::chrono::steady_clock::now()) {}

ProgressReporter::~ProgressReporter() { finish(); }

void ProgressReporter::on_phase(const std::string& phase) {
    std::lock_guard<std::mutex> lock(mutex_);
    phase_ = phase;
    if (style_ == ProgressStyle::Bar) draw_bar_locked();
}

void ProgressReporter::on_start(const std::vector<int>& todo, int skipped) {
    std::lock_guard<std::mutex> lock(mutex_);
    todo_ = todo;
    skipped_ = skipped;
    started_frames_ = true;
    started_ = std::chrono::steady_clock::now();
    if (style_ == ProgressStyle::Lines && (skipped_ > 0 || todo_.empty())) {
        const int total = static_cast<int>(todo_.size()) + skipped_;
        const double pct = total > 0 ? 100.0 * skipped_ / total : 100.0;
        out_ << "PROGRESS: " << std::lround(std::floor(pct)) << "%\n"
             << "TR_PROGRESS " << std::lround(std::floor(pct)) << "%\n"
             << "openjd_progress: " << std::fixed << std::setprecision(1) << pct << std::defaultfloat << std::endl;
    }
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
        log_warning("progress: standard output is closed (the reader of the progress lines went away): rendering goes "
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
    out_ << "frame " << r.frame << (r.status == ExitCode::Ok ? " rendered " : " failed ") << done << "/" << total;
    if (r.status == ExitCode::Ok) out_ << " " << std::fixed << std::setprecision(2) << r.seconds << " s" << std::defaultfloat;
    else out_ << ": " << printable(r.message.substr(0, r.message.find('\n')));
    out_ << " (Progress: " << std::lround(std::floor(pct)) << "%)";   // Deadline's CommandLine plugin regex
    out_ << "\nPROGRESS: " << std::lround(std::floor(pct)) << "%\n"
         << "TR_PROGRESS " << std::lround(std::floor(pct)) << "%\n"
         << "openjd_progress: " << std::fixed << std::setprecision(1) << pct << std::defaultfloat << std::endl;
}

std::string ProgressReporter::bar_text_locked() const {
    if (!started_frames_) return "depthbatch: " + phase_ + " ...";   // the frame count is not known yet
    const int total = static_cast<int>(todo_.size());
    const int done = static_cast<int>(finished_.size());
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    const double fps = done > 0 && elapsed > 0 ? done / elapsed : 0.0;
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
        out_ << "\r\033[K" << bar_text_locked() << std::endl;   // the last state stays on screen
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

}  // namespace depthbatch
