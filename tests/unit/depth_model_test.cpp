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
#include <limits>
#include <sstream>
#include <thread>

using namespace depthbatch;
using depthbatch::test::LogCapture;

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
    ModelSettings options;
    options.device = ModelDevice::cpu();
    options.precision = precision;
    return DepthModel::load(options);
}

float max_abs_diff(const DepthImage& a, const DepthImage& b) {
    EXPECT_EQ(a.data.size(), b.data.size());
    float m = 0;
    for (size_t i = 0; i < a.data.size(); ++i) m = std::max(m, std::abs(a.data[i] - b.data[i]));
    return m;
}

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
    // One warning per batch that was split (4, then each 2), and nothing else.
    EXPECT_EQ(log.warnings("retrying in halves"), 3u) << log.text.str();
    EXPECT_EQ(log.warnings(), 3u) << log.text.str();

    // It fails even for one frame: the frame runs on the CPU fallback copy, nothing is lost.
    DepthModelTestSeam::set_fault_injector(*model, [](size_t, const std::string&) { return true; });
    auto fallback = model->infer({batch[0]});
    ASSERT_EQ(fallback.size(), 1u);
    EXPECT_LE(max_abs_diff(fallback[0], reference[0]), 1e-5f);
    EXPECT_EQ(log.warnings("for a single frame"), 1u) << log.text.str();
    EXPECT_EQ(log.warnings("running it on the CPU"), 1u) << log.text.str();
    EXPECT_EQ(log.warnings(), 4u) << "one more warning, for the CPU fallback\n" << log.text.str();
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
    EXPECT_EQ(log.warnings("model.precision fp16 needs CUDA; running in fp32 on cpu"), 1u) << text;
    EXPECT_EQ(log.warnings(), 1u) << "exactly one warning\n" << text;
    auto full = fastdepth(Precision::Fp32);
    auto inputs = random_inputs(1, 224, 224, 3);
    EXPECT_EQ(max_abs_diff(half->infer({&inputs[0]})[0], full->infer({&inputs[0]})[0]), 0.0f) << "bitwise equal";
}

TEST(DepthModel, FreezeAndChannelsLastKeepTheResult) {
    auto plain = fastdepth();
    ModelSettings options;
    options.device = ModelDevice::cpu();
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
    ModelSettings scripted;
    scripted.path = test::write_p_mean(dir / "p.pt").string();
    const auto probe = DepthModel::load(scripted);
    EXPECT_FALSE(probe->traced());
    EXPECT_FALSE(probe->contract().fixed_size);

    const auto traced_pt = dir / "traced.pt";
    const auto made = test::run_python({"-m", "tools.export", "nuke-style-trace", "--out", traced_pt.string(), "--size",
                                        "84", "112", "--inner", "luma"});
    ASSERT_EQ(made.exit_code, 0) << made.output;
    ModelSettings options;
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
    ModelSettings options;
    options.device = *parse_model_device("cuda");
    const std::string msg = test::expect_error<ConfigError>([&] { DepthModel::load(options); }, "load on cuda");
    EXPECT_TRUE(test::contains(msg, "model.device 'cuda'")) << msg;
}

// ---- issue 22 §2: a model output that cannot be depth for the frame never reaches an EXR ----------------

namespace {

/// A probe whose forward returns `expr` (TorchScript, of x: [N,3,H,W]) with a contract of `kind`, `input_extra`
/// and `output_extra` (JSON members, each starting with ", "), loaded on the CPU.
std::unique_ptr<DepthModel> probe(const test::TempDir& dir, const std::string& expr,
                                  const std::string& kind = "metric_depth", const std::string& input_extra = "",
                                  const std::string& output_extra = "") {
    const std::string units = kind == "metric_depth" ? "m" : "";
    const std::string contract = R"({"format": 1, "name": "probe", "input": {"colorspace": "sRGB", "multiple": 1)" +
                                 input_extra + R"(}, "output": {"kind": ")" + kind + R"(", "units": ")" + units + "\"" +
                                 output_extra + "}}";
    static int n = 0;
    ModelSettings options;
    options.device = ModelDevice::cpu();
    options.path = test::write_probe_model(dir / ("probe" + std::to_string(++n) + ".pt"),
                                           "def forward(self, x):\n    return " + expr + "\n", contract)
                       .string();
    return DepthModel::load(options);
}

