// Progress and log length (docs/farm.md "On the farm": "Progress an engine can read"): the dialect `--progress auto`
// picks from each engine's environment, read through a pipe as a wrapper reads it; at most two lines per frame by
// default (the frame line and one engine line); -q leaves only warnings, errors, the closing summary and an
// engine's own line; openjd_fail on a failed task; the lines arrive while the render runs; the bar on a terminal.
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

using namespace depthbatch::test;

namespace {

/// Every engine variable auto reads, unset, so the machine running the tests never picks the dialect.
const std::string kCleanEnv = "env -u OPENJD_SESSION_WORKING_DIR -u TR_ENV_JID -u DEPTHBATCH_PROGRESS";

/// A shot of `frames` 48x32 half-float plates p.1001.exr... and a job rendering them with P-mean into out/.
struct Shot {
    TempDir dir;
    fs::path job;
    explicit Shot(int frames, const std::string& output = "{path: out/d.####.exr}") {
        const fs::path model = write_p_mean(dir / "pmean.pt");
        for (int f = 1001; f < 1001 + frames; ++f)
            write_image(dir / ("p." + std::to_string(f) + ".exr"), 48, 32, {"R", "G", "B"}, "half",
                        [f](int x, int y, int c) { return 0.1f + 0.001f * static_cast<float>(x + y + c + f % 7); });
        job = write_job(dir / "job.yaml", "input: {path: p.####.exr}\noutput: " + output +
                                              "\n"
                                              "model: {path: " +
                                              model.string() + ", size: plate, device: cpu}\n");
    }
};

struct Split {
    int exit_code = -1;
    std::string out, err;  ///< stdout, stderr
};

/// Run depthbatch with `args` under `vars` ("NAME=value ..."; the engine variables otherwise unset), stdout
/// through a pipe as a farm wrapper reads it, stderr apart.
Split run_split(const Shot& s, const std::vector<std::string>& args, const std::string& vars = "") {
    const fs::path err = s.dir / "stderr.txt";
    std::vector<std::string> sh = {"-c", "exec \"$0\" \"$@\" 2>\"$ERR_FILE\"", DEPTHBATCH_BIN};
    sh.insert(sh.end(), args.begin(), args.end());
    const auto r = run_program("/bin/sh", sh, kCleanEnv + " ERR_FILE='" + err.string() + "' " + vars);
    return {r.exit_code, r.output, read_bytes(err)};
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> v;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
}

/// The stdout lines matching `re`.
std::vector<std::string> matching(const std::string& text, const std::string& re) {
    std::vector<std::string> v;
    for (const std::string& l : lines(text))
        if (std::regex_search(l, std::regex(re))) v.push_back(l);
    return v;
}

/// The frame lines in frame order (frames finish in parallel; the counts in them follow the finishing order).
std::vector<std::string> frame_lines(const std::string& out) {
    auto v = matching(out, "^frame [0-9]+ rendered [0-9]+/[0-9]+ [0-9.]+ s \\(Progress: [0-9]+%\\)$");
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace

// Each engine's environment, through a pipe: the dialect auto picks and exactly its lines on stdout.
TEST(Progress, EachEnginesEnvironmentGetsItsDialectThroughAPipe) {
    Shot s(3);
    // No engine (a shell pipe), Slurm, OpenCue: the frame lines alone (Slurm and OpenCue read no progress).
    for (const std::string vars :
         {"", "SLURM_JOB_ID=77 SLURM_ARRAY_TASK_ID=2", "CUE_JOB=show-depth CUE_FRAME=0001-r"}) {
        const Split r = run_split(s, {s.job.string(), "--overwrite"}, vars);
        ASSERT_EQ(r.exit_code, 0) << vars << "\n" << r.out << r.err;
        EXPECT_EQ(lines(r.out).size(), 3u) << vars << "\n" << r.out;
        EXPECT_EQ(frame_lines(r.out).size(), 3u) << vars << "\n" << r.out;
        EXPECT_TRUE(contains(r.out, " 3/3 ") && contains(r.out, "(Progress: 100%)\n")) << r.out;
    }
    // Tractor's blade: a TR_PROGRESS line after each frame line.
    Split r = run_split(s, {s.job.string(), "--overwrite"}, "TR_ENV_JID=1234 TR_ENV_TID=7 TR_ENV_CID=1");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(matching(r.out, "^TR_PROGRESS"),
              (std::vector<std::string>{"TR_PROGRESS 33%", "TR_PROGRESS 66%", "TR_PROGRESS 100%"}))
        << r.out;
    EXPECT_EQ(lines(r.out).size(), 6u) << r.out;
    for (size_t i = 0; i + 1 < lines(r.out).size(); i += 2) EXPECT_EQ(lines(r.out)[i].rfind("frame ", 0), 0u) << r.out;
    // An Open Job Description session (openjd run, Deadline Cloud): openjd_status at each phase, openjd_progress.
    r = run_split(s, {s.job.string(), "--overwrite"}, "OPENJD_SESSION_WORKING_DIR='" + s.dir.path.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(matching(r.out, "^openjd_progress: "),
              (std::vector<std::string>{"openjd_progress: 33.3", "openjd_progress: 66.7", "openjd_progress: 100.0"}))
        << r.out;
    EXPECT_EQ(matching(r.out, "^openjd_status: "),
              (std::vector<std::string>{"openjd_status: loading model", "openjd_status: checking outputs",
                                        "openjd_status: rendering"}))
        << r.out;
    EXPECT_EQ(frame_lines(r.out).size(), 3u) << r.out;
    EXPECT_TRUE(matching(r.out, "^openjd_fail").empty()) << r.out;
    // Deadline 10 (the job's EnvironmentKeyValue0=DEPTHBATCH_PROGRESS=deadline): the frame line is the progress line.
    r = run_split(s, {s.job.string(), "--overwrite"}, "DEPTHBATCH_PROGRESS=deadline");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(lines(r.out).size(), 3u) << r.out;
    EXPECT_EQ(frame_lines(r.out).size(), 3u) << r.out;
    // --progress wins over the environment; none prints nothing.
    r = run_split(s, {s.job.string(), "--overwrite", "--progress", "none"}, "TR_ENV_JID=1");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out, "");
    r = run_split(s, {s.job.string(), "--overwrite", "--progress", "tractor", "-v"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(matching(r.out, "^TR_PROGRESS").size(), 3u) << r.out;
    EXPECT_TRUE(contains(r.err, "depthbatch: debug: progress: tractor (--progress tractor)")) << r.err;
    EXPECT_EQ(run_split(s, {s.job.string(), "--progress", "fancy"}).exit_code, exit_status(ExitCode::Config));
}

// The whole log (stdout and stderr) of a render grows by at most two lines per frame: one without an engine, two
// under one; the per-stage timing line is -v's.
TEST(Progress, LogGrowsByAtMostTwoLinesPerFrame) {
    Shot small(2), big(10);
    const auto total = [](const Split& r) { return lines(r.out).size() + lines(r.err).size(); };
    for (const std::string vars :
         {"", "TR_ENV_JID=9", "OPENJD_SESSION_WORKING_DIR=/tmp", "DEPTHBATCH_PROGRESS=deadline"}) {
        const Split a = run_split(small, {small.job.string(), "--overwrite"}, vars),
                    b = run_split(big, {big.job.string(), "--overwrite"}, vars);
        ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
        ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
        const size_t per_frame = vars.empty() || contains(vars, "deadline") ? 1 : 2;
        EXPECT_EQ(total(b) - total(a), per_frame * 8) << vars << "\n--- 2 frames:\n"
                                                      << a.out << a.err << "--- 10 frames:\n"
                                                      << b.out << b.err;
        EXPECT_EQ(lines(b.err).size(), lines(a.err).size()) << "no log line per frame\n" << b.err;
        EXPECT_LE(total(a), 20u) << "a job's own lines (model, device, plate, phases) stay few\n" << a.out << a.err;
        EXPECT_FALSE(contains(b.err, "frame 1001 ->")) << b.err;
    }
    const Split v = run_split(big, {big.job.string(), "--overwrite", "-v"});
    ASSERT_EQ(v.exit_code, 0) << v.out << v.err;
    EXPECT_EQ(matching(v.err, "^depthbatch: debug: frame [0-9]+ -> .*  read [0-9]+ ms, colour").size(), 10u) << v.err;
}

// -q: no frame lines and no info lines; warnings, errors, the closing summary, and an engine's own line stay.
TEST(Progress, QuietLeavesWarningsErrorsTheSummaryAndTheEnginesLine) {
    Shot s(3, "{path: out/d.####.exr, compression: dwaa}");  // dwaa is lossy: one warning
    Split r = run_split(s, {s.job.string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out, "");
    const auto err = lines(r.err);
    ASSERT_EQ(err.size(), 2u) << r.err;
    EXPECT_EQ(err[0].rfind("depthbatch: warning: output.compression dwaa is lossy", 0), 0u) << r.err;
    EXPECT_EQ(err[1].rfind("depthbatch: info: done: 3 rendered, 0 skipped, 0 failed in ", 0), 0u) << r.err;
    r = run_split(s, {s.job.string(), "-q", "--overwrite"}, "TR_ENV_JID=5");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out, "TR_PROGRESS 33%\nTR_PROGRESS 66%\nTR_PROGRESS 100%\n");
    EXPECT_EQ(lines(r.err).size(), 2u) << r.err;
    r = run_split(s, {s.job.string(), "--overwrite", "-q"}, "DEPTHBATCH_PROGRESS=deadline");  // -q after the job too
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out, "Progress: 33%\nProgress: 66%\nProgress: 100%\n");
    // Everything skipped: the engine still hears 100%.
    r = run_split(s, {s.job.string(), "-q", "--skip-existing"}, "OPENJD_SESSION_WORKING_DIR=/tmp");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "openjd_progress: 100.0\n")) << r.out;
    EXPECT_TRUE(contains(r.err, "depthbatch: info: done: 0 rendered, 3 skipped")) << r.err;
}

// A failed OpenJD task says why: a missing plate before rendering (exit 3), a frame that fails while rendering
// under pipeline.on_error: continue (exit 7).
TEST(Progress, OpenJDTaskThatFailsSaysWhy) {
    Shot s(3);
    fs::remove(s.dir / "p.1002.exr");
    Split r = run_split(s, {s.job.string(), "--frames", "1001-1003"}, "OPENJD_SESSION_WORKING_DIR=/tmp");
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.out << r.err;
    auto fail = matching(r.out, "^openjd_fail: ");
    ASSERT_EQ(fail.size(), 1u) << r.out;
    EXPECT_TRUE(contains(fail[0], "p.1002.exr")) << fail[0];
    r = run_split(s, {s.job.string(), "--frames", "1001-1003", "--set", "pipeline.on_error=continue"},
                  "OPENJD_SESSION_WORKING_DIR=/tmp");
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Partial)) << r.out << r.err;
    fail = matching(r.out, "^openjd_fail: ");
    ASSERT_EQ(fail.size(), 1u) << r.out;
    EXPECT_EQ(fail[0].rfind("openjd_fail: 1 frame(s) failed (1002): ", 0), 0u) << fail[0];
    r = run_split(s, {s.job.string(), "--frames", "1001-1003"});  // not under OpenJD: no such line
    EXPECT_TRUE(matching(r.out, "^openjd_").empty()) << r.out;
}

