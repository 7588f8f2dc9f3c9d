// Unit tests for the multi-frame part of include/depthbatch/model_contract.h: input.frames, the temporal block
// (TemporalWindowing) and check_clip_output.
#include "depthbatch/error.h"
#include "depthbatch/model_contract.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <string>

using namespace depthbatch;

namespace {

const std::string kOrigin = "/models/vda.pt";

// The contract tools/ writes for Video Depth Anything Small (docs/video-models.md "Video models").
const std::string kVda = R"({"name": "video-depth-anything-vits", "variant": "vits",
 "input": {"colorspace": "sRGB", "multiple": 14, "size": [518, 518], "mean": null, "std": null, "frames": 32},
 "output": {"kind": "relative_inverse_depth"},
 "temporal": {"window": 32, "overlap": 10, "keyframes": [0,12,24,25,26,27,28,29,30,31], "crossfade": 8, "align": "scale_shift"},
 "license": "Apache-2.0", "source": "video_depth_anything_vits.pth", "source_sha256": "abc123"})";

std::string with(const std::string& from, const std::string& to, std::string s = kVda) {
    const auto pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    if (pos != std::string::npos) s.replace(pos, from.size(), to);
    return s;
}

std::string error_of(const std::string& json) {
    const std::string msg = test::expect_error<ModelError>([&] { parse_model_contract(json, kOrigin); }, json);
    EXPECT_EQ(msg.rfind(kOrigin, 0), 0u) << msg;
    return msg;
}

}  // namespace

TEST(ModelContractTemporal, ParsesTheVideoDepthAnythingContract) {
    const ModelContract c = parse_model_contract(kVda, kOrigin);
    EXPECT_TRUE(c.multi_frame());
    EXPECT_EQ(c.frames, 32);
    EXPECT_EQ(c.temporal.window, 32);
    EXPECT_EQ(c.temporal.overlap, 10);
    EXPECT_EQ(c.temporal.stride(), 22);
    EXPECT_EQ(c.temporal.keyframes, (std::vector<int>{0, 12, 24, 25, 26, 27, 28, 29, 30, 31}));
    EXPECT_EQ(c.temporal.crossfade, 8);
    EXPECT_EQ(c.temporal.align_frames(), 2);
    EXPECT_EQ(c.temporal.align, TemporalWindowing::Align::ScaleShift);
    EXPECT_EQ(c.provenance.at("license"), "Apache-2.0");
    EXPECT_EQ(c.provenance.at("source_sha256"), "abc123");
    EXPECT_EQ(c.provenance.count("temporal"), 0u) << "the temporal block is parsed, not provenance";
    // Metric VDA: align none.
    const ModelContract m = parse_model_contract(
        with("\"align\": \"scale_shift\"", "\"align\": \"none\"",
             with("{\"kind\": \"relative_inverse_depth\"}", "{\"kind\": \"metric_depth\", \"units\": \"m\"}")),
        kOrigin);
    EXPECT_EQ(m.temporal.align, TemporalWindowing::Align::None);
    // A single-frame contract: frames 1, no windowing.
    const ModelContract single =
        parse_model_contract(R"({"input": {"multiple": 14}, "output": {"kind": "relative_inverse_depth"}})", kOrigin);
    EXPECT_EQ(single.frames, 1);
    EXPECT_FALSE(single.multi_frame());
}

TEST(ModelContractTemporal, EveryBadValueNamesItsField) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {with("\"frames\": 32", "\"frames\": 0"), "input.frames"},
        {with("\"frames\": 32", "\"frames\": 1025"), "input.frames"},
        {with("\"frames\": 32", "\"frames\": \"32\""), "input.frames"},
        {with("\"frames\": 32", "\"frames\": 16"), "temporal.window"},  // a window longer than the model takes
        {with("\"window\": 32", "\"window\": 1"), "temporal.window"},
        {with("\"window\": 32, ", ""), "temporal.window"},  // missing
        {with("\"overlap\": 10", "\"overlap\": 32"), "temporal.overlap"},
        {with("\"overlap\": 10", "\"overlap\": 9"), "temporal.keyframes"},      // 10 keyframes for an overlap of 9
        {with("\"crossfade\": 8", "\"crossfade\": 10"), "temporal.crossfade"},  // no frame left to fit on
        {with("\"crossfade\": 8", "\"crossfade\": 1"), "temporal.crossfade"},
        {with("[0,12,24,", "[0,24,12,"), "temporal.keyframes"},  // not increasing
        {with("[0,12,24,", "[0,12,23,"), "temporal.keyframes"},  // not ending with the cross-faded frames
        {with("[0,12,24,", "[0,12,-1,"), "temporal.keyframes"},
        {with("[0,12,24,25,26,27,28,29,30,31]", "[0,12,24,25,26,27,28,29,30,32]"), "temporal.keyframes"},
        {with("[0,12,24,25,26,27,28,29,30,31]", "\"0,12\""), "temporal.keyframes"},
        {with("\"scale_shift\"", "\"affine\""), "temporal.align"},
        {with("\"scale_shift\"", "true"), "temporal.align"},
        {with("\"temporal\": {", "\"temporal\": 3, \"x\": {"), "temporal"},
        {with("\"temporal\": {", "\"x\": {"), "temporal is missing"},  // frames 32 without a windowing
        {with("\"frames\": 32", "\"frames\": 1"), "temporal is set but input.frames is 1"},
        {with("{\"kind\": \"relative_inverse_depth\"}", "{\"kind\": \"metric_depth\", \"units\": \"m\"}"),
         "temporal.align"},
    };
    for (const auto& [json, field] : cases)
        EXPECT_TRUE(test::contains(error_of(json), field)) << field << "\n" << error_of(json);
}

TEST(ModelContractTemporal, ClipOutputIsChecked) {
    ModelContract c = parse_model_contract(kVda, kOrigin);
    const ModelOutputCheck ok = check_clip_output({1, 32, 28, 42}, "Float", {1, 32, 3, 28, 42}, c);
    EXPECT_EQ(ok.height, 28);
    EXPECT_EQ(ok.width, 42);
    const auto refused = [&](std::vector<int64_t> out, const std::string& dtype, const std::string& needle) {
        const std::string msg = test::expect_error<ModelError>(
            [&] {
                check_clip_output(out, dtype, {2, 32, 3, 28, 42}, c);
            },
            shape_text(out));
        EXPECT_TRUE(test::contains(msg, needle)) << msg;
        EXPECT_TRUE(test::contains(msg, "[2,32,3,28,42]")) << "names the input\n" << msg;
    };
    refused({2, 32, 1, 28, 42}, "Float", "[B,T,H,W]");
    refused({2, 31, 28, 42}, "Float", "T = 32");
    refused({1, 32, 28, 42}, "Float", "B = 2");
    refused({2, 32, 0, 42}, "Float", "zero dimension");
    refused({2, 32, 28, 42}, "Long", "Long");
    refused({2, 32, 280, 42}, "Float", "more than 4x");
    EXPECT_THROW(check_clip_output({1, 32, 28, 42}, "Float", {1, 3, 28, 42}, c), ModelError);
}