/// The ModelError message of one forward of `model` on a 64x48 input ([1,3,48,64]).
std::string infer_error(const DepthModel& model, int w = 64, int h = 48) {
    const auto in = random_inputs(1, w, h, 21);
    return test::expect_error<ModelError>([&] { model.infer({&in[0]}); }, "infer");
}

}  // namespace

TEST(DepthModelOutput, ZeroDimensionIsAModelErrorNamingBothShapes) {
    test::TempDir dir;
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"x[:, :1, :0, :0]", "model output [1,1,0,0] has a zero dimension for input [1,3,48,64]"},
        {"x[:, :1, :0, :]", "model output [1,1,0,64] has a zero dimension for input [1,3,48,64]"},
        {"x[:, 0, :, :0]", "model output [1,48,0] has a zero dimension for input [1,3,48,64]"},
        {"x[:0, :1]", "model output [0,1,48,64] has a zero dimension for input [1,3,48,64]"},
    };
    for (const auto& [expr, expected] : cases) {
        const std::string msg = infer_error(*probe(dir, expr));
        EXPECT_TRUE(test::contains(msg, expected)) << expr << "\n" << msg;
        EXPECT_TRUE(test::contains(msg, "probe")) << "names the model file\n" << msg;
    }
}

TEST(DepthModelOutput, SwappedHeightAndWidthWarnsOncePerJob) {
    test::TempDir dir;
    LogCapture log;
    const auto model = probe(dir, "x.mean(1, keepdim=True).transpose(2, 3)");
    const auto in = random_inputs(1, 64, 48, 3);
    for (int i = 0; i < 3; ++i) {
        const auto out = model->infer({&in[0]});
        ASSERT_EQ(out.size(), 1u);
        EXPECT_EQ(out[0].width, 48);  // rendering goes on with what the model gave
        EXPECT_EQ(out[0].height, 64);
    }
    const std::string text = log.text.str();
    const std::string expected = "model output [1,1,64,48] has the height and width of its input [1,3,48,64] swapped";
    EXPECT_EQ(log.warnings(expected), 1u) << "once per job, not per frame\n" << text;
    EXPECT_EQ(log.warnings(), 1u) << text;

    // At one scale (half size, swapped) too; a square input, or an output at the input's own aspect, is not warned.
    LogCapture log2;
    probe(dir, "x[:, :1, ::2, ::2].transpose(2, 3)")->infer({&in[0]});
    EXPECT_EQ(log2.warnings("model output [1,1,32,24] has the height and width of its input [1,3,48,64] swapped"), 1u)
        << log2.text.str();
    LogCapture log3;
    const auto square = random_inputs(1, 40, 40, 4);
    probe(dir, "x.mean(1, keepdim=True).transpose(2, 3)")->infer({&square[0]});
    probe(dir, "x[:, :1, ::2, ::2]")->infer({&in[0]});
    EXPECT_FALSE(test::contains(log3.text.str(), "swapped")) << log3.text.str();
}

TEST(DepthModelOutput, SwappedHeightAndWidthOfAFixedSizeModelIsAModelError) {
    test::TempDir dir;
    const auto model = probe(dir, "x.mean(1, keepdim=True).transpose(2, 3)", "metric_depth",
                             R"(, "size": [48, 64], "fixed_size": true)");
    const std::string msg = infer_error(*model);
    EXPECT_TRUE(
        test::contains(msg, "model output [1,1,64,48] has the height and width of the input [1,3,48,64] swapped"))
        << msg;
    EXPECT_TRUE(test::contains(msg, "fixed-size")) << msg;
}

TEST(DepthModelOutput, OutputFarLargerThanTheInputIsRefusedUnlessTheContractAllowsIt) {
    test::TempDir dir;
    const std::string five = "x.mean(1, keepdim=True).repeat(1, 1, 5, 5)";  // [1,1,240,320] for [1,3,48,64]
    std::string msg = infer_error(*probe(dir, five));
    EXPECT_TRUE(test::contains(msg, "model output [1,1,240,320] is more than 4x the input [1,3,48,64]")) << msg;
    EXPECT_TRUE(test::contains(msg, "output.max_scale")) << msg;
    msg = infer_error(*probe(dir, "x.mean(1, keepdim=True).repeat(1, 1, 1, 5)"));  // width only
    EXPECT_TRUE(test::contains(msg, "model output [1,1,48,320] is more than 4x")) << msg;

    // Exactly 4x passes by default; 5x passes with output.max_scale 8, at the size the model gave.
    const auto in = random_inputs(1, 64, 48, 8);
    const auto four = probe(dir, "x.mean(1, keepdim=True).repeat(1, 1, 4, 4)")->infer({&in[0]});
    EXPECT_EQ(four[0].width, 256);
    EXPECT_EQ(four[0].height, 192);
    const auto allowed = probe(dir, five, "metric_depth", "", R"(, "max_scale": 8)");
    EXPECT_DOUBLE_EQ(allowed->contract().max_scale, 8.0);
    const auto out = allowed->infer({&in[0]});
    EXPECT_EQ(out[0].width, 320);
    EXPECT_EQ(out[0].height, 240);
    msg = infer_error(
        *probe(dir, "x.mean(1, keepdim=True).repeat(1, 1, 9, 1)", "metric_depth", "", R"(, "max_scale": 8)"));
    EXPECT_TRUE(test::contains(msg, "model output [1,1,432,64] is more than 8x the input [1,3,48,64]")) << msg;
}

