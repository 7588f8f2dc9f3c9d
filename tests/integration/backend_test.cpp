// The inference backend end to end: precision (docs/cases.md 7 and 8a), a model tied to CUDA run on the CPU
// (docs/cases.md 8b), batch > 1 equal to batch 1, and the JSON report.
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

using namespace depthbatch::test;

namespace {

/// docs/cases.md 7 probe: sqrt((300 m)^2)/300 for channel mean m: m in fp32, +Inf in fp16 where m > 0.853.
fs::path write_p_fp16(const fs::path& path) {
    return write_probe_model(path,
                             "def forward(self, x):\n"
                             "    m = x.mean(dim=1, keepdim=True)\n"
                             "    return torch.sqrt((300.0 * m) * (300.0 * m)) / 300.0\n",
                             probe_contract());
}

/// 128x128, left half mean 0.5, right half 0.95.
void write_halves(const fs::path& path) {
    write_image(path, 128, 128, {"R", "G", "B"}, "float", [](int x, int, int) { return x < 64 ? 0.5f : 0.95f; });
}

}  // namespace

TEST(Backend, HalfPrecisionNeverWritesInfNanOrZero) {
    TempDir dir;
    write_p_fp16(dir / "pfp16.pt");
    write_halves(dir / "h.1001.exr");
    for (const std::string precision : {"fp32", "fp16"}) {
        write_job(dir / (precision + ".yaml"),
                  "input: {path: h.####.exr, colorspace: sRGB}\n"
                  "model: {path: pfp16.pt, size: plate, precision: " +
                      precision +
                      "}\n"
                      "output: {path: " +
                      precision + "/d.####.exr}\n");
        const auto r = run_cli({(dir / (precision + ".yaml")).string()});
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NEAR(depth_at(dir / precision / "d.1001.exr", 10, 64), 0.5f, 1e-6) << precision;
        EXPECT_NEAR(depth_at(dir / precision / "d.1001.exr", 100, 64), 0.95f, 1e-6) << precision;
        if (precision == "fp16") EXPECT_NE(r.output.find("needs CUDA; running in fp32"), std::string::npos) << r.output;
    }
}

// docs/cases.md 8a: GPUs hidden, device auto, fp16 -> CPU fp32 with one warning, bitwise equal to fp32.
TEST(Backend, AutoDeviceHalfPrecisionWithoutGpuEqualsFp32Cpu) {
    TempDir dir;
    write_halves(dir / "h.1001.exr");
    const std::string base = "input: {path: h.####.exr, colorspace: sRGB}\n";
    write_job(dir / "a.yaml", base + "model: {device: auto, precision: fp16}\noutput: {path: a/d.####.exr}\n");
    write_job(dir / "b.yaml", base + "model: {device: cpu, precision: fp32}\noutput: {path: b/d.####.exr}\n");
    const auto a = run_cli({(dir / "a.yaml").string()}, "CUDA_VISIBLE_DEVICES=");
    const auto b = run_cli({(dir / "b.yaml").string()}, "CUDA_VISIBLE_DEVICES=");
    ASSERT_EQ(a.exit_code, 0) << a.output;
    ASSERT_EQ(b.exit_code, 0) << b.output;
    size_t warnings = 0;
    for (size_t p = a.output.find("warning:"); p != std::string::npos; p = a.output.find("warning:", p + 1)) ++warnings;
    EXPECT_EQ(warnings, 1u) << a.output;
    EXPECT_EQ(read_bytes(dir / "a/d.1001.exr"), read_bytes(dir / "b/d.1001.exr"));
}

