// Issue 22 (trust): nothing depthbatch writes destroys a plate or a job, and no wrong output exits 0. Each test
// covers a kind with several spellings: every writer through the output guard (previews, summary, review sheet,
// farm files, depth frames), a closed progress pipe, paths that are not UTF-8 or are long, shots whose frames
// change under the render (kind, re-delivered plates, holes), and `depthbatch validate`.
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <fstream>
#include <map>
#include <chrono>
#include <csignal>
#include <thread>
#include <unistd.h>

using namespace depthbatch::test;

namespace {

/// Four 32x18 JPEG plates pl/p.1001-1004.jpg, P-mean, and a job writing out/d.####.exr.
struct Shot {
    TempDir dir;
    std::map<fs::path, std::string> before;  ///< every input file's bytes, to prove nothing was touched
    Shot() {
        write_p_mean(dir / "pmean.pt");
        fs::create_directories(dir / "pl");
        for (int f = 1001; f <= 1004; ++f)
            write_image(dir / ("pl/p." + std::to_string(f) + ".jpg"), 32, 18, {"R", "G", "B"}, "uint8",
                        [f](int x, int, int c) { return (x + c + f % 7) / 64.0f; });
        job();
        snapshot();
    }
    /// The job; `extra` replaces the output section when it starts with "output:".
    fs::path job(const std::string& extra = "") {
        return write_job(dir / "job.yaml",
                         "input: {path: pl/p.####.jpg, frames: 1001-1004, colorspace: sRGB}\n"
                         "model: {path: pmean.pt, size: plate}\n" +
                             (extra.rfind("output:", 0) == 0 ? extra : "output: {path: out/d.####.exr}\n" + extra));
    }
    void snapshot() {
        before.clear();
        for (const char* f : {"job.yaml", "pmean.pt"}) before[dir / f] = read_bytes(dir / f);
        for (int f = 1001; f <= 1004; ++f)
            before[dir / ("pl/p." + std::to_string(f) + ".jpg")] =
                read_bytes(dir / ("pl/p." + std::to_string(f) + ".jpg"));
    }
    /// The inputs are byte for byte what they were.
    void expect_untouched(const std::string& what) const {
        for (const auto& [path, bytes] : before)
            EXPECT_EQ(read_bytes(path), bytes) << what << ": " << path << " changed";
    }
};

}  // namespace