TEST(DepthModelOutput, TupleGivesItsFirstElementOtherContainersAreRefusedByType) {
    test::TempDir dir;
    const auto in = random_inputs(1, 64, 48, 9);
    const auto model = probe(dir, "(x.mean(1, keepdim=True) * 2.0, x)");
    LogCapture log;
    const LogLevel level = log_level();
    set_log_level(LogLevel::Debug);
    const auto out = model->infer({&in[0]});
    model->infer({&in[0]});
    set_log_level(level);
    const std::string text = log.text.str();
    const std::string said = "its first element is the depth, the rest is ignored";
    EXPECT_TRUE(test::contains(text, "model output is a tuple of 2 (Tuple[Tensor, Tensor])")) << text;
    EXPECT_EQ(text.find(said), text.rfind(said)) << "said once\n" << text;
    EXPECT_NE(text.find(said), std::string::npos) << text;
    ASSERT_EQ(out[0].data.size(), 64u * 48u);
    const size_t plane = 64 * 48;
    float worst = 0;
    for (size_t i = 0; i < plane; ++i) {
        const float* c = in[0].chw.data();
        worst = std::max(worst, std::abs(out[0].data[i] - 2.0f * (c[i] + c[plane + i] + c[2 * plane + i]) / 3.0f));
    }
    EXPECT_LE(worst, 1e-5f) << "the first element is the depth";

    const std::vector<std::pair<std::string, std::string>> refused = {
        {"[x]", "model output is List[Tensor], not a tensor"},
        {"{'depth': x}", "model output is Dict[str, Tensor], not a tensor"},
        {"None", "model output is NoneType, not a tensor"},
        {"3", "model output is int, not a tensor"},
        {"([x], x)", "model output is a tuple whose first element is List[Tensor], not a tensor"},
        {"(7, x)", "model output is a tuple whose first element is int, not a tensor"},
    };
    for (const auto& [expr, expected] : refused) {
        const std::string msg = infer_error(*probe(dir, expr));
        EXPECT_TRUE(test::contains(msg, expected)) << expr << "\n" << msg;
    }
}

TEST(DepthModelOutput, FloatDtypesAreConvertedIntegerAndBoolAreRefusedByName) {
    test::TempDir dir;
    const auto in = random_inputs(1, 64, 48, 10);
    const size_t plane = 64 * 48;
    const float* c = in[0].chw.data();
    // half, bfloat16 (ScalarType 15: TorchScript source has no torch.bfloat16 here), double.
    for (const auto& [dtype, tolerance] :
         std::vector<std::pair<std::string, float>>{{"half()", 1e-3f}, {"to(15)", 1e-2f}, {"double()", 1e-6f}}) {
        const auto out = probe(dir, "x.mean(1, keepdim=True)." + dtype)->infer({&in[0]});
        ASSERT_EQ(out[0].data.size(), plane) << dtype;
        float worst = 0;
        for (size_t i = 0; i < plane; ++i)
            worst = std::max(worst, std::abs(out[0].data[i] - (c[i] + c[plane + i] + c[2 * plane + i]) / 3.0f));
        EXPECT_LE(worst, tolerance) << dtype;
        if (dtype != "double()") EXPECT_GT(worst, 0.0f) << dtype << ": rounded as " << dtype << ", then converted";
    }
    const std::vector<std::pair<std::string, std::string>> refused = {
        {"(x.mean(1, keepdim=True) * 10).int()", "model output [1,1,48,64] is Int, not floating point depth"},
        {"(x.mean(1, keepdim=True) * 10).long()", "model output [1,1,48,64] is Long, not floating point depth"},
        {"(x.mean(1, keepdim=True) * 10).byte()", "model output [1,1,48,64] is Byte, not floating point depth"},
        {"x.mean(1, keepdim=True) > 0.5", "model output [1,1,48,64] is Bool, not floating point depth"},
    };
    for (const auto& [expr, expected] : refused) {
        const std::string msg = infer_error(*probe(dir, expr));
        EXPECT_TRUE(test::contains(msg, expected)) << expr << "\n" << msg;
        EXPECT_TRUE(test::contains(msg, "for input [1,3,48,64]")) << msg;
    }
}