// Off a TTY each line is flushed as it happens: read from the pipe while the process still runs, not at exit.
TEST(Progress, LinesArriveThroughAPipeWhileRendering) {
    TempDir dir;
    const fs::path job =
        write_job(dir / "shot.yaml", "input:\n  path: " + (samples_dir() / "plates/bedroom/bedroom.####.jpg").string() +
                                         "\n  frames: 1001-1016\noutput:\n  path: out/d.####.exr\n");
    auto p = start_cli({job.string()}, {"TR_ENV_JID=3"});
    ASSERT_TRUE(p->wait_for("TR_PROGRESS 6%", 120)) << p->output();
    const bool still_running = p->running();
    const size_t outputs_then = list_dir(dir / "out").size();
    EXPECT_TRUE(still_running) << "the first progress line came only at exit";
    EXPECT_LT(outputs_then, 16u);
    // Frames are written in parallel, so they may finish out of order: the count is in order, the frame numbers
    // are each there once.
    EXPECT_EQ(matching(p->output(), "^frame 10[0-9][0-9] rendered 1/16 ").size(), 1u) << p->output();
    ASSERT_EQ(p->wait(300), 0) << p->output();
    EXPECT_EQ(matching(p->output(), "^frame 10[0-9][0-9] rendered 16/16 ").size(), 1u) << p->output();
    for (int f = 1001; f <= 1016; ++f)
        EXPECT_EQ(matching(p->output(), "^frame " + std::to_string(f) + " rendered ").size(), 1u) << f << p->output();
    EXPECT_TRUE(contains(p->output(), "(Progress: 100%)\nTR_PROGRESS 100%\n")) << p->output();
}

