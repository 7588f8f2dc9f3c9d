// Issue 24: video (multi-frame) models in the pipeline. A scripted probe video model (its depth mixes the frames of
// its window) renders at plate size with the shot's frame numbers, and a partial render equals the whole (its warm-up
// starts at the shot's first frame); chunks (issue 34) run their own windows and equal the whole render (metric) or
// stay within 0.5% of its span (relative), and `submit` cuts a shot into chunks of bounded overhead; and the
// parity test: Video Depth Anything Small with seeded weights (tools/vda_fixtures.py, exported by tools/export.py)
// renders tests/data/vda/shot like the official infer_video_depth (expected.####.exr) within 1e-4 of the depth span,
// where the same model frame by frame (T = 1) does not (a negative control).
//
// The fixtures and the Python tools come from the source tree; DEPTHBATCH_VDA_ROOT points the parity test at another
// checkout holding them (tools/ and tests/data/vda).
#include "support/test_support.h"

#include "depthbatch/depth_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <regex>
#include <sstream>

using namespace depthbatch::test;

namespace {

/// 8-bit plates 30x20 of frames `frames`: a gradient that moves with the frame number.
void write_plates(const fs::path& dir, const std::vector<int>& frames) {
    for (int f : frames)
        write_image(dir / ("plate." + std::to_string(f) + ".png"), 30, 20, {"R", "G", "B"}, "uint8",
                    [f](int x, int y, int c) {
                        return std::fmod(0.013f * static_cast<float>(x * (c + 1) + 2 * y + 3 * f), 1.0f);
                    });
}

std::vector<int> odd_frames(int from, int to) {
    std::vector<int> v;
    for (int f = from; f <= to; f += 2) v.push_back(f);
    return v;
}

}  // namespace

