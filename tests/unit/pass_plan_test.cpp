// output.passes planned once (src/pass_plan.h) and the video stage's own check of a job (video_window_stage.h:
// check_video_model_job): the errors job_plan threw before they had rooms, the channels in the job's order.
#include "pass_plan.h"

#include "depthbatch/error.h"
#include "depthbatch/video_window_stage.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

using namespace depthbatch;
using depthbatch::test::expect_error;

namespace {

ModelContract with_extras() {
    ModelContract c;
    c.name = "probe";
    c.kind = DepthKind::MetricDepth;
    c.units = "m";
    c.extra_outputs = {{"sky", "sky.A"}, {"conf", "depth.confidence"}};
    return c;
}

/// depth.Z in metres (raw of a metric model) and without units (normalized).
DepthNormalizer metres() {
    DepthSettings d;
    d.convention = DepthConvention::Raw;
    return DepthNormalizer(d, DepthKind::MetricDepth);
}
DepthNormalizer normalized() {
    DepthSettings d;
    d.convention = DepthConvention::Normalized;
    d.normalize = Normalization::Frame;
    return DepthNormalizer(d, DepthKind::MetricDepth);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(PassPlan, ChannelsFollowTheJobsOrderAndModelOutputsKeepTheirIndex) {
    const PassPlan plan({"N", "conf", "P"}, with_extras(), "m.pt", metres(), true);
    ASSERT_EQ(plan.passes().size(), 3u);
    EXPECT_EQ(plan.passes()[0].kind, PlannedPass::Kind::Normals);
    EXPECT_EQ(plan.passes()[1].kind, PlannedPass::Kind::ModelOutput);
    EXPECT_EQ(plan.passes()[1].model_output, 1u);  // "conf" is the contract's second extra output
    EXPECT_EQ(plan.passes()[2].kind, PlannedPass::Kind::Position);
    EXPECT_TRUE(plan.geometric());
    EXPECT_EQ(plan.channels(),
              (std::vector<std::string>{"N.X", "N.Y", "N.Z", "depth.confidence", "P.X", "P.Y", "P.Z"}));
    EXPECT_EQ(plan.describe("focal 35 mm", PassPixelType::Half),
              "N.X, N.Y, N.Z, depth.confidence, P.X, P.Y, P.Z half; camera focal 35 mm");
    EXPECT_EQ(PassPlan().describe("x", PassPixelType::Float), "");

    const PassPlan extras_only({"sky"}, with_extras(), "m.pt", normalized(),
                               false);  // needs neither metres nor a camera
    EXPECT_FALSE(extras_only.geometric());
    EXPECT_EQ(extras_only.describe("", PassPixelType::Float), "sky.A float");
}

TEST(PassPlan, RefusesWhatAPassCannotBeMadeFrom) {
    std::string msg =
        expect_error<ConfigError>([] { PassPlan({"P"}, with_extras(), "m.pt", normalized(), true); }, "P, no metres");
    EXPECT_TRUE(has(msg, "output.passes: P needs depth in metres, and depth.Z here holds values without units")) << msg;
    EXPECT_TRUE(has(msg, "depth.convention normalized")) << msg;
    msg = expect_error<ConfigError>([] { PassPlan({"N"}, with_extras(), "m.pt", metres(), false); }, "N, no focal");
    EXPECT_TRUE(has(msg, "output.passes: N needs the shot's camera")) << msg;
    msg = expect_error<ConfigError>([] { PassPlan({"Z"}, with_extras(), "m.pt", metres(), true); }, "unknown");
    EXPECT_TRUE(has(msg,
                    "output.passes: 'Z' is not P or N, and m.pt declares no extra output of that name "
                    "(its contract's output.extra_outputs: sky (sky.A), conf (depth.confidence))"))
        << msg;
    msg = expect_error<ConfigError>([] { PassPlan({"sky"}, ModelContract{}, "m.pt", metres(), true); }, "no extras");
    EXPECT_TRUE(has(msg, "output.extra_outputs: none)")) << msg;
}

TEST(VideoModelJob, TheVideoStageRefusesWhatItsWindowsCannotDo) {
    ModelContract c = with_extras();
    c.frames = 32;
    c.temporal.window = 32, c.temporal.overlap = 10, c.temporal.crossfade = 8;
    EXPECT_NO_THROW(check_video_model_job(c, "vda.pt", {false, false, {"P", "N"}, 1}));
    std::string msg = expect_error<ConfigError>(
        [&] {
            check_video_model_job(c, "vda.pt", {true, false, {}, 1});
        },
        "tiles");
    EXPECT_TRUE(has(msg, "model.tiles: vda.pt is a video model (input.frames 32): its windows see whole frames"))
        << msg;
    msg = expect_error<ConfigError>([&] { check_video_model_job(c, "vda.pt", {false, true, {}, 1}); }, "sequence");
    EXPECT_TRUE(has(msg, "depth.normalize sequence: vda.pt is a video model")) << msg;
    msg = expect_error<ConfigError>(
        [&] {
            check_video_model_job(c, "vda.pt", {false, false, {"P", "sky"}, 1});
        },
        "extra");
    EXPECT_TRUE(has(msg,
                    "output.passes: sky: vda.pt is a video model (input.frames 32): extra model outputs are written "
                    "for single-frame models only"))
        << msg;
    c.reference_focal_px = 300;
    msg = expect_error<ConfigError>([&] { check_video_model_job(c, "vda.pt", {false, false, {}, 1}); }, "focal");
    EXPECT_TRUE(has(msg, "output.reference_focal_px")) << msg;
}