// On a terminal: one bar redrawn in place (carriage return + erase line) with frames done/total, frames/s, ETA
// and the phase; a warning is printed above it, and the bar is redrawn under it. util-linux `script` gives the
// process a pseudo-terminal.
TEST(Progress, BarOnATerminal) {
    Shot s(3);
    const auto r = run_program(
        "script",
        {"-qefc", std::string("'" DEPTHBATCH_BIN "' '") + s.job.string() + "' --set output.compression=dwaa",
         "/dev/null"},
        kCleanEnv);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "\r\033[Kdepthbatch: loading model ...")) << r.output;
    EXPECT_TRUE(contains(r.output, "\r\033[K[##########....................] 1/3 frames  ")) << r.output;
    EXPECT_TRUE(contains(r.output, "] 3/3 frames  ")) << r.output;
    EXPECT_TRUE(contains(r.output, " frames/s  ETA ")) << r.output;
    const size_t warning = r.output.find("depthbatch: warning: output.compression dwaa is lossy");
    ASSERT_NE(warning, std::string::npos) << r.output;
    EXPECT_EQ(r.output.substr(warning - 4, 4), "\r\033[K") << "the bar is not erased before the warning";
    EXPECT_FALSE(contains(r.output, "frame 1001 ->")) << "per-frame lines only with -v";
    EXPECT_FALSE(contains(r.output, "(Progress: ")) << "no frame lines under the bar";
    EXPECT_TRUE(contains(r.output, "depthbatch: info: done: 3 rendered")) << r.output;
}

