// End-to-end renders through the depthbatch binary: the sample jobs on real plates, exact probe
// values, frame numbering (docs/cases.md 1), odd sizes (docs/cases.md 6), EXR windows (t08.exr).
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>

using namespace depthbatch::test;

namespace {

void expect_finite_positive(const fs::path& exr) {
    const auto v = depth_values(exr);
    ASSERT_FALSE(v.empty());
    size_t bad = 0;
    for (float d : v) bad += !(std::isfinite(d) && d > 0.0f);
    EXPECT_EQ(bad, 0u) << exr << ": non-finite or non-positive depth values";
}

}  // namespace

TEST(Render, SampleJobRendersBedroomPlate) {
    TempDir out;
    const auto r = run_cli({DEPTHBATCH_SOURCE_DIR "/samples/shot.yaml", "--output", (out / "bedroom.####.exr").string(),
                            "--set", "output.overwrite=error"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // The sample says what the bedroom is (input.scene: indoor), so its log carries no training-domain note.
    EXPECT_EQ(r.output.find("trained on indoor scenes"), std::string::npos) << r.output;
    const auto files = list_dir(out.path);
    ASSERT_EQ(files.size(), 24u);
    for (int f = 1001; f <= 1024; ++f) {
        const fs::path exr = out / ("bedroom." + std::to_string(f) + ".exr");
        ASSERT_TRUE(fs::exists(exr)) << exr;
        OIIO::ImageBuf buf = read_image(exr);
        EXPECT_EQ(buf.spec().width, 960);
        EXPECT_EQ(buf.spec().height, 540);
        EXPECT_EQ(buf.spec().channelnames, (std::vector<std::string>{"R", "G", "B", "depth.Z"}));
        EXPECT_EQ(file_spec(exr).channelformat(3), OIIO::TypeDesc::FLOAT);
        if (f == 1001 || f == 1024) expect_finite_positive(exr);
    }
    // A room 1-6 m deep: FastDepth's metric output must sit in that range on this plate.
    auto v = depth_values(out / "bedroom.1012.exr");
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    EXPECT_GT(v[v.size() / 2], 0.8f);
    EXPECT_LT(v[v.size() / 2], 6.0f);
}

// The default model end to end against the original network: the NYU frame (224x224 8-bit sRGB with an opaque
// alpha, both sides multiples of 32) rendered at plate size (no resize, no padding; an sRGB plate into the sRGB
// model: no colour change) must give, pixel for pixel, the depth onnxruntime computes with the original ONNX on
// rgb / 255 (tools/tests/fastdepth_reference.py), within the 1e-4 m the README claims for the converter.
// Covers read, colour, reformat, inference, restore and write.
TEST(Render, DefaultModelMatchesOnnxRuntimeOnTheNyuFrame) {
    TempDir dir;
    const fs::path png = samples_dir() / "nyu/rgb.png";
    fs::create_symlink(png, dir / "nyu.1001.png");
    const auto ref = run_python({DEPTHBATCH_SOURCE_DIR "/tools/tests/fastdepth_reference.py", png.string(),
                                 (dir / "onnxruntime.f32").string()});
    ASSERT_EQ(ref.exit_code, 0) << ref.output;
    write_job(dir / "job.yaml",
              "input: {path: nyu.####.png, colorspace: sRGB}\n"
              "model: {path: default, size: plate, device: cpu}\n"
              "output: {path: out/d.####.exr}\n");
    const auto r = run_cli({(dir / "job.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const int w = file_spec(png).width, h = file_spec(png).height;
    ASSERT_TRUE(w % 32 == 0 && h % 32 == 0) << w << "x" << h << ": no padding only at multiples of 32";
    EXPECT_TRUE(contains(r.output, "model input " + std::to_string(w) + "x" + std::to_string(h)))
        << "no resize, no padding\n"
        << r.output;

    const fs::path exr = dir / "out/d.1001.exr";
    const OIIO::ImageSpec spec = file_spec(exr);
    ASSERT_EQ(spec.width, w);
    ASSERT_EQ(spec.height, h);
    const auto depth = depth_values(exr);
    const auto expected = read_f32(dir / "onnxruntime.f32");
    ASSERT_EQ(expected.size(), static_cast<size_t>(w) * h);
    ASSERT_EQ(depth.size(), expected.size());
    float worst = 0;
    size_t worst_at = 0;
    for (size_t i = 0; i < depth.size(); ++i) {
        const float diff =
            std::isfinite(depth[i]) ? std::abs(depth[i] - expected[i]) : std::numeric_limits<float>::infinity();
        if (diff > worst) {
            worst = diff;
            worst_at = i;
        }
    }
    std::cout << "[ measured ] max |depthbatch - onnxruntime| " << worst << " m over " << w << "x" << h << " px\n";
    EXPECT_LE(worst, 1e-4f) << "max |depthbatch - onnxruntime| at pixel (" << worst_at % w << ", " << worst_at / w
                            << "): " << depth[worst_at] << " vs " << expected[worst_at] << " m";
}

TEST(Render, TomlSampleJobRendersSintelPlate) {
    TempDir out;
    const auto r = run_cli({DEPTHBATCH_SOURCE_DIR "/samples/sintel.toml", "--output",
                            (out / "sintel.%04d.exr").string(), "--frames", "1001-1003"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(out.path), (std::vector<std::string>{"sintel.1001.exr", "sintel.1002.exr", "sintel.1003.exr"}));
    OIIO::ImageBuf buf = read_image(out / "sintel.1002.exr");
    EXPECT_EQ(buf.spec().width, 1024);
    EXPECT_EQ(buf.spec().height, 436);
    EXPECT_EQ(buf.spec().channelnames.back(), "depth.Z");
    expect_finite_positive(out / "sintel.1002.exr");
}

TEST(Render, ProbeDepthIsExactPerPixelAtPlateSize) {
    TempDir dir;
    write_p_mean(dir / "pmean.pt");
    write_image(dir / "p.1001.exr", 37, 21, {"R", "G", "B"}, "float",
                [](int x, int y, int c) { return 0.01f * x + 0.02f * y + 0.1f * c; });
    // The plate is called sRGB so the model sees its values as they are; passthrough_colorspace: plate keeps
    // them in the output too (the default would linearise them, issue 25).
    write_job(dir / "job.yaml",
              "input: {path: p.####.exr, colorspace: sRGB}\n"
              "output: {path: out/d.####.exr, passthrough_colorspace: plate}\n"
              "model: {path: pmean.pt, size: plate}\n");
    const auto r = run_cli({(dir / "job.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    OIIO::ImageBuf buf = read_image(dir / "out/d.1001.exr");
    const int z = channel_index(buf, "depth.Z");
    ASSERT_EQ(z, 3);
    for (int y = 0; y < 21; ++y)
        for (int x = 0; x < 37; ++x) {
            const float expected = std::min(1.0f, 0.01f * x + 0.02f * y + 0.1f);
            ASSERT_NEAR(buf.getchannel(x, y, 0, z), expected, 1e-6) << x << "," << y;
            ASSERT_EQ(buf.getchannel(x, y, 0, 0), 0.01f * x + 0.02f * y) << "R passthrough at " << x << "," << y;
        }
}

// docs/cases.md 1: a plate numbered from 1001 comes back numbered from 1001, steps and chunks included,
// and padding grows past 9999 instead of wrapping.
TEST(Render, FrameNumbersArePreserved) {
    TempDir dir;
    write_p_mean(dir / "pmean.pt");
    for (int f : {1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 9998, 9999, 10000, 10001})
        write_image(dir / ("p." + std::to_string(f) + ".exr"), 64, 36, {"R", "G", "B"}, "half",
                    [](int, int, int) { return 0.5f; });
    const std::string base =
        "input: {path: p.####.exr, colorspace: sRGB, frames: '1001-1010x3'}\n"
        "model: {path: pmean.pt, size: plate}\n";
    write_job(dir / "a.yaml", base + "output: {path: a/d.####.exr}\n");
    auto r = run_cli({(dir / "a.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(dir / "a"), (std::vector<std::string>{"d.1001.exr", "d.1004.exr", "d.1007.exr", "d.1010.exr"}));

    write_job(dir / "b.yaml", base + "output: {path: b/d.####.exr}\n");
    r = run_cli({(dir / "b.yaml").string(), "--frames", "1005-1005"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(dir / "b"), (std::vector<std::string>{"d.1005.exr"}));

    write_job(dir / "c.yaml",
              "input: {path: p.####.exr, colorspace: sRGB, frames: 9998-10001}\n"
              "model: {path: pmean.pt, size: plate}\noutput: {path: c/d.####.exr}\n");
    r = run_cli({(dir / "c.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(dir / "c"),
              (std::vector<std::string>{"d.10000.exr", "d.10001.exr", "d.9998.exr", "d.9999.exr"}));

    // Default frames: the sequence on disk, 1001-10001, numbered as found; its hole 1011-9997 is missing plates
    // (issue 32 §5): exit 3 naming it, and under on_error: continue the 14 plates there render.
    write_job(dir / "d.yaml",
              "input: {path: p.$F4.exr, colorspace: sRGB}\n"
              "model: {path: pmean.pt, size: plate}\noutput: {path: d/d.%04d.exr}\n");
    r = run_cli({(dir / "d.yaml").string()});
    ASSERT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_TRUE(contains(r.output, "frames 1011-9997 are missing from that sequence")) << r.output;
    r = run_cli({(dir / "d.yaml").string(), "--set", "pipeline.on_error=continue", "-q"});
    ASSERT_EQ(r.exit_code, exit_status(ExitCode::Partial)) << r.output;
    const auto all = list_dir(dir / "d");
    EXPECT_EQ(all.size(), 14u);
    for (const auto& name : all) EXPECT_EQ(name.find("d.0"), std::string::npos) << name;
}

// t08.exr: data window (30,40)-(429,339) inside display window (0,0)-(500,400).
TEST(Render, DataAndDisplayWindowsSurvive) {
    TempDir dir;
    fs::create_symlink(samples_dir() / "exr/t08.exr", dir / "t08.1001.exr");
    write_p_mean(dir / "pmean.pt");
    write_job(dir / "job.yaml",
              "input: {path: t08.####.exr, colorspace: sRGB}\n"
              "model: {path: pmean.pt, size: plate}\noutput: {path: out/t08_depth.####.exr}\n");
    const auto r = run_cli({(dir / "job.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    OIIO::ImageBuf in = read_image(dir / "t08.1001.exr");
    OIIO::ImageBuf out = read_image(dir / "out/t08_depth.1001.exr");
    const auto &si = in.spec(), &so = out.spec();
    EXPECT_EQ(so.x, 30);
    EXPECT_EQ(so.y, 40);
    EXPECT_EQ(so.width, 400);
    EXPECT_EQ(so.height, 300);
    EXPECT_EQ(so.full_x, si.full_x);
    EXPECT_EQ(so.full_y, si.full_y);
    EXPECT_EQ(so.full_width, 501);
    EXPECT_EQ(so.full_height, 401);
    const OIIO::ImageSpec stored = file_spec(dir / "out/t08_depth.1001.exr");
    EXPECT_EQ(stored.channelformat(0), OIIO::TypeDesc::HALF) << "half passthrough stays half";
    EXPECT_EQ(stored.channelformat(3), OIIO::TypeDesc::FLOAT) << "depth.Z is float32";
    // RGB passthrough is bit-exact.
    for (int y = 40; y < 340; y += 7)
        for (int x = 30; x < 430; x += 7)
            for (int c = 0; c < 3; ++c) ASSERT_EQ(in.getchannel(x, y, 0, c), out.getchannel(x, y, 0, c));
}

// docs/cases.md 6: any plate size comes back at exactly its size, for a pixel-wise probe at plate size and
// for the default model at its own processing size.
TEST(Render, OddSizesComeBackAtPlateSize) {
    TempDir dir;
    write_p_mean(dir / "pmean.pt", "metric_depth", 32);
    const std::vector<std::pair<int, int>> sizes = {{1, 1},    {2, 3},       {13, 7},     {4097, 3},
                                                    {3, 4097}, {1920, 1080}, {4096, 2160}};
    int n = 0;
    for (const auto& [w, h] : sizes)
        for (const std::string ext : {"png", "exr"}) {
            const std::string name = "s" + std::to_string(n++);
            write_image(dir / (name + ".1001." + ext), w, h, {"R", "G", "B"}, ext == "png" ? "uint8" : "half",
                        [](int x, int y, int c) { return ((x * 7 + y * 3 + c) % 11) / 10.0f; });
            for (const std::string model : {"pmean.pt", "default"}) {
                const std::string out = name + "_" + (model == "default" ? "fd" : "pm");
                write_job(dir / (out + ".yaml"), "input: {path: " + name + ".####." + ext +
                                                     ", colorspace: sRGB}\n"
                                                     "model: {path: " +
                                                     model + (model == "default" ? "" : ", size: plate") +
                                                     "}\n"
                                                     "output: {path: " +
                                                     out + "/d.####.exr}\n");
                const auto r = run_cli({(dir / (out + ".yaml")).string(), "-q"});
                ASSERT_EQ(r.exit_code, 0) << w << "x" << h << " " << ext << " " << model << "\n" << r.output;
                OIIO::ImageBuf buf = read_image(dir / out / "d.1001.exr");
                EXPECT_EQ(buf.spec().width, w) << out;
                EXPECT_EQ(buf.spec().height, h) << out;
                const int z = channel_index(buf, "depth.Z");
                ASSERT_GE(z, 0);
                size_t bad = 0;
                for (OIIO::ImageBuf::ConstIterator<float> it(buf); !it.done(); ++it) bad += !std::isfinite(it[z]);
                EXPECT_EQ(bad, 0u) << out;
            }
        }
}
