// Depth conventions and normalization end to end (docs/cases.md 3 and 15): each convention x each model kind
// with known numbers, chunked vs whole renders byte for byte, the statistics sidecar, stabilization.
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <iostream>

#include <OpenImageIO/imageio.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

using namespace depthbatch::test;

namespace {

std::string metadata(const fs::path& exr, const std::string& key) { return file_spec(exr).get_string_attribute(key); }

/// One 16x8 half plate p.1001.exr (RGB = 0.5) and a job; returns the job path.
fs::path const_job(const TempDir& dir, const std::string& model, const std::string& depth_yaml,
                   const std::string& out) {
    if (!fs::exists(dir / "p.1001.exr"))
        write_image(dir / "p.1001.exr", 16, 8, {"R", "G", "B"}, "half", [](int, int, int) { return 0.5f; });
    return write_job(dir / (out + ".yaml"),
                     "input: {path: p.####.exr, colorspace: sRGB}\n"
                     "model: {path: " +
                         model +
                         ", size: plate}\n"
                         "output: {path: " +
                         out + "/d.####.exr}\n" + depth_yaml);
}

}  // namespace

// docs/cases.md 15: P-const(4.0) metric: metric 4.0, inverse 0.25 (Nuke 1/z), normalized fixed 1..5 -> 0.75
// with near -> 0, and the direction in the metadata.
TEST(Depth, MetricModelConventions) {
    TempDir dir;
    write_p_const(dir / "c4.pt", 4.0, "metric_depth");
    struct Case {
        std::string depth, out;
        float expected;
    };
    const std::vector<Case> cases = {
        {"", "raw", 4.0f},
        {"depth: {kind: metric}\n", "metric", 4.0f},
        {"depth: {kind: inverse}\n", "inverse", 0.25f},
        {"depth: {kind: normalized, normalize: fixed, near: 1, far: 5}\n", "norm0", 0.75f},
        {"depth: {kind: normalized, normalize: fixed, near: 1, far: 5, near_is: 1}\n", "norm1", 0.25f},
        {"depth: {kind: metric, near: 0.5, far: 3}\n", "clip", 3.0f},
        {"depth: {kind: inverse, near: 0.5, far: 3}\n", "invclip", 1.0f / 3.0f},
    };
    for (const auto& c : cases) {
        const auto r = run_cli({const_job(dir, "c4.pt", c.depth, c.out).string()});
        ASSERT_EQ(r.exit_code, 0) << c.out << "\n" << r.output;
        const fs::path exr = dir / c.out / "d.1001.exr";
        EXPECT_NEAR(depth_at(exr, 3, 2), c.expected, 1e-6) << c.out;
    }
    EXPECT_EQ(metadata(dir / "inverse/d.1001.exr", "depthbatch/depth_convention"), "inverse");
    EXPECT_EQ(metadata(dir / "inverse/d.1001.exr", "depthbatch/depth_units"), "1/m");
    EXPECT_EQ(metadata(dir / "norm0/d.1001.exr", "depthbatch/near_is"), "0 (near = 0, far = 1)");
    EXPECT_EQ(metadata(dir / "norm1/d.1001.exr", "depthbatch/near_is"), "1 (near = 1, far = 0)");
    EXPECT_EQ(metadata(dir / "clip/d.1001.exr", "depthbatch/depth_clamped_values"), std::to_string(16 * 8));
}

