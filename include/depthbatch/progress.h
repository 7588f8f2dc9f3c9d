// depthbatch — progress of a render, for farm wrappers (lines on a pipe) and for people (a bar on a TTY).
//
// Lines (stdout is not a terminal, as under every farm wrapper), each written and flushed as it happens:
//   frame 1001 rendered 1/24 0.52 s (Progress: 4%)   one per finished frame (failed: "frame 1003 failed
//                                             3/24: why"); "Progress: N%" is what Deadline's CommandLine plugin reads
//   PROGRESS: 4%                              the form Deadline's and most wrappers' regexes read
//   TR_PROGRESS 4%                            Pixar Tractor's progress directive
//   openjd_progress: 4.2                      Open Job Description (Deadline Cloud) session progress
// Frames skipped because their output exists count as done from the start.
// Bar (stdout is a terminal): one line redrawn in place with "\r" and ANSI erase-line (ESC [K) — frames
// done/total, frames/s, ETA and the current phase; log lines (warnings by default) are printed above it.
// No Debian-packaged C++ progress-bar library exists (checked: no libindicators), so this is those few lines.
#pragma once

#include "depthbatch/run_job.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

namespace depthbatch {

enum class ProgressStyle { Lines, Bar, None };

/// Bar when `fd` is a terminal (isatty), else Lines.
ProgressStyle progress_style_for(int fd);

/// A JobObserver that prints progress to `out` (not owned; must outlive it) in `style`.
class ProgressReporter : public JobObserver {
public:
    ProgressReporter(std::ostream& out, ProgressStyle style);
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
    void say_if_reader_gone();
    void draw_bar_locked();
    std::string bar_text_locked() const;

    std::ostream& out_;
    ProgressStyle style_;
    mutable std::mutex mutex_;
    std::string phase_;
    std::vector<int> todo_;
    int skipped_ = 0;
    std::vector<FrameResult> finished_;
    std::chrono::steady_clock::time_point started_;
    bool bar_shown_ = false;
    bool started_frames_ = false;   ///< on_start has told the frames
    bool reader_gone_ = false;      ///< writing to out_ failed (EPIPE): said once, nothing more is printed
    std::unique_ptr<std::streambuf> log_buf_;
    std::unique_ptr<std::ostream> log_stream_;
};

}  // namespace depthbatch
