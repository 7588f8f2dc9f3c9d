// Unit tests for src/model_compat.cpp (describe_load_failure, model_contract.h) and DepthModel::load's use of it: a
// model file that needs a newer LibTorch is exit 4 naming the operator, the exporting torch, this LibTorch and the fix
// (docs/models.md "Which LibTorch loads a model"); the contract's exported_by.
#include "depthbatch/depth_model.h"
#include "depthbatch/error.h"
#include "depthbatch/model_contract.h"
#include "support/test_support.h"

#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>

#include <string>

using namespace depthbatch;
using namespace depthbatch::test;

namespace {

// What LibTorch 2.4.1 (tests/compat/load_check.cpp) said, verbatim up to the source excerpt, for files torch 2.13
// exported: main's default model (scripted F.interpolate), a call with a keyword argument 2.4 lacks, and a file
// whose version record says 99.
const std::string kLanczos24 =
    "\nUnknown builtin op: aten::_upsample_lanczos2d_aa.\nCould not find any similar ops to "
    "aten::_upsample_lanczos2d_aa. "
    "This op may not exist or may not be currently supported in TorchScript.\n:\n"
    "  File \"code/__torch__/torch/nn/functional/___torch_mangle_82.py\", line 360\n"
    "                              _128 = torch._upsample_lanczos2d_aa(input, output_size3, align_corners12, "
    "scale_factors3)\n"
    "                                     ~~~~~~~~~~~~~~~~~~~~~~~~~~~~ <--- HERE\n"
    "'interpolate' is being compiled since it was called from 'FastDepth.forward'\n";
const std::string kKeyword24 =
    "\n\naten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float "
    "dropout_p=0., bool is_causal=False, *, float? scale=None) -> Tensor:\nKeyword argument enable_gqa unknown.\n:\n"
    "  File \"code/__torch__.py\", line 8\n"
    "    _0 = torch.scaled_dot_product_attention(x, x, x, None, 0., False, scale=None, enable_gqa=True)\n"
    "         ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~ <--- HERE\n";
const std::string kVersion24 =
    "[enforce fail at inline_container.cc:224] . Attempted to read a PyTorch file with version 99, but the maximum "
    "supported version for reading is 10. The version of your PyTorch installation may be too old, please upgrade "
    "PyTorch to latest version to mitigate this issue.\nframe #0: c10::ThrowEnforceNotMet(...)\n";

const std::string kFix = "Re-export it with this project's tools/ (python -m tools.export";

/// `in` (a TorchScript file) copied to `out` with `from` replaced by `to` in its code (code/*.py records) and
/// depthbatch.json replaced by `contract`.
void rewrite_model(const fs::path& in, const fs::path& out, const std::string& from, const std::string& to,
                   const std::string& contract) {
    caffe2::serialize::PyTorchStreamReader reader(in.string());
    caffe2::serialize::PyTorchStreamWriter writer(out.string());
    writer.setMinVersion(reader.version());
    for (const std::string& name : reader.getAllRecords()) {
        if (name == "version" || name == ".data/version" || name == "byteorder" || name == ".data/serialization_id")
            continue;  // the writer writes its own
        const auto [data, size] = reader.getRecord(name);
        std::string bytes(static_cast<const char*>(data.get()), size);
        if (name.rfind("code/", 0) == 0 && name.size() > 3 && name.compare(name.size() - 3, 3, ".py") == 0)
            for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + to.size()))
                bytes.replace(at, from.size(), to);
        if (name == "extra/depthbatch.json") bytes = contract;
        writer.writeRecord(name, bytes.data(), bytes.size());
    }
    writer.writeEndOfFile();
}

std::string contract_exported_by(const std::string& torch_version) {
    std::string c = probe_contract();
    return c.substr(0, c.size() - 1) + R"(, "exported_by": {"torch": ")" + torch_version + R"("}})";
}

}  // namespace

TEST(DescribeLoadFailure, AnOperatorThisLibTorchLacksIsNamedWithBothVersionsAndTheFix) {
    const std::string m = describe_load_failure("models/fastdepth-nyu.pt", kLanczos24, "2.13.0+cpu");
    EXPECT_EQ(m.rfind("models/fastdepth-nyu.pt: uses the operator aten::_upsample_lanczos2d_aa, which this LibTorch (" +
                          libtorch_version() + ") does not have; the file was exported with torch 2.13.0+cpu. ",
                      0),
              0u)
        << m;
    EXPECT_TRUE(contains(m, kFix)) << m;
    EXPECT_TRUE(contains(m, "python -m tools.fastdepth prepare for the default model")) << m;
    EXPECT_TRUE(contains(m, "only operators LibTorch 2.4 has")) << m;
    EXPECT_TRUE(contains(m, "or run depthbatch on a LibTorch >= 2.13 ")) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one line\n" << m;
}