// docs/cases.md 15, relative half: inverse of a relative inverse model is the model's value (0 stays 0:
// infinitely far, never Inf/NaN); metric without near/far is a config error, not a silent 1/x.
TEST(Depth, RelativeInverseModelConventions) {
    TempDir dir;
    write_p_const(dir / "c0.pt", 0.0, "relative_inverse_depth");
    auto r = run_cli({const_job(dir, "c0.pt", "depth: {kind: inverse}\n", "inv0").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(depth_at(dir / "inv0/d.1001.exr", 5, 5), 0.0f);

    // A 0 -> 1 ramp across x as relative inverse depth (P-mean on a ramp plate).
    write_p_mean(dir / "pm_ri.pt", "relative_inverse_depth");
    write_image(dir / "ramp.1001.exr", 101, 4, {"R", "G", "B"}, "float", [](int x, int, int) { return x / 100.0f; });
    auto ramp_job = [&](const std::string& depth, const std::string& out) {
        return write_job(dir / (out + ".yaml"),
                         "input: {path: ramp.####.exr, colorspace: sRGB}\n"
                         "model: {path: pm_ri.pt, size: plate}\n"
                         "output: {path: " +
                             out + "/d.####.exr}\n" + depth);
    };
    r = run_cli({ramp_job("depth: {kind: inverse}\n", "ramp_inv").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto inv = depth_values(dir / "ramp_inv/d.1001.exr");
    ASSERT_EQ(inv.size(), 101u * 4);
    for (int x = 0; x <= 100; ++x) {
        const float v = inv[101 + x];  // row 1
        ASSERT_TRUE(std::isfinite(v));
        ASSERT_NEAR(v, x / 100.0f, 1e-6);
    }
    // normalized, fixed range in the model's units: near = 1 (largest disparity), far = 0.
    r = run_cli({ramp_job("depth: {kind: normalized, normalize: fixed, near: 1, far: 0}\n", "ramp_norm").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NEAR(depth_at(dir / "ramp_norm/d.1001.exr", 100, 0), 0.0f, 1e-6) << "near (disparity 1) -> 0";
    EXPECT_NEAR(depth_at(dir / "ramp_norm/d.1001.exr", 25, 0), 0.75f, 1e-6);
    // frame normalization with percentiles 0/100 spans the ramp exactly; near_is 1 needs no inversion.
    r = run_cli({ramp_job("depth: {normalize: frame, percentiles: [0, 100], near_is: 1}\n", "ramp_frame").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NEAR(depth_at(dir / "ramp_frame/d.1001.exr", 30, 0), 0.30f, 1e-6);
    // metric from relative inverse depth with near/far metres: linear in disparity.
    r = run_cli(
        {ramp_job("depth: {kind: metric, normalize: frame, percentiles: [0, 100], near: 1, far: 5}\n", "ramp_metric")
             .string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NEAR(depth_at(dir / "ramp_metric/d.1001.exr", 100, 0), 1.0f, 1e-5);
    EXPECT_NEAR(depth_at(dir / "ramp_metric/d.1001.exr", 0, 0), 5.0f, 1e-5);
    EXPECT_NEAR(depth_at(dir / "ramp_metric/d.1001.exr", 50, 0), 1.0f / (0.2f + 0.5f * 0.8f), 1e-5);

    r = run_cli({ramp_job("depth: {kind: metric}\n", "ramp_bad").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_NE(r.output.find("depth.convention metric"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("depth.near"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "ramp_bad"));
}

TEST(Depth, RelativeDepthModelConventions) {
    TempDir dir;
    write_p_const(dir / "c2.pt", 2.0, "relative_depth");
    auto r = run_cli({const_job(dir, "c2.pt", "depth: {kind: inverse}\n", "inv").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NEAR(depth_at(dir / "inv/d.1001.exr", 1, 1), 0.5f, 1e-7);
    r = run_cli({const_job(dir, "c2.pt", "depth: {normalize: fixed, near: 1, far: 3}\n", "norm").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NEAR(depth_at(dir / "norm/d.1001.exr", 1, 1), 0.5f, 1e-7);
    EXPECT_EQ(metadata(dir / "norm/d.1001.exr", "depthbatch/depth_convention"), "normalized");
    r = run_cli({const_job(dir, "c2.pt", "depth: {kind: metric}\n", "bad").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
}

// docs/cases.md 3: 50 frames, grey rising 0.1 -> 0.9; sequence normalization. Whole render vs two overlapping
// chunks started at the same time into one folder: every file bitwise equal, every frame normalized with
// the statistics of the shot, not of the chunk (derived below), no temporary files left.
TEST(Depth, ChunksMatchWholeRenderBitForBit) {
    TempDir dir;
    write_p_mean(dir / "pmean.pt");
    constexpr int kFirst = 1001, kLast = 1050, kWidth = 128, kHeight = 72;
    const auto grey = [](int frame) { return 0.1f + 0.8f * (frame - kFirst) / 49.0f; };  // 0.1 at 1001, 0.9 at 1050
    for (int f = kFirst; f <= kLast; ++f)
        write_image(dir / ("g." + std::to_string(f) + ".exr"), kWidth, kHeight, {"R", "G", "B"}, "float",
                    [&](int, int, int) { return grey(f); });
    const std::string job =
        "input: {path: g.####.exr, colorspace: sRGB, frames: 1001-1050}\n"
        "model: {path: pmean.pt, size: plate}\n"
        "depth: {normalize: sequence}\n";
    write_job(dir / "whole.yaml", job + "output: {path: whole/d.####.exr}\n");
    write_job(dir / "chunks.yaml", job + "output: {path: chunks/d.####.exr}\n");
    auto r = run_cli({(dir / "whole.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    write_file(dir / "chunks.sh",
               "cd '" + dir.path.string() +
                   "'\n"
                   "('" DEPTHBATCH_BIN
                   "' chunks.yaml -q --skip-existing --frames 1001-1025 > a.log 2>&1; echo $? > a.rc) &\n"
                   "('" DEPTHBATCH_BIN
                   "' chunks.yaml -q --skip-existing --frames 1025-1050 > b.log 2>&1; echo $? > b.rc) &\n"
                   "wait\n");
    ASSERT_EQ(std::system(("bash '" + (dir / "chunks.sh").string() + "'").c_str()), 0);
    EXPECT_EQ(read_bytes(dir / "a.rc"), "0\n") << read_bytes(dir / "a.log");
    EXPECT_EQ(read_bytes(dir / "b.rc"), "0\n") << read_bytes(dir / "b.log");
    for (int f = 1001; f <= 1050; ++f) {
        const std::string name = "d." + std::to_string(f) + ".exr";
        ASSERT_TRUE(fs::exists(dir / "chunks" / name)) << name;
        ASSERT_EQ(read_bytes(dir / "chunks" / name), read_bytes(dir / "whole" / name))
            << name << " differs from the whole render";
    }

    // The expected values, from the inputs and the formulas of depth_normalizer.h and sequence_stats.h:
    // 1. P-mean of a grey plate is the grey: the raw value of frame f is grey(f) at every pixel (input and
    //    probe are both sRGB, size: plate: no colour change, no resize).
    // 2. depth.normalize: sequence alone makes depth.kind normalized. The range is the 2nd / 98th percentile
    //    (defaults) of every pixel of the sampled frames: depth.stats_frames 16 (default) of the 50, evenly
    //    spaced, first and last included. Nearest rank over N = 16 frames x 128 x 72 px: rank round(0.02 (N-1))
    //    falls among the pixels of the first sampled frame (rank < N/16) and round(0.98 (N-1)) among those of
    //    the last (rank >= 15 N/16), so lo = grey(1001) = 0.1 and hi = grey(1050) = 0.9.
    // 3. A metric-depth model is depth-like: near = lo, far = hi, t = (r - near) / (far - near), written as t
    //    (near_is 0). So frame f gets (grey(f) - 0.1) / 0.8 = (f - 1001) / 49: 1025 -> 24/49 = 0.4898.
    const long long n = 16LL * kWidth * kHeight;
    ASSERT_LT(std::llround(0.02 * (n - 1)), n / 16) << "2nd percentile inside the first sampled frame";
    ASSERT_GE(std::llround(0.98 * (n - 1)), 15 * n / 16) << "98th percentile inside the last sampled frame";
    const double lo = grey(kFirst), hi = grey(kLast);
    const auto stats = nlohmann::json::parse(read_bytes(dir / "chunks/d.stats.json"));
    EXPECT_EQ(stats["values"].get<long long>(), n);
    EXPECT_NEAR(stats["low"].get<double>(), lo, 1e-7);
    EXPECT_NEAR(stats["high"].get<double>(), hi, 1e-7);
    for (int f = kFirst; f <= kLast; ++f) {
        const double expected = (grey(f) - lo) / (hi - lo);
        EXPECT_NEAR(depth_at(dir / ("chunks/d." + std::to_string(f) + ".exr"), 10, 10), expected, 1e-6) << f;
    }
    const auto files = list_dir(dir / "chunks");
    EXPECT_EQ(files.size(), 51u) << "50 frames and the statistics sidecar, no temporary file";
    EXPECT_TRUE(fs::exists(dir / "chunks/d.stats.json"));
}

TEST(Depth, StatisticsSidecarIsReusedAndGuarded) {
    TempDir dir;
    write_p_mean(dir / "pmean.pt");
    for (int f = 1001; f <= 1010; ++f)
        write_image(dir / ("g." + std::to_string(f) + ".exr"), 32, 16, {"R", "G", "B"}, "float",
                    [f](int x, int, int) { return (f - 1000) * 0.05f + x * 0.01f; });
    const std::string job =
        "input: {path: g.####.exr, colorspace: sRGB, frames: 1001-1010}\n"
        "model: {path: pmean.pt, size: plate}\noutput: {path: out/d.####.exr}\n"
        "depth: {normalize: sequence, stats_frames: 4}\n";
    write_job(dir / "job.yaml", job);
    auto r = run_cli({"stats", (dir / "job.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("over frames 1001-1010x3"), std::string::npos) << r.output;
    ASSERT_TRUE(fs::exists(dir / "out/d.stats.json"));
    EXPECT_TRUE(list_dir(dir / "out") == std::vector<std::string>{"d.stats.json"}) << "stats writes only the sidecar";
    r = run_cli({(dir / "job.yaml").string(), "--frames", "1003-1004"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("sequence statistics from"), std::string::npos) << "the chunk reuses the sidecar\n"
                                                                            << r.output;
    EXPECT_EQ(metadata(dir / "out/d.1003.exr", "depthbatch/stats_sample_frames"), "1001-1010x3");

    // validate runs the render's identity check (issue 32 item 2c): the job's own sidecar is reused...
    r = run_cli({"validate", (dir / "job.yaml").string(), "--frames", "1005"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("made for this job: reused"), std::string::npos) << r.output;
    // ...another job's is exit 6 as the render's below, and --overwrite would recompute it.
    r = run_cli({"validate", (dir / "job.yaml").string(), "--set", "depth.percentiles=[5, 95]", "--frames", "1005"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::OutputExists)) << r.output;
    EXPECT_NE(r.output.find("made for another job (depth.percentiles"), std::string::npos) << r.output;
    r = run_cli({"validate", (dir / "job.yaml").string(), "--set", "depth.percentiles=[5, 95]", "--frames", "1005",
                 "--overwrite"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(read_bytes(dir / "out/d.stats.json").find("98.0"), std::string::npos) << "validate writes nothing";

    // A sidecar made for another job (other percentiles) is refused, and recomputed with --overwrite.
    r = run_cli({(dir / "job.yaml").string(), "--set", "depth.percentiles=[5, 95]", "--frames", "1005"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::OutputExists)) << r.output;
    EXPECT_NE(r.output.find("depth.percentiles"), std::string::npos) << r.output;
    r = run_cli({(dir / "job.yaml").string(), "--set", "depth.percentiles=[5, 95]", "--frames", "1005", "--overwrite"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(read_bytes(dir / "out/d.stats.json").find("5.0"), std::string::npos);
}

// Stabilization is chunk-independent too: warm-up frames make a chunk's first frames identical to the
// whole render's.
TEST(Depth, StabilizedChunksMatchWholeRender) {
    TempDir dir;
    // A relative model whose scale flickers with the plate's overall level (as networks' do), on a plate whose
    // level moves by at most 0.01 a frame (its colour barely changes: the pixels count as static).
    write_probe_model(dir / "flicker.pt",
                      "def forward(self, x):\n    m = x.mean(dim=1, keepdim=True)\n"
                      "    return m * (1.0 + 10.0 * (x.mean() - 0.3))\n",
                      probe_contract("relative_inverse_depth"));
    const auto level = [](int i) { return 0.01f * ((i * 7) % 5 - 2) / 2.0f; };  // period 5, mean 0
    for (int i = 0; i < 20; ++i)
        write_image(dir / ("s." + std::to_string(1001 + i) + ".exr"), 64, 32, {"R", "G", "B"}, "float",
                    [&, i](int x, int y, int) { return level(i) + 0.2f + 0.003f * x + 0.004f * y; });
    const std::string job =
        "input: {path: s.####.exr, colorspace: sRGB, frames: 1001-1020}\n"
        "model: {path: flicker.pt, size: plate}\ndepth: {kind: inverse";
    write_job(dir / "raw.yaml", job + "}\noutput: {path: raw/d.####.exr}\n");
    write_job(dir / "whole.yaml", job + ", stabilize: true, stabilize_window: 4}\noutput: {path: whole/d.####.exr}\n");
    write_job(dir / "chunks.yaml",
              job + ", stabilize: true, stabilize_window: 4}\noutput: {path: chunks/d.####.exr}\n");
    ASSERT_EQ(run_cli({(dir / "raw.yaml").string()}).exit_code, 0);
    ASSERT_EQ(run_cli({(dir / "whole.yaml").string()}).exit_code, 0);
    // Chunks whose warm-up lies on both sides, and one at each end of the shot.
    for (const char* chunk : {"1011-1020", "1001-1004", "1005-1010"}) {
        const auto r = run_cli({(dir / "chunks.yaml").string(), "--frames", chunk});
        ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    for (int f = 1001; f <= 1020; ++f) {
        const std::string name = "d." + std::to_string(f) + ".exr";
        ASSERT_EQ(read_bytes(dir / "chunks" / name), read_bytes(dir / "whole" / name)) << name;
    }
    // The scale flicker is taken out: frame-to-frame change of the centre pixel shrinks.
    double raw_flicker = 0, stab_flicker = 0;
    for (int i = 1; i < 20; ++i) {
        const auto at = [&](const char* run, int frame) {
            return depth_at(dir / run / ("d." + std::to_string(frame) + ".exr"), 32, 16);
        };
        raw_flicker += std::abs(at("raw", 1001 + i) - at("raw", 1000 + i));
        stab_flicker += std::abs(at("whole", 1001 + i) - at("whole", 1000 + i));
    }
    EXPECT_LT(stab_flicker, 0.4 * raw_flicker) << "raw " << raw_flicker << " stabilized " << stab_flicker;
}

// Issue 16: a dolly. The plate brightens steadily over 60 frames (the probe's "true depth" rises 0.004 per
// frame) with frame-to-frame jitter added. Stabilized depth follows the ramp with no lag (the mean offset from
// the truth is under a tenth of one frame's step) and takes out at least half of the jitter; the slope is kept.
TEST(Depth, StabilizationFollowsADollyWithoutLag) {
    TempDir dir;
    write_p_mean(dir / "pmean.pt");
    constexpr int kFrames = 60;
    constexpr double kStep = 0.004;
    std::vector<double> jitter(kFrames);
    double mean = 0;
    for (int f = 0; f < kFrames; ++f) mean += jitter[f] = 0.006 * ((f * 7919 % 23) / 11.0 - 1.0);
    mean /= kFrames;
    for (double& j : jitter) j -= mean;  // zero mean over the shot: the ramp itself is the truth
    auto texture = [](int x, int y) { return 0.15 * x / 63.0 + 0.1 * y / 47.0; };
    for (int f = 0; f < kFrames; ++f)
        write_image(
            dir / ("d." + std::to_string(1001 + f) + ".exr"), 64, 48, {"R", "G", "B"}, "float",
            [&, f](int x, int y, int) { return static_cast<float>(0.3 + texture(x, y) + kStep * f + jitter[f]); });
    const std::string job =
        "input: {path: d.####.exr, colorspace: sRGB, frames: 1001-1060}\n"
        "model: {path: pmean.pt, size: plate}\n";
    write_job(dir / "raw.yaml", job + "output: {path: raw/o.####.exr}\n");
    write_job(dir / "stab.yaml", job + "output: {path: stab/o.####.exr}\ndepth: {stabilize: true}\n");
    ASSERT_EQ(run_cli({(dir / "raw.yaml").string(), "-q"}).exit_code, 0);
    const auto r = run_cli({(dir / "stab.yaml").string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    double tex = 0;
    for (int y = 0; y < 48; ++y)
        for (int x = 0; x < 64; ++x) tex += texture(x, y);
    tex /= 64 * 48;
    auto frame_mean = [](const fs::path& exr) {
        const auto v = depth_values(exr);
        double sum = 0;
        for (float d : v) sum += d;
        return v.empty() ? 0.0 : sum / v.size();
    };
    double bias = 0, raw_sq = 0, stab_sq = 0, sf = 0, sm = 0, sff = 0, sfm = 0;
    for (int f = 0; f < kFrames; ++f) {
        const double truth = 0.3 + tex + kStep * f;
        const std::string name = "o." + std::to_string(1001 + f) + ".exr";
        const double raw = frame_mean(dir / "raw" / name), stab = frame_mean(dir / "stab" / name);
        EXPECT_NEAR(raw - truth, jitter[f], 1e-5) << "frame " << 1001 + f << ": the probe reads the plate";
        bias += stab - truth;
        raw_sq += (raw - truth) * (raw - truth);
        stab_sq += (stab - truth) * (stab - truth);
        sf += f, sm += stab, sff += double(f) * f, sfm += f * stab;
    }
    const double lag_frames = std::abs(bias / kFrames) / kStep;
    const double removed = 1.0 - std::sqrt(stab_sq / raw_sq);
    const double slope = (kFrames * sfm - sf * sm) / (kFrames * sff - sf * sf);
    EXPECT_LE(lag_frames, 0.10) << "mean offset from the ramp, in frames";
    EXPECT_GE(removed, 0.50) << "jitter removed";
    EXPECT_NEAR(slope, kStep, 0.02 * kStep) << "the dolly's rate of change is kept";
    std::cout << "[ dolly ] lag " << lag_frames << " frames, jitter removed " << 100 * removed << "%, slope " << slope
              << " per frame (true " << kStep << ")\n";
}

// Focal-dependent metric models (Depth Anything 3 metric): metres = raw * focal_px / reference focal, the
// plate's focal scaled to the pixels the model sees; without depth.focal_px the job is refused.
TEST(Depth, FocalDependentMetricModelUsesThePlateFocalLength) {
    TempDir dir;
    write_probe_model(dir / "focal.pt", "def forward(self, x):\n    return x[:, 0:1, :, :] * 0.0 + 2.0\n",
                      R"({"format": 1, "name": "focal-probe", "input": {"colorspace": "sRGB", "multiple": 1},
                          "output": {"kind": "metric_depth", "units": "m", "reference_focal_px": 300}})");
    write_image(dir / "p.1001.exr", 200, 100, {"R", "G", "B"}, "half", [](int, int, int) { return 0.5f; });
    auto job = [&](const std::string& extra, const std::string& out) {
        return write_job(dir / (out + ".yaml"),
                         "input: {path: p.####.exr, colorspace: sRGB}\n"
                         "output: {path: " +
                             out + "/d.####.exr}\n" + extra)
            .string();
    };
    auto r = run_cli({job("model: {path: focal.pt, size: plate}\ndepth: {focal_px: 600}\n", "plate")});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NEAR(depth_at(dir / "plate/d.1001.exr", 50, 50), 4.0f, 1e-6) << "2 * 600 / 300";
    // Processed at half size: the model sees a 300 px focal as 300 * 100/200 = 150 px... of its own pixels.
    r = run_cli({job("model: {path: focal.pt, size: [100, 50]}\ndepth: {focal_px: 600}\n", "half")});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NEAR(depth_at(dir / "half/d.1001.exr", 50, 50), 2.0f, 1e-5) << "2 * 300 / 300";
    r = run_cli({job("model: {path: focal.pt, size: plate}\n", "missing")});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_NE(r.output.find("depth.focal_px"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "missing"));
    // The camera section: Nuke's knobs (35 mm on the default 24.576 mm haperture over 200 columns).
    r = run_cli({job("model: {path: focal.pt, size: plate}\ncamera: {focal: 35}\n", "knobs")});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NEAR(depth_at(dir / "knobs/d.1001.exr", 50, 50), 2.0 * (35 / 24.576 * 200) / 300, 1e-5);
    // A processing size of another aspect: fx and fy are scaled each and averaged, as DA3's code does. 854x480
    // at [140, 140] with a 1000 px focal: 0.759 x the raw output (the horizontal focal alone gave 0.546 x).
    write_image(dir / "wide.1001.exr", 854, 480, {"R", "G", "B"}, "half", [](int, int, int) { return 0.5f; });
    r = run_cli({write_job(dir / "square.yaml",
                           "input: {path: wide.####.exr, colorspace: sRGB}\n"
                           "output: {path: square/d.####.exr}\nmodel: {path: focal.pt, size: [140, 140]}\n"
                           "camera: {focal_px: 1000}\n")
                     .string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const double k = (1000 * 140 / 854.0 + 1000 * 140 / 480.0) / 2 / 300;
    EXPECT_NEAR(k, 0.759, 5e-4);
    EXPECT_NEAR(depth_at(dir / "square/d.1001.exr", 400, 200), 2 * k, 1e-5);
    const OIIO::ImageSpec spec = file_spec(dir / "square/d.1001.exr");
    EXPECT_NEAR(std::stod(spec.get_string_attribute("depthbatch/processing_focal_px")), 300 * k, 1e-3);
    EXPECT_EQ(spec.get_string_attribute("depthbatch/focal_px"), "1000");
    EXPECT_EQ(spec.get_string_attribute("depthbatch/camera"), "focal_px 1000");
    // `info` shows the reference focal.
    r = run_cli({"info", (dir / "focal.pt").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "metric for a 300 px focal length")) << r.output;
}

namespace {
/// Channel `name` of `buf` at file pixel (x, y) (OpenEXR stores channels sorted by name: look them up by name).
float channel_at(const OIIO::ImageBuf& buf, const std::string& name, int x, int y) {
    const int c = channel_index(buf, name);
    EXPECT_GE(c, 0) << name;
    return c < 0 ? std::nanf("") : buf.getchannel(x, y, 0, c);
}
}  // namespace

// output.passes: P and N beside depth.Z from a wall 2 m in front of the camera (a constant metric probe), in
// Nuke's camera space; a data window inside the display window; half on request; a relative model without a
// metric mapping is refused (exit 2) with the reason.
TEST(Depth, PositionAndNormalPassesBesideDepth) {
    TempDir dir;
    write_p_const(dir / "wall.pt", 2.0);
    write_p_const(dir / "rel.pt", 2.0, "relative_inverse_depth");
    // A 60x40 data window at (30, 20) inside a 120x80 display window; a 2:1 anamorphic file without the attribute.
    write_image(
        dir / "p.1001.exr", 60, 40, {"R", "G", "B"}, "half", [](int, int, int) { return 0.5f; }, 30, 20, 120, 80);
    auto job = [&](const std::string& extra, const std::string& out) {
        return write_job(dir / (out + ".yaml"),
                         "input: {path: p.####.exr, colorspace: sRGB, pixel_aspect: 2}\n"
                         "output: {path: " +
                             out +
                             "/d.####.exr, passes: [P, N]}\n"
                             "model: {path: wall.pt, size: plate}\ncamera: {focal_px: 100}\n" +
                             extra)
            .string();
    };
    RunResult r = run_cli({job("", "float")});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = dir / "float/d.1001.exr";
    std::vector<std::string> names = channel_names(out);
    std::sort(names.begin(), names.end());
    const std::vector<std::string> want = {"B", "G", "N.X", "N.Y", "N.Z", "P.X", "P.Y", "P.Z", "R", "depth.Z"};
    EXPECT_EQ(names, want);
    const OIIO::ImageSpec spec = file_spec(out);
    EXPECT_FLOAT_EQ(spec.get_float_attribute("PixelAspectRatio", 0.0f), 2.0f)
        << "the plate's squeezed grid, as the job says";
    for (int c = 0; c < spec.nchannels; ++c)
        if (spec.channelnames[c].size() > 1)
            EXPECT_EQ(spec.channelformat(c), OIIO::TypeDesc::FLOAT) << spec.channelnames[c];
    OIIO::ImageBuf buf = read_image(out);
    // Data-window pixel (0, 0) is file pixel (30, 20): centre (30.5, 20.5), 29.5 columns left of the display
    // centre (60) and 19.5 rows above it (40); fy = 2 fx = 200 rows.
    EXPECT_NEAR(channel_at(buf, "P.X", 30, 20), -29.5 / 100 * 2, 1e-6);
    EXPECT_NEAR(channel_at(buf, "P.Y", 30, 20), 19.5 / 200 * 2, 1e-6);
    EXPECT_FLOAT_EQ(channel_at(buf, "P.Z", 30, 20), -2.0f);
    EXPECT_NEAR(channel_at(buf, "N.X", 30, 20), 0, 1e-6);
    EXPECT_NEAR(channel_at(buf, "N.Y", 30, 20), 0, 1e-6);
    EXPECT_NEAR(channel_at(buf, "N.Z", 30, 20), 1, 1e-6);
    EXPECT_NEAR(channel_at(buf, "P.X", 89, 59), 29.5 / 100 * 2, 1e-6);
    EXPECT_NEAR(channel_at(buf, "P.Y", 89, 59), -19.5 / 200 * 2, 1e-6);
    // Half on request.
    r = run_cli({job("", "half"), "--set", "output.passes_type=half"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const OIIO::ImageSpec half = file_spec(dir / "half/d.1001.exr");
    for (int c = 0; c < half.nchannels; ++c)
        EXPECT_EQ(half.channelformat(c), half.channelnames[c] == "depth.Z" || half.channelnames[c].size() == 1
                                             ? half.channelformat(c)
                                             : OIIO::TypeDesc(OIIO::TypeDesc::HALF))
            << half.channelnames[c];
    EXPECT_EQ(half.channelformat(half.channelindex("P.X")), OIIO::TypeDesc::HALF);
    EXPECT_EQ(half.channelformat(half.channelindex("depth.Z")), OIIO::TypeDesc::FLOAT) << "depth.Z stays float";
    // A relative model without a metric mapping, or no focal length: exit 2, nothing written.
    r = run_cli({job("", "rel"), "--set", "model.path=" + (dir / "rel.pt").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "output.passes: P needs depth in metres")) << r.output;
    EXPECT_TRUE(contains(
        r.output,
        "depth.convention: metric with depth.near and depth.far in metres and depth.normalize: frame or sequence"))
        << r.output;
    r = run_cli({job("", "rel2"), "--set", "model.path=" + (dir / "rel.pt").string(), "--set",
                 "depth.convention=metric", "--set", "depth.near=1", "--set", "depth.far=10", "--set",
                 "depth.normalize=frame"});
    EXPECT_EQ(r.exit_code, 0) << r.output << " (a relative model mapped to metres)";
    // ... of a constant model: no range to map, said, not hidden.
    EXPECT_TRUE(contains(r.output,
                         "frame 1001: the model's depth is one value (2) between the frame's percentiles, so "
                         "depth.normalize frame has nothing to map: depth.Z is 10 everywhere"))
        << r.output;
    r = run_cli({write_job(dir / "nofocal.yaml",
                           "input: {path: p.####.exr, colorspace: sRGB}\n"
                           "output: {path: nofocal/d.####.exr, passes: [N]}\n"
                           "model: {path: wall.pt, size: plate}\n")
                     .string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "output.passes: N needs the shot's camera")) << r.output;
    r = run_cli({job("", "sky"), "--set", "output.passes=[P, sky]"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "declares no extra output")) << r.output;
    // A plate with its own P (a CG render) whose channels all pass through: exit 2 before any frame, naming it.
    write_image(dir / "cg.1001.exr", 16, 12, {"R", "G", "B", "P.X", "P.Y", "P.Z"}, "float",
                [](int, int, int c) { return 0.1f * c; });
    r = run_cli(
        {job("", "cg"), "--set", "input.path=" + (dir / "cg.####.exr").string(), "--set", "output.channels=all"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "cg.1001.exr already has a channel P.X, which output.channels all passes through"))
        << r.output;
    r = run_cli({job("", "cg_rgba"), "--set",
                 "input.path=" + (dir / "cg.####.exr").string()});  // rgba: only the plate's colour
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "passes P.X, P.Y, P.Z, N.X, N.Y, N.Z float; camera ")) << r.output;
    // input.pixel_aspect: ignore computes the passes with square pixels, and the file says 1.
    {  // a 2:1 anamorphic EXR (pixelAspectRatio 2 in its header)
        OIIO::ImageSpec spec(40, 30, 3, OIIO::TypeDesc::HALF);
        spec.attribute("PixelAspectRatio", 2.0f);
        const std::vector<float> grey(40 * 30 * 3, 0.5f);
        auto out = OIIO::ImageOutput::create((dir / "ana.1001.exr").string());
        ASSERT_TRUE(out && out->open((dir / "ana.1001.exr").string(), spec) &&
                    out->write_image(OIIO::TypeDesc::FLOAT, grey.data()) && out->close());
    }
    r = run_cli({job("", "ana"), "--set", "input.path=" + (dir / "ana.####.exr").string(), "--set",
                 "input.pixel_aspect=ignore"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_FLOAT_EQ(file_spec(dir / "ana/d.1001.exr").get_float_attribute("PixelAspectRatio", 0.0f), 1.0f);
    EXPECT_NEAR(channel_at(read_image(dir / "ana/d.1001.exr"), "P.Y", 0, 0), 14.5 / 100 * 2, 1e-6) << "fy = fx";
    for (const char* d : {"rel", "nofocal", "sky", "cg"}) EXPECT_FALSE(fs::exists(dir / d)) << d;
}

// camera.chan: a Nuke .chan file moves the camera per frame (world-space P and N) and, with its vfov column, sets
// the focal length through camera.vaperture; a frame the file lacks fails naming it.
TEST(Depth, ChanFileGivesWorldSpacePassesPerFrame) {
    TempDir dir;
    write_p_const(dir / "wall.pt", 4.0);
    for (int f : {1001, 1002, 1003})
        write_image(dir / ("p." + std::to_string(f) + ".exr"), 40, 30, {"R", "G", "B"}, "half",
                    [](int, int, int) { return 0.5f; });
    // Frame 1001: at (1, 2, 3), no rotation; 1002: turned 90 degrees about Y (looking down world -X), vfov 30.
    const double vfov = 30;
    write_file(dir / "cam.chan",
               "1001 1 2 3 0 0 0 " + std::to_string(vfov) + "\n1002 1 2 3 0 90 0 " + std::to_string(vfov) + "\n");
    RunResult r = run_cli({write_job(dir / "job.yaml",
                                     "input: {path: p.####.exr, colorspace: sRGB, frames: 1001-1002}\n"
                                     "output: {path: out/d.####.exr, passes: [P, N]}\n"
                                     "model: {path: wall.pt, size: plate}\ncamera: {chan: cam.chan}\n")
                               .string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const double fx = 18.672 / (2 * std::tan(vfov / 2 * 3.14159265358979 / 180)) / 24.576 * 40;
    OIIO::ImageBuf a = read_image(dir / "out/d.1001.exr");
    // Pixel (0, 0), centre (0.5, 0.5): 19.5 columns left, 14.5 rows up of the display centre (20, 15).
    EXPECT_NEAR(channel_at(a, "P.X", 0, 0), 1 - 19.5 / fx * 4, 1e-4);
    EXPECT_NEAR(channel_at(a, "P.Y", 0, 0), 2 + 14.5 / fx * 4, 1e-4);
    EXPECT_NEAR(channel_at(a, "P.Z", 0, 0), 3 - 4, 1e-5);
    EXPECT_NEAR(channel_at(a, "N.Z", 0, 0), 1, 1e-5) << "N faces the camera: world +Z";
    OIIO::ImageBuf b = read_image(dir / "out/d.1002.exr");
    // Camera -Z is world -X, camera +X is world -Z.
    EXPECT_NEAR(channel_at(b, "P.X", 0, 0), 1 - 4, 1e-4);
    EXPECT_NEAR(channel_at(b, "P.Y", 0, 0), 2 + 14.5 / fx * 4, 1e-4);
    EXPECT_NEAR(channel_at(b, "P.Z", 0, 0), 3 + 19.5 / fx * 4, 1e-4);
    EXPECT_NEAR(channel_at(b, "N.X", 0, 0), 1, 1e-5) << "N faces the camera: world +X";
    EXPECT_TRUE(contains(file_spec(dir / "out/d.1002.exr").get_string_attribute("depthbatch/camera"), "cam.chan"));
    // A shot frame the track lacks: exit 2 before any frame is rendered (1001 and 1002 have lines), and validate
    // says so too.
    r = run_cli({(dir / "job.yaml").string(), "--set", "input.frames=1001-1003", "--set",
                 "output.path=" + (dir / "o3/d.####.exr").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(
        r.output, "camera.chan " + (dir / "cam.chan").string() + " has no line for frame 1003 of the shot (1001-1003)"))
        << r.output;
    EXPECT_FALSE(fs::exists(dir / "o3")) << "nothing rendered";
    r = run_cli({"validate", (dir / "job.yaml").string(), "--set", "input.frames=1001-1003"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    // The track's contents are settings: a re-delivered .chan renders again under --skip-existing.
    const std::string before = read_bytes(dir / "out/d.1001.exr");
    r = run_cli({(dir / "job.yaml").string(), "--skip-existing"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "nothing to do")) << r.output;
    write_file(dir / "cam.chan",
               "1001 5 2 3 0 0 0 " + std::to_string(vfov) + "\n1002 1 2 3 0 90 0 " + std::to_string(vfov) + "\n");
    r = run_cli({(dir / "job.yaml").string(), "--skip-existing"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "frame 1001: rendering again")) << r.output;
    EXPECT_NE(read_bytes(dir / "out/d.1001.exr"), before);
    EXPECT_NEAR(channel_at(read_image(dir / "out/d.1001.exr"), "P.X", 0, 0), 5 - 19.5 / fx * 4, 1e-4)
        << "the new track";
}

// A model's extra outputs (contract output.extra_outputs: DA3's sky head, a confidence): the module returns
// (depth, extra...), and each one the job asks for is one channel at the plate's size, named by the contract.
TEST(Depth, ExtraModelOutputsAreWrittenWhenAsked) {
    TempDir dir;
    write_probe_model(dir / "sky.pt",
                      "def forward(self, x):\n    d = x[:, 0:1, :, :] * 0.0 + 3.0\n"
                      "    return (d, x[:, 1:2, :, :], x[:, 0:1, :, :] * 0.0 + 0.25)\n",
                      R"({"format": 1, "name": "sky-probe", "input": {"colorspace": "sRGB", "multiple": 1},
                          "output": {"kind": "metric_depth", "units": "m", "extra_outputs": [
                            {"name": "sky", "channel": "sky.A"}, {"name": "confidence", "channel": "depth.confidence"}]}})");
    // G is 1 in the top half (sky), 0 below.
    write_image(dir / "p.1001.exr", 64, 40, {"R", "G", "B"}, "half",
                [](int, int y, int c) { return c == 1 ? (y < 20 ? 1.0f : 0.0f) : 0.5f; });
    auto run = [&](const std::string& passes, const std::string& out) {
        return run_cli({write_job(dir / (out + ".yaml"),
                                  "input: {path: p.####.exr, colorspace: sRGB}\n"
                                  "output: {path: " +
                                      out + "/d.####.exr, passes: " + passes +
                                      "}\n"
                                      "model: {path: sky.pt, size: 32}\ncamera: {fov: 50}\n")
                            .string()});
    };
    RunResult r = run("[sky, N, confidence]", "both");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = dir / "both/d.1001.exr";
    std::vector<std::string> names = channel_names(out);
    std::sort(names.begin(), names.end());
    const std::vector<std::string> want = {"B", "G", "N.X", "N.Y", "N.Z", "R", "depth.Z", "depth.confidence", "sky.A"};
    EXPECT_EQ(names, want);
    OIIO::ImageBuf buf = read_image(out);
    EXPECT_NEAR(channel_at(buf, "sky.A", 10, 2), 1.0f, 1e-5) << "sky at the top";
    EXPECT_NEAR(channel_at(buf, "depth.confidence", 10, 2), 0.25f, 1e-6);
    EXPECT_NEAR(channel_at(buf, "sky.A", 10, 37), 0.0f, 1e-5) << "no sky at the bottom";
    EXPECT_NEAR(channel_at(buf, "depth.Z", 10, 37), 3.0f, 1e-5);
    r = run("[sky]", "sky_only");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    names = channel_names(dir / "sky_only/d.1001.exr");
    std::sort(names.begin(), names.end());
    const std::vector<std::string> sky_only = {"B", "G", "R", "depth.Z", "sky.A"};
    EXPECT_EQ(names, sky_only);
    // A name the contract does not declare lists what it does.
    r = run("[clouds]", "clouds");
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "output.extra_outputs: sky (sky.A), confidence (depth.confidence)")) << r.output;
    r = run_cli({"info", (dir / "sky.pt").string()});
    EXPECT_TRUE(contains(r.output, "extra output sky -> EXR channel sky.A")) << r.output;
    // A contract that declares an output the module does not return: exit 4 naming it.
    write_probe_model(dir / "liar.pt", "def forward(self, x):\n    return x[:, 0:1, :, :] * 0.0 + 3.0\n",
                      R"({"format": 1, "name": "liar", "input": {"colorspace": "sRGB", "multiple": 1},
                          "output": {"kind": "metric_depth", "units": "m", "extra_outputs": [{"name": "sky", "channel": "sky.A"}]}})");
    r = run_cli({write_job(dir / "liar.yaml",
                           "input: {path: p.####.exr, colorspace: sRGB}\n"
                           "output: {path: liar/d.####.exr}\nmodel: {path: liar.pt, size: plate}\n")
                     .string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Model)) << r.output;
    EXPECT_TRUE(contains(r.output, "declares 1 extra output(s)")) << r.output;
}