TEST(DepthModelOutput, NegativeMetricDepthIsCountedAndKept) {
    test::TempDir dir;
    const auto in = random_inputs(1, 64, 48, 12);
    const size_t plane = 64 * 48;
    const float* c = in[0].chw.data();
    size_t expected = 0;
    float lowest = 0;
    for (size_t i = 0; i < plane; ++i) {
        const float v = (c[i] + c[plane + i] + c[2 * plane + i]) / 3.0f - 0.5f;
        if (v < 0) ++expected, lowest = std::min(lowest, v);
    }
    ASSERT_GT(expected, 100u);
    ASSERT_LT(expected, plane - 100);
    const auto out = probe(dir, "x.mean(1, keepdim=True) - 0.5")->infer({&in[0]});
    EXPECT_EQ(out[0].negative, expected);
    EXPECT_NEAR(out[0].negative_min, lowest, 1e-6f);
    EXPECT_NEAR(*std::min_element(out[0].data.begin(), out[0].data.end()), lowest, 1e-6f) << "kept, not clamped to 0";
    // Not counted for relative models (their raw values have no sign meaning), nor for a positive metric output.
    EXPECT_EQ(probe(dir, "x.mean(1, keepdim=True) - 0.5", "relative_depth")->infer({&in[0]})[0].negative, 0u);
    EXPECT_EQ(probe(dir, "x.mean(1, keepdim=True) + 0.5")->infer({&in[0]})[0].negative, 0u);
}

// A forward that fails on its input names the input's shape and how to state a single size; the torch.jit.trace
// hint only for a module made with torch.jit.trace, never for a scripted one (issue 26 §4).
TEST(DepthModelOutput, ShapeErrorOfAScriptedModuleHasNoTraceHint) {
    test::TempDir dir;
    const std::string msg = infer_error(*probe(dir, "x.reshape(1, 1, 32, 32)"));  // 3x48x64 values are not 32x32
    EXPECT_TRUE(test::contains(msg,
                               "[input [1,3,48,64] (N,C,H,W); a model that runs at one size only: set "
                               "model.input_size [w, h] and model.fixed_size: true]"))
        << msg;
    EXPECT_FALSE(test::contains(msg, "trace")) << msg;
}

// A job's model.kind that disagrees with the model's own depthbatch.json: used, with one warning naming both; one
// that agrees, or a model without a contract, says nothing (issue 26 §4).
TEST(DepthModel, JobKindDisagreeingWithTheContractWarnsAndIsUsed) {
    test::TempDir dir;
    ModelSettings options;
    options.path = test::write_p_mean(dir / "p.pt").string();  // its contract: metric_depth
    options.contract.kind = DepthKind::RelativeInverseDepth;
    {
        LogCapture log;
        EXPECT_EQ(DepthModel::load(options)->contract().kind, DepthKind::RelativeInverseDepth);
        EXPECT_EQ(log.warnings("the job's model.kind relative_inverse_depth overrides the model's own contract "
                               "(metric_depth)"),
                  1u)
            << log.text.str();
    }
    options.contract.kind = DepthKind::MetricDepth;
    LogCapture log;
    EXPECT_EQ(DepthModel::load(options)->contract().kind, DepthKind::MetricDepth);
    EXPECT_EQ(log.warnings(), 0u) << log.text.str();
}

// ---- issue 31: one inference thread, the job's shapes warmed up, precision that is what it says ----------------