// The issue's recipes and their other spellings: every one exits 2 before frame 1, naming the key, and every
// input is untouched.
TEST(Trust, NoWriterWritesOverAPlateTheJobOrAnotherOutput) {
    Shot s;
    const std::string job = s.job().string(), d = s.dir.path.string();
    fs::create_directories(s.dir / "sub");
    fs::create_symlink(s.dir / "pl/p.1001.jpg", s.dir / "soft.json");
    fs::create_hard_link(s.dir / "pl/p.1002.jpg", s.dir / "hard.json");
    s.snapshot();
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{job, "--set", "output.preview=" + d + "/pl/p.####.jpg"}, "output.preview"},
        {{job, "--set", "output.preview=" + d + "/pl/p.%04d.jpg"}, "output.preview"},
        {{job, "--set", "output.preview=" + d + "/sub/../pl/p.$F4.jpg"}, "output.preview"},
        {{job, "--set", "output.preview.path=" + d + "/out/d.@@@@.exr"}, "output.preview"},
        {{job, "--summary", d + "/job.yaml"}, "pipeline.summary"},
        {{job, "--summary", d + "/pl/p.1003.jpg"}, "pipeline.summary"},
        {{job, "--summary", d + "/soft.json"}, "pipeline.summary"},
        {{job, "--summary", d + "/hard.json"}, "pipeline.summary"},
        {{job, "--summary", d + "/out/d.1002.exr"}, "pipeline.summary"},
        {{job, "--summary", d + "/pmean.pt"}, "pipeline.summary"},
        {{job, "--set", "pipeline.report=" + d + "/sub/../job.yaml"}, "pipeline.summary"},
        // (a sheet is .png or .html: this one is refused for its ending, naming the flag, before the guard looks)
        {{job, "--set", "pipeline.review=" + d + "/pl/p.1002.jpg"}, "--set pipeline.review=" + d + "/pl/p.1002.jpg"},
        {{job, "--set", "pipeline.review=" + d + "/job.png"}, ""},  // fine: only checks the .html beside it is no input
    };
    for (const auto& [args, key] : cases) {
        if (key.empty()) continue;
        const auto r = run_cli(args);
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << args.back() << "\n" << r.output;
        EXPECT_TRUE(contains(r.output, "error: " + key + ": ")) << args.back() << "\n" << r.output;
        EXPECT_FALSE(fs::exists(s.dir / "out")) << args.back() << ": nothing may be rendered";
        s.expect_untouched(args.back());
    }
    // The review command's --out, and a review sheet whose .html would be the job file's neighbour of that name.
    auto r = run_cli({"review", job, "--out", d + "/pl/p.1001.jpg"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    // (refused for its ending before the guard looks: a sheet is .png or .html; the guard's own refusal of a plate
    // for the review sheet role is tests/unit/output_guard_test.cpp's)
    EXPECT_TRUE(contains(r.output, "review --out: " + d + "/pl/p.1001.jpg: the review sheet is a PNG")) << r.output;
    s.expect_untouched("review --out");
    // Farm files: never over an input, and into a folder only over what an earlier submit wrote.
    fs::create_directories(s.dir / "farm");
    write_file(s.dir / "farm/job.template.yaml", "# the studio's own template\n");
    r = run_cli({"submit", job, "--engine", "openjd", "--out", d + "/farm"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "is not a depthbatch farm file")) << r.output;
    EXPECT_EQ(read_bytes(s.dir / "farm/job.template.yaml"), "# the studio's own template\n");
    fs::remove(s.dir / "farm/job.template.yaml");
    r = run_cli({"submit", job, "--engine", "openjd", "--out", d + "/farm"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    r = run_cli({"submit", job, "--engine", "openjd", "--out", d + "/farm"});  // its own files: replaced
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(read_bytes(s.dir / "farm/.depthbatch-submit"), "job.template.yaml"));
    s.expect_untouched("submit");
}

// A side output replaces its own kind (a second run with --overwrite) and nothing else.
TEST(Trust, SideOutputsReplaceOnlyTheirOwnKind) {
    Shot s;
    const std::string job = s.job("output: {path: out/d.####.exr, preview: prev/p.####.png}\n").string();
    auto r = run_cli({job, "--summary", (s.dir / "rep/s.json").string()});  // the summary's folder is created
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(read_json(s.dir / "rep/s.json")["rendered"], 4);
    EXPECT_EQ(file_spec(s.dir / "prev/p.1002.png").get_string_attribute("ImageDescription"), "depthbatch preview");
    r = run_cli({job, "--overwrite", "--summary", (s.dir / "rep/s.json").string()});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    // Someone else's file where the summary goes, someone else's image where a preview goes: refused, untouched.
    write_file(s.dir / "rep/notes.json", "{\"mine\": true}");
    r = run_cli({job, "--overwrite", "--summary", (s.dir / "rep/notes.json").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "rep/notes.json exists and is not a depthbatch JSON summary")) << r.output;
    EXPECT_EQ(read_bytes(s.dir / "rep/notes.json"), "{\"mine\": true}");
    write_image(s.dir / "prev/p.1003.png", 8, 8, {"R", "G", "B"}, "uint8", [](int, int, int) { return 0.5f; });
    const std::string foreign = read_bytes(s.dir / "prev/p.1003.png");
    r = run_cli({job, "--overwrite"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "output.preview: " + (s.dir / "prev/p.1003.png").string() +
                                       " exists and is not a depthbatch preview"))
        << r.output;
    EXPECT_EQ(read_bytes(s.dir / "prev/p.1003.png"), foreign);
}

// A reader that stops reading (`depthbatch job | head -1`) must not kill the render: SIGPIPE ignored, one line
// on stderr, every frame and the summary written, exit 0.
TEST(Trust, AProgressReaderThatGoesAwayDoesNotStopTheRender) {
    Shot s;
    // `true` closes the pipe at once (every progress write meets EPIPE); `head -1` after the first line.
    for (const char* reader : {"true", "head -1"}) {
        fs::remove_all(s.dir / "out");
        const std::string cmd = "'" + std::string(DEPTHBATCH_BIN) + "' '" + s.job().string() + "' --summary '" +
                                (s.dir / "s.json").string() + "' --progress lines | " + reader +
                                "; echo \"rc=${PIPESTATUS[0]}\"";
        const auto r = run_program("/bin/bash", {"-c", cmd});
        EXPECT_TRUE(contains(r.output, "rc=0")) << reader << "\n" << r.output;
        EXPECT_EQ(list_dir(s.dir / "out"),
                  (std::vector<std::string>{"d.1001.exr", "d.1002.exr", "d.1003.exr", "d.1004.exr"}))
            << reader;
        EXPECT_EQ(read_json(s.dir / "s.json")["rendered"], 4) << reader;
        if (std::string(reader) == "true")  // (head may read everything before it exits: no EPIPE then)
            EXPECT_TRUE(contains(r.output, "progress: standard output is closed")) << r.output;
    }
}

// Paths are bytes: a Latin-1 byte in a plate folder renders and the summary is written (with U+FFFD in the path).
TEST(Trust, APathThatIsNotUtf8NeverFailsTheSummary) {
    TempDir t;
    const fs::path folder = t / "plates_caf\xe9";
    write_p_mean(t / "pmean.pt");
    fs::create_directories(folder);
    for (int f = 1; f <= 2; ++f)
        write_image(folder / ("p." + std::to_string(f) + ".exr"), 16, 8, {"R", "G", "B"}, "half",
                    [](int, int, int) { return 0.5f; });
    const fs::path job =
        write_job(t / "job.yaml", "input: {path: '" + (folder / "p.#.exr").string() +
                                      "', colorspace: sRGB}\n"
                                      "model: {path: pmean.pt, size: plate}\noutput: {path: out/d.#.exr}\n");
    const auto r = run_cli({job.string(), "--summary", (t / "s.json").string()});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto j = read_json(t / "s.json");
    EXPECT_EQ(j["rendered"], 2);
    EXPECT_TRUE(contains(j["frames"][0]["input"].get<std::string>(), "plates_caf\xef\xbf\xbd")) << j.dump();
}

// A legal 245-byte output name renders (its temporary fits NAME_MAX); a name or path the file system cannot
// hold is exit 2 naming the key, before frame 1.
TEST(Trust, LongNamesRenderOrAreRefusedNamingTheKey) {
    Shot s;
    const std::string long_name = std::string(236, 'd') + ".####.exr";  // 245 bytes with the frame number
    auto r = run_cli({s.job().string(), "--output", (s.dir / "out" / long_name).string(), "--frames", "1001"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(s.dir / "out"), (std::vector<std::string>{std::string(236, 'd') + ".1001.exr"}));
    r = run_cli({s.job().string(), "--output", (s.dir / "out" / (std::string(NAME_MAX, 'x') + ".####.exr")).string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "output.path: the name")) << r.output;
    std::string deep = (s.dir / "deep").string();
    while (deep.size() < PATH_MAX) deep += "/abcdefghijklmnop";
    r = run_cli({s.job().string(), "--summary", deep + "/s.json"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "pipeline.summary: the path is")) << r.output;
    EXPECT_FALSE(contains(r.output, "unexpected")) << r.output;
}

// input.colorspace auto is decided from one frame: a frame of another kind (a float TIFF among 16-bit TIFFs, a
// PNG named .exr among half EXRs) stops with exit 3 naming it, in a render and in validate.
TEST(Trust, EveryFrameIsOfTheKindTheFirstFrameDecided) {
    TempDir t;
    write_p_mean(t / "pmean.pt");
    fs::create_directories(t / "tif");
    fs::create_directories(t / "exr");
    for (int f = 1; f <= 3; ++f)
        write_image(t / ("tif/p." + std::to_string(f) + ".tif"), 16, 8, {"R", "G", "B"}, f == 2 ? "float" : "uint16",
                    [](int, int, int) { return 0.4614f; });
    for (int f = 1; f <= 3; ++f)
        write_image(t / (f == 3 ? "exr/p.3.png" : "exr/p." + std::to_string(f) + ".exr"), 16, 8, {"R", "G", "B"},
                    f == 3 ? "uint8" : "half", [](int, int, int) { return 0.25f; });
    fs::rename(t / "exr/p.3.png", t / "exr/p.3.exr");
    for (const auto& [pattern, bad] : {std::pair<std::string, int>{"tif/p.#.tif", 2}, {"exr/p.#.exr", 3}}) {
        const fs::path job = write_job(t / "job.yaml", "input: {path: " + pattern +
                                                           "}\nmodel: {path: pmean.pt, size: plate}\n"
                                                           "output: {path: out/d.#.exr, overwrite: overwrite}\n");
        const auto v = run_cli({"validate", job.string()});
        EXPECT_EQ(v.exit_code, exit_status(ExitCode::Input)) << v.output;
        EXPECT_TRUE(contains(v.output, "frame " + std::to_string(bad) + " (")) << v.output;
        const auto r = run_cli({job.string(), "--set", "pipeline.on_error=continue"});
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Partial)) << r.output;
        EXPECT_TRUE(contains(r.output, "but frame 1 was integer colour") ||
                    contains(r.output, "but frame 1 was float colour"))
            << r.output;
        EXPECT_FALSE(fs::exists(t / ("out/d." + std::to_string(bad) + ".exr"))) << pattern;
        fs::remove_all(t / "out");
    }
}

// Another OCIO config in force ($OCIO, or color.config) changes the frames: --skip-existing renders them again. A
// config with the shipped config's contents keeps them (a job on the shipped config keeps its older fingerprint).
TEST(Trust, AnotherOcioConfigIsRenderedAgain) {
    Shot s;
    ASSERT_EQ(run_cli({s.job().string(), "-q"}).exit_code, 0);
    const std::string kept = read_bytes(s.dir / "out/d.1001.exr");
    const std::string shipped = read_bytes(fs::path(DEPTHBATCH_BUILD_DIR) / "share/depthbatch/ocio/config.ocio");
    write_file(s.dir / "same.ocio", shipped);
    auto r = run_cli({s.job().string(), "--skip-existing"}, "OCIO=" + (s.dir / "same.ocio").string());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "done: 0 rendered, 4 skipped")) << r.output;
    EXPECT_EQ(read_bytes(s.dir / "out/d.1001.exr"), kept);
    write_file(s.dir / "studio.ocio", shipped + "\n# the studio's edit\n");
    r = run_cli({s.job().string(), "--skip-existing"}, "OCIO=" + (s.dir / "studio.ocio").string());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "frame 1001: rendering again, the existing " + (s.dir / "out/d.1001.exr").string() +
                                       " is written with other job settings"))
        << r.output;
    EXPECT_TRUE(contains(r.output, "done: 4 rendered, 0 skipped")) << r.output;
    // The job's color.config edited in place: the same path, other contents.
    const std::string studio = "color.config=" + (s.dir / "studio.ocio").string();
    ASSERT_EQ(run_cli({s.job().string(), "--overwrite", "--set", studio, "-q"}).exit_code, 0);
    r = run_cli({s.job().string(), "--skip-existing", "--set", studio});
    EXPECT_TRUE(contains(r.output, "done: 0 rendered, 4 skipped")) << r.output;
    write_file(s.dir / "studio.ocio", shipped + "\n# edited again\n");
    r = run_cli({s.job().string(), "--skip-existing", "--set", studio});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "done: 4 rendered, 0 skipped")) << r.output;
}

