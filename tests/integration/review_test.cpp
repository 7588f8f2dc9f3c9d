// Previews and the review sheet (docs/review.md "Review a render"): previews beside the EXRs, the sheet from the EXRs of
// a chunked render equal to the one from a whole render, and the HTML page in a real headless browser.
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <regex>

using namespace depthbatch::test;

namespace {

/// `dir`/`name`/shot.yaml: the bedroom, frames 1001-1009, written to `dir`/`name`/out.
fs::path bedroom(const fs::path& dir, const std::string& name, const std::string& extra = "") {
    fs::create_directories(dir / name);
    return write_job(dir / name / "shot.yaml",
                     "input:\n  path: " + (samples_dir() / "plates/bedroom/bedroom.####.jpg").string() +
                         "\n  frames: 1001-1009\noutput:\n  path: out/d.####.exr\n" + extra);
}

}  // namespace

// output.preview writes one 8-bit preview per frame, colours over the job's sequence range, and a preview that
// cannot be written is a warning, never a failed frame.
TEST(Review, PreviewsBesideTheFrames) {
    TempDir dir;
    const fs::path job = bedroom(dir.path, "shot",
                                 "  preview: {path: ../previews/p.####.jpg, size: 480}\n"
                                 "depth:\n  kind: normalized\n  normalize: sequence\n");
    auto r = run_cli({job.string(), "--frames", "1001-1003"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_EQ(list_dir(dir / "previews"), (std::vector<std::string>{"p.1001.jpg", "p.1002.jpg", "p.1003.jpg"}));
    const auto spec = file_spec(dir / "previews/p.1002.jpg");
    EXPECT_EQ(spec.width, 480);
    EXPECT_GT(spec.height, 270);  // 960x540 -> 480x270, plus the legend
    EXPECT_EQ(spec.format, OIIO::TypeDesc::UINT8);
    // An unwritable preview folder: the frames render, the log warns.
    write_file(dir / "blocked", "a file where the previews folder should be");
    r = run_cli(
        {job.string(), "--frames", "1004", "--set", "output.preview.path=" + (dir / "blocked/p.####.jpg").string()});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "warning: frame 1004: preview")) << r.output;
    EXPECT_TRUE(fs::exists(dir / "shot/out/d.1004.exr"));
}