TEST(DescribeLoadFailure, AFileWithoutExportedBySaysSo) {
    const std::string m = describe_load_failure("old.pt", kLanczos24, "");
    EXPECT_TRUE(contains(m, "aten::_upsample_lanczos2d_aa")) << m;
    EXPECT_TRUE(contains(m, "the file does not record the torch that exported it")) << m;
    EXPECT_TRUE(contains(m, "or run depthbatch on a newer LibTorch (as new as the torch that exported it)")) << m;
}

TEST(DescribeLoadFailure, ANewerSignatureOfAnOperatorIsNamedWithTheReason) {
    const std::string m = describe_load_failure("sdpa.pt", kKeyword24, "2.13.0");
    EXPECT_EQ(
        m.rfind("sdpa.pt: calls the operator aten::scaled_dot_product_attention with arguments this LibTorch (", 0), 0u)
        << m;
    EXPECT_TRUE(contains(m, "\"Keyword argument enable_gqa unknown.\": a newer signature of it")) << m;
    EXPECT_TRUE(contains(m, "exported with torch 2.13.0. " + kFix)) << m;
    // With several overloads LibTorch lists them after "Arguments for call are not valid."
    const std::string several =
        "\nArguments for call are not valid.\nThe following variants are available:\n  \n"
        "  aten::upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? "
        "scale_factors) -> Tensor:\n  Expected at most 3 argument(s) for operator "
        "'upsample_nearest2d', but received 4 argument(s).\n";
    EXPECT_TRUE(contains(describe_load_failure("m.pt", several, "2.13.0"),
                         "calls the operator aten::upsample_nearest2d.vec with arguments"))
        << describe_load_failure("m.pt", several, "2.13.0");
}

TEST(DescribeLoadFailure, ANewerFileFormatVersionIsNamed) {
    const std::string m = describe_load_failure("v99.pt", kVersion24, "3.0.0");
    EXPECT_TRUE(contains(m, "v99.pt: is TorchScript file format version 99, newer than this LibTorch (" +
                                libtorch_version() + ") reads (up to 10); the file was exported with torch 3.0.0"))
        << m;
    EXPECT_TRUE(contains(m, ">= 3.0 ")) << m;
}

TEST(DescribeLoadFailure, OtherFailuresAreLeftToTheCaller) {
    for (const std::string e :
         {"PytorchStreamReader failed reading zip archive: failed finding central directory",
          "open file failed because of errno 2 on fopen: No such file or directory", "", "\n",
          "Unknown builtin op: ", "Keyword argument x unknown.", "Attempted to read a PyTorch file with version "})
        EXPECT_EQ(describe_load_failure("m.pt", e, "2.13.0"), "") << e;
}

TEST(ModelCompat, ContractRecordsTheExportingTorch) {
    const ModelContract c = parse_model_contract(contract_exported_by("2.13.0+cpu"), "m.pt");
    EXPECT_EQ(c.exported_torch, "2.13.0+cpu");
    EXPECT_EQ(c.provenance.count("exported_by"), 0u) << "its own field, not provenance";
    EXPECT_EQ(c.provenance.at("source"), "tests/support probe");
    EXPECT_EQ(parse_model_contract(probe_contract(), "m.pt").exported_torch, "") << "older files have none";
    std::string base = probe_contract();
    base.pop_back();
    for (const std::string bad :
         {R"("2.13")", R"({"torch": 2.13})", R"({"torch": ""})", R"({"torch": "2.13 0"})", "[]"}) {
        const std::string msg = expect_error<ModelError>(
            [&] { parse_model_contract(base + R"(, "exported_by": )" + bad + "}", "m.pt"); }, bad);
        EXPECT_TRUE(contains(msg, "m.pt: depthbatch.json field exported_by")) << msg;
    }
    EXPECT_EQ(parse_model_contract(base + R"(, "exported_by": {"tools": "x"}})", "m.pt").exported_torch, "")
        << "other keys of exported_by are left alone";
}

