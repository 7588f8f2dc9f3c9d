// Issue 3 in depthbatch: an exported Depth Anything V2 (random weights, scripted) renders at the plate's
// exact size, the padding to the multiple of 14 never leaks into the result (checked against the same
// model run by hand in Python, tools/tests/da_fixture.py), a Nuke-style traced model without
// depthbatch.json runs when the job states its kind, the wrong size is a clear error, and
// `depthbatch info` tells scripted from traced.
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace depthbatch::test;

namespace {

/// The fixture folder, made once per test binary run.
const fs::path& fixture() {
    static TempDir dir;
    static const RunResult made = run_python({DEPTHBATCH_SOURCE_DIR "/tools/tests/da_fixture.py", dir.path.string()});
    EXPECT_EQ(made.exit_code, 0) << "tools/tests/da_fixture.py failed:\n" << made.output;
    return dir.path;
}

void expect_matches_python(const std::string& name, int w, int h) {
    const fs::path& dir = fixture();
    write_job(dir / (name + ".yaml"), "input: {path: plate_" + name +
                                          ".####.png}\n"
                                          "model: {path: da_vits_random.pt, size: plate}\n"
                                          "output: {path: out_" +
                                          name + "/d.####.exr}\n");
    const auto r = run_cli({(dir / (name + ".yaml")).string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = dir / ("out_" + name) / "d.1001.exr";
    const OIIO::ImageSpec spec = file_spec(out);
    ASSERT_EQ(spec.width, w);
    ASSERT_EQ(spec.height, h);
    const auto depth = depth_values(out);
    const auto expected = read_f32(dir / ("expected_" + name + ".f32"));
    ASSERT_EQ(expected.size(), static_cast<size_t>(w) * h);
    ASSERT_EQ(depth.size(), expected.size());
    float worst = 0, peak = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
        worst = std::max(worst, std::abs(depth[i] - expected[i]));
        peak = std::max(peak, std::abs(expected[i]));
    }
    EXPECT_LE(worst, 1e-4f * std::max(1.0f, peak)) << name << ": max |depthbatch - python| " << worst;
}

}  // namespace

TEST(DepthAnything, ExactMultipleMatchesPythonPixelForPixel) { expect_matches_python("exact", 280, 154); }

TEST(DepthAnything, PaddingToTheMultipleNeverLeaksIntoTheResult) { expect_matches_python("pad", 285, 160); }

TEST(DepthAnything, RendersARealPlateAtProcessingSize518) {
    const fs::path& dir = fixture();
    const fs::path plates = samples_dir() / "plates/sintel";
    write_job(dir / "sintel.yaml", "input: {path: '" + (plates / "sintel.####.png").string() +
                                       "', frames: 1001}\n"
                                       "model: {path: da_vits_random.pt, size: 518}\n"
                                       "depth: {kind: normalized, normalize: frame, near_is: 1}\n"
                                       "output: {path: out_sintel/d.####.exr}\n");
    const auto r = run_cli({(dir / "sintel.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("model input 1218x518"), std::string::npos)
        << "1024x436 -> short side 518, multiples of 14\n"
        << r.output;
    OIIO::ImageBuf buf = read_image(dir / "out_sintel/d.1001.exr");
    EXPECT_EQ(buf.spec().width, 1024);
    EXPECT_EQ(buf.spec().height, 436);
    EXPECT_EQ(file_spec(dir / "out_sintel/d.1001.exr").get_string_attribute("depthbatch/model_output_kind"),
              "relative_inverse_depth");
}

TEST(DepthAnything, NukeStyleTracedModelRunsWhenTheJobStatesItsContract) {
    const fs::path& dir = fixture();
    write_image(dir / "n.1001.exr", 200, 100, {"R", "G", "B"}, "half",
                [](int x, int, int c) { return 0.002f * x + 0.1f * c; });
    // No depthbatch.json: the job names the kind; the traced size (112x84) comes from the file itself.
    write_job(dir / "nuke.yaml",
              "input: {path: n.####.exr, colorspace: sRGB}\n"
              "model: {path: nuke_style.pt, kind: relative_inverse_depth}\n"
              "output: {path: out_nuke/d.####.exr}\n");
    auto r = run_cli({(dir / "nuke.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("fixed input size 112x84"), std::string::npos) << r.output;
    EXPECT_EQ(read_image(dir / "out_nuke/d.1001.exr").spec().width, 200);

    // Without the kind: a clear model error naming what to set.
    write_job(dir / "nuke_bare.yaml",
              "input: {path: n.####.exr, colorspace: sRGB}\nmodel: {path: nuke_style.pt}\n"
              "output: {path: out_bare/d.####.exr}\n");
    r = run_cli({(dir / "nuke_bare.yaml").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Model)) << r.output;
    EXPECT_NE(r.output.find("model.kind"), std::string::npos) << r.output;

    // The wrong size: asked for another processing size, or the job claims another traced size.
    r = run_cli(
        {(dir / "nuke.yaml").string(), "--set", "model.size=[224, 224]", "--set", "output.path=out_wrong/d.####.exr"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_NE(r.output.find("112x84"), std::string::npos) << "names the expected size\n" << r.output;
    r = run_cli({(dir / "nuke.yaml").string(), "--set", "model.input_size=[256, 256]", "--set", "model.fixed_size=true",
                 "--set", "output.path=out_wrong2/d.####.exr"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Model)) << r.output;
    EXPECT_NE(r.output.find("traced at 112x84"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "out_wrong"));
    EXPECT_FALSE(fs::exists(dir / "out_wrong2"));
}

TEST(DepthAnything, InfoTellsContractParametersAndModuleKind) {
    const fs::path& dir = fixture();
    auto r = run_cli({"info", (dir / "da_vits_random.pt").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("relative_inverse_depth"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("multiple of 14"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("scripted"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("parameters   24"), std::string::npos) << "ViT-S DPT: ~24.8 M parameters\n" << r.output;
    r = run_cli({"info", (dir / "nuke_style.pt").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("traced"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("size 112x84"), std::string::npos) << r.output;
}