TEST(DepthModelThread, EveryForwardRunsOnTheModelsOwnThreadWhoeverCalls) {
    auto model = fastdepth();
    const auto inputs = random_inputs(4, 96, 64, 11);
    std::vector<std::vector<DepthImage>> single(4);
    for (size_t i = 0; i < 4; ++i) single[i] = model->infer({&inputs[i]});
    // Four threads at once, as TBB workers would: each gets its own frame's depth back.
    std::vector<std::vector<DepthImage>> together(4);
    std::vector<std::thread> callers;
    for (size_t i = 0; i < 4; ++i)
        callers.emplace_back([&, i] {
            for (int k = 0; k < 3; ++k) together[i] = model->infer({&inputs[i]});
        });
    for (auto& c : callers) c.join();
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(max_abs_diff(together[i][0], single[i][0]), 0.0f) << "frame " << i;
    const InferenceStats stats = model->stats();
    EXPECT_EQ(stats.forward_threads, 1) << "forwards ran on " << stats.forward_threads << " threads";
    EXPECT_FALSE(stats.on_caller_thread) << "a forward ran on the thread that loaded the model";
    EXPECT_EQ(stats.forwards, 4 + 12);
}

TEST(DepthModelThread, SubmitGivesWhatInferGivesInOrderAndKeepsNoInput) {
    auto model = fastdepth();
    std::vector<DepthImage> want;
    std::vector<InferenceTicket> tickets;
    for (unsigned k = 0; k < 5; ++k) {
        auto inputs = random_inputs(2, 96, 64, 100 + k);
        for (const auto& d : model->infer({&inputs[0], &inputs[1]})) want.push_back(d);
        tickets.push_back(model->submit({&inputs[0], &inputs[1]}));
        inputs.clear();  // staged by submit: the caller's inputs may go at once
    }
    size_t i = 0;
    for (auto& t : tickets) {
        const auto got = t.wait();
        ASSERT_EQ(got.size(), 2u);
        for (const auto& d : got) EXPECT_EQ(max_abs_diff(d, want[i++]), 0.0f) << "image " << i - 1;
        EXPECT_GT(t.ms(), 0.0);
    }
    EXPECT_EQ(model->stats().forward_threads, 1);
    // A failed forward reaches the ticket as the error infer() throws.
    test::TempDir dir;
    ModelSettings options;
    options.device = ModelDevice::cpu();
    options.path =
        test::write_probe_model(dir / "fixed.pt", "def forward(self, x):\n    return x.view(1, 3, 48, 64)[:, :1]\n",
                                test::probe_contract())
            .string();
    auto fixed = DepthModel::load(options);
    const auto wrong = random_inputs(1, 32, 32, 3);
    auto ticket = fixed->submit({&wrong[0]});
    const std::string msg = test::expect_error<ModelError>([&] { ticket.wait(); }, "wait");
    EXPECT_TRUE(test::contains(msg, "forward pass failed on cpu at 32x32")) << msg;
}

TEST(DepthModelThread, WarmUpRunsAtTheShapesItIsGivenAndRecordsThem) {
    auto model = fastdepth();
    model->warm_up({ForwardShape{2, 0, 384, 224}, ForwardShape{1, 0, 256, 256}}, 2);
    const InferenceStats stats = model->stats();
    EXPECT_EQ(stats.warmup_shapes, (std::vector<std::string>{"2x3x224x384", "1x3x256x256"}));
    EXPECT_EQ(stats.warmup_passes, 2);
    EXPECT_EQ(stats.forwards, 4);
    EXPECT_GT(stats.warmup_ms, 0.0);
    EXPECT_EQ(stats.forward_threads, 1);
    EXPECT_EQ(ForwardShape({1, 32, 504, 280}).text(), "1x32x3x280x504") << "a video window [B,T,3,H,W]";
}

TEST(DepthModelPrecision, ErrorIsTheNinetyNinthPercentileOverTheSpan) {
    std::vector<float> ref(1000), low(1000);
    for (size_t i = 0; i < ref.size(); ++i) ref[i] = 1.0f + 4.0f * static_cast<float>(i) / 999.0f;  // 1..5 m
    EXPECT_EQ(low_precision_error(ref, ref), 0.0);
    for (size_t i = 0; i < ref.size(); ++i) low[i] = ref[i] + 0.04f;  // 1% of the 1st-99th percentile span (3.92 m)
    EXPECT_NEAR(low_precision_error(ref, low), 0.04 / (ref[989] - ref[10]), 1e-4);
    // One pixel far off is not the 99th percentile; 2% of the pixels are.
    low = ref;
    low[500] += 100.0f;
    EXPECT_EQ(low_precision_error(ref, low), 0.0);
    for (size_t i = 0; i < 20; ++i) low[i * 50] += 1.0f;
    EXPECT_GT(low_precision_error(ref, low), 0.2);
    low = ref;
    low[3] = std::numeric_limits<float>::infinity();
    EXPECT_TRUE(std::isinf(low_precision_error(ref, low))) << "a non-finite value is never within tolerance";
    EXPECT_TRUE(std::isinf(low_precision_error(ref, {}))) << "nothing to compare";
    // A flat frame compares in absolute terms: 1e-6 of its value.
    std::vector<float> flat(100, 2.0f), off(100, 2.0f + 4e-6f);
    EXPECT_NEAR(low_precision_error(flat, off), 2.0, 0.2);
}

