// DepthModel backend: batch > 1 equals batch 1, out-of-memory fallback with an injected device failure,
// precision refusal on the CPU, traced-module detection. Uses the prepared default model (FastDepth).
#include "depthbatch/depth_model.h"
#include "depth_model_test_seam.h"
#include "depthbatch/error.h"
#include "depthbatch/log.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

using namespace depthbatch;

namespace {

std::vector<ModelInput> random_inputs(int n, int w, int h, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<ModelInput> inputs(n);
    for (auto& in : inputs) {
        in.width = w;
        in.height = h;
        in.chw.resize(static_cast<size_t>(3) * w * h);
        for (float& v : in.chw) v = u(rng);
    }
    return inputs;
}

std::unique_ptr<DepthModel> fastdepth(Precision precision = Precision::Fp32) {
    JobConfig::Model options;
    options.device = "cpu";
    options.precision = precision;
    return DepthModel::load(options);
}

float max_abs_diff(const DepthImage& a, const DepthImage& b) {
    EXPECT_EQ(a.data.size(), b.data.size());
    float m = 0;
    for (size_t i = 0; i < a.data.size(); ++i) m = std::max(m, std::abs(a.data[i] - b.data[i]));
    return m;
}

/// Captures log lines for the life of the object.
struct LogCapture {
    std::ostringstream text;
    LogCapture() { set_log_stream(&text); }
    ~LogCapture() { set_log_stream(nullptr); }
};

}  // namespace

TEST(DepthModel, BatchOfFourEqualsFourSingles) {
    auto model = fastdepth();
    auto inputs = random_inputs(4, 384, 224, 7);
    std::vector<const ModelInput*> batch;
    for (const auto& in : inputs) batch.push_back(&in);
    const auto together = model->infer(batch);
    ASSERT_EQ(together.size(), 4u);
    for (size_t i = 0; i < inputs.size(); ++i) {
        const auto single = model->infer({&inputs[i]});
        EXPECT_LE(max_abs_diff(together[i], single[0]), 1e-5f) << "frame " << i;
    }
}

TEST(DepthModel, OutOfMemorySplitsTheBatchThenFallsBackToCpu) {
    auto model = fastdepth();
    auto inputs = random_inputs(4, 256, 192, 11);
    std::vector<const ModelInput*> batch;
    for (const auto& in : inputs) batch.push_back(&in);
    const auto reference = model->infer(batch);

    // The device "runs out of memory" for any batch larger than one: halves, then quarters.
    std::vector<size_t> tried;
    DepthModelTestSeam::set_fault_injector(*model, [&](size_t n, const std::string&) {
        tried.push_back(n);
        return n > 1;
    });
    LogCapture log;
    auto split = model->infer(batch);
    EXPECT_EQ(tried, (std::vector<size_t>{4, 2, 1, 1, 2, 1, 1}));
    ASSERT_EQ(split.size(), 4u);
    for (size_t i = 0; i < 4; ++i) EXPECT_LE(max_abs_diff(split[i], reference[i]), 1e-5f);
    EXPECT_NE(log.text.str().find("retrying in halves"), std::string::npos) << log.text.str();

    // It fails even for one frame: the frame runs on the CPU fallback copy, nothing is lost.
    DepthModelTestSeam::set_fault_injector(*model, [](size_t, const std::string&) { return true; });
    auto fallback = model->infer({batch[0]});
    ASSERT_EQ(fallback.size(), 1u);
    EXPECT_LE(max_abs_diff(fallback[0], reference[0]), 1e-5f);
    EXPECT_NE(log.text.str().find("running it on the CPU"), std::string::npos) << log.text.str();
}

// Issue 22 §7: the free heap is given back (release_free_heap) before a CPU forward of a new input shape only:
// not while the shape stays, not for a shape among the last 8 (a tiled job's global and tile batches), and the
// batch size is part of the shape.
TEST(DepthModel, NewInputShapeReleasesTheFreeHeapOnlyWhenTheShapeIsNew) {
    auto model = fastdepth();
    const auto a = random_inputs(2, 64, 64, 3), b = random_inputs(1, 96, 64, 4);
    const auto first = model->infer({&a[0]});
    model->infer({&a[0]});
    EXPECT_EQ(DepthModelTestSeam::cpu_new_shapes(*model), 0) << "one shape: never";
    model->infer({&b[0]});
    EXPECT_EQ(DepthModelTestSeam::cpu_new_shapes(*model), 1) << "96x64 is new";
    const auto again = model->infer({&a[0]});
    EXPECT_EQ(DepthModelTestSeam::cpu_new_shapes(*model), 1) << "64x64 is among the last 8";
    EXPECT_EQ(max_abs_diff(first[0], again[0]), 0.0f);
    model->infer({&a[0], &a[1]});
    EXPECT_EQ(DepthModelTestSeam::cpu_new_shapes(*model), 2) << "[2,3,64,64] is new";
    for (int i = 1; i <= 8; ++i) model->infer({&random_inputs(1, 64 + 32 * i, 32, 5)[0]});
    EXPECT_EQ(DepthModelTestSeam::cpu_new_shapes(*model), 10);
    model->infer({&b[0]});
    EXPECT_EQ(DepthModelTestSeam::cpu_new_shapes(*model), 11) << "96x64 fell out of the last 8";
}