// Issue 31 §4: a model whose code calls an operator this LibTorch does not have was "error: unexpected:" with an
// empty first line, exit 5 (torch::jit::ErrorReport is no c10::Error). Now: exit 4, naming the operator, the
// exporting torch (the contract's exported_by), this LibTorch and the fix, from `depthbatch info` and a render.
TEST(ModelCompat, AnOperatorThisLibTorchLacksIsAModelErrorNamingItTheExportingTorchAndTheFix) {
    TempDir dir;
    const fs::path good =
        write_probe_model(dir / "good.pt", "def forward(self, x):\n    return torch.relu(x).mean(1, keepdim=True)\n",
                          contract_exported_by("9.99.1+cu130"));
    const fs::path bad = dir / "newer.pt";
    rewrite_model(good, bad, "torch.relu(", "ops.aten._depthbatch_no_such_op(", contract_exported_by("9.99.1+cu130"));
    ModelSettings options;
    options.path = bad.string();
    options.device = ModelDevice::cpu();
    const std::string m = expect_error<ModelError>([&] { DepthModel::load(options); }, "DepthModel::load");
    EXPECT_EQ(
        m.rfind(bad.string() + ": uses the operator aten::_depthbatch_no_such_op, which this LibTorch (" +
                    libtorch_version() + ") does not have; the file was exported with torch 9.99.1+cu130. " + kFix,
                0),
        0u)
        << m;
    EXPECT_TRUE(contains(m, "or run depthbatch on a LibTorch >= 9.99 ")) << m;

    const auto info = run_cli({"info", bad.string()});
    EXPECT_EQ(info.exit_code, exit_status(ExitCode::Model)) << info.output;
    EXPECT_TRUE(contains(info.output, "aten::_depthbatch_no_such_op")) << info.output;
    EXPECT_TRUE(contains(info.output, "exported with torch 9.99.1+cu130")) << info.output;
    EXPECT_TRUE(contains(info.output, kFix)) << info.output;
    EXPECT_FALSE(contains(info.output, "unexpected")) << info.output;

    for (int f = 1001; f <= 1002; ++f)
        write_image(dir / ("p." + std::to_string(f) + ".exr"), 32, 24, {"R", "G", "B"}, "half",
                    [](int, int, int) { return 0.5f; });
    const auto render = run_cli({write_job(dir / "job.yaml",
                                           "input: {path: p.####.exr, colorspace: sRGB}\n"
                                           "model: {path: newer.pt}\n"
                                           "output: {path: out/d.####.exr}\n")
                                     .string()});
    EXPECT_EQ(render.exit_code, exit_status(ExitCode::Model)) << render.output;
    EXPECT_TRUE(contains(render.output, "uses the operator aten::_depthbatch_no_such_op")) << render.output;
    EXPECT_TRUE(contains(render.output, "exported with torch 9.99.1+cu130")) << render.output;
    EXPECT_FALSE(fs::exists(dir / "out" / "d.1001.exr"));

    // The same file as it was (every operator known) loads, and `depthbatch info` says what exported it.
    const auto ok = run_cli({"info", good.string()});
    EXPECT_EQ(ok.exit_code, 0) << ok.output;
    EXPECT_TRUE(contains(ok.output, "exported by  torch 9.99.1+cu130; running on LibTorch " + libtorch_version()))
        << ok.output;
    const fs::path old = write_probe_model(
        dir / "old.pt", "def forward(self, x):\n    return x.mean(1, keepdim=True)\n", probe_contract());
    const auto old_info = run_cli({"info", old.string()});
    EXPECT_TRUE(contains(old_info.output, "exported by  not recorded")) << old_info.output;
}

// A file whose format version is newer than this LibTorch reads: exit 4 naming the version (c10::Error path).
TEST(ModelCompat, ANewerFileFormatVersionIsAModelErrorNamingIt) {
    TempDir dir;
    const fs::path good = write_probe_model(
        dir / "good.pt", "def forward(self, x):\n    return x.mean(1, keepdim=True)\n", contract_exported_by("9.99.1"));
    const fs::path bad = dir / "v99.pt";
    {
        caffe2::serialize::PyTorchStreamReader reader(good.string());
        caffe2::serialize::PyTorchStreamWriter writer(bad.string());
        writer.setMinVersion(99);
        for (const std::string& name : reader.getAllRecords()) {
            if (name == "version" || name == ".data/version" || name == "byteorder" || name == ".data/serialization_id")
                continue;
            const auto [data, size] = reader.getRecord(name);
            writer.writeRecord(name, data.get(), size);
        }
        writer.writeEndOfFile();
    }
    ModelSettings options;
    options.path = bad.string();
    options.device = ModelDevice::cpu();
    const std::string m = expect_error<ModelError>([&] { DepthModel::load(options); }, "DepthModel::load");
    EXPECT_TRUE(contains(m, bad.string() + ": is TorchScript file format version 99, newer than this LibTorch (" +
                                libtorch_version() + ") reads"))
        << m;
    // LibTorch's reader refuses the whole file, contract included: the version is read from the file as written.
    EXPECT_TRUE(contains(m, "the file was exported with torch 9.99.1")) << m;
    EXPECT_TRUE(contains(m, "run depthbatch on a LibTorch >= 9.99")) << m;
    EXPECT_EQ(recorded_exporting_torch(bad.string()), "9.99.1");
    EXPECT_EQ(recorded_exporting_torch(good.string()), "9.99.1");
    EXPECT_EQ(recorded_exporting_torch((dir / "missing.pt").string()), "");
}
