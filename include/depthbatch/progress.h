// depthbatch — progress of a render, for farm engines (lines on a pipe) and for people (a bar on a TTY).
//
// One dialect per run (docs/farm.md "On the farm", "Progress an engine can read"). Through a pipe, each finished frame
// prints at most two lines on stdout, each flushed as it happens:
//   frame 1001 rendered 1/24 0.52 s (Progress: 4%)   the frame line (failed: "frame 1003 failed 3/24: why");
//                                                    every dialect but bar and none
//   TR_PROGRESS 4%                                   tractor: the blade's progress directive (whole percent)
//   openjd_progress: 4.2                             openjd: Open Job Description's (Deadline Cloud) progress
// and nothing more: `lines` and `deadline` print the frame line alone ("Progress: N%" inside it is what the
// Deadline CommandLine plugin's regex `.*Progress: (\d+)%.*` and deploy/deadline/DepthBatch read). openjd also
// prints `openjd_status: WHAT` when the phase changes (a few lines a job) and `openjd_fail: WHY` when the task
// fails (report_task_failure). Quiet (-q): the frame lines go; an engine's own line stays (the engine reads
// it, not a person): `Progress: 4%` (deadline), `TR_PROGRESS 4%`, `openjd_progress: 4.2`.
// Frames skipped because their output exists count as done from the start (an engine line at the start).
// Bar (stdout is a terminal): one line redrawn in place with "\r" and ANSI erase-line (ESC [K) — frames
// done/total, frames/s, ETA and the current phase; log lines (warnings by default) are printed above it.
// No Debian-packaged C++ progress-bar library exists (checked: no libindicators), so this is those few lines.
#pragma once

#include "depthbatch/log.h"
#include "depthbatch/run_job.h"

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

namespace depthbatch {

/// The progress dialects (`--progress`): plain lines, an engine's lines, the bar on a terminal, or nothing.
enum class ProgressStyle { Lines, Deadline, Tractor, OpenJD, Bar, None };

/// "lines", "deadline", "tractor", "openjd", "bar", "none".
const char* progress_style_name(ProgressStyle style);
/// The style of a `--progress` value other than "auto"; ConfigError for an unknown name.
ProgressStyle progress_style_from_name(const std::string& name);

/// What `--progress auto` chose, and why (for the log: "progress: tractor (TR_ENV_JID is set)").
struct ProgressChoice {
    ProgressStyle style = ProgressStyle::Lines;
    std::string reason;
    std::string warning;  ///< non-empty: an unknown DEPTHBATCH_PROGRESS value, to be warned about once
};

/// `--progress auto`, from the process environment (`getenv`: a function so tests can pass their own) and
/// whether stdout is a terminal, first match wins:
///   DEPTHBATCH_PROGRESS=NAME                  that dialect (any engine: Deadline 10 sets it through the job
///                                             info's EnvironmentKeyValue0=DEPTHBATCH_PROGRESS=deadline)
///   OPENJD_SESSION_WORKING_DIR set            openjd (openjd-sessions sets it on every action it runs: `openjd
///                                             run`, Deadline Cloud's worker agent)
///   TR_ENV_JID set                            tractor (tractor-blade sets TR_ENV_JID/TID/CID on every command)
///   stdout is a terminal                      bar
///   otherwise                                 lines (Slurm, OpenCue and a shell pipe read no progress dialect)
/// A DEPTHBATCH_PROGRESS that names no dialect (or "auto") is ignored, with the reason saying so.
ProgressChoice choose_progress_style(const std::function<const char*(const char*)>& getenv, bool stdout_is_tty);

/// The `--progress NAME` flag: "auto" is choose_progress_style(getenv, stdout_is_tty); another name is that dialect
/// (reason "--progress NAME"; progress_style_from_name throws for an unknown one). With `quiet` a bar becomes None
/// (-q on a terminal: only warnings, errors and the closing summary).
ProgressChoice progress_from_flag(const std::string& name, bool quiet,
                                  const std::function<const char*(const char*)>& getenv, bool stdout_is_tty);

/// Bar when `fd` is a terminal (isatty), else Lines (the environment is not consulted).
ProgressStyle progress_style_for(int fd);

/// An openjd task that fails says why on `out`: `openjd_fail: <why>` on one line (its lines joined with "; ",
/// control characters escaped; Open Job Description records it as the action's failure message). Other styles:
/// nothing. Flushed.
void report_task_failure(std::ostream& out, ProgressStyle style, const std::string& why);

/// A JobObserver that prints progress to `out` (not owned; must outlive it) in `style`.
class ProgressReporter : public JobObserver {
public:
    /// `quiet` (-q): no frame lines; an engine's progress line stays (see the top of this header).
    ProgressReporter(std::ostream& out, ProgressStyle style, bool quiet = false);
    ~ProgressReporter() override;

    void on_phase(const std::string& phase) override;
    void on_start(const std::vector<int>& todo, int skipped) override;
    void on_frame_done(const FrameResult& result) override;

    /// Bar style: erase the bar for good (before the closing summary). Other styles: nothing.
    void finish();

    /// Bar style: a stream for log lines that erases the bar, prints the line on `log` and redraws the bar
    /// (pass it to set_log_stream). Other styles: `log` itself.
    std::ostream& log_stream(std::ostream& log);

    /// The frames finished so far, in the order they finished (for a summary written when a stop request's
    /// grace period runs out), and the frames this run was to render.
    std::vector<FrameResult> finished() const;
    std::vector<int> todo() const;
    int skipped() const;

    /// Print `text` above the bar (or plainly), as one unit with the redraw.
    void print_above(std::ostream& log, const std::string& text);

private:
    void on_frame_done_locked(const FrameResult& r);
    void engine_line_locked(double pct);
    void say_if_reader_gone();
    void draw_bar_locked();
    std::string bar_text_locked() const;

    std::ostream& out_;
    ProgressStyle style_;
    bool quiet_ = false;
    mutable std::mutex mutex_;
    std::string phase_;
    std::vector<int> todo_;
    int skipped_ = 0;
    std::vector<FrameResult> finished_;
    std::chrono::steady_clock::time_point started_;
    bool bar_shown_ = false;
    bool started_frames_ = false;  ///< on_start has told the frames
    bool reader_gone_ = false;     ///< writing to out_ failed (EPIPE): said once, nothing more is printed
    std::unique_ptr<std::streambuf> log_buf_;
    std::unique_ptr<std::ostream> log_stream_;
};

/// The log while a render shows `progress`: under a bar the log goes through progress.log_stream(`log`) (lines
/// above the bar), and without `verbose` only warnings and errors (no per-frame lines). On destruction:
/// progress.finish(), the log's stream back to stderr and its level back to what it was (Warning with `quiet`).
class ProgressLogScope {
public:
    ProgressLogScope(ProgressReporter& progress, ProgressStyle style, std::ostream& log, bool verbose, bool quiet);
    ~ProgressLogScope();
    ProgressLogScope(const ProgressLogScope&) = delete;
    ProgressLogScope& operator=(const ProgressLogScope&) = delete;

private:
    ProgressReporter& progress_;
    LogLevel level_;
};

}  // namespace depthbatch