// A plate re-delivered in place after its depth was rendered: --skip-existing renders that frame again, saying why.
TEST(Trust, ARedeliveredPlateIsRenderedAgain) {
    Shot s;
    ASSERT_EQ(run_cli({s.job().string()}).exit_code, 0);
    const std::string kept = read_bytes(s.dir / "out/d.1001.exr");
    write_image(s.dir / "pl/p.1002.jpg", 32, 18, {"R", "G", "B"}, "uint8", [](int, int, int) { return 0.8f; });
    const auto r = run_cli({s.job().string(), "--skip-existing"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "frame 1002: rendering again, the existing " + (s.dir / "out/d.1002.exr").string() +
                                       " is made from a plate that has changed since"))
        << r.output;
    EXPECT_TRUE(contains(r.output, "skipping 3 frames")) << r.output;
    EXPECT_NEAR(depth_at(s.dir / "out/d.1002.exr", 5, 5), 0.8f, 0.01f);
    EXPECT_EQ(read_bytes(s.dir / "out/d.1001.exr"), kept);
}

// A hole in a sequence found on disk (no input.frames) is named, and it is a missing plate (issue 32 §5): the render
// stops (exit 3) naming it under on_error: stop, renders the rest (exit 7) under continue, as with input.frames.
TEST(Trust, AHoleInASequenceOnDiskIsNamed) {
    Shot s;
    fs::remove(s.dir / "pl/p.1003.jpg");
    const fs::path job = write_job(s.dir / "job.yaml",
                                   "input: {path: pl/p.####.jpg, colorspace: sRGB}\n"
                                   "model: {path: pmean.pt, size: plate}\noutput: {path: out/d.####.exr}\n");
    auto r = run_cli({job.string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_TRUE(contains(r.output,
                         "the sequence on disk runs 1001-1004 (4 frames); frames 1003 are missing from that "
                         "sequence"))
        << r.output;
    EXPECT_TRUE(
        contains(r.output, "1 of 4 plate frames are missing:\n  frame 1003: " + (s.dir / "pl/p.1003.jpg").string()))
        << r.output;
    EXPECT_FALSE(fs::exists(s.dir / "out"));
    r = run_cli({job.string(), "--set", "pipeline.on_error=continue", "--summary", (s.dir / "s.json").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Partial)) << r.output;
    EXPECT_EQ(list_dir(s.dir / "out"), (std::vector<std::string>{"d.1001.exr", "d.1002.exr", "d.1004.exr"}));
    EXPECT_EQ(read_json(s.dir / "s.json")["failed"], 1);
}

// depthbatch validate: the plan, the exit code the render would give, nothing written.
TEST(Trust, ValidateChecksEverythingAndWritesNothing) {
    Shot s;
    const std::string job = s.job("pipeline: {summary: rep/s.json}\n").string();
    auto r = run_cli({"validate", job});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    for (const char* line :
         {"frames     4 to render (1001-1004)", "plates     4 checked: integer colour, channels R,G,B",
          "forward    one pass at the processing size 32x18", "valid: a render would exit 0"})
        EXPECT_TRUE(contains(r.output, line)) << line << "\n" << r.output;
    r = run_cli({job, "--dry-run", "--frames", "1002-1003"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "frames     2 to render (1002,1003)")) << r.output;
    EXPECT_EQ(list_dir(s.dir.path), (std::vector<std::string>{"job.yaml", "pl", "pmean.pt"}))
        << "validate writes nothing";
    r = run_cli({"validate", job, "--summary", (s.dir / "pl/p.1001.jpg").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    fs::remove(s.dir / "pl/p.1004.jpg");
    r = run_cli({"validate", job});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    r = run_cli({"validate", job, "--set", "pipeline.on_error=continue"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Partial)) << r.output;
    EXPECT_TRUE(contains(r.output, "plate missing")) << r.output;
    ASSERT_EQ(run_cli({job, "--frames", "1001-1002"}).exit_code, 0);
    r = run_cli({"validate", job, "--frames", "1001-1003"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::OutputExists)) << r.output;
    r = run_cli({"validate", job, "--frames", "1001-1003", "--skip-existing"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "frames     1 to render (1003), 2 kept")) << r.output;
}

// The review of a job none of whose frames were rendered: exit 3, nothing created.
TEST(Trust, ReviewOfAJobNeverRenderedCreatesNothing) {
    Shot s;
    const auto r = run_cli({"review", s.job().string(), "--out", (s.dir / "rev/sheet.png").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_TRUE(contains(r.output, "render the job first")) << r.output;
    EXPECT_FALSE(fs::exists(s.dir / "rev"));
}

// ---- temporal context (issue 22 §9) -------------------------------------------------------------------------

namespace {

/// A stabilized job on the bedroom plate (FastDepth at 64 px) whose plates are links in `dir`/pl (so that a
/// plate can be taken away and given back), frames `frames`.
fs::path stabilized_job(const fs::path& dir, const std::string& frames, const std::string& extra = "") {
    fs::create_directories(dir / "pl");
    for (int f = 1001; f <= 1024; ++f) {
        const fs::path link = dir / ("pl/bedroom." + std::to_string(f) + ".jpg");
        if (!fs::exists(fs::symlink_status(link)))
            fs::create_symlink(samples_dir() / ("plates/bedroom/bedroom." + std::to_string(f) + ".jpg"), link);
    }
    return write_job(dir / "job.yaml",
                     "input: {path: pl/bedroom.####.jpg, frames: " + frames +
                         "}\n"
                         "model: {size: 64}\ndepth: {stabilize: true}\noutput: {path: out/d.####.exr}\n" +
                         extra);
}

std::string frame_bytes(const fs::path& dir, const std::string& folder, int f) {
    return read_bytes(dir / folder / ("d." + std::to_string(f) + ".exr"));
}

}  // namespace

// SIGTERM at many points of a stabilized chunk: what the stopped run published equals the uninterrupted render,
// and a resume with --skip-existing completes it byte for byte (a frame whose centred window the stop cut short is
// abandoned, never published).
TEST(Trust, AStopNeverPublishesAStabilizedFrameWithACutWindow) {
    TempDir t;
    const fs::path job = stabilized_job(t.path, "1005-1016");
    auto r = run_cli({job.string(), "--chunk", "2/4", "--output", (t / "ref/d.####.exr").string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::vector<int> chunk = {1008, 1009, 1010};
    int stopped_mid = 0, abandoned = 0;
    for (int i = 0; i < 8; ++i) {
        fs::remove_all(t / "out");
        auto p = start_cli({job.string(), "--chunk", "2/4", "--progress", "lines"});
        // Stop at a point that moves through the render: after the model loaded, then later and later.
        ASSERT_TRUE(p->wait_for("temporal stabilization", 60)) << p->output();
        std::this_thread::sleep_for(std::chrono::milliseconds(60 * i));
        p->signal(SIGTERM);
        const int rc = p->wait(60);
        EXPECT_TRUE(rc == 130 || rc == 0) << rc << "\n" << p->output();
        stopped_mid += rc == 130;
        abandoned += contains(p->output(), "were not published: the stop cut their temporal window");
        for (int f : chunk)
            if (fs::exists(t / ("out/d." + std::to_string(f) + ".exr")))
                EXPECT_EQ(frame_bytes(t.path, "out", f), frame_bytes(t.path, "ref", f))
                    << "stop " << i << ": published frame " << f;
        r = run_cli({job.string(), "--chunk", "2/4", "--skip-existing", "-q"});
        ASSERT_EQ(r.exit_code, 0) << r.output;
        for (int f : chunk)
            EXPECT_EQ(frame_bytes(t.path, "out", f), frame_bytes(t.path, "ref", f))
                << "resume " << i << ": frame " << f;
    }
    EXPECT_GE(stopped_mid, 2) << "stops must land while the chunk renders (the later ones may find it done)";
    EXPECT_GE(abandoned, 1) << "some stop must have cut a stabilizer window";
}

// Shared by the gap tests below (stabilize radius 4, plates 1001-1020, out/ rendered with plate 1010 missing, ref/ a
// clean render): the frames whose window held 1010 (1006-1014) say so; the others equal the clean render.
static void expect_frames_around_1010_marked(const fs::path& t) {
    for (int f = 1001; f <= 1020; ++f) {
        if (f == 1010) continue;
        const std::string context =
            file_spec(t / ("out/d." + std::to_string(f) + ".exr")).get_string_attribute("depthbatch/temporal_context");
        const bool cut = f >= 1006 && f <= 1014;
        EXPECT_EQ(context, cut ? "cut: 1010" : "") << "frame " << f;
        if (!cut) EXPECT_EQ(frame_bytes(t, "out", f), frame_bytes(t, "ref", f)) << "frame " << f;
    }
}

// Then plate 1010 arrives: --skip-existing renders it and the marked frames again (saying why), keeps the 11 others,
// and the shot equals the clean render byte for byte.
static void expect_repaired_once_1010_arrives(const fs::path& t, const fs::path& job) {
    fs::create_symlink(samples_dir() / "plates/bedroom/bedroom.1010.jpg", t / "pl/bedroom.1010.jpg");
    const auto r = run_cli({job.string(), "--skip-existing"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "frame 1006: rendering again, the existing " + (t / "out/d.1006.exr").string() +
                                       " is stabilized without frames 1010, whose plates exist now"))
        << r.output;
    EXPECT_TRUE(contains(r.output, "skipping 11 frames")) << r.output;
    for (int f = 1001; f <= 1020; ++f) EXPECT_EQ(frame_bytes(t, "out", f), frame_bytes(t, "ref", f)) << "frame " << f;
}

// A gap in a stabilized shot (plate 1010 missing, on_error: continue): counted once; the frames whose window
// lacked it say so (depthbatch/temporal_context); once the plate is back, --skip-existing renders 1010 and those
// frames again, and the shot equals a clean render byte for byte.
TEST(Trust, AGapInAStabilizedShotIsRenderedAgainOnceTheFrameExists) {
    TempDir t;
    const fs::path job = stabilized_job(t.path, "1001-1020", "pipeline: {on_error: continue}\n");
    auto r = run_cli({job.string(), "--output", (t / "ref/d.####.exr").string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    fs::remove(t / "pl/bedroom.1010.jpg");
    r = run_cli({job.string(), "--summary", (t / "s.json").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Partial)) << r.output;
    EXPECT_TRUE(contains(r.output, "partial: 1 frames failed (1010)")) << r.output;
    // 1010 is one of the run's frames, missing: never said to be context (a new user's T11).
    EXPECT_FALSE(contains(r.output, "not a frame of this run")) << r.output;
    EXPECT_FALSE(contains(r.output, "read, not owned")) << r.output;
    const auto s = read_json(t / "s.json");
    EXPECT_EQ(s["failed"], 1);
    EXPECT_EQ(s["rendered"], 19);
    EXPECT_EQ(s["context_failed"], nlohmann::json::array()) << s.dump();
    expect_frames_around_1010_marked(t.path);
    // Still missing: nothing to gain, the marked frames are kept (and the missing plate is the error).
    r = run_cli({job.string(), "--skip-existing"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_FALSE(contains(r.output, "rendering again")) << r.output;
    expect_repaired_once_1010_arrives(t.path, job);
}

// Issue 32 §5: the same gap in a sequence found on disk (no input.frames: its shot runs from the first plate found
// to the last) is a missing plate too: the windows across it are marked, not joined, and --skip-existing repairs the
// shot byte for byte once the plate arrives.
TEST(Trust, AHoleInADiscoveredStabilizedSequenceIsRepairedByteExact) {
    TempDir t;
    fs::create_directories(t / "pl");
    for (int f = 1001; f <= 1020; ++f)
        fs::create_symlink(samples_dir() / ("plates/bedroom/bedroom." + std::to_string(f) + ".jpg"),
                           t / ("pl/bedroom." + std::to_string(f) + ".jpg"));
    const fs::path job = write_job(t / "job.yaml",
                                   "input: {path: pl/bedroom.####.jpg}\nmodel: {size: 64}\n"
                                   "depth: {stabilize: true}\noutput: {path: out/d.####.exr}\n"
                                   "pipeline: {on_error: continue}\n");
    auto r = run_cli({job.string(), "--output", (t / "ref/d.####.exr").string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    fs::remove(t / "pl/bedroom.1010.jpg");
    r = run_cli({job.string(), "--summary", (t / "s.json").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Partial)) << r.output;
    EXPECT_TRUE(contains(r.output, "frames 1010 are missing from that sequence")) << r.output;
    EXPECT_TRUE(contains(r.output, "partial: 1 frames failed (1010)")) << r.output;
    EXPECT_EQ(read_json(t / "s.json")["rendered"], 19);
    expect_frames_around_1010_marked(t.path);
    expect_repaired_once_1010_arrives(t.path, job);
}

// Issue 32 §5: a statistics sidecar sampled while a plate of a sequence found on disk was missing (on_error:
// continue samples the plates that exist) records the frames it sampled and the shot with its hole; once the plate
// arrives it is another sample: --skip-existing refuses it (exit 6, saying why) and leaves every file as it was,
// and --overwrite recomputes it and renders the shot as a clean render, byte for byte.
TEST(Trust, AStatisticsSidecarSampledOverAHoleIsNotReusedOnceThePlateArrives) {
    TempDir t;
    fs::create_directories(t / "pl");
    for (int f = 1001; f <= 1008; ++f)
        fs::create_symlink(samples_dir() / ("plates/bedroom/bedroom." + std::to_string(f) + ".jpg"),
                           t / ("pl/bedroom." + std::to_string(f) + ".jpg"));
    const fs::path job = write_job(t / "job.yaml",
                                   "input: {path: pl/bedroom.####.jpg}\nmodel: {size: 64}\n"
                                   "depth: {convention: normalized, normalize: sequence}\n"
                                   "output: {path: out/d.####.exr}\npipeline: {on_error: continue}\n");
    auto r = run_cli({job.string(), "--output", (t / "ref/d.####.exr").string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    fs::remove(t / "pl/bedroom.1005.jpg");
    r = run_cli({job.string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Partial)) << r.output;
    EXPECT_TRUE(contains(r.output, "sequence statistics: plates 1005 are missing; sampling the 7 frames that exist"))
        << r.output;
    const auto sidecar = read_json(t / "out/d.stats.json");
    EXPECT_EQ(sidecar["shot_frames"], "1001-1008") << "the hole is a frame of the shot";
    EXPECT_EQ(sidecar["sample_frames"], nlohmann::json({1001, 1002, 1003, 1004, 1006, 1007, 1008}));
    EXPECT_NE(read_bytes(t / "out/d.stats.json"), read_bytes(t / "ref/d.stats.json"));
    fs::create_symlink(samples_dir() / "plates/bedroom/bedroom.1005.jpg", t / "pl/bedroom.1005.jpg");
    std::map<std::string, std::string> before;
    for (const auto& name : list_dir(t / "out")) before[name] = read_bytes(t / "out" / name);
    r = run_cli({job.string(), "--skip-existing"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::OutputExists)) << r.output;
    EXPECT_TRUE(contains(r.output,
                         (t / "out/d.stats.json").string() +
                             ": sequence statistics made for another job (the "
                             "sample (depth.stats_frames: frames 1001-1008 now, 1001-1004,1006-1008 when it was made"))
        << r.output;
    for (const auto& [name, bytes] : before) EXPECT_EQ(read_bytes(t / "out" / name), bytes) << name << " changed";
    EXPECT_FALSE(fs::exists(t / "out/d.1005.exr"));
    r = run_cli({job.string(), "--overwrite"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(read_bytes(t / "out/d.stats.json"), read_bytes(t / "ref/d.stats.json"));
    for (int f = 1001; f <= 1008; ++f)
        EXPECT_EQ(frame_bytes(t.path, "out", f), frame_bytes(t.path, "ref", f)) << "frame " << f;
}

// Issue 32 item 1: a dry run that fails (outputs exist: exit 6; a bad model: exit 4) writes nothing: the last real
// render's summary stays byte for byte, and no file or folder appears.
TEST(Trust, AFailingDryRunWritesNothing) {
    Shot s;
    const std::string job = s.job("pipeline: {summary: rep/s.json}\n").string();
    ASSERT_EQ(run_cli({job, "--frames", "1001-1002"}).exit_code, 0);
    const std::string summary = read_bytes(s.dir / "rep/s.json");
    ASSERT_FALSE(summary.empty());
    auto tree = [&] {
        std::vector<std::string> all;
        for (const auto& e : fs::recursive_directory_iterator(s.dir.path)) all.push_back(e.path().string());
        std::sort(all.begin(), all.end());
        return all;
    };
    const auto before = tree();
    auto r = run_cli({job, "--dry-run"});  // frames 1001-1002 exist
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::OutputExists)) << r.output;
    EXPECT_EQ(read_bytes(s.dir / "rep/s.json"), summary) << "exit 6 dry run replaced the summary";
    EXPECT_EQ(tree(), before);
    write_file(s.dir / "bad.pt", "not a model");
    r = run_cli(
        {job, "--dry-run", "--overwrite", "--set", "model.path=bad.pt", "--summary", (s.dir / "new/s.json").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Model)) << r.output;
    EXPECT_EQ(read_bytes(s.dir / "rep/s.json"), summary) << "exit 4 dry run replaced the summary";
    EXPECT_FALSE(fs::exists(s.dir / "new")) << "exit 4 dry run made the summary's folder";
    auto after = tree();
    after.erase(std::remove(after.begin(), after.end(), (s.dir / "bad.pt").string()), after.end());
    EXPECT_EQ(after, before);
}

// Issue 32 item 6: two jobs with one output folder: --skip-existing never replaces the other shot's frames (their
// depthbatch/source names other plates): exit 6 naming the frame and both sources; --overwrite replaces them.
TEST(Trust, SkipExistingDoesNotTakeAnotherShotsFrames) {
    Shot s;
    ASSERT_EQ(run_cli({s.job().string()}).exit_code, 0);
    const std::string first = read_bytes(s.dir / "out/d.1002.exr");
    fs::create_directories(s.dir / "pl2");
    for (int f = 1001; f <= 1004; ++f)
        write_image(s.dir / ("pl2/q." + std::to_string(f) + ".jpg"), 32, 18, {"R", "G", "B"}, "uint8",
                    [f](int x, int y, int c) { return (x + y + c + f % 5) / 80.0f; });
    const fs::path other = write_job(s.dir / "other.yaml",
                                     "input: {path: pl2/q.####.jpg, frames: 1001-1004, colorspace: sRGB}\n"
                                     "model: {path: pmean.pt, size: plate}\noutput: {path: out/d.####.exr}\n");
    auto r = run_cli({other.string(), "--skip-existing"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::OutputExists)) << r.output;
    EXPECT_TRUE(contains(r.output, "frame 1001: ")) << r.output;
    EXPECT_TRUE(contains(r.output, "pl/p.1001.jpg")) << r.output;
    EXPECT_TRUE(contains(r.output, "pl2/q.1001.jpg")) << r.output;
    EXPECT_EQ(read_bytes(s.dir / "out/d.1002.exr"), first) << "the other shot's frame was replaced";
    r = run_cli({s.job().string(), "--skip-existing"});  // its own frames: kept
    EXPECT_EQ(r.exit_code, 0) << r.output;
    r = run_cli({other.string(), "--overwrite"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(read_bytes(s.dir / "out/d.1002.exr"), first);
}

// Issue 32 §7: a contract whose name holds a newline forged a log line ("error: ...") and landed in every EXR's
// depthbatch/model: such a model is refused with exit 4 naming the field, before any frame; nothing is written.
TEST(Trust, AContractNameWithAControlCharacterIsRefused) {
    Shot s;
    std::string contract = probe_contract();
    contract.replace(contract.find("\"probe\""), 7, R"("probe\ndepthbatch: error: frame 1001 failed")");
    const fs::path model = write_probe_model(
        s.dir / "forged.pt", "def forward(self, x):\n    return x.mean(dim=1, keepdim=True)\n", contract);
    const std::string job = s.job("pipeline: {summary: rep/s.json}\n").string();
    s.snapshot();
    for (const char* cmd : {"render", "validate"}) {
        std::vector<std::string> args = {job, "--set", "model.path=" + model.string()};
        if (std::string(cmd) == "validate") args.insert(args.begin(), "validate");
        auto r = run_cli(args);
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Model)) << cmd << "\n" << r.output;
        EXPECT_TRUE(contains(
            r.output, model.string() + ": depthbatch.json field name holds a control character (U+000A "
                                       "at byte 5): the contract's strings go into the log and every EXR's metadata; "
                                       "re-export the model with printable text there"))
            << r.output;
        EXPECT_FALSE(contains(r.output, "\ndepthbatch: error: frame 1001 failed")) << "a forged line\n" << r.output;
        EXPECT_FALSE(fs::exists(s.dir / "out")) << cmd;
    }
    s.expect_untouched("a refused contract");
}

// Issue 32 §9: `validate` makes and removes a file in the output folder (or its nearest existing parent), as the
// render will: access(2) said yes to root for /sys, so validate passed and the render exited 5. Both now exit 5
// before frame 1 with the OS's reason once, and validate writes nothing.
TEST(Trust, ValidateFindsAnOutputFolderTheFileSystemRefuses) {
    if (!fs::is_directory("/sys")) GTEST_SKIP() << "no /sys";
    Shot s;
    const std::string job = s.job().string();
    for (const std::string& out : {std::string("/sys/d.####.exr"), std::string("/sys/depthbatch-test/d.####.exr")}) {
        const std::string folder = fs::path(out).parent_path().string();
        for (const bool validate : {true, false}) {
            std::vector<std::string> args = {job, "--output", out};
            if (validate) args.insert(args.begin(), "validate");
            const auto r = run_cli(args);
            EXPECT_EQ(r.exit_code, exit_status(ExitCode::Render)) << out << "\n" << r.output;
            const std::string said = "depthbatch: error: output folder " + folder + ": cannot write in /sys (";
            const size_t at = r.output.find(said);
            ASSERT_NE(at, std::string::npos) << r.output;
            const std::string reason = r.output.substr(at + said.size(), r.output.find(')', at) - at - said.size());
            EXPECT_TRUE(reason == "Permission denied" || reason == "Read-only file system") << r.output;
            EXPECT_EQ(r.output.find("(" + reason + ")"), r.output.rfind("(" + reason + ")")) << "said once\n"
                                                                                             << r.output;
            EXPECT_FALSE(contains(r.output, "valid: a render would exit 0")) << r.output;
        }
    }
    EXPECT_FALSE(fs::exists("/sys/depthbatch-test"));
    s.expect_untouched("an unwritable output folder");
}

// Issue 32 §9: a real render refused because its outputs exist (exit 6, no --overwrite) kept replacing the job's
// summary with "frames_requested 0": it writes nothing, like a failing dry run; the record of the render that made
// the frames stays, byte for byte.
TEST(Trust, ARefusedRenderKeepsTheSummaryOfTheRenderThatMadeTheFrames) {
    Shot s;
    const std::string job = s.job("pipeline: {summary: rep/s.json}\n").string();
    ASSERT_EQ(run_cli({job, "--frames", "1001-1002"}).exit_code, 0);
    const std::string summary = read_bytes(s.dir / "rep/s.json");
    ASSERT_EQ(read_json(s.dir / "rep/s.json")["rendered"], 2) << summary;
    auto r = run_cli({job});  // 1001-1002 exist
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::OutputExists)) << r.output;
    EXPECT_TRUE(contains(r.output, "2 output frames already exist")) << r.output;
    EXPECT_EQ(read_bytes(s.dir / "rep/s.json"), summary) << "the refused render replaced the summary";
    r = run_cli({job, "--summary", (s.dir / "other/s.json").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::OutputExists)) << r.output;
    EXPECT_FALSE(fs::exists(s.dir / "other"));
    EXPECT_EQ(list_dir(s.dir / "out"), (std::vector<std::string>{"d.1001.exr", "d.1002.exr"}));
}

// Issue 32 §9: a temporary a SIGKILLed render left (.NAME.HOST.PID.N.tmp, PID gone) survived a later
// --skip-existing run that had nothing to render. That run removes the stale temporaries of this job's own frames
// and says so; another job's temporary, and one of a process still running, stay.
TEST(Trust, ASkipExistingRunWithNothingToRenderRemovesAKilledRunsTemporaries) {
    Shot s;
    const std::string job = s.job().string();
    ASSERT_EQ(run_cli({job, "-q"}).exit_code, 0);
    char host[256] = {0};
    ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
    std::string h(host);
    std::replace(h.begin(), h.end(), '.', '_');
    const std::string dead = "2147483646";                 // no such process
    const std::string alive = std::to_string(::getpid());  // this test
    const std::string ours = ".d.1003.exr." + h + "." + dead + ".0.tmp",
                      theirs = ".x.1003.exr." + h + "." + dead + ".0.tmp",
                      live = ".d.1004.exr." + h + "." + alive + ".0.tmp";
    for (const std::string& name : {ours, theirs, live}) write_file(s.dir / "out" / name, "");
    const auto r = run_cli({job, "--skip-existing"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "nothing to do: 4 frames exist")) << r.output;
    EXPECT_TRUE(contains(r.output, "removed 1 temporary file(s) of this job's frames left in " +
                                       (s.dir / "out").string() + " by an interrupted earlier run"))
        << r.output;
    std::vector<std::string> expected = {theirs, live, "d.1001.exr", "d.1002.exr", "d.1003.exr", "d.1004.exr"};
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(list_dir(s.dir / "out"), expected);
}

// Issue 41 §4: validate = render, by construction. `validate` and the render's --dry-run take their flags from one
// function (apps/depthbatch/main.cpp add_run_flags) and check them through the render's own parsing and planning:
// every flag alone and every pair of flags gives the same exit code both ways (the issue: validate accepted --frames
// with --range, which the render refuses with exit 2).
TEST(Trust, ValidateAndTheDryRunAcceptExactlyTheRendersFlags) {
    Shot s;
    const std::vector<std::vector<std::string>> flags = {
        {"--frames", "1001-1002"},
        {"--range", "1002-1003"},
        {"--chunk", "2/2"},
        {"--chunk", "3/2"},
        {"--device", "cpu"},
        {"--output", (s.dir / "o2/d.####.exr").string()},
        {"--set", "model.size=16"},
        {"--overwrite"},
        {"--skip-existing"},
        {"--threads", "2"},
        {"--summary", (s.dir / "s.json").string()},
        {"--grace", "5"},
        {"--frames", "1001-1009"},
    };
    auto exit_of = [&](bool validate, const std::vector<std::vector<std::string>>& picked) {
        std::vector<std::string> args;
        if (validate) args = {"validate", (s.dir / "job.yaml").string()};
        else args = {(s.dir / "job.yaml").string(), "--dry-run"};
        for (const auto& f : picked) args.insert(args.end(), f.begin(), f.end());
        args.push_back("-q");
        return run_cli(args);
    };
    int combinations = 0;
    for (size_t i = 0; i < flags.size(); ++i)
        for (size_t j = i; j < flags.size(); ++j) {
            std::vector<std::vector<std::string>> picked = {flags[i]};
            if (j != i) picked.push_back(flags[j]);
            const auto v = exit_of(true, picked), d = exit_of(false, picked);
            std::string what;
            for (const auto& f : picked) what += f[0] + " ";
            EXPECT_EQ(v.exit_code, d.exit_code) << what << "\nvalidate:\n" << v.output << "\n--dry-run:\n" << d.output;
            ++combinations;
        }
    EXPECT_EQ(combinations, 91);
    // The issue's pair is refused both ways, naming both flags.
    const auto v = exit_of(true, {flags[0], flags[1]});
    EXPECT_EQ(v.exit_code, exit_status(depthbatch::ExitCode::Config)) << v.output;
    EXPECT_TRUE(contains(v.output, "--range")) << v.output;
    s.expect_untouched("validate and dry runs");
    EXPECT_FALSE(fs::exists(s.dir / "o2"));
    EXPECT_FALSE(fs::exists(s.dir / "s.json"));
}

// Issue 41 §5: a checkpoint saved with torch.save (a zip archive too, with weights and no code) is named as what it
// is, weights to export with tools/export.py, by `info` and by a job's model.path alike (exit 4), not "corrupted".
TEST(Trust, ATorchSaveCheckpointIsNamedAsWeightsToExport) {
    Shot s;
    const fs::path ck = s.dir / "weights.pth";
    const auto py = run_python(
        {"-c", "import torch, sys; torch.save({'head.weight': torch.zeros(2, 3)}, sys.argv[1])", ck.string()});
    ASSERT_EQ(py.exit_code, 0) << py.output;
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"info", ck.string()},
          std::vector<std::string>{s.job().string(), "--set", "model.path=" + ck.string(), "-q"}}) {
        const auto r = run_cli(args);
        EXPECT_EQ(r.exit_code, exit_status(depthbatch::ExitCode::Model)) << r.output;
        EXPECT_TRUE(contains(r.output, ck.string() + ": is a PyTorch checkpoint saved with torch.save (weights, no "
                                                     "TorchScript code)"))
            << r.output;
        EXPECT_TRUE(contains(r.output, "python -m tools.export")) << r.output;
        EXPECT_FALSE(contains(r.output, "corrupt")) << r.output;
    }
    EXPECT_FALSE(fs::exists(s.dir / "out"));
}

// Issue 41 §5: CLI11's errors carry the one `depthbatch: error:` prefix every other error has, and a flag that is the
// name of a job key says how a job key is set.
TEST(Trust, FlagErrorsCarryThePrefixAndAJobKeyFlagSaysHowToSetIt) {
    Shot s;
    auto r = run_cli({(s.dir / "job.yaml").string(), "--precision", "fp16"});
    EXPECT_EQ(r.exit_code, exit_status(depthbatch::ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "depthbatch: error: ")) << r.output;
    EXPECT_TRUE(contains(r.output, "--precision is a job key: --set model.precision=VALUE")) << r.output;
    r = run_cli({(s.dir / "job.yaml").string(), "--frames", "1001", "--range", "1001-1002"});
    EXPECT_EQ(r.exit_code, exit_status(depthbatch::ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "depthbatch: error: ")) << r.output;
    r = run_cli({"--version"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_FALSE(contains(r.output, "error")) << r.output;
    EXPECT_FALSE(fs::exists(s.dir / "out"));
}