TEST(VideoDepth, RendersAtPlateSizeWithTheShotsFrameNumbersAndAPartialRenderEqualsTheWhole) {
    TempDir dir;
    write_probe_video_model(dir.path / "video.pt");
    const std::vector<int> shot = odd_frames(1001, 1199);  // 100 frames: windows over the frames rendered
    write_plates(dir.path, shot);
    write_job(dir.path / "job.yaml",
              "input: {path: plate.####.png, frames: 1001-1199x2}\n"
              "model: {path: video.pt, size: plate}\n"
              "output: {path: whole/d.####.exr}\n");
    auto r = run_cli({(dir.path / "job.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("video windows: 1 window(s) of 32 frames at 42x28 in"), std::string::npos)
        << "the log gives each window's time\n"
        << r.output;
    std::vector<std::string> expected;
    for (int f : shot) expected.push_back("d." + std::to_string(f) + ".exr");
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(list_dir(dir.path / "whole"), expected) << "the shot's frame numbers, no others";
    const OIIO::ImageSpec spec = file_spec(dir.path / "whole/d.1051.exr");
    EXPECT_EQ(spec.width, 30);
    EXPECT_EQ(spec.height, 20);
    EXPECT_EQ(spec.get_string_attribute("depthbatch/temporal"),
              "video windows: 32 frames, overlap 10, crossfade 8, align scale_shift");

    // Frames 1061-1069 alone (shot positions 30-34): windows 0 and 1 make them (plan_video_windows), fed positions
    // 0-53 (1001-1107) as warm-up: they see what the whole render's saw.
    r = run_cli({(dir.path / "job.yaml").string(), "--frames", "1061-1069x2", "--set",
                 "output.path=" + (dir.path / "part/d.####.exr").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("49 warm-up frames"), std::string::npos)
        << "the inputs of windows 0 and 1, which make them: 1001-1107 (54 frames) less the 5 written\n"
        << r.output;
    EXPECT_EQ(list_dir(dir.path / "part"),
              (std::vector<std::string>{"d.1061.exr", "d.1063.exr", "d.1065.exr", "d.1067.exr", "d.1069.exr"}));
    for (int f : odd_frames(1061, 1069)) {
        const std::string name = "d." + std::to_string(f) + ".exr";
        EXPECT_EQ(depth_values(dir.path / "part" / name), depth_values(dir.path / "whole" / name)) << name;
    }
    // The temporal path matters: the probe's frames differ from a frame-by-frame run of the same model (T = 1).
    depthbatch::ModelSettings options;
    options.path = (dir.path / "video.pt").string();
    options.device = depthbatch::ModelDevice::cpu();
    const auto model = depthbatch::DepthModel::load(options);
    depthbatch::ModelInput in;
    in.width = 42, in.height = 28;
    in.chw.assign(3 * 42 * 28, 0.25f);
    const auto one = model->infer({&in});
    ASSERT_EQ(one.size(), 1u);
    EXPECT_NEAR(one[0].data.at(0), 0.375f, 1e-6) << "T = 1: the frame is its own window (0.25 + 0.5 x 0.25)";
}

TEST(VideoDepth, AMissingPlateEndsTheWindowsAndItsFramesAreRenderedAgainOnceItExists) {
    TempDir dir;
    write_probe_video_model(dir.path / "video.pt");
    std::vector<int> shot;
    for (int f = 1001; f <= 1040; ++f) shot.push_back(f);
    write_plates(dir.path, shot);
    const std::string job =
        "input: {path: plate.####.png, frames: 1001-1040}\n"
        "model: {path: video.pt, size: plate}\n"
        "pipeline: {on_error: continue}\n";
    write_job(dir.path / "clean.yaml", job + "output: {path: clean/d.####.exr}\n");
    write_job(dir.path / "gap.yaml", job + "output: {path: gap/d.####.exr}\n");
    auto r = run_cli({(dir.path / "clean.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    fs::rename(dir.path / "plate.1015.png", dir.path / "held_back.png");
    r = run_cli({(dir.path / "gap.yaml").string()});
    ASSERT_EQ(r.exit_code, exit_status(depthbatch::ExitCode::Partial)) << r.output;
    EXPECT_EQ(list_dir(dir.path / "gap").size(), 39u);
    // 1001-1014 were finished by the tail padding at the gap, 1016-1040 started afresh after it: all are marked.
    for (int f : {1001, 1014, 1016, 1040})
        EXPECT_EQ(file_spec(dir.path / ("gap/d." + std::to_string(f) + ".exr"))
                      .get_string_attribute("depthbatch/temporal_context"),
                  "cut: 1015")
            << f;
    EXPECT_NE(depth_values(dir.path / "gap/d.1020.exr"), depth_values(dir.path / "clean/d.1020.exr"))
        << "after the gap the windows start afresh (another first frame and reference)";
    // The plate is back: --skip-existing renders every marked frame again, and the shot equals the clean render.
    fs::rename(dir.path / "held_back.png", dir.path / "plate.1015.png");
    r = run_cli({(dir.path / "gap.yaml").string(), "--skip-existing"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (int f : shot) {
        const std::string name = "d." + std::to_string(f) + ".exr";
        EXPECT_EQ(depth_values(dir.path / "gap" / name), depth_values(dir.path / "clean" / name)) << name;
    }
}

// Issue 32 §5: the same hole in a sequence found on disk (no input.frames) is a missing plate too: the windows end
// at it and every frame they made is marked, instead of windows joined across it; once the plate is back,
// --skip-existing renders the marked frames again and the shot equals a clean render.
TEST(VideoDepth, AHoleInADiscoveredSequenceEndsTheWindowsLikeAMissingPlate) {
    TempDir dir;
    write_probe_video_model(dir.path / "video.pt");
    std::vector<int> shot;
    for (int f = 1001; f <= 1040; ++f) shot.push_back(f);
    write_plates(dir.path, shot);
    const std::string job =
        "input: {path: plate.####.png}\n"
        "model: {path: video.pt, size: plate}\n"
        "pipeline: {on_error: continue}\n";
    write_job(dir.path / "gap.yaml", job + "output: {path: gap/d.####.exr}\n");
    auto r = run_cli({(dir.path / "gap.yaml").string(), "--output", (dir.path / "clean/d.####.exr").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    fs::rename(dir.path / "plate.1015.png", dir.path / "held_back.png");
    r = run_cli({(dir.path / "gap.yaml").string()});
    ASSERT_EQ(r.exit_code, exit_status(depthbatch::ExitCode::Partial)) << r.output;
    EXPECT_NE(r.output.find("frames 1015 are missing from that sequence"), std::string::npos) << r.output;
    EXPECT_EQ(list_dir(dir.path / "gap").size(), 39u);
    for (int f : {1001, 1014, 1016, 1040})
        EXPECT_EQ(file_spec(dir.path / ("gap/d." + std::to_string(f) + ".exr"))
                      .get_string_attribute("depthbatch/temporal_context"),
                  "cut: 1015")
            << f;
    fs::rename(dir.path / "held_back.png", dir.path / "plate.1015.png");
    r = run_cli({(dir.path / "gap.yaml").string(), "--skip-existing"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (int f : shot) {
        const std::string name = "d." + std::to_string(f) + ".exr";
        EXPECT_EQ(read_bytes(dir.path / "gap" / name), read_bytes(dir.path / "clean" / name)) << name;
    }
}

// Issue 32 item 4 on a video shot (it printed 40/39): with on_error: continue and the first two plates missing, each
// frame line counts from 1 to the shot's 40 frames, the missing ones included, and the progress only goes up,
// reaching 100% with the last frame.
TEST(VideoDepth, ProgressCountsMissingPlatesAndNeverGoesBackwards) {
    TempDir dir;
    write_probe_video_model(dir.path / "video.pt");
    std::vector<int> shot;
    for (int f = 1003; f <= 1040; ++f) shot.push_back(f);
    write_plates(dir.path, shot);
    write_job(dir.path / "job.yaml",
              "input: {path: plate.####.png, frames: 1001-1040}\n"
              "model: {path: video.pt, size: plate}\n"
              "output: {path: d/d.####.exr}\n"
              "pipeline: {on_error: continue}\n");
    const auto r = run_cli({(dir.path / "job.yaml").string()});
    ASSERT_EQ(r.exit_code, exit_status(depthbatch::ExitCode::Partial)) << r.output;
    std::vector<std::pair<int, int>> counts;
    std::vector<double> pct;
    std::istringstream text(r.output);
    for (std::string l; std::getline(text, l);) {
        std::smatch m;
        if (std::regex_search(l, m, std::regex("^frame [0-9]+ (rendered|failed) ([0-9]+)/([0-9]+)")))
            counts.push_back({std::stoi(m[2]), std::stoi(m[3])});
        if (std::regex_search(l, m, std::regex("\\(Progress: ([0-9.]+)%\\)"))) pct.push_back(std::stod(m[1]));
    }
    ASSERT_EQ(counts.size(), 40u) << r.output;
    for (size_t i = 0; i < counts.size(); ++i)
        EXPECT_EQ(counts[i], std::make_pair(static_cast<int>(i) + 1, 40)) << r.output;
    ASSERT_EQ(pct.size(), 40u) << r.output;
    for (size_t i = 1; i < pct.size(); ++i) EXPECT_GE(pct[i], pct[i - 1]) << r.output;
    for (size_t i = 0; i + 1 < pct.size(); ++i) EXPECT_LT(pct[i], 100.0) << r.output;
    EXPECT_EQ(pct.back(), 100.0) << r.output;
    EXPECT_EQ(list_dir(dir.path / "d").size(), 38u);
}

TEST(VideoDepth, SubmitCutsAVideoModelShotIntoChunksOfBoundedOverhead) {
    TempDir dir;
    write_probe_video_model(dir.path / "video.pt");
    write_plates(dir.path, odd_frames(1001, 1079));
    write_job(dir.path / "job.yaml",
              "input: {path: plate.####.png, frames: 1001-1079x2}\n"
              "model: {path: video.pt, size: plate}\n"
              "output: {path: out/d.####.exr}\n");
    // By default: no chunk size within 1.3x the whole render's windows for 40 frames (2 windows): one task.
    auto r = run_cli({"submit", (dir.path / "job.yaml").string(), "--engine", "slurm", "--dry-run"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("#SBATCH --array=1-1\n"), std::string::npos) << "one task for the 40 frames\n" << r.output;
    EXPECT_NE(
        r.output.find("video model (input.frames 32, align scale_shift): 1 chunk of 40 frames run 2 windows of 32 "
                      "frames in all, 1.00x the whole render's 2 (the default chunk size"),
        std::string::npos)
        << r.output;
    // --chunk-size as given: 4 chunks (10 frames each: windows {0}, {0}, {0,1}, {0,1}), the overhead said.
    r = run_cli({"submit", (dir.path / "job.yaml").string(), "--engine", "slurm", "--chunk-size", "10", "--dry-run"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("#SBATCH --array=1-4\n"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("4 chunks of 10 frames run 6 windows of 32 frames in all, 3.00x the whole render's 2"),
              std::string::npos)
        << r.output;
    // The one task renders the whole shot (--chunk 1/1).
    r = run_cli({(dir.path / "job.yaml").string(), "--chunk", "1/1"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(dir.path / "out").size(), 40u);
    // A single-frame model's shot keeps its chunks.
    write_p_mean(dir.path / "mean.pt");
    r = run_cli({"submit", (dir.path / "job.yaml").string(), "--engine", "slurm", "--chunk-size", "10", "--dry-run",
                 "--set", "model.path=" + (dir.path / "mean.pt").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("#SBATCH --array=1-4\n"), std::string::npos) << r.output;
}

namespace {

/// Depth span (max - min) over every frame of `frames` in `dir` (d.####.exr).
double depth_span(const fs::path& dir, const std::vector<int>& frames) {
    float lo = std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::lowest();
    for (int f : frames)
        for (float v : depth_values(dir / ("d." + std::to_string(f) + ".exr")))
            lo = std::min(lo, v), hi = std::max(hi, v);
    return static_cast<double>(hi) - lo;
}

/// Mean |a - b| over the pixels.
double mean_change(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) s += std::abs(static_cast<double>(a[i]) - b[i]);
    return a.empty() ? 0 : s / static_cast<double>(a.size());
}

/// Issue 34: a shot of `n` frames rendered whole and as --chunk k/4 (n / 4 frames each); the largest per-pixel difference
/// over the shot as a fraction of its depth span, and whether a chunk boundary changes more than a frame within a
/// chunk does. Each chunk's warm-up is bounded (the log's count), wherever it sits.
struct ChunkRun {
    double error = 0;         ///< max |chunked - whole| / span
    double boundary = 0;      ///< largest mean frame-to-frame change across a chunk boundary (chunked render)
    double within = 0;        ///< largest mean frame-to-frame change between two frames of one chunk
    std::vector<int> warmup;  ///< each chunk's warm-up frames
};
ChunkRun render_in_chunks(const TempDir& dir, bool metric, int n, const std::string& more_job = "") {
    write_probe_video_model(dir.path / "video.pt", metric);
    std::vector<int> shot;
    for (int f = 1001; f <= 1000 + n; ++f) shot.push_back(f);
    write_plates(dir.path, shot);
    write_job(dir.path / "job.yaml", "input: {path: plate.####.png, frames: 1001-" + std::to_string(1000 + n) +
                                         "}\n"
                                         "model: {path: video.pt, size: plate}\n"
                                         "output: {path: whole/d.####.exr}\n" +
                                         more_job);
    ChunkRun out;
    auto r = run_cli({(dir.path / "job.yaml").string()});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    for (int k = 1; k <= 4; ++k) {
        r = run_cli({(dir.path / "job.yaml").string(), "--chunk", std::to_string(k) + "/4", "--set",
                     "output.path=" + (dir.path / "chunks/d.####.exr").string()});
        EXPECT_EQ(r.exit_code, 0) << r.output;
        const auto at = r.output.find(" warm-up frames");
        const auto from = r.output.rfind(' ', at - 1);
        out.warmup.push_back(at == std::string::npos ? -1 : std::stoi(r.output.substr(from + 1, at - from - 1)));
    }
    EXPECT_EQ(list_dir(dir.path / "chunks").size(), static_cast<size_t>(n));
    const double span = depth_span(dir.path / "whole", shot);
    EXPECT_GT(span, 0);
    std::vector<float> prev;
    for (size_t i = 0; i < shot.size(); ++i) {
        const std::string name = "d." + std::to_string(shot[i]) + ".exr";
        const std::vector<float> whole = depth_values(dir.path / "whole" / name),
                                 part = depth_values(dir.path / "chunks" / name);
        EXPECT_EQ(whole.size(), part.size()) << name;
        for (size_t p = 0; p < whole.size() && p < part.size(); ++p)
            out.error = std::max(out.error, std::abs(static_cast<double>(whole[p]) - part[p]) / span);
        if (i > 0) {
            const double change = mean_change(prev, part);
            double& worst = i % static_cast<size_t>(n / 4) == 0 ? out.boundary : out.within;
            worst = std::max(worst, change);
        }
        prev = part;
    }
    return out;
}

}  // namespace

TEST(VideoDepth, ChunksOfAMetricShotEqualTheWholeRender) {
    TempDir dir;
    const ChunkRun run = render_in_chunks(dir, true, 200);
    EXPECT_LE(run.error, 1e-5) << "every frame within 1e-5 of the depth span";
    std::cout << "metric probe: max |chunked - whole| = " << run.error << " of the depth span\n";
    // Chunk 1 (frames 1001-1050) is the streaming path: 0-31 frames after; chunks 2-4 run their windows' inputs only,
    // the same bound wherever they sit (no shot-from-the-start warm-up: that would be 50, 100, 150 frames).
    ASSERT_EQ(run.warmup.size(), 4u);
    for (size_t k = 1; k < 4; ++k) EXPECT_LT(run.warmup[k], 2 * 32) << "chunk " << k + 1;
    EXPECT_LE(run.boundary, run.within) << "no chunk boundary shows";
}

// A video model with depth.stabilize (issue 34: such a chunk rendered from the shot's first frame): each chunk runs
// its windows for its frames and the stabilizer's radius on each side, and equals the whole render.
TEST(VideoDepth, ChunksOfAStabilizedMetricShotEqualTheWholeRenderWithBoundedWarmUp) {
    TempDir dir;
    const ChunkRun run = render_in_chunks(dir, true, 200, "depth: {stabilize: true, stabilize_radius: 3}\n");
    EXPECT_LE(run.error, 1e-6) << "every frame as the whole render's";
    ASSERT_EQ(run.warmup.size(), 4u);
    for (size_t k = 1; k < 4; ++k) EXPECT_LT(run.warmup[k], 2 * 32 + 2 * 3) << "chunk " << k + 1;
}

// A plate missing inside a chunk's windows (pipeline.on_error: continue): the chunk's frames its windows held are
// not written (failed, named), the frames after it start the windows afresh and are written marked (as in a whole
// render after a gap); once the plate is back, the chunk with --skip-existing equals the whole render.
TEST(VideoDepth, AMissingPlateInsideAChunksWindowsIsRenderedAgainOnceItExists) {
    TempDir dir;
    write_probe_video_model(dir.path / "video.pt", true);
    std::vector<int> shot;
    for (int f = 1001; f <= 1200; ++f) shot.push_back(f);
    write_plates(dir.path, shot);
    const std::string job =
        "input: {path: plate.####.png, frames: 1001-1200}\n"
        "model: {path: video.pt, size: plate}\n"
        "pipeline: {on_error: continue}\n";
    write_job(dir.path / "whole.yaml", job + "output: {path: whole/d.####.exr}\n");
    write_job(dir.path / "chunk.yaml", job + "output: {path: chunk/d.####.exr}\n");
    auto r = run_cli({(dir.path / "whole.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // Chunk 3/4: frames 1101-1150 (positions 100-149), windows 4-6; plate 1131 (position 130) held back.
    fs::rename(dir.path / "plate.1131.png", dir.path / "held_back.png");
    r = run_cli({(dir.path / "chunk.yaml").string(), "--chunk", "3/4"});
    ASSERT_EQ(r.exit_code, exit_status(depthbatch::ExitCode::Partial)) << r.output;
    EXPECT_NE(r.output.find("frame 1120: not written: a failed frame cut the video windows that make it"),
              std::string::npos)
        << "window 4 finished 1101-1112; 1113-1130 waited for window 5\n"
        << r.output;
    EXPECT_FALSE(fs::exists(dir.path / "chunk/d.1120.exr"));
    EXPECT_TRUE(fs::exists(dir.path / "chunk/d.1105.exr"));
    EXPECT_EQ(depth_values(dir.path / "chunk/d.1105.exr"), depth_values(dir.path / "whole/d.1105.exr"));
    EXPECT_EQ(file_spec(dir.path / "chunk/d.1140.exr").get_string_attribute("depthbatch/temporal_context"),
              "cut: 1131");
    fs::rename(dir.path / "held_back.png", dir.path / "plate.1131.png");
    r = run_cli({(dir.path / "chunk.yaml").string(), "--chunk", "3/4", "--skip-existing"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (int f = 1101; f <= 1150; ++f) {
        const std::string name = "d." + std::to_string(f) + ".exr";
        EXPECT_EQ(depth_values(dir.path / "chunk" / name), depth_values(dir.path / "whole" / name)) << name;
    }
}

TEST(VideoDepth, ChunksOfARelativeShotMatchTheWholeRenderWithinTheBound) {
    TempDir dir;
    const ChunkRun run = render_in_chunks(dir, false, 400);
    EXPECT_LE(run.error, 0.005) << "every frame within 0.5% of the depth span";
    std::cout << "relative probe: max |chunked - whole| = " << run.error << " of the depth span; boundary change "
              << run.boundary << ", within chunks " << run.within << "\n";
    // 400 frames, chunks of 100: chunk 4 (frames 1301-1400, windows 13-18) starts past window 8: window 0 and 8
    // context windows besides its own (inputs of 14 windows), not the shot from its first frame (300 frames).
    ASSERT_EQ(run.warmup.size(), 4u);
    EXPECT_LT(run.warmup[3], 32 + 9 * 22 + 16) << "chunk 4";
    EXPECT_LE(run.boundary, run.within) << "no chunk boundary shows";
}

namespace {

/// The parity fixture `name` (tests/data/vda/<name>, fixture.json, expected.####.exr; the plates in tests/data/vda/shot)
/// rendered by depthbatch with the seeded model tools/ exports (`metric`: the metric variant, align none); every frame's
/// depth.Z against the official infer_video_depth within 1e-4 of the depth span. Returns the exported model's path and
/// the span for a negative control ("" when the fixtures are absent: the test is skipped).
struct Parity {
    fs::path model, shot;
    std::vector<int> frames;
    float span = 0;
};

Parity render_parity(const TempDir& dir, const std::string& name, bool metric) {
    const char* env = std::getenv("DEPTHBATCH_VDA_ROOT");
    const fs::path root = env && *env ? fs::path(env) : fs::path(DEPTHBATCH_SOURCE_DIR);
    const fs::path plates = root / "tests/data/vda/shot", expected = root / "tests/data/vda" / name;
    Parity p;
    if (!fs::exists(expected / "fixture.json") || !fs::exists(root / "tools/vda_fixtures.py")) return p;
    const nlohmann::json fixture = read_json(expected / "fixture.json");
    const int seed = fixture.at("seed").get<int>();
    const std::string variant = fixture.at("variant").get<std::string>();
    const std::vector<int> range = fixture.at("frames").get<std::vector<int>>();
    EXPECT_EQ(range.size(), 2u);
    if (range.size() != 2) return p;
    const std::string python_env = "env PYTHONPATH='" + root.string() + "'";
    std::vector<std::string> args = {"-m",
                                     "tools.vda_fixtures",
                                     "checkpoint",
                                     "--variant",
                                     variant,
                                     "--seed",
                                     std::to_string(seed),
                                     "--out",
                                     (dir.path / (name + ".pth")).string()};
    auto r = run_program(DEPTHBATCH_TEST_PYTHON, args, python_env);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    args = {"-m",
            "tools.export",
            "video-depth-anything",
            "--variant",
            variant,
            "--checkpoint",
            (dir.path / (name + ".pth")).string(),
            "--out",
            (dir.path / (name + ".pt")).string()};
    if (metric) args.push_back("--metric");
    r = run_program(DEPTHBATCH_TEST_PYTHON, args, python_env);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    if (r.exit_code != 0) return p;
    // Raw model output (depth.Z = what the windows give), at the plate's size (a multiple of 14: nothing resized).
    write_job(dir.path / (name + ".yaml"), "input: {path: '" + (plates / "plate.####.png").string() + "', frames: " +
                                               std::to_string(range[0]) + "-" + std::to_string(range[1]) +
                                               "}\n"
                                               "model: {path: " +
                                               name +
                                               ".pt, size: plate, device: cpu}\n"
                                               "output: {path: out_" +
                                               name + "/d.####.exr}\n");
    r = run_cli({(dir.path / (name + ".yaml")).string()});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    if (r.exit_code != 0) return p;
    EXPECT_NE(r.output.find(metric ? "align none" : "align scale_shift"), std::string::npos) << r.output;
    p.span = fixture.at("depth_max").get<float>() - fixture.at("depth_min").get<float>();
    EXPECT_GT(p.span, 0.0f);
    float worst = 0;
    int worst_frame = 0;
    for (int f = range[0]; f <= range[1]; ++f) {
        const std::vector<float> got = depth_values(dir.path / ("out_" + name + "/d." + std::to_string(f) + ".exr"));
        OIIO::ImageBuf want = read_image(expected / ("expected." + std::to_string(f) + ".exr"));
        EXPECT_EQ(got.size(), static_cast<size_t>(want.spec().width) * want.spec().height) << f;
        if (got.size() != static_cast<size_t>(want.spec().width) * want.spec().height) return p;
        const float* z = static_cast<const float*>(want.localpixels());
        const int nch = want.spec().nchannels;
        for (size_t i = 0; i < got.size(); ++i)
            if (const float d = std::abs(got[i] - z[i * nch]); d > worst) worst = d, worst_frame = f;
    }
    EXPECT_LE(worst, 1e-4f * p.span) << name << ": max |depthbatch - official| " << worst << " at frame " << worst_frame
                                     << ", span " << p.span;
    std::cout << name << " parity: max |depthbatch - official| = " << worst / p.span << " of the depth span (frame "
              << worst_frame << ")\n";
    p.model = dir.path / (name + ".pt"), p.shot = plates, p.frames = range;
    return p;
}

/// The model's T = 1 forward of plate `f` (8-bit sRGB read as [0,1]: the model's colour space, nothing resized).
std::vector<float> frame_by_frame(const depthbatch::DepthModel& model, const fs::path& plates, int f) {
    OIIO::ImageBuf plate = read_image(plates / ("plate." + std::to_string(f) + ".png"));
    const int w = plate.spec().width, h = plate.spec().height, nch = plate.spec().nchannels;
    depthbatch::ModelInput in;
    in.width = w, in.height = h;
    in.chw.resize(static_cast<size_t>(3) * w * h);
    const float* px = static_cast<const float*>(plate.localpixels());
    for (int c = 0; c < 3 && c < nch; ++c)
        for (size_t i = 0; i < static_cast<size_t>(w) * h; ++i)
            in.chw[static_cast<size_t>(c) * w * h + i] = px[i * nch + c];
    return model.infer({&in}).at(0).data;
}

}  // namespace

TEST(VideoDepthParity, WholeShotMatchesTheOfficialInferVideoDepthAndFrameByFrameDoesNot) {
    TempDir dir;
    const Parity p = render_parity(dir, "shot", false);
    if (p.model.empty() && !HasFailure())
        GTEST_SKIP() << "no Video Depth Anything fixtures (tests/data/vda/shot, tools/vda_fixtures.py)";
    ASSERT_FALSE(p.model.empty());
    // Negative control: the same model frame by frame (T = 1) is tens of percent of the span away.
    depthbatch::ModelSettings options;
    options.path = p.model.string();
    options.device = depthbatch::ModelDevice::cpu();
    const auto model = depthbatch::DepthModel::load(options);
    float control = 0;
    for (int f : {p.frames[0], (p.frames[0] + p.frames[1]) / 2, p.frames[1]}) {
        const std::vector<float> one = frame_by_frame(*model, p.shot, f);
        OIIO::ImageBuf want = read_image(p.shot / ("expected." + std::to_string(f) + ".exr"));
        const float* z = static_cast<const float*>(want.localpixels());
        ASSERT_EQ(one.size(), static_cast<size_t>(want.spec().width) * want.spec().height);
        for (size_t i = 0; i < one.size(); ++i)
            control = std::max(control, std::abs(one[i] - z[i * want.spec().nchannels]));
    }
    EXPECT_GT(control, 0.1f * p.span) << "a frame-by-frame run should not reproduce the windowed output";
    std::cout << "negative control (T = 1): max difference " << control / p.span << " of the depth span\n";
}

TEST(VideoDepthParity, MetricShotIsNotRescaled) {
    TempDir dir;
    const Parity p = render_parity(dir, "shot_metric", true);
    if (p.model.empty() && !HasFailure())
        GTEST_SKIP() << "no metric Video Depth Anything fixtures (tests/data/vda/shot_metric)";
    EXPECT_FALSE(p.model.empty());
}

// Issue 41 §2, on the real network: Video Depth Anything Small (seeded weights) over the parity shot held on twos
// (each plate twice, as animation and slowed footage are), relative, with depth.stabilize. Two equal plates give the
// model near-equal depth; the stabilizer's consecutive-frame fits degenerated there and frames reached 7,596 where the
// raw maximum was 1.42. Every stabilized value now stays within its raw window's range widened by a quarter of its
// span on each side (temporal_stabilizer.h, "The bound"), at radius 1 and 4.
TEST(VideoDepthParity, AShotHeldOnTwosStabilizedStaysWithinItsRawWindowsRange) {
    TempDir dir;
    const Parity p = render_parity(dir, "shot", false);
    if (p.model.empty() && !HasFailure()) GTEST_SKIP() << "no Video Depth Anything fixtures (tests/data/vda/shot)";
    ASSERT_FALSE(p.model.empty());
    fs::create_directories(dir / "twos");
    const int first = p.frames[0], n = 48;
    for (int i = 0; i < n; ++i)
        fs::create_symlink(p.shot / ("plate." + std::to_string(first + i / 2) + ".png"),
                           dir / ("twos/plate." + std::to_string(first + i) + ".png"));
    const std::string frames = std::to_string(first) + "-" + std::to_string(first + n - 1);
    const std::string job = "input: {path: twos/plate.####.png, frames: " + frames +
                            "}\n"
                            "model: {path: shot.pt, size: plate, device: cpu}\n";
    write_job(dir / "raw.yaml", job + "output: {path: raw/d.####.exr}\n");
    ASSERT_EQ(run_cli({(dir / "raw.yaml").string(), "-q"}).exit_code, 0);
    std::vector<std::vector<float>> raw;
    for (int i = 0; i < n; ++i) raw.push_back(depth_values(dir / ("raw/d." + std::to_string(first + i) + ".exr")));
    for (int radius : {1, 4}) {
        const std::string name = "stab" + std::to_string(radius);
        write_job(dir / (name + ".yaml"), job + "depth: {stabilize: true, stabilize_radius: " + std::to_string(radius) +
                                              "}\noutput: {path: " + name + "/d.####.exr}\n");
        const auto r = run_cli({(dir / (name + ".yaml")).string(), "-q"});
        ASSERT_EQ(r.exit_code, 0) << r.output;
        double worst = 0;
        for (int i = 0; i < n; ++i) {
            double lo = INFINITY, hi = -INFINITY;
            for (int k = std::max(0, i - radius); k <= std::min(n - 1, i + radius); ++k)
                for (float v : raw[static_cast<size_t>(k)]) lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
            for (float v : depth_values(dir / (name + "/d." + std::to_string(first + i) + ".exr")))
                worst = std::max(worst, std::max(lo - v, v - hi) / (hi - lo));
        }
        EXPECT_LE(worst, 0.25) << "radius " << radius << ": a stabilized value left its raw window's range by " << worst
                               << " of its span";
        std::cout << "held on twos, radius " << radius << ": worst excess over the raw window's range " << worst
                  << " of its span\n";
    }
}

// Issue 41 §3: chunks own their frames. Chunk 3/3 of 1001-1120 (1081-1120) reads plate 1070 only as context (its
// windows and the relative chain's). With 1070 missing: under on_error: continue the chunk says so as context, counts
// only its own 40 frames (never 41/40), lists 1070 in the summary's context_failed, and exits 7, as `validate --chunk
// 3/3` predicts; under on_error: stop both exit 3 before anything is written, naming 1070 as context.
TEST(VideoDepth, AChunkReportsAMissingContextPlateAsContextAndValidatePredictsIt) {
    TempDir dir;
    write_probe_video_model(dir.path / "video.pt");
    std::vector<int> shot;
    for (int f = 1001; f <= 1120; ++f)
        if (f != 1070) shot.push_back(f);
    write_plates(dir.path, shot);
    for (const char* on_error : {"continue", "stop"}) {
        SCOPED_TRACE(on_error);
        const fs::path job = write_job(dir.path / "job.yaml",
                                       "input: {path: plate.####.png, frames: 1001-1120}\n"
                                       "model: {path: video.pt, size: plate}\n"
                                       "output: {path: d/d.####.exr}\npipeline: {on_error: " +
                                           std::string(on_error) + "}\n");
        const bool stop = std::string(on_error) == "stop";
        const int want = exit_status(stop ? depthbatch::ExitCode::Input : depthbatch::ExitCode::Partial);
        auto v = run_cli({"validate", job.string(), "--chunk", "3/3"});
        EXPECT_EQ(v.exit_code, want) << v.output;
        EXPECT_TRUE(contains(v.output, "frame 1070: plate missing")) << v.output;
        EXPECT_TRUE(
            contains(v.output, "not a frame of this run: the video windows of frames 1081-1120 read it as context"))
            << v.output;
        const auto r = run_cli(
            {job.string(), "--chunk", "3/3", "--progress", "lines", "--summary", (dir.path / "s.json").string()});
        EXPECT_EQ(r.exit_code, want) << r.output;
        if (stop) {
            EXPECT_FALSE(fs::exists(dir.path / "d")) << "nothing is written before the refusal";
            continue;
        }
        int most = 0;
        std::istringstream text(r.output);
        for (std::string l; std::getline(text, l);) {
            std::smatch m;
            if (std::regex_search(l, m, std::regex("^frame ([0-9]+) (rendered|failed) ([0-9]+)/([0-9]+)"))) {
                EXPECT_EQ(std::stoi(m[4]), 40) << l;
                EXPECT_LE(std::stoi(m[3]), 40) << l;
                EXPECT_GE(std::stoi(m[1]), 1081) << "only the chunk's own frames are counted: " << l;
                most = std::max(most, std::stoi(m[3]));
            }
        }
        EXPECT_EQ(most, 40) << r.output;
        const auto s = read_json(dir.path / "s.json");
        EXPECT_EQ(s["context_failed"], nlohmann::json({1070})) << s.dump();
        EXPECT_EQ(s["rendered"].get<int>() + s["failed"].get<int>(), 40) << s.dump();
        EXPECT_TRUE(contains(r.output, "context plates 1070 (read, not owned, by this run) missing or failed"))
            << r.output;
        fs::remove_all(dir.path / "d");
    }
}

// A new user's T45/T46: plates 1041-1080 of 1001-1080 are cropped (28x20, the rest 30x20: model inputs 28x28, 42x28). A chunk runs only its own
// windows, planned at one model input size: each chunk, and a resume of the whole shot, is refused before anything
// renders (exit 5, the frame where the size changes, the sizes and the way out), as validate predicts. Before, chunk
// 2/2 said a stop cut frame 1041, "0 rendered, 0 failed" and exit 5 with no error line; validate said 0. The whole
// render starts the windows afresh at 1041 and writes every frame.
TEST(VideoDepth, APartOfAShotWhosePlatesChangeSizeIsRefusedAsValidateSays) {
    TempDir dir;
    write_probe_video_model(dir.path / "video.pt", true);
    for (int f = 1001; f <= 1080; ++f)
        write_image(dir.path / ("plate." + std::to_string(f) + ".png"), f <= 1040 ? 30 : 28, 20, {"R", "G", "B"},
                    "uint8", [f](int x, int y, int c) {
                        return std::fmod(0.013f * static_cast<float>(x * (c + 1) + 2 * y + 3 * f), 1.0f);
                    });
    const fs::path job = write_job(dir.path / "job.yaml",
                                   "input: {path: plate.####.png, frames: 1001-1080}\n"
                                   "model: {path: video.pt, size: plate}\noutput: {path: d/d.####.exr}\n");
    for (const char* chunk : {"1/2", "2/2"}) {
        SCOPED_TRACE(chunk);
        const auto v = run_cli({"validate", job.string(), "--chunk", chunk});
        const auto r = run_cli({job.string(), "--chunk", chunk});
        for (const auto* out : {&v, &r}) {
            EXPECT_EQ(out->exit_code, exit_status(depthbatch::ExitCode::Render)) << out->output;
            EXPECT_TRUE(contains(out->output, "depthbatch: error: frames " +
                                                  std::string(chunk[0] == '1' ? "1001-1040" : "1041-1080") +
                                                  ": the model input size changes inside the video windows"))
                << out->output;
            EXPECT_TRUE(contains(out->output, "frame 1001: 42x28, frame 1041: 28x28")) << out->output;
        }
        EXPECT_FALSE(fs::exists(dir.path / "d")) << "nothing is written before the refusal";
    }
    auto r = run_cli({job.string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(dir.path / "d").size(), 80u);
    fs::remove(dir.path / "d/d.1050.exr");
    r = run_cli({job.string(), "--skip-existing"});
    EXPECT_EQ(r.exit_code, exit_status(depthbatch::ExitCode::Render)) << r.output;
    EXPECT_TRUE(contains(r.output, "with --overwrite rather than --skip-existing")) << r.output;
}
