// Unit tests for include/depthbatch/run_report.h: a finished run's report in words.
#include "depthbatch/log.h"
#include "depthbatch/run_report.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace depthbatch;

namespace {

FrameResult frame(int number, ExitCode status = ExitCode::Ok, const std::string& message = "") {
    FrameResult f;
    f.frame = number;
    f.status = status;
    f.message = message;
    return f;
}

/// A run asked for 1001-1010 that rendered 1001-1002, kept 1003 and failed 1004 (two lines of message).
JobReport stopped_report() {
    JobReport r;
    r.requested = {1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010};
    r.frames = {frame(1001), frame(1002), frame(1004, ExitCode::Input, "frame 1004: plate missing\n  /p/a.1004.exr")};
    r.skipped_frames = {SkippedFrame{1003, "/o/d.1003.exr", "complete, same settings and model"}};
    r.rendered = 2, r.skipped = 1, r.failed = 1;
    r.device = "cpu";
    return r;
}

std::string logged(const JobConfig& job, const JobReport& report) {
    std::ostringstream out;
    set_log_stream(&out);
    log_run_summary(job, report);
    set_log_stream(nullptr);
    return out.str();
}

}  // namespace

TEST(RunReport, UndoneFramesAreTheRequestedNeitherStartedNorKept) {
    EXPECT_EQ(undone_frames(stopped_report()), (std::vector<int>{1005, 1006, 1007, 1008, 1009, 1010}));
    EXPECT_EQ(failed_frames(stopped_report()), (std::vector<int>{1004}));
    EXPECT_TRUE(undone_frames(JobReport{}).empty());
}

TEST(RunReport, FailureReasonInOneLine) {
    JobReport r = stopped_report();
    r.exit_code = ExitCode::Partial;
    EXPECT_EQ(failure_reason(r), "1 frame(s) failed (1004): frame 1004: plate missing");
    r.exit_code = ExitCode::Interrupted;
    EXPECT_EQ(failure_reason(r), "interrupted: a stop was requested; re-run with --skip-existing");
    r.error = "interrupted by signal 15 (SIGTERM): stop";
    EXPECT_EQ(failure_reason(r), "interrupted by signal 15 (SIGTERM): stop");
    JobReport ok_frames;
    ok_frames.exit_code = ExitCode::Render;
    EXPECT_EQ(failure_reason(ok_frames), "exit render");
}

TEST(RunReport, ClosingLinesOfAnInterruptedAndAPartialRun) {
    JobConfig job;
    JobReport r = stopped_report();
    r.exit_code = ExitCode::Interrupted;
    const std::string interrupted = logged(job, r);
    EXPECT_TRUE(test::contains(interrupted,
                               "depthbatch: info: done: 2 rendered, 1 skipped, 1 failed in 0 s (0 frames/s) on cpu\n"))
        << interrupted;
    EXPECT_TRUE(test::contains(interrupted,
                               "depthbatch: error: interrupted: rendered 1001,1002; not rendered 1005-1010; no "
                               "partial files were left; re-run with --skip-existing to finish\n"))
        << interrupted;
    r.exit_code = ExitCode::Partial;
    EXPECT_TRUE(
        test::contains(logged(job, r), "depthbatch: error: partial: 1 frames failed (1004), the rest were rendered\n"));
}