namespace {

/// A model loaded on the CPU at `precision`, the precision check allowed there (fp16/bf16 as a cast module).
std::unique_ptr<DepthModel> low_on_cpu(const std::string& path, Precision precision) {
    DepthModelTestSeam::allow_low_precision_on_cpu(true);
    ModelSettings options;
    options.device = ModelDevice::cpu();
    options.path = path;
    options.precision = precision;
    auto m = DepthModel::load(options);
    DepthModelTestSeam::allow_low_precision_on_cpu(false);
    return m;
}

}  // namespace

TEST(DepthModelPrecision, WithinToleranceKeepsTheLowPrecisionBeyondItRendersFp32) {
    test::TempDir dir;
    const auto inputs = random_inputs(1, 64, 48, 5);
    // The channel mean in bf16 (8-bit mantissa): ~0.2% of the span, within the 1% tolerance.
    {
        auto m = low_on_cpu(test::write_p_mean(dir / "mean.pt").string(), Precision::Bf16);
        ASSERT_EQ(m->precision(), Precision::Bf16);
        const PrecisionCheck c = m->check_precision(inputs[0]);
        EXPECT_TRUE(c.ran);
        EXPECT_EQ(c.asked, Precision::Bf16);
        EXPECT_EQ(c.in_force, Precision::Bf16);
        EXPECT_EQ(c.how, "half module");
        EXPECT_GT(c.error, 0.0) << "bf16 is not fp32";
        EXPECT_LE(c.error, kPrecisionTolerance);
        EXPECT_EQ(m->precision(), Precision::Bf16);
        const auto depth = m->infer({&inputs[0]});
        float worst = 0;
        for (size_t i = 0; i < depth[0].data.size(); ++i) {
            const size_t x = i % 64, y = i / 64;
            float mean = 0;
            for (int ch = 0; ch < 3; ++ch) mean += inputs[0].chw[static_cast<size_t>(ch) * 64 * 48 + y * 64 + x] / 3.0f;
            worst = std::max(worst, std::abs(depth[0].data[i] - mean));
        }
        EXPECT_GT(worst, 0.0f) << "rendered in bf16";
        EXPECT_LT(worst, 0.01f);
    }
    // docs/cases.md 7's P-fp16: sqrt((300 m)^2) / 300 overflows to +Inf in fp16 where the mean m > 0.853.
    {
        const std::string path = test::write_probe_model(dir / "p_fp16.pt",
                                                         "def forward(self, x):\n    m = x.mean(dim=1, keepdim=True)\n "
                                                         "   return ((300.0 * m) * (300.0 * m)).sqrt() / 300.0\n",
                                                         test::probe_contract())
                                     .string();
        auto m = low_on_cpu(path, Precision::Fp16);
        ModelInput bright;
        bright.width = 64, bright.height = 48;
        bright.chw.assign(static_cast<size_t>(3) * 64 * 48, 0.95f);
        for (size_t i = 0; i < bright.chw.size(); i += 7) bright.chw[i] = 0.5f;
        const PrecisionCheck c = m->check_precision(bright);
        EXPECT_TRUE(c.ran);
        EXPECT_TRUE(std::isinf(c.error)) << c.error;
        EXPECT_EQ(c.in_force, Precision::Fp32);
        EXPECT_EQ(m->precision(), Precision::Fp32) << "beyond the tolerance the job renders fp32";
        const auto depth = m->infer({&bright});
        for (float v : depth[0].data) ASSERT_TRUE(std::isfinite(v));
    }
    // FastDepth in bf16: far beyond 1% of the span (the GPU measured 0.21 with autocast).
    {
        auto m = low_on_cpu(DepthModel::default_model_path(), Precision::Bf16);
        const auto frame = random_inputs(1, 224, 224, 9);
        const PrecisionCheck c = m->check_precision(frame[0]);
        EXPECT_GT(c.error, kPrecisionTolerance);
        EXPECT_EQ(m->precision(), Precision::Fp32);
    }
    // fp32 has nothing to check.
    EXPECT_FALSE(fastdepth()->check_precision(inputs[0]).ran);
}
