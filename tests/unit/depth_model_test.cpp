// DepthModel backend: batch > 1 equals batch 1, out-of-memory fallback with an injected device failure,
// precision refusal on the CPU, traced-module detection. Uses the prepared default model (FastDepth).
#include "depthbatch/depth_model.h"
#include "depthbatch/error.h"
#include "depthbatch/log.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

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

std::unique_ptr<DepthModel> fastdepth(const std::string& precision = "fp32") {
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
    model->set_fault_injector([&](size_t n, const std::string&) {
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
    model->set_fault_injector([](size_t, const std::string&) { return true; });
    auto fallback = model->infer({batch[0]});
    ASSERT_EQ(fallback.size(), 1u);
    EXPECT_LE(max_abs_diff(fallback[0], reference[0]), 1e-5f);
    EXPECT_NE(log.text.str().find("running it on the CPU"), std::string::npos) << log.text.str();
}

TEST(DepthModel, HalfPrecisionOnCpuFallsBackToFp32WithOneWarning) {
    LogCapture log;
    auto half = fastdepth("fp16");
    EXPECT_EQ(half->precision(), "fp32");
    const std::string text = log.text.str();
    EXPECT_NE(text.find("model.precision fp16 needs CUDA"), std::string::npos) << text;
    EXPECT_EQ(text.find("warning"), text.rfind("warning")) << "exactly one warning\n" << text;
    auto full = fastdepth("fp32");
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

TEST(DepthModel, ScriptedAndTracedModulesAreTold) {
    EXPECT_FALSE(fastdepth()->traced());
    test::TempDir dir;
    test::write_p_mean(dir / "p.pt");
    JobConfig::Model options;
    options.path = (dir / "p.pt").string();
    EXPECT_FALSE(DepthModel::load(options)->traced());
}

TEST(DepthModel, CudaDeviceWithoutCudaIsAConfigError) {
    if (torch_has_cuda()) GTEST_SKIP() << "this LibTorch has CUDA";
    JobConfig::Model options;
    options.device = "cuda";
    try {
        DepthModel::load(options);
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("model.device 'cuda'"), std::string::npos) << e.what();
    }
}
