// progress.h: which dialect `--progress auto` picks from an engine's environment, and the exact lines each
// dialect prints per frame (at most a frame line and one engine line), quiet and not, and openjd_fail.
#include "depthbatch/error.h"
#include "depthbatch/log.h"
#include "depthbatch/progress.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

using namespace depthbatch;

namespace {

/// A getenv over `vars` alone (the test's own environment is never consulted).
std::function<const char*(const char*)> env(const std::map<std::string, std::string>& vars) {
    return [vars](const char* name) -> const char* {
        const auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    };
}

FrameResult rendered(int frame, double seconds) {
    FrameResult r;
    r.frame = frame;
    r.seconds = seconds;
    return r;
}

/// What `style` prints for a job of frames 1001-1004 with 1001 skipped (its output exists), then 1002 and 1003
/// rendered and 1004 failed.
std::string lines_of(ProgressStyle style, bool quiet) {
    std::ostringstream out;
    ProgressReporter p(out, style, quiet);
    p.on_phase("loading model");
    p.on_start({1002, 1003, 1004}, 1);
    p.on_frame_done(rendered(1002, 0.5));
    p.on_frame_done(rendered(1003, 0.25));
    FrameResult bad;
    bad.frame = 1004;
    bad.status = ExitCode::Input;
    bad.message = "frame 1004: cannot read p.1004.exr\nmore";
    p.on_frame_done(bad);
    return out.str();
}

}  // namespace

TEST(Progress, AutoPicksTheEngineFromItsEnvironmentElseTheTerminal) {
    EXPECT_EQ(choose_progress_style(env({}), false).style, ProgressStyle::Lines);
    EXPECT_EQ(choose_progress_style(env({}), true).style, ProgressStyle::Bar);
    // Slurm and OpenCue read no progress from a task's output: plain lines (a bar under `srun --pty`).
    EXPECT_EQ(choose_progress_style(env({{"SLURM_JOB_ID", "42"}, {"SLURM_ARRAY_TASK_ID", "3"}}), false).style,
              ProgressStyle::Lines);
    EXPECT_EQ(choose_progress_style(env({{"SLURM_JOB_ID", "42"}}), true).style, ProgressStyle::Bar);
    EXPECT_EQ(choose_progress_style(env({{"CUE_JOB", "show-shot-depth"}, {"CUE_FRAME", "0001-render"}}), false).style,
              ProgressStyle::Lines);
    const ProgressChoice openjd = choose_progress_style(env({{"OPENJD_SESSION_WORKING_DIR", "/tmp/s"}}), false);
    EXPECT_EQ(openjd.style, ProgressStyle::OpenJD);
    EXPECT_NE(openjd.reason.find("OPENJD_SESSION_WORKING_DIR"), std::string::npos) << openjd.reason;
    const ProgressChoice tractor = choose_progress_style(env({{"TR_ENV_JID", "1234"}, {"TR_ENV_TID", "7"}}), false);
    EXPECT_EQ(tractor.style, ProgressStyle::Tractor);
    EXPECT_NE(tractor.reason.find("TR_ENV_JID"), std::string::npos) << tractor.reason;
    // Deadline 10 marks a task's process with no variable of its own: the job's EnvironmentKeyValue sets ours.
    EXPECT_EQ(choose_progress_style(env({{"DEPTHBATCH_PROGRESS", "deadline"}}), false).style, ProgressStyle::Deadline);
    EXPECT_EQ(choose_progress_style(env({{"DEPTHBATCH_PROGRESS", "none"}, {"TR_ENV_JID", "1"}}), true).style,
              ProgressStyle::None)
        << "the explicit variable wins over an engine's and over the terminal";
    EXPECT_EQ(choose_progress_style(env({{"OPENJD_SESSION_WORKING_DIR", "/s"}}), true).style, ProgressStyle::OpenJD)
        << "an engine's session wins over a terminal";
    const ProgressChoice bad =
        choose_progress_style(env({{"DEPTHBATCH_PROGRESS", "fancy"}, {"TR_ENV_JID", "1"}}), false);
    EXPECT_EQ(bad.style, ProgressStyle::Tractor);
    EXPECT_NE(bad.reason.find("DEPTHBATCH_PROGRESS='fancy' names no dialect"), std::string::npos) << bad.reason;
    EXPECT_EQ(choose_progress_style(env({{"DEPTHBATCH_PROGRESS", ""}}), false).style, ProgressStyle::Lines)
        << "an empty variable is unset";
}

TEST(Progress, NamesRoundTripAndAnUnknownOneIsAConfigError) {
    for (ProgressStyle s : {ProgressStyle::Lines, ProgressStyle::Deadline, ProgressStyle::Tractor,
                            ProgressStyle::OpenJD, ProgressStyle::Bar, ProgressStyle::None})
        EXPECT_EQ(progress_style_from_name(progress_style_name(s)), s) << progress_style_name(s);
    EXPECT_THROW(progress_style_from_name("auto"), ConfigError);
    EXPECT_THROW(progress_style_from_name("Tractor"), ConfigError);
}