// The sheet is made from the files: a render in three chunks gives the same PNG, byte for byte, as a whole
// render; a frame that failed (its summary says so) is listed as failed in the page.
TEST(Review, SheetFromChunksEqualsSheetFromAWholeRender) {
    TempDir dir;
    const fs::path whole = bedroom(dir.path, "whole"), chunks = bedroom(dir.path, "chunks");
    ASSERT_EQ(run_cli({whole.string(), "-q"}).exit_code, 0);
    for (const char* c : {"1/3", "2/3", "3/3"}) ASSERT_EQ(run_cli({chunks.string(), "--chunk", c, "-q"}).exit_code, 0);
    auto r = run_cli({"review", whole.string(), "--out", (dir / "whole.png").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = run_cli({"review", chunks.string(), "--out", (dir / "chunks.png").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(file_spec(dir / "whole.png").width, 1800);
    EXPECT_EQ(read_bytes(dir / "whole.png"), read_bytes(dir / "chunks.png"));
    const std::string page = read_bytes(dir / "whole.html");
    EXPECT_TRUE(contains(page, "9 of 9 frames rendered")) << page.substr(0, 2000);
    EXPECT_TRUE(contains(page, "src=\"data:image/png;base64,")) << "the sheet is inlined";
    // A failed frame, as a summary reports it.
    fs::remove(dir / "chunks/out/d.1005.exr");
    write_file(dir / "s.json", R"({"failed_frames": [{"frame": 1005, "reason": "frame 1005: cannot open"}],
                                   "skipped_frames": []})");
    r = run_cli(
        {"review", chunks.string(), "--out", (dir / "failed.png").string(), "--summary", (dir / "s.json").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string failed = read_bytes(dir / "failed.html");
    EXPECT_TRUE(contains(failed, "8 of 9 frames rendered")) << failed.substr(0, 2000);
    EXPECT_TRUE(contains(failed, "<tr class='failed'><td>1005</td><td>failed</td>")) << failed;
    EXPECT_TRUE(contains(failed, "frame 1005: cannot open"));
}

// The HTML page in Debian's Chromium, headless: it loads without a script error, its image decodes, and a
// screenshot shows it (Chromium started as the environment notes say: no sandbox as root, no background network).
TEST(Review, PageLoadsInAHeadlessBrowser) {
    if (run_program("/bin/sh", {"-c", "command -v chromium"}).exit_code != 0)
        GTEST_SKIP() << "chromium is not installed (scripts/setup installs Debian's chromium)";
    TempDir dir;
    const fs::path job = bedroom(dir.path, "shot", "pipeline:\n  review: ../sheet/shot.png\n");
    auto r = run_cli({job.string(), "--frames", "1001-1004"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_TRUE(fs::exists(dir / "sheet/shot.html")) << r.output;
    const std::vector<std::string> flags = {"--headless",
                                            "--no-sandbox",
                                            "--disable-gpu",
                                            "--disable-quic",
                                            "--no-first-run",
                                            "--disable-background-networking",
                                            "--disable-component-update",
                                            "--disable-sync",
                                            "--user-data-dir=" + (dir / "chromium").string()};
    const std::string url = "file://" + (dir / "sheet/shot.html").string();
    auto args = flags;
    args.insert(args.end(), {"--virtual-time-budget=10000", "--dump-dom", url});
    r = run_program("chromium", args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "<body data-loaded=\"1\" data-errors=\"0\">")) << r.output.substr(0, 3000);
    args = flags;
    args.insert(args.end(), {"--window-size=1400,1000", "--screenshot=" + (dir / "shot.png").string(), url});
    r = run_program("chromium", args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto shot = file_spec(dir / "shot.png");
    EXPECT_EQ(shot.width, 1400);
    EXPECT_GT(fs::file_size(dir / "shot.png"), 50000u) << "a blank page compresses to almost nothing";
}

// A job none of whose frames were rendered: exit 3 before anything is made (no sheet, no page, no folder).
TEST(Review, JobNeverRenderedExits3AndMakesNothing) {
    TempDir dir;
    const fs::path job = bedroom(dir.path, "shot");
    auto r = run_cli({"review", job.string(), "--out", (dir / "sheet/s.png").string()});
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_TRUE(contains(r.output, "depthbatch: error: review: none of the job's 9 depth frames exist (" +
                                       (dir / "shot/out/d.####.exr").string() +
                                       "): render the job first; nothing written"))
        << r.output;
    EXPECT_FALSE(fs::exists(dir / "sheet"));
    r = run_cli({"review", job.string()});  // the default path, OUTPUT_FOLDER/JOB.review.png
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_EQ(list_dir(dir / "shot"), (std::vector<std::string>{"shot.yaml"}));
}

// Issue 41 §5: `review --summary` naming a file that is not there says not found (it said "not a depthbatch summary
// ([json.exception.parse_error.101] ...)"), exit 2, nothing written.
TEST(Review, ASummaryThatIsNotThereIsNamedNotFound) {
    TempDir dir;
    const fs::path job = bedroom(dir.path, "shot");
    ASSERT_EQ(run_cli({job.string(), "-q"}).exit_code, 0);
    const auto r = run_cli({"review", job.string(), "--out", (dir / "sheet/s.png").string(), "--summary",
                            (dir / "no-such.json").string()});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(
        contains(r.output, "depthbatch: error: review: summary " + (dir / "no-such.json").string() + ": not found"))
        << r.output;
    EXPECT_FALSE(contains(r.output, "parse_error")) << r.output;
    EXPECT_FALSE(fs::exists(dir / "sheet"));
}

// A review that fails says so in one line, review.py's own, never a traceback; -v shows everything it printed.
TEST(Review, FailureIsOneLineAndVerboseShowsTheTraceback) {
    TempDir dir;
    const fs::path job = bedroom(dir.path, "shot");
    ASSERT_EQ(run_cli({job.string(), "--frames", "1001-1002", "-q"}).exit_code, 0);
    const std::string sheet = (dir / "sheet/s.png").string();
    fs::create_directories(dir / "sheet");

    // A Python without the modules (the tools venv without its site-packages).
    const fs::path bare = write_file(dir / "bare-python", "#!/bin/sh\nexec '" DEPTHBATCH_TEST_PYTHON "' -S \"$@\"\n");
    fs::permissions(bare, fs::perms::owner_all);
    auto r = run_cli({"review", job.string(), "--out", sheet}, "env DEPTHBATCH_PYTHON='" + bare.string() + "'");
    EXPECT_EQ(r.exit_code, 5) << r.output;
    EXPECT_EQ(r.output, "depthbatch: error: review: cannot make " + sheet + " with $DEPTHBATCH_PYTHON (" +
                            bare.string() +
                            "): cannot import matplotlib, numpy, OpenEXR, PIL; set DEPTHBATCH_PYTHON to a Python with "
                            "matplotlib, numpy, OpenEXR and PIL (pip install matplotlib numpy OpenEXR Pillow)\n");
    EXPECT_EQ(list_dir(dir / "sheet"), std::vector<std::string>{}) << "nothing published, no temporary left";

    // An error inside the script (here a full disk while the page is made, faked by a sitecustomize).
    fs::create_directories(dir / "stub");
    write_file(dir / "stub/sitecustomize.py",
               "import base64\n"
               "def _full(*a, **k):\n"
               "    raise OSError(28, 'No space left on device', '/stub/s.html')\n"
               "base64.b64encode = _full\n");
    const std::string env =
        "env PYTHONPATH='" + (dir / "stub").string() + "' DEPTHBATCH_PYTHON='" DEPTHBATCH_TEST_PYTHON "'";
    r = run_cli({"review", job.string(), "--out", sheet}, env);
    EXPECT_EQ(r.exit_code, 5) << r.output;
    EXPECT_EQ(r.output, "depthbatch: error: review: cannot make " + sheet +
                            " with $DEPTHBATCH_PYTHON (" DEPTHBATCH_TEST_PYTHON
                            "): /stub/s.html: No space left on device\n");
    EXPECT_EQ(list_dir(dir / "sheet"), std::vector<std::string>{});
    r = run_cli({"review", job.string(), "--out", sheet, "-v"}, env);
    EXPECT_EQ(r.exit_code, 5) << r.output;
    EXPECT_TRUE(contains(r.output, "Traceback (most recent call last)")) << r.output;
    EXPECT_TRUE(contains(r.output, "in _full")) << r.output;
    EXPECT_TRUE(contains(r.output, "depthbatch: error: review: cannot make " + sheet)) << r.output;
    EXPECT_EQ(list_dir(dir / "sheet"), std::vector<std::string>{});

    // A Python that is not there.
    r = run_cli({"review", job.string(), "--out", sheet}, "env DEPTHBATCH_PYTHON=/nonexistent/python3");
    EXPECT_EQ(r.exit_code, 5) << r.output;
    EXPECT_TRUE(contains(
        r.output,
        "depthbatch: error: review: cannot make " + sheet +
            " with $DEPTHBATCH_PYTHON (/nonexistent/python3): /nonexistent/python3: No such file or directory"))
        << r.output;
    EXPECT_FALSE(contains(r.output, "Traceback")) << r.output;
}

// `depthbatch review JOB` writes to the job's pipeline.review when it has one and says what it wrote once (issue
// 26 §4); a preview size above the plate's is said once per job (the previews keep the plate's size).
TEST(Review, ReviewCommandTakesThePipelineReviewPathAndSaysItOnce) {
    TempDir dir;
    const fs::path model = write_p_mean(dir / "pmean.pt");
    for (int f = 1001; f <= 1003; ++f)
        write_image(dir / ("p." + std::to_string(f) + ".exr"), 48, 32, {"R", "G", "B"}, "half",
                    [f](int x, int y, int) { return 0.05f + 0.01f * static_cast<float>((x + y + f) % 40); });
    const fs::path job = write_job(dir / "job.yaml",
                                   "input: {path: p.####.exr}\n"
                                   "output: {path: out/d.####.exr, preview: {path: prev/p.####.png, size: 4096}}\n"
                                   "model: {path: " +
                                       model.string() +
                                       ", size: plate, device: cpu}\n"
                                       "pipeline: {review: sheet/s.png}\n");
    auto r = run_cli({job.string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string said =
        "warning: output.preview.size 4096 is larger than the plate (48x32): previews are written "
        "at the plate's size, 48 px on the long side";
    EXPECT_EQ(r.output.find(said), r.output.rfind(said)) << "once per job, not per frame\n" << r.output;
    EXPECT_NE(r.output.find(said), std::string::npos) << r.output;
    EXPECT_EQ(file_spec(dir / "prev/p.1002.png").width, 48);
    fs::remove_all(dir / "sheet");
    r = run_cli({"review", job.string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string png = (dir / "sheet/s.png").string();
    EXPECT_TRUE(fs::exists(png)) << r.output;
    EXPECT_FALSE(fs::exists(dir / "out/job.review.png")) << "not the default path beside the output";
    EXPECT_EQ(r.output, "wrote " + png + " and " + (dir / "sheet/s.html").string() + " (3 of 3 frames rendered)\n");
    // Issue 41 §5: a job that sets no size (the default 960 on a 48 px plate) is told nothing.
    write_job(dir / "job2.yaml",
              "input: {path: p.####.exr}\n"
              "output: {path: out2/d.####.exr, preview: {path: prev2/p.####.png}}\n"
              "model: {path: " +
                  model.string() + ", size: plate, device: cpu}\n");
    r = run_cli({(dir / "job2.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_FALSE(contains(r.output, "output.preview.size")) << r.output;
    EXPECT_EQ(file_spec(dir / "prev2/p.1002.png").width, 48);
}

// A model's provenance reaches every EXR (issue 26 §4): its contract's license, source, source_sha256 and domain as
// depthbatch/model_*, beside the .pt's own digest; an indoor-only model is said once per job, not per frame.
TEST(Review, EveryExrCarriesTheModelsLicenceSourceAndDomain) {
    TempDir dir;
    const std::string contract =
        R"({"format": 1, "name": "roomdepth", "input": {"colorspace": "sRGB", "multiple": 1, "size": null, "fixed_size": false,
            "mean": null, "std": null}, "output": {"kind": "metric_depth", "units": "m"}, "license": "MIT",
            "source": "npm example@1.0 model.onnx", "source_sha256": "6275c23f467d476874d0eecea2a2c7059733ca6681de4f17bfbfe3fc3a52a71d",
            "domain": "indoor"})";
    const fs::path model = write_probe_model(
        dir / "room.pt", "def forward(self, x):\n    return x.mean(dim=1, keepdim=True) + 1.0\n", contract);
    for (int f = 1001; f <= 1003; ++f)
        write_image(dir / ("p." + std::to_string(f) + ".exr"), 32, 16, {"R", "G", "B"}, "half",
                    [](int, int, int) { return 0.5f; });
    const fs::path job = write_job(dir / "job.yaml",
                                   "input: {path: p.####.exr}\noutput: {path: out/d.####.exr}\n"
                                   "model: {path: " +
                                       model.string() + ", size: plate, device: cpu}\n");
    // input.scene: outdoor against the contract's domain indoor warns, once per job; unknown (the default) is one
    // info line; indoor says nothing.
    const std::string warned = "warning: input.scene outdoor: model roomdepth was trained on indoor scenes only";
    const std::string told = "info: model roomdepth was trained on indoor scenes only";
    const auto outdoor = run_cli({job.string(), "--set", "input.scene=outdoor", "--overwrite"});
    ASSERT_EQ(outdoor.exit_code, 0) << outdoor.output;
    EXPECT_NE(outdoor.output.find(warned), std::string::npos) << outdoor.output;
    EXPECT_EQ(outdoor.output.find(warned), outdoor.output.rfind(warned)) << "once per job\n" << outdoor.output;
    const auto indoor = run_cli({job.string(), "--set", "input.scene=indoor", "--overwrite"});
    ASSERT_EQ(indoor.exit_code, 0) << indoor.output;
    EXPECT_EQ(indoor.output.find("trained on indoor scenes"), std::string::npos) << indoor.output;
    const auto r = run_cli({job.string(), "--overwrite", "-v"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("warning: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(told), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find(told), r.output.rfind(told)) << "once per job\n" << r.output;
    const auto spec = file_spec(dir / "out/d.1002.exr");
    EXPECT_EQ(spec.get_string_attribute("depthbatch/model_license"), "MIT");
    EXPECT_EQ(spec.get_string_attribute("depthbatch/model_source"), "npm example@1.0 model.onnx");
    EXPECT_EQ(spec.get_string_attribute("depthbatch/model_source_sha256"),
              "6275c23f467d476874d0eecea2a2c7059733ca6681de4f17bfbfe3fc3a52a71d");
    EXPECT_EQ(spec.get_string_attribute("depthbatch/model_domain"), "indoor");
    EXPECT_EQ(spec.get_string_attribute("depthbatch/model_sha256").size(), 64u) << "the .pt's own digest stays";
    EXPECT_EQ(spec.get_string_attribute("depthbatch/source"), (dir / "p.1002.exr").string()) << "the plate";
}

// Issue 32 §7: `review --out` takes the PNG or its page: S.html names the same pair as S.png; any other ending is
// refused (exit 2) before anything is read or drawn, and nothing is left (`--out sheet.html` left a PNG named .html
// and exited 2; `--out sheet.jpg` wrote PNG bytes under .jpg). pipeline.review follows the same rule.
TEST(Review, OutIsThePngOrItsHtmlAndAnyOtherEndingIsRefusedBeforeDrawing) {
    TempDir dir;
    const fs::path job = bedroom(dir.path, "shot");
    ASSERT_EQ(run_cli({job.string(), "--frames", "1001-1002", "-q"}).exit_code, 0);
    auto r = run_cli({"review", job.string(), "--out", (dir / "a/sheet.html").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output, "wrote " + (dir / "a/sheet.png").string() + " and " + (dir / "a/sheet.html").string() +
                            " (2 of 9 frames rendered)\n");
    EXPECT_EQ(list_dir(dir / "a"), (std::vector<std::string>{"sheet.html", "sheet.png"}));
    EXPECT_EQ(read_bytes(dir / "a/sheet.png").substr(0, 8), "\x89PNG\r\n\x1a\n");
    EXPECT_EQ(read_bytes(dir / "a/sheet.html").substr(0, 15), "<!DOCTYPE html>");
    for (const std::string& name : {"sheet.jpg", "sheet", "sheet.png.bak"}) {
        const std::string out = (dir / "b" / name).string();
        r = run_cli({"review", job.string(), "--out", out});
        EXPECT_EQ(r.exit_code, 2) << r.output;
        const std::string ext = fs::path(name).extension().string();
        EXPECT_EQ(r.output, "depthbatch: error: review --out: " + out +
                                ": the review sheet is a PNG and its page an HTML "
                                "file beside it; give a path ending in .png or .html (either names the pair), not " +
                                (ext.empty() ? std::string("one without an extension") : "'" + ext + "'") + "\n");
        EXPECT_FALSE(fs::exists(dir / "b")) << name;
    }
    // The job's pipeline.review: .html names the pair, another ending is the job's error (file:line, key).
    r = run_cli({"review", job.string(), "--set", "pipeline.review=" + (dir / "c/s.html").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(dir / "c"), (std::vector<std::string>{"s.html", "s.png"}));
    r = run_cli({"review", job.string(), "--set", "pipeline.review=" + (dir / "d/s.jpg").string()});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(contains(r.output,
                         "key 'pipeline.review': the review sheet is a PNG and its page an HTML file beside it; "
                         "give a path ending in .png or .html (either names the pair), not '.jpg'"))
        << r.output;
    EXPECT_FALSE(fs::exists(dir / "d"));
}

// Issue 32 §7: a shot in a folder whose name is not UTF-8 (Latin-1 "é" = 0xE9) gets its sheet (it exited 5 with
// "json type_error.316" and left an empty manifest in the temporary folder each time); the plate thumbnails and
// depths are read from those very paths, and no temporary is left anywhere on success or failure.
TEST(Review, ALatin1ShotFolderGetsItsSheetAndLeavesNoTemporary) {
    TempDir dir;
    const fs::path shot = dir / "plat\xe9s";
    fs::create_directories(shot);
    for (int f = 1001; f <= 1002; ++f) {
        const std::string name = "bedroom." + std::to_string(f) + ".jpg";
        fs::create_symlink(samples_dir() / "plates/bedroom" / name, shot / name);
    }
    const fs::path job = write_job(dir / "shot.yaml", "input:\n  path: placeholder\noutput:\n  path: out/d.####.exr\n");
    const std::vector<std::string> set = {"--set", "input.path=" + (shot / "bedroom.####.jpg").string(), "--set",
                                          "output.path=" + (shot / "out/d.####.exr").string()};
    auto args = std::vector<std::string>{job.string(), "-q"};
    args.insert(args.end(), set.begin(), set.end());
    ASSERT_EQ(run_cli(args).exit_code, 0);
    ASSERT_TRUE(fs::exists(shot / "out/d.1002.exr"));
    fs::create_directories(dir / "tmp");
    const std::string env = "env TMPDIR='" + (dir / "tmp").string() + "'";
    args = {"review", job.string(), "--out", (shot / "sheet.png").string()};
    args.insert(args.end(), set.begin(), set.end());
    auto r = run_cli(args, env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "(2 of 2 frames rendered)")) << r.output;
    const std::string page = read_bytes(shot / "sheet.html");
    EXPECT_TRUE(contains(page, "2 of 2 frames rendered")) << page.substr(0, 2000);
    EXPECT_FALSE(contains(page, "<td>missing</td>")) << "both depths were read from the Latin-1 paths";
    EXPECT_EQ(list_dir(dir / "tmp"), std::vector<std::string>{}) << "the manifest is removed";
    // A failing review (no Python): nothing beside the sheet, nothing in the temporary folder.
    fs::remove(shot / "sheet.png");
    fs::remove(shot / "sheet.html");
    r = run_cli(args, env + " DEPTHBATCH_PYTHON=/nonexistent/python3");
    EXPECT_EQ(r.exit_code, 5) << r.output;
    EXPECT_EQ(list_dir(dir / "tmp"), std::vector<std::string>{});
    EXPECT_EQ(list_dir(shot), (std::vector<std::string>{"bedroom.1001.jpg", "bedroom.1002.jpg", "out"}));
}