TEST(DepthModel, HalfPrecisionOnCpuFallsBackToFp32WithOneWarning) {
    LogCapture log;
    auto half = fastdepth(Precision::Fp16);
    EXPECT_EQ(half->precision(), Precision::Fp32);
    const std::string text = log.text.str();
    EXPECT_NE(text.find("model.precision fp16 needs CUDA"), std::string::npos) << text;
    EXPECT_EQ(text.find("warning"), text.rfind("warning")) << "exactly one warning\n" << text;
    auto full = fastdepth(Precision::Fp32);
    auto inputs = random_inputs(1, 224, 224, 3);
    EXPECT_EQ(max_abs_diff(half->infer({&inputs[0]})[0], full->infer({&inputs[0]})[0]), 0.0f) << "bitwise equal";
}

TEST(DepthModel, FreezeAndChannelsLastKeepTheResult) {
    auto plain = fastdepth();
    JobConfig::Model options;
    options.device = "cpu";
    options.freeze = true;
    options.channels_last = true;
    auto tuned = DepthModel::load(options);
    auto inputs = random_inputs(2, 320, 256, 5);
    const auto a = plain->infer({&inputs[0], &inputs[1]});
    const auto b = tuned->infer({&inputs[0], &inputs[1]});
    for (int i = 0; i < 2; ++i) EXPECT_LE(max_abs_diff(a[i], b[i]), 1e-4f);
}

// torch.jit.script vs torch.jit.trace: the scripted files (the default model, a probe written with
// Module::define) are told scripted; a real torch.jit.trace file (tools/nuke_style.py, no depthbatch.json,
// traced at 112x84 around a Rec.709 luma net) is told traced, its one input size comes from the file
// itself (fixed size 112x84), it runs at that size, and a job stating another size is refused.
TEST(DepthModel, ScriptedAndTracedModulesAreTold) {
    EXPECT_FALSE(fastdepth()->traced()) << "the default model is scripted";
    test::TempDir dir;
    JobConfig::Model scripted;
    scripted.path = test::write_p_mean(dir / "p.pt").string();
    const auto probe = DepthModel::load(scripted);
    EXPECT_FALSE(probe->traced());
    EXPECT_FALSE(probe->contract().fixed_size);

    const auto traced_pt = dir / "traced.pt";
    const auto made = test::run_python({"-m", "tools.export", "nuke-style-trace", "--out", traced_pt.string(),
                                        "--size", "84", "112", "--inner", "luma"});
    ASSERT_EQ(made.exit_code, 0) << made.output;
    JobConfig::Model options;
    options.path = traced_pt.string();
    options.contract.kind = DepthKind::RelativeDepth;  // no depthbatch.json: the job states the kind
    const auto traced = DepthModel::load(options);
    EXPECT_TRUE(traced->traced());
    EXPECT_TRUE(traced->contract().fixed_size) << "taken from the traced inputs stored in the file";
    EXPECT_EQ(traced->contract().width, 112);
    EXPECT_EQ(traced->contract().height, 84);

    // At its size it runs: the luma inner net returns 0.2126 R + 0.7152 G + 0.0722 B per pixel.
    const auto inputs = random_inputs(1, 112, 84, 13);
    const auto out = traced->infer({&inputs[0]});
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].width, 112);
    ASSERT_EQ(out[0].height, 84);
    const size_t plane = 112 * 84;
    float worst = 0;
    for (size_t i = 0; i < plane; ++i) {
        const float* c = inputs[0].chw.data();
        const float luma = 0.2126f * c[i] + 0.7152f * c[plane + i] + 0.0722f * c[2 * plane + i];
        worst = std::max(worst, std::abs(out[0].data[i] - luma));
    }
    EXPECT_LE(worst, 1e-5f) << "max |traced - luma|";

    // A job that states another size for it is refused, naming the size it was traced at.
    options.contract.width_px = 224;
    options.contract.height_px = 224;
    options.contract.fixed_size = true;
    const std::string msg = test::expect_error<ModelError>([&] { DepthModel::load(options); }, "load at 224x224");
    EXPECT_TRUE(test::contains(msg, "traced at 112x84")) << msg;
}

TEST(DepthModel, CudaDeviceWithoutCudaIsAConfigError) {
    if (torch_has_cuda()) GTEST_SKIP() << "this LibTorch has CUDA";
    JobConfig::Model options;
    options.device = "cuda";
    const std::string msg = test::expect_error<ConfigError>([&] { DepthModel::load(options); }, "load on cuda");
    EXPECT_TRUE(test::contains(msg, "model.device 'cuda'")) << msg;
}