TEST(Progress, EachDialectPrintsAFrameLineAndAtMostOneEngineLine) {
    EXPECT_EQ(lines_of(ProgressStyle::Lines, false),
              "frame 1002 rendered 2/4 0.50 s (Progress: 50%)\n"
              "frame 1003 rendered 3/4 0.25 s (Progress: 75%)\n"
              "frame 1004 failed 4/4: frame 1004: cannot read p.1004.exr (Progress: 100%)\n");
    EXPECT_EQ(lines_of(ProgressStyle::Deadline, false), lines_of(ProgressStyle::Lines, false))
        << "Deadline's CommandLine regex .*Progress: (\\d+)%.* reads the frame line itself";
    EXPECT_EQ(lines_of(ProgressStyle::Tractor, false),
              "TR_PROGRESS 25%\n"  // the skipped frame counts as done from the start
              "frame 1002 rendered 2/4 0.50 s (Progress: 50%)\nTR_PROGRESS 50%\n"
              "frame 1003 rendered 3/4 0.25 s (Progress: 75%)\nTR_PROGRESS 75%\n"
              "frame 1004 failed 4/4: frame 1004: cannot read p.1004.exr (Progress: 100%)\nTR_PROGRESS 100%\n");
    EXPECT_EQ(lines_of(ProgressStyle::OpenJD, false),
              "openjd_status: loading model\n"
              "openjd_progress: 25.0\n"
              "frame 1002 rendered 2/4 0.50 s (Progress: 50%)\nopenjd_progress: 50.0\n"
              "frame 1003 rendered 3/4 0.25 s (Progress: 75%)\nopenjd_progress: 75.0\n"
              "frame 1004 failed 4/4: frame 1004: cannot read p.1004.exr (Progress: 100%)\nopenjd_progress: 100.0\n");
    EXPECT_EQ(lines_of(ProgressStyle::None, false), "");
}

TEST(Progress, QuietKeepsOnlyTheEnginesOwnLine) {
    EXPECT_EQ(lines_of(ProgressStyle::Lines, true), "");
    EXPECT_EQ(lines_of(ProgressStyle::Deadline, true), "Progress: 25%\nProgress: 50%\nProgress: 75%\nProgress: 100%\n");
    EXPECT_EQ(lines_of(ProgressStyle::Tractor, true),
              "TR_PROGRESS 25%\nTR_PROGRESS 50%\nTR_PROGRESS 75%\nTR_PROGRESS 100%\n");
    EXPECT_EQ(lines_of(ProgressStyle::OpenJD, true),
              "openjd_status: loading model\nopenjd_progress: 25.0\n"
              "openjd_progress: 50.0\nopenjd_progress: 75.0\nopenjd_progress: 100.0\n");
}

TEST(Progress, OpenJDTaskFailureSaysWhyOnOneLine) {
    std::ostringstream out;
    report_task_failure(out, ProgressStyle::OpenJD, "frame 1004: cannot read p.1004.exr\n  (2 more lines)");
    EXPECT_EQ(out.str(), "openjd_fail: frame 1004: cannot read p.1004.exr; (2 more lines)\n");
    std::ostringstream tab;
    report_task_failure(tab, ProgressStyle::OpenJD, "shot\t010: missing");
    EXPECT_EQ(tab.str(), "openjd_fail: shot\\t010: missing\n");
    for (ProgressStyle s :
         {ProgressStyle::Lines, ProgressStyle::Deadline, ProgressStyle::Tractor, ProgressStyle::Bar}) {
        std::ostringstream other;
        report_task_failure(other, s, "why");
        EXPECT_EQ(other.str(), "") << progress_style_name(s);
    }
}

// Issue 41 §5: the bar's rate and ETA count rendered frames only. Five missing plates are "done" the moment the
// render starts; before the fix the bar then said tens of thousands of frames/s and an ETA of 00:00 for the five
// frames still to render.
TEST(Progress, TheBarsRateAndEtaCountRenderedFramesOnly) {
    std::ostringstream out;
    ProgressReporter bar(out, ProgressStyle::Bar);
    bar.on_start({1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010}, 0);
    for (int f = 1001; f <= 1005; ++f) {
        FrameResult r;
        r.frame = f;
        r.status = ExitCode::Input;
        bar.on_frame_done(r);
    }
    const std::string text = out.str();
    const std::string last = text.substr(text.rfind('\r'));
    EXPECT_NE(last.find("5/10 frames"), std::string::npos) << last;
    EXPECT_NE(last.find("0.00 frames/s  ETA --:--"), std::string::npos) << last;
}