// Issue 32 item 4: with on_error: continue and plates missing at the start of the range, the missing frames are
// counted in numerator and denominator from the first line: every dialect's values only go up and reach 100 (and
// N/N) only with the last frame.
TEST(Progress, NeverGoesBackwardsWithMissingPlatesAtTheStart) {
    Shot s(5);
    fs::remove(s.dir / "p.1001.exr");
    fs::remove(s.dir / "p.1002.exr");
    const std::vector<std::pair<std::string, std::string>> dialects = {
        {"", "\\(Progress: ([0-9.]+)%\\)"},
        {"OPENJD_SESSION_WORKING_DIR=/tmp", "^openjd_progress: ([0-9.]+)$"},
        {"TR_ENV_JID=1234 TR_ENV_TID=7 TR_ENV_CID=1", "^TR_PROGRESS ([0-9.]+)%$"}};
    for (const auto& [vars, re] : dialects) {
        const Split r = run_split(
            s, {s.job.string(), "--frames", "1001-1005", "--overwrite", "--set", "pipeline.on_error=continue"}, vars);
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Partial)) << vars << "\n" << r.out << r.err;
        std::vector<double> pct;
        std::vector<std::pair<int, int>> counts;
        for (const std::string& l : lines(r.out)) {
            std::smatch m;
            if (std::regex_search(l, m, std::regex(re))) pct.push_back(std::stod(m[1]));
            if (std::regex_search(l, m, std::regex("^frame [0-9]+ (rendered|failed) ([0-9]+)/([0-9]+)")))
                counts.push_back({std::stoi(m[2]), std::stoi(m[3])});
        }
        ASSERT_FALSE(pct.empty()) << vars << "\n" << r.out;
        for (size_t i = 1; i < pct.size(); ++i) EXPECT_GE(pct[i], pct[i - 1]) << vars << "\n" << r.out;
        for (size_t i = 0; i + 1 < pct.size(); ++i) EXPECT_LT(pct[i], 100.0) << vars << "\n" << r.out;
        EXPECT_EQ(pct.back(), 100.0) << vars << "\n" << r.out;
        ASSERT_EQ(counts.size(), 5u) << vars << "\n" << r.out;
        for (size_t i = 0; i < counts.size(); ++i)
            EXPECT_EQ(counts[i], std::make_pair(static_cast<int>(i) + 1, 5)) << vars << "\n" << r.out;
    }
}

// Issue 32 item 7: an unknown DEPTHBATCH_PROGRESS is warned about, once, naming the value.
TEST(Progress, UnknownDepthbatchProgressWarnsOnce) {
    Shot s(2);
    const Split r = run_split(s, {s.job.string()}, "DEPTHBATCH_PROGRESS=tractr");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    size_t n = 0;
    for (size_t at = r.err.find("'tractr' names no dialect"); at != std::string::npos;
         at = r.err.find("'tractr' names no dialect", at + 1))
        ++n;
    EXPECT_EQ(n, 1u) << r.err;
    EXPECT_TRUE(contains(r.err, "warning")) << r.err;
}