// docs/cases.md 8b: a model with a hard-coded cuda:0 tensor, run on the CPU: model exit code, the message
// names the device mismatch, no outputs, no raw c10 backtrace.
TEST(Backend, ModelTiedToCudaFailsCleanlyOnCpu) {
    TempDir dir;
    write_probe_model(dir / "cuda_probe.pt",
                      "def forward(self, x):\n"
                      "    return x.mean(dim=1, keepdim=True) + torch.zeros([1], device=torch.device('cuda:0'))\n",
                      probe_contract());
    write_halves(dir / "h.1001.exr");
    write_job(dir / "job.yaml",
              "input: {path: h.####.exr, colorspace: sRGB}\n"
              "model: {path: cuda_probe.pt, device: cpu, size: plate}\noutput: {path: out/d.####.exr}\n");
    const auto r = run_cli({(dir / "job.yaml").string()}, "CUDA_VISIBLE_DEVICES=");
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Model)) << r.output;
    EXPECT_NE(r.output.find("device mismatch"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("cuda_probe.pt"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("Exception raised from"), std::string::npos) << "no raw c10 trace\n" << r.output;
    EXPECT_FALSE(fs::exists(dir / "out"));
    // Issue 13: the error is the line that matters plus the hint (it was ~1,500 characters of c10 text);
    // the full text is in the -v log.
    const size_t at = r.output.find("depthbatch: error: ");
    ASSERT_NE(at, std::string::npos) << r.output;
    const std::string error_line = r.output.substr(at, r.output.find('\n', at) - at);
    EXPECT_LT(error_line.size(), 800u) << error_line;
    const auto v = run_cli({(dir / "job.yaml").string(), "-v"}, "CUDA_VISIBLE_DEVICES=");
    EXPECT_NE(v.output.find("LibTorch said:"), std::string::npos) << v.output;
}

TEST(Backend, BatchedRenderEqualsSingleFrameRender) {
    TempDir dir;
    const fs::path plates = samples_dir() / "plates/bedroom";
    const std::string base = "input: {path: '" + (plates / "bedroom.####.jpg").string() + "', frames: 1001-1005}\n";
    write_job(dir / "b1.yaml", base + "model: {batch: 1}\noutput: {path: b1/d.####.exr}\n");
    write_job(dir / "b4.yaml", base +
                                   "model: {batch: 4}\noutput: {path: b4/d.####.exr}\n"
                                   "pipeline: {report: report.json}\n");
    ASSERT_EQ(run_cli({(dir / "b1.yaml").string(), "-q"}).exit_code, 0);
    const auto r = run_cli({(dir / "b4.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("batch 4"), std::string::npos) << r.output;
    for (int f = 1001; f <= 1005; ++f) {
        const auto a = depth_values(dir / ("b1/d." + std::to_string(f) + ".exr"));
        const auto b = depth_values(dir / ("b4/d." + std::to_string(f) + ".exr"));
        ASSERT_FALSE(a.empty());
        ASSERT_EQ(a.size(), b.size());
        float worst = 0;
        for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
        EXPECT_LE(worst, 1e-5f) << "frame " << f;
    }
    const auto report = nlohmann::json::parse(read_bytes(dir / "report.json"));
    EXPECT_EQ(report["rendered"], 5);
    EXPECT_EQ(report["frames"].size(), 5u);
    EXPECT_GT(report["stage_totals"]["infer_ms"].get<double>(), 0.0);
    EXPECT_TRUE(report.contains("infer_wait_ms"));
}

// Issue 31 §1: every forward of a job runs on the model's one inference thread, recorded in the summary, and the
// warm-up runs at the shapes the job feeds (the processing size at the job's batch, the tiles), not the model's own
// input size (FastDepth's 224x224; a 960x540 plate is processed at 384x224).
TEST(Backend, EveryForwardOfAJobRunsOnOneThreadWarmedUpAtTheJobsShapes) {
    TempDir dir;
    const fs::path plates = samples_dir() / "plates/bedroom";
    const std::string base = "input: {path: '" + (plates / "bedroom.####.jpg").string() +
                             "', frames: 1001-1007}\n"
                             "pipeline: {threads: 4, summary: s.json}\n";
    write_job(dir / "job.yaml", base + "model: {batch: 3, warmup: 1}\noutput: {path: a/d.####.exr}\n");
    const auto r = run_cli({(dir / "job.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto s = read_json(dir / "s.json");
    EXPECT_EQ(s["inference"]["threads"], 1) << s["inference"].dump();
    EXPECT_EQ(s["inference"]["warmup"]["shapes"], nlohmann::json::array({"3x3x224x384"})) << s["inference"].dump();
    EXPECT_EQ(s["inference"]["warmup"]["passes"], 1);
    EXPECT_EQ(s["inference"]["precision"], "fp32");
    EXPECT_TRUE(s["inference"]["precision_check"].is_null());
    EXPECT_NE(r.output.find("model.warmup: 1 forward pass(es) at each shape the job feeds (3x3x224x384)"),
              std::string::npos)
        << r.output;
    // Tiles: the frame's shape and the tiles' (two 544x540 tiles of the 960x540 plate, each at 224x224), batched.
    write_job(dir / "tiles.yaml", base +
                                      "model: {batch: 2, warmup: 1, tiles: {size: 544, overlap: 128}}\n"
                                      "output: {path: t/d.####.exr}\n");
    const auto t = run_cli({(dir / "tiles.yaml").string(), "--frames", "1001-1002"});
    ASSERT_EQ(t.exit_code, 0) << t.output;
    s = read_json(dir / "s.json");
    EXPECT_EQ(s["inference"]["threads"], 1);
    ASSERT_EQ(s["inference"]["warmup"]["shapes"].size(), 2u) << s["inference"].dump();
    EXPECT_EQ(s["inference"]["warmup"]["shapes"][0], "2x3x224x384");
    // Without model.warmup the CPU warms nothing up (the first frame pays, as a farm chunk of 1-10 frames would).
    write_job(dir / "cold.yaml", base + "output: {path: c/d.####.exr}\n");
    ASSERT_EQ(run_cli({(dir / "cold.yaml").string(), "-q", "--frames", "1001"}).exit_code, 0);
    s = read_json(dir / "s.json");
    EXPECT_EQ(s["inference"]["threads"], 1);
    EXPECT_TRUE(s["inference"]["warmup"]["shapes"].empty());
}
