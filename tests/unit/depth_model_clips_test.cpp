// Unit tests for DepthModel::infer_clips (include/depthbatch/depth_model.h): a multi-frame model's [B,T,3,H,W]
// forward, its output checked as [B,T,H,W] (check_clip_output), out of memory split by whole clips, and infer() of
// such a model running each frame as a clip of one.
#include "depthbatch/depth_model.h"
#include "depthbatch/error.h"
#include "depth_model_test_seam.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

using namespace depthbatch;
using namespace depthbatch::test;

namespace {

const std::string kVideoContract =
    R"({"name": "probe-video", "input": {"colorspace": "sRGB", "multiple": 1, "frames": 4},
 "output": {"kind": "relative_inverse_depth"}, "temporal": {"window": 4, "overlap": 3, "keyframes": [0,2,3],
 "crossfade": 2, "align": "scale_shift"}})";

/// Frame depth = its mean grey + the window's mean grey (so each frame depends on its clip).
std::unique_ptr<DepthModel> video_model(const fs::path& path, const std::string& forward =
                                                                  "def forward(self, x):\n"
                                                                  "    m = x.mean(dim=2)\n"
                                                                  "    return m + m.mean(dim=1, keepdim=True)\n") {
    write_probe_model(path, forward, kVideoContract);
    ModelSettings options;
    options.path = path.string();
    options.device = ModelDevice::cpu();
    return DepthModel::load(options);
}

ModelInput grey(float v, int w = 3, int h = 2) {
    ModelInput in;
    in.width = w, in.height = h;
    in.chw.assign(static_cast<size_t>(3) * w * h, v);
    return in;
}

}  // namespace

TEST(DepthModelClips, EachClipIsOneWindowAndTheOutputComesBackClipByClip) {
    TempDir dir;
    const auto model = video_model(dir.path / "video.pt");
    EXPECT_TRUE(model->contract().multi_frame());
    const ModelInput a = grey(0.1f), b = grey(0.2f), c = grey(0.3f), d = grey(0.6f);
    // Clip 0: 0.1 0.2 0.3 0.6 (mean 0.3); clip 1: 0.6 0.6 0.6 0.1 (mean 0.475).
    const auto out = model->infer_clips({{&a, &b, &c, &d}, {&d, &d, &d, &a}});
    ASSERT_EQ(out.size(), 2u);
    ASSERT_EQ(out[0].size(), 4u);
    EXPECT_EQ(out[0][0].width, 3);
    EXPECT_EQ(out[0][0].height, 2);
    EXPECT_NEAR(out[0][0].data.at(0), 0.1f + 0.3f, 1e-6);
    EXPECT_NEAR(out[0][3].data.at(5), 0.6f + 0.3f, 1e-6);
    EXPECT_NEAR(out[1][3].data.at(0), 0.1f + 0.475f, 1e-6);
    // infer(): every frame alone (T = 1): its own grey twice.
    const auto alone = model->infer({&a, &d});
    ASSERT_EQ(alone.size(), 2u);
    EXPECT_NEAR(alone[0].data.at(0), 0.2f, 1e-6);
    EXPECT_NEAR(alone[1].data.at(0), 1.2f, 1e-6);
    // Out of memory for more than one clip (4 frames): the batch is split into whole clips, with the same result.
    std::vector<size_t> tried;
    DepthModelTestSeam::set_fault_injector(*model, [&](size_t frames, const std::string&) {
        tried.push_back(frames);
        return frames > 4;
    });
    const auto split = model->infer_clips({{&a, &b, &c, &d}, {&d, &d, &d, &a}});
    EXPECT_EQ(tried, (std::vector<size_t>{8, 4, 4}));
    ASSERT_EQ(split.size(), 2u);
    for (size_t k = 0; k < 2; ++k)
        for (size_t t = 0; t < 4; ++t) EXPECT_EQ(split[k][t].data, out[k][t].data) << k << "," << t;
    // Clips of different lengths, or longer than input.frames, are refused.
    DepthModelTestSeam::set_fault_injector(*model, {});
    EXPECT_THROW(model->infer_clips({{&a, &b}, {&a}}), RenderError);
    EXPECT_THROW(model->infer_clips({{&a, &b, &c, &d, &a}}), RenderError);
}

TEST(DepthModelClips, AnOutputThatIsNotBTHWIsAModelErrorNamingBothShapes) {
    TempDir dir;
    const ModelInput a = grey(0.5f);
    const auto keepdim =
        video_model(dir.path / "keepdim.pt", "def forward(self, x):\n    return x.mean(dim=2, keepdim=True)\n");
    std::string msg = expect_error<ModelError>([&] { keepdim->infer_clips({{&a, &a}}); }, "[B,T,1,H,W]");
    EXPECT_TRUE(contains(msg, "[1,2,1,2,3]")) << msg;
    EXPECT_TRUE(contains(msg, "[1,2,3,2,3]")) << msg;
    EXPECT_TRUE(contains(msg, "[B,T,H,W]")) << msg;
    const auto flat =
        video_model(dir.path / "flat.pt", "def forward(self, x):\n    return x.flatten(0, 1).mean(dim=1)\n");
    msg = expect_error<ModelError>([&] { flat->infer_clips({{&a, &a}}); }, "[B*T,H,W]");
    EXPECT_TRUE(contains(msg, "[2,2,3]")) << msg;
}
