// Plate fidelity end to end (issue #4; docs/cases.md 4, 10, 12, 14): every file in ../shared/samples/exr
// renders or fails with the documented message; windows, channel names, pixel types and metadata of
// the output; passthrough bit for bit; depth finite; parts, views, channel layouts, pixel types,
// compression; colour (auto colorspaces, HDR clamp / display-view, NaN/Inf) through the binary.
#include "exr_deflate.h"
#include "depthbatch/exr_depth_writer.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <OpenEXR/ImfArray.h>
#include <OpenEXR/ImfRgbaFile.h>
#include <OpenImageIO/imageio.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <functional>
#include <iterator>
#include <regex>

using namespace depthbatch::test;

namespace {

/// A temporary folder with the P-mean probe (sRGB contract, any size) and helpers to run a job in it.
struct Shot {
    TempDir dir;
    fs::path model;
    Shot() { model = write_p_mean(dir / "pmean.pt"); }

    /// Link a sample file in as p.1001.<ext>; returns the link.
    fs::path link_sample(const std::string& name) {
        const std::string ext = fs::path(name).extension().string();
        const fs::path link = dir / ("p.1001" + ext);
        fs::create_symlink(samples_dir() / "exr" / name, link);
        return link;
    }
    /// Write and run a job on p.####.<ext> into <out>/d.####.exr. `input`, `output` add keys to those
    /// sections ("colorspace: sRGB"); `more` adds whole sections.
    /// These tests check that a plate's values reach the EXR as read, so unless `output` says otherwise the job
    /// asks for them as read: passthrough_colorspace: plate, pixel_type: keep (the defaults linearise and pick
    /// half where it loses nothing, issue 25: Cases.Case10PngAndJpegWithAndWithoutAlpha tests those).
    RunResult run(const std::string& ext, const std::string& out, const std::string& input = "",
                  std::string output = "", const std::string& more = "", const std::string& env = "",
                  const std::vector<std::string>& flags = {}) {
        const fs::path job = dir / (out + ".yaml");
        if (output.find("passthrough_colorspace") == std::string::npos)
            output += std::string(output.empty() ? "" : ", ") + "passthrough_colorspace: plate";
        if (output.find("pixel_type") == std::string::npos) output += ", pixel_type: keep";
        write_job(job, "input: {path: p.####" + ext + (input.empty() ? "" : ", " + input) +
                           "}\n"
                           "output: {path: " +
                           out + "/d.####.exr, " + output +
                           "}\n"
                           "model: {path: " +
                           model.string() + ", size: plate, device: cpu}\n" + more);
        std::vector<std::string> args{job.string()};
        args.insert(args.end(), flags.begin(), flags.end());
        return run_cli(args, env);
    }
    fs::path out(const std::string& name) const { return dir / name / "d.1001.exr"; }
};

/// One channel of an image file as raw bytes in `type` (the file's own bits for its own type).
std::vector<unsigned char> channel_bytes(const fs::path& path, const std::string& name, OIIO::TypeDesc type,
                                         int subimage = 0) {
    OIIO::ImageSpec config;
    config.attribute("oiio:UnassociatedAlpha", 1);
    auto in = OIIO::ImageInput::open(path.string(), &config);
    EXPECT_TRUE(in) << path << ": " << OIIO::geterror();
    if (!in) return {};
    const OIIO::ImageSpec spec = in->spec(subimage, 0);
    int c = -1;
    for (int i = 0; i < spec.nchannels; ++i)
        if (spec.channelnames[i] == name) c = i;
    EXPECT_GE(c, 0) << path << " has no channel " << name;
    if (c < 0) return {};
    std::vector<unsigned char> data(static_cast<size_t>(spec.width) * spec.height * type.size());
    EXPECT_TRUE(in->read_image(subimage, 0, c, c + 1, type, data.data())) << in->geterror();
    return data;
}

std::vector<float> channel_floats(const fs::path& path, const std::string& name, int subimage = 0) {
    const auto b = channel_bytes(path, name, OIIO::TypeDesc::FLOAT, subimage);
    std::vector<float> v(b.size() / sizeof(float));
    if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
    return v;
}

/// Bit-for-bit equality of two channels, reporting the first difference only.
void expect_same_bits(const std::vector<unsigned char>& out, const std::vector<unsigned char>& in,
                      const std::string& what) {
    ASSERT_EQ(out.size(), in.size()) << what;
    ASSERT_FALSE(out.empty()) << what;
    const auto diff = std::mismatch(out.begin(), out.end(), in.begin());
    EXPECT_TRUE(diff.first == out.end()) << what << ": first difference at byte " << (diff.first - out.begin());
}

/// An integer plate's channel as the exact floats code / (2^bits - 1), correctly rounded (10-bit codes
/// arrive from OIIO in uint16 as bit-replicated values: the code is the top 10 bits).
std::vector<unsigned char> exact_unit_floats(const fs::path& path, const std::string& name) {
    const OIIO::ImageSpec spec = file_spec(path);
    const bool u8 = spec.format.basetype == OIIO::TypeDesc::UINT8;
    const int container = u8 ? 8 : 16;
    const int bits = spec.get_int_attribute("oiio:BitsPerSample", container);
    const auto raw = channel_bytes(path, name, u8 ? OIIO::TypeDesc::UINT8 : OIIO::TypeDesc::UINT16);
    const size_t n = raw.size() / (container / 8);
    std::vector<unsigned char> out(n * sizeof(float));
    for (size_t i = 0; i < n; ++i) {
        unsigned v = raw[i];
        if (!u8) {
            uint16_t w;
            std::memcpy(&w, &raw[2 * i], 2);
            v = w;
        }
        const float f = static_cast<float>(v >> (container - bits)) / static_cast<float>((1u << bits) - 1u);
        std::memcpy(&out[i * sizeof(float)], &f, sizeof(float));
    }
    return out;
}

/// Output channel `out_name` holds input channel `in_name` bit for bit, in the output's stored type
/// (half stays half, float stays float; integer plates must hold exactly code/255, code/1023, code/65535).
void expect_passthrough(const fs::path& out, const std::string& out_name, const fs::path& in,
                        const std::string& in_name, int subimage = 0) {
    const OIIO::ImageSpec so = file_spec(out);
    int c = -1;
    for (int i = 0; i < so.nchannels; ++i)
        if (so.channelnames[i] == out_name) c = i;
    ASSERT_GE(c, 0) << out << " has no " << out_name;
    const OIIO::TypeDesc t = so.channelformat(c);
    const auto in_base = file_spec(in).format.basetype;
    const bool integer = in_base == OIIO::TypeDesc::UINT8 || in_base == OIIO::TypeDesc::UINT16;
    expect_same_bits(channel_bytes(out, out_name, t),
                     integer && t == OIIO::TypeDesc::FLOAT ? exact_unit_floats(in, in_name)
                                                           : channel_bytes(in, in_name, t, subimage),
                     out.filename().string() + " " + out_name + " vs " + in.filename().string() + " " + in_name);
}

void expect_depth_finite(const fs::path& out) {
    const auto d = depth_values(out);
    ASSERT_FALSE(d.empty());
    size_t bad = 0;
    for (float v : d) bad += !std::isfinite(v);
    EXPECT_EQ(bad, 0u) << out << ": non-finite depth";
}

struct Window {
    int x, y, w, h, fx, fy, fw, fh;
};
void expect_windows(const fs::path& out, const Window& w) {
    const OIIO::ImageSpec s = file_spec(out);
    EXPECT_EQ(s.x, w.x) << out;
    EXPECT_EQ(s.y, w.y) << out;
    EXPECT_EQ(s.width, w.w) << out;
    EXPECT_EQ(s.height, w.h) << out;
    EXPECT_EQ(s.full_x, w.fx) << out;
    EXPECT_EQ(s.full_y, w.fy) << out;
    EXPECT_EQ(s.full_width, w.fw) << out;
    EXPECT_EQ(s.full_height, w.fh) << out;
}

/// The windows of a file as stored (part `subimage`).
Window windows_of(const fs::path& p, int subimage = 0) {
    auto in = OIIO::ImageInput::open(p.string());
    const OIIO::ImageSpec s = in ? in->spec(subimage, 0) : OIIO::ImageSpec();
    return {s.x, s.y, s.width, s.height, s.full_x, s.full_y, s.full_width, s.full_height};
}

void expect_types(const fs::path& out, const std::vector<OIIO::TypeDesc>& types) {
    const OIIO::ImageSpec s = file_spec(out);
    ASSERT_EQ(s.nchannels, static_cast<int>(types.size())) << out;
    for (int c = 0; c < s.nchannels; ++c) EXPECT_EQ(s.channelformat(c), types[c]) << out << " " << s.channelnames[c];
}

std::string meta(const fs::path& out, const std::string& key) { return file_spec(out).get_string_attribute(key); }

/// The number in the frame's log line before `what` (e.g. "NaN/Inf plate pixels"), -1 if absent.
long logged_count(const std::string& log, const std::string& what) {
    std::smatch m;
    if (std::regex_search(
            log, m,
            std::regex("([0-9]+) " + std::regex_replace(what, std::regex(R"([.^$|()\[\]{}*+?\\/])"), R"(\$&)"))))
        return std::stol(m[1]);
    return -1;
}

const OIIO::TypeDesc kHalf = OIIO::TypeDesc::HALF, kFloat = OIIO::TypeDesc::FLOAT;
using Names = std::vector<std::string>;

}  // namespace

// ==== one test per file in ../shared/samples/exr =====================================================

TEST(SampleFiles, BrightRingsNanInf) {
    Shot s;
    const fs::path in = s.link_sample("BrightRingsNanInf.exr");
    const auto r = s.run(".exr", "o");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = s.out("o");
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "depth.Z"}));
    expect_types(out, {kHalf, kHalf, kHalf, kFloat});
    expect_windows(out, windows_of(in));
    // The plate holds NaN and Inf; the passthrough keeps them bit for bit, the depth never sees them.
    const auto red = channel_floats(in, "R");
    const long nonfinite_values = std::count_if(red.begin(), red.end(), [](float v) { return !std::isfinite(v); });
    ASSERT_GT(nonfinite_values, 0) << "the sample should hold NaN/Inf";
    for (const char* c : {"R", "G", "B"}) expect_passthrough(out, c, in, c);
    expect_depth_finite(out);
    const long logged = logged_count(r.output, "NaN/Inf plate pixels replaced by 0");
    EXPECT_GT(logged, 0) << r.output;
    EXPECT_GE(logged, nonfinite_values / 3) << r.output;
    EXPECT_EQ(meta(out, "depthbatch/colorspace_in"), "Linear Rec.709 (sRGB)");
    EXPECT_EQ(meta(out, "depthbatch/colorspace_model"), "sRGB");
}

TEST(SampleFiles, CannonB44HalfRgb) {
    Shot s;
    const fs::path in = s.link_sample("Cannon.exr");
    const auto r = s.run(".exr", "o", "", "compression: piz");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = s.out("o");
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "depth.Z"}));
    expect_types(out, {kHalf, kHalf, kHalf, kFloat});
    expect_windows(out, {0, 0, 780, 566, 0, 0, 780, 566});
    for (const char* c : {"R", "G", "B"}) expect_passthrough(out, c, in, c);
    expect_depth_finite(out);
    EXPECT_EQ(meta(out, "Copyright"), "Copyright 2006 Industrial Light & Magic") << "the plate's metadata is copied";
    EXPECT_EQ(meta(out, "compression"), "piz");
    EXPECT_NE(r.output.find("half openexr plate -> the config's scene_linear role"), std::string::npos) << r.output;
}

TEST(SampleFiles, ColorCodedLevelsMipMapReadsLevelZero) {
    Shot s;
    const fs::path in = s.link_sample("ColorCodedLevels.exr");
    const auto r = s.run(".exr", "o");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = s.out("o");
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "A", "depth.Z"}));
    expect_types(out, {kHalf, kHalf, kHalf, kHalf, kFloat});
    expect_windows(out, {0, 0, 512, 512, 0, 0, 512, 512});
    for (const char* c : {"R", "G", "B", "A"}) expect_passthrough(out, c, in, c);  // level 0 (512x512)
    expect_depth_finite(out);
    const OIIO::ImageSpec so = file_spec(out);
    EXPECT_EQ(so.tile_width, 0) << "written as scanlines";
    EXPECT_EQ(so.get_string_attribute("textureformat"), "") << "not a texture any more";
    EXPECT_EQ(meta(out, "ImageDescription"), "a mip-map image with color-coded levels");
    EXPECT_NE(r.output.find("mip level 0 of 10"), std::string::npos) << r.output;
}

TEST(SampleFiles, CrissyFieldLuminanceChromaBecomesRgb) {
    Shot s;
    const fs::path in = s.link_sample("CrissyField.exr");
    const auto r = s.run(".exr", "o");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = s.out("o");
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "depth.Z"}));
    expect_types(out, {kHalf, kHalf, kHalf, kFloat});
    expect_windows(out, {0, 0, 1218, 810, 0, 0, 1218, 810});
    EXPECT_NE(r.output.find("luminance/chroma"), std::string::npos) << r.output;
    // RGB exactly as OpenEXR's own RGBA interface converts the file (chroma reconstruction + YCA -> RGB).
    Imf::RgbaInputFile file(in.string().c_str());
    const Imath::Box2i dw = file.dataWindow();
    const int w = dw.max.x - dw.min.x + 1, h = dw.max.y - dw.min.y + 1;
    Imf::Array2D<Imf::Rgba> px(h, w);
    file.setFrameBuffer(&px[0][0] - dw.min.x - dw.min.y * w, 1, w);
    file.readPixels(dw.min.y, dw.max.y);
    const auto R = channel_bytes(out, "R", kHalf), G = channel_bytes(out, "G", kHalf),
               B = channel_bytes(out, "B", kHalf);
    ASSERT_EQ(R.size(), static_cast<size_t>(w) * h * 2);
    size_t differ = 0, coloured = 0;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const size_t i = (static_cast<size_t>(y) * w + x) * 2;
            uint16_t r, g, b;
            std::memcpy(&r, &R[i], 2), std::memcpy(&g, &G[i], 2), std::memcpy(&b, &B[i], 2);
            differ += r != px[y][x].r.bits() || g != px[y][x].g.bits() || b != px[y][x].b.bits();
            coloured += r != g || g != b;
        }
    EXPECT_EQ(differ, 0u) << "R,G,B equal Imf::RgbaInputFile's conversion bit for bit";
    EXPECT_GT(coloured, static_cast<size_t>(w) * h / 2) << "chroma was used, not just luminance";
    expect_depth_finite(out);
    EXPECT_EQ(meta(out, "Copyright"), "Copyright 2006 Industrial Light & Magic")
        << "owner -> Copyright as OIIO names it";
}

TEST(SampleFiles, GardenTiledLuminanceOnlyIsGrey) {
    Shot s;
    const fs::path in = s.link_sample("Garden.exr");
    const auto r = s.run(".exr", "o");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = s.out("o");
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "depth.Z"}));
    expect_types(out, {kHalf, kHalf, kHalf, kFloat});
    expect_windows(out, {0, 0, 874, 493, 0, 0, 874, 493});
    for (const char* c : {"R", "G", "B"}) expect_passthrough(out, c, in, "Y");
    expect_depth_finite(out);
    // output.channels: all keeps the plate's own channel name.
    const auto r2 = s.run(".exr", "all", "", "channels: all");
    ASSERT_EQ(r2.exit_code, 0) << r2.output;
    EXPECT_EQ(channel_names(s.out("all")), (Names{"Y", "depth.Z"}));
    expect_passthrough(s.out("all"), "Y", in, "Y");
}

TEST(SampleFiles, TrunksDeepIsRefusedWithTheDocumentedMessage) {
    Shot s;
    s.link_sample("Trunks.exr");
    const auto r = s.run(".exr", "o");
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_NE(r.output.find("deep images are not supported"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("frame 1001"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(s.dir / "o") && !list_dir(s.dir / "o").empty()) << "nothing written";
}

TEST(SampleFiles, WideFloatRangeSingleGreenChannel) {
    Shot s;
    const fs::path in = s.link_sample("WideFloatRange.exr");
    const auto r = s.run(".exr", "o");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = s.out("o");
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "depth.Z"}));
    expect_types(out, {kFloat, kFloat, kFloat, kFloat});
    expect_windows(out, {0, 0, 500, 500, 0, 0, 500, 500});
    for (const char* c : {"R", "G", "B"}) expect_passthrough(out, c, in, "G");  // +-1e38 kept
    expect_depth_finite(out);
    const auto d = depth_values(out);
    for (float v : d) ASSERT_TRUE(v >= 0.0f && v <= 1.0f) << v;
    EXPECT_GT(logged_count(r.output, "pixels outside 0-1 after colour (clamp)"), 0) << r.output;
}

TEST(SampleFiles, Dpx10BitFilledMethodA) {
    Shot s;
    const fs::path in = s.link_sample("dpx_nuke_10bits_rgb.dpx");
    const auto r = s.run(".dpx", "o");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = s.out("o");
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "depth.Z"}));
    expect_types(out, {kFloat, kFloat, kFloat, kFloat});
    expect_windows(out, {0, 0, 512, 512, 0, 0, 512, 512});
    // code/1023 exactly (OIIO alone gives the 16-bit bit-replicated value: 512 -> 32800/65535).
    const auto u16 = channel_bytes(in, "R", OIIO::TypeDesc::UINT16);
    const auto red = channel_floats(out, "R");
    ASSERT_EQ(u16.size(), red.size() * 2);
    size_t wrong = 0, fine_steps = 0;
    for (size_t i = 0; i < red.size(); ++i) {
        uint16_t v;
        std::memcpy(&v, &u16[2 * i], 2);
        wrong += red[i] != static_cast<float>(v >> 6) / 1023.0f;
        fine_steps += (v >> 6) % 4 != 0;
    }
    EXPECT_EQ(wrong, 0u);
    EXPECT_GT(fine_steps, 0u) << "10-bit codes, not 8";
    expect_depth_finite(out);
    EXPECT_NE(r.output.find("10-bit dpx plate -> the config's compositing_log role 'ACEScct'"), std::string::npos)
        << r.output;
    EXPECT_EQ(meta(out, "depthbatch/colorspace_in"), "ACEScct");
    EXPECT_EQ(meta(out, "Software"), "Nuke");
    EXPECT_EQ(meta(out, "dpx:Packing"), "") << "source-format attributes are not copied";
    // The job's choice wins over auto.
    const auto r2 = s.run(".dpx", "srgb", "colorspace: sRGB");
    ASSERT_EQ(r2.exit_code, 0) << r2.output;
    EXPECT_EQ(meta(s.out("srgb"), "depthbatch/colorspace_in"), "sRGB");
}

TEST(SampleFiles, Tiff16BitRgb) {
    Shot s;
    const fs::path in = s.link_sample("flower-rgb-contig-16.tif");
    const auto r = s.run(".tif", "o");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = s.out("o");
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "depth.Z"}));
    expect_types(out, {kFloat, kFloat, kFloat, kFloat});
    expect_windows(out, {0, 0, 73, 43, 0, 0, 73, 43});
    for (const char* c : {"R", "G", "B"}) expect_passthrough(out, c, in, c);  // code/65535 exactly
    expect_depth_finite(out);
    EXPECT_NE(r.output.find("16-bit tiff plate -> sRGB encoded"), std::string::npos) << r.output;
    // P-mean on an sRGB plate (colour step = identity): depth is the mean of the three passthrough values.
    const auto R = channel_floats(out, "R"), G = channel_floats(out, "G"), B = channel_floats(out, "B");
    const auto d = depth_values(out);
    for (size_t i = 0; i < d.size(); ++i) ASSERT_NEAR(d[i], (R[i] + G[i] + B[i]) / 3.0f, 1e-6) << i;
}

TEST(SampleFiles, GridOverscanNegativeOrigin) {
    Shot s;
    const fs::path in = s.link_sample("grid-overscan.exr");
    const auto r = s.run(".exr", "o");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = s.out("o");
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "A", "depth.Z"}));
    expect_types(out, {kHalf, kHalf, kHalf, kHalf, kFloat});
    expect_windows(out, {-250, -250, 1500, 1500, 0, 0, 1000, 1000});
    for (const char* c : {"R", "G", "B", "A"}) expect_passthrough(out, c, in, c);
    expect_depth_finite(out);
    EXPECT_EQ(meta(out, "DocumentName"), "/Users/lg/grid-overscan.tif");
    EXPECT_EQ(meta(out, "tiff:Compression"), "");
}

TEST(SampleFiles, Tiff16BitSingleBand) {
    Shot s;
    const fs::path in = s.link_sample("ladoga.tif");
    const auto r = s.run(".tif", "o");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = s.out("o");
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "depth.Z"}));
    expect_types(out, {kFloat, kFloat, kFloat, kFloat});
    expect_windows(out, {0, 0, 158, 118, 0, 0, 158, 118});
    for (const char* c : {"R", "G", "B"}) expect_passthrough(out, c, in, "Y");
    expect_depth_finite(out);
    const auto Y = channel_floats(in, "Y"), d = depth_values(out);
    ASSERT_EQ(Y.size(), d.size());
    for (size_t i = 0; i < d.size(); ++i) ASSERT_NEAR(d[i], Y[i], 1e-6) << "grey -> P-mean = the grey value";
}

TEST(SampleFiles, MultipartDefaultsToTheFirstPartAndPicksByViewOrName) {
    Shot s;
    const fs::path in = s.link_sample("multipart.0001.exr");
    auto r = s.run(".exr", "o");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    fs::path out = s.out("o");
    EXPECT_NE(r.output.find("part 0 'rgba_right' of 10"), std::string::npos) << r.output;
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "A", "depth.Z"}));
    expect_types(out, {kHalf, kHalf, kHalf, kHalf, kFloat});
    expect_windows(out, {654, 245, 877, 876, 0, 0, 2048, 1556});
    for (const char* c : {"R", "G", "B", "A"}) expect_passthrough(out, c, in, c, 0);
    expect_depth_finite(out);
    EXPECT_EQ(meta(out, "view"), "right");
    EXPECT_EQ(meta(out, "depthbatch/plate_part"), "0 rgba_right");
    EXPECT_EQ(file_spec(out).get_int_attribute("oiio:subimages", 1), 1) << "a single-part output";

    // input.view: left -> the left eye's RGBA part (4), its own data window.
    r = s.run(".exr", "left", "view: left");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    out = s.out("left");
    EXPECT_NE(r.output.find("part 4 'rgba_left' of 10"), std::string::npos) << r.output;
    expect_windows(out, {688, 245, 877, 876, 0, 0, 2048, 1556});
    for (const char* c : {"R", "G", "B", "A"}) expect_passthrough(out, c, in, c, 4);
    EXPECT_EQ(meta(out, "view"), "left");

    // input.part by name.
    r = s.run(".exr", "named", "part: rgba_left");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_passthrough(s.out("named"), "G", in, "G", 4);

    // A part that does not exist: a config error listing the parts, before anything renders.
    r = s.run(".exr", "bad", "part: 12");
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_NE(r.output.find("input.part 12: the file has 10 parts"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("9 'whitebarmask_right'"), std::string::npos) << r.output;
    r = s.run(".exr", "bad2", "part: rgba_middle");
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    r = s.run(".exr", "bad3", "view: middle");
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    // A part with nothing to make an image of (depth only).
    r = s.run(".exr", "zonly", "part: depth_left");
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_NE(r.output.find("no R,G,B or Y channels"), std::string::npos) << r.output;
}

TEST(SampleFiles, SinglepartMultiViewWithItsOwnZ) {
    Shot s;
    const fs::path in = s.link_sample("singlepart.0001.exr");
    // Default: the default view (right), RGBA + our depth.Z; the plate's Z is dropped, and said so.
    auto r = s.run(".exr", "o");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    fs::path out = s.out("o");
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "A", "depth.Z"}));
    expect_types(out, {kHalf, kHalf, kHalf, kHalf, kFloat});
    expect_windows(out, {654, 245, 911, 876, 0, 0, 2048, 1556});
    for (const char* c : {"R", "G", "B", "A"}) expect_passthrough(out, c, in, c);
    expect_depth_finite(out);
    EXPECT_NE(r.output.find("view 'right' of right, left (default view)"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("the plate's own depth Z dropped (output.existing_depth: replace)"), std::string::npos)
        << r.output;
    EXPECT_EQ(meta(out, "depthbatch/plate_depth"), "Z dropped (output.existing_depth: replace)");
    EXPECT_EQ(meta(out, "view"), "right");
    EXPECT_EQ(file_spec(out).find_attribute("multiView"), nullptr) << "a single-view output";

    // existing_depth: rename keeps it as Z_plate, bit for bit.
    r = s.run(".exr", "rename", "", "existing_depth: rename");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(channel_names(s.out("rename")), (Names{"R", "G", "B", "A", "Z_plate", "depth.Z"}));
    expect_passthrough(s.out("rename"), "Z_plate", in, "Z");

    // input.view: left -> left.R/G/B/A written as R,G,B,A; left.Z is that view's own depth.
    r = s.run(".exr", "left", "view: left", "existing_depth: rename");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    out = s.out("left");
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "A", "Z_plate", "depth.Z"}));
    for (const char* c : {"R", "G", "B", "A", "Z"})
        expect_passthrough(out, std::string(c) == "Z" ? "Z_plate" : c, in, std::string("left.") + c);
    EXPECT_EQ(meta(out, "view"), "left");

    // output.channels: all -> every channel, multi-view kept, our depth.Z (default view), no bare Z.
    r = s.run(".exr", "all", "", "channels: all");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    out = s.out("all");
    Names names = channel_names(out);
    EXPECT_EQ(names.size(), 20u);
    EXPECT_EQ(std::count(names.begin(), names.end(), "depth.Z"), 1);
    EXPECT_EQ(std::count(names.begin(), names.end(), "Z"), 0);
    EXPECT_EQ(std::count(names.begin(), names.end(), "left.Z"), 1) << "the other view's depth is that view's";
    for (const char* c : {"disparityL.x", "forward.right.v", "left.R", "whitebarmask.left.mask"})
        expect_passthrough(out, c, in, c);
    EXPECT_NE(file_spec(out).find_attribute("multiView"), nullptr);
}

TEST(SampleFiles, T08DataWindowInsideOddDisplayWindow) {
    Shot s;
    const fs::path in = s.link_sample("t08.exr");
    const auto r = s.run(".exr", "o");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = s.out("o");
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "depth.Z"}));
    expect_types(out, {kHalf, kHalf, kHalf, kFloat});
    expect_windows(out, {30, 40, 400, 300, 0, 0, 501, 401});
    for (const char* c : {"R", "G", "B"}) expect_passthrough(out, c, in, c);
    expect_depth_finite(out);
}

// ==== channel layouts, pixel types, compression ======================================================

TEST(Layout, DepthOnlyAllChannelsPixelTypesAndCompression) {
    Shot s;
    write_image(s.dir / "p.1001.exr", 24, 16, {"R", "G", "B", "A", "N.x", "N.y"}, "half",
                [](int x, int y, int c) { return 0.01f * x + 0.02f * y + 0.1f * c; });
    auto r = s.run(".exr", "depth", "colorspace: sRGB", "channels: depth");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(channel_names(s.out("depth")), (Names{"depth.Z"}));
    expect_types(s.out("depth"), {kFloat});
    EXPECT_EQ(depthbatch::exr_text_attribute(s.out("depth").string(), "oiio:ColorSpace"), "")
        << "no RGB, no colorspace claimed";

    r = s.run(".exr", "all", "colorspace: sRGB", "channels: all");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(channel_names(s.out("all")), (Names{"R", "G", "B", "A", "N.x", "N.y", "depth.Z"}));
    expect_passthrough(s.out("all"), "N.y", s.dir / "p.1001.exr", "N.y");

    r = s.run(".exr", "float", "colorspace: sRGB", "pixel_type: float");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_types(s.out("float"), {kFloat, kFloat, kFloat, kFloat, kFloat});
    EXPECT_EQ(channel_floats(s.out("float"), "R"), channel_floats(s.dir / "p.1001.exr", "R"));

    write_image(s.dir / "q.1001.png", 24, 16, {"R", "G", "B"}, "uint8",
                [](int x, int, int c) { return ((x * 9 + c * 40) % 256) / 255.0f; });
    fs::rename(s.dir / "q.1001.png", s.dir / "p.1001.png");
    r = s.run(".png", "half", "", "pixel_type: half");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_types(s.out("half"), {kHalf, kHalf, kHalf, kFloat});

    for (const std::string c : {"zip", "zips", "piz", "dwaa", "none"}) {
        r = s.run(".exr", "c_" + c, "colorspace: sRGB", "compression: " + c);
        ASSERT_EQ(r.exit_code, 0) << c << "\n" << r.output;
        EXPECT_EQ(meta(s.out("c_" + c), "compression"), c);
        expect_depth_finite(s.out("c_" + c));
        // Lossless codecs keep the passthrough bit for bit; depth.Z survives every codec (DWAA only
        // compresses R,G,B-like channels lossily; depth.Z is stored losslessly).
        if (c != "dwaa") expect_passthrough(s.out("c_" + c), "G", s.dir / "p.1001.exr", "G");
        expect_same_bits(channel_bytes(s.out("c_" + c), "depth.Z", kFloat),
                         channel_bytes(s.out("c_zip"), "depth.Z", kFloat), "depth.Z with " + c);
    }
}

// output.zip_level: the same pixels, fewer bytes at 9 than at 1; level 4 (the default) is OpenEXR's own.
TEST(Layout, ZipLevelTradesWriteTimeForBytesOnly) {
    Shot s;
    write_image(s.dir / "p.1001.exr", 512, 256, {"R", "G", "B"}, "half",
                [](int x, int y, int c) { return ((x / 3 + y / 5 + c * 7) % 23) / 23.0f; });
    std::map<int, std::uintmax_t> bytes;
    for (int level : {4, 1, 9}) {
        const std::string name = "z" + std::to_string(level);
        const auto r = s.run(".exr", name, "colorspace: sRGB", "zip_level: " + std::to_string(level));
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_EQ(meta(s.out(name), "compression"), "zip");
        if (level != 4) EXPECT_TRUE(contains(r.output, "compression zip level " + std::to_string(level))) << r.output;
        bytes[level] = fs::file_size(s.out(name));
        expect_passthrough(s.out(name), "G", s.dir / "p.1001.exr", "G");
        expect_same_bits(channel_bytes(s.out(name), "depth.Z", kFloat), channel_bytes(s.out("z4"), "depth.Z", kFloat),
                         "depth.Z at zip level " + std::to_string(level));
    }
    EXPECT_GT(bytes[1], bytes[9]);
    EXPECT_GE(bytes[1], bytes[4]);
}

// exr_deflate.h: the same frame written with libdeflate (the default) and with zlib (DEPTHBATCH_EXR_DEFLATE=zlib)
// holds the same pixels, each log names the codec, and the files are within 3% of each other's size.
TEST(Layout, LibdeflateAndZlibWriteTheSamePixels) {
    Shot s;
    write_image(s.dir / "p.1001.exr", 512, 256, {"R", "G", "B"}, "float",
                [](int x, int y, int c) { return ((x / 3 + y / 5 + c * 7) % 23) / 23.0f + 0.001f * ((x * y) % 7); });
    const auto a = s.run(".exr", "deflate", "colorspace: sRGB");
    ASSERT_EQ(a.exit_code, 0) << a.output;
    const auto b = s.run(".exr", "zlib", "colorspace: sRGB", "", "", "DEPTHBATCH_EXR_DEFLATE=zlib");
    ASSERT_EQ(b.exit_code, 0) << b.output;
    const std::string codec = depthbatch::exr_deflate_codec();
    EXPECT_TRUE(contains(a.output, "compression zip (" + codec + ")")) << a.output;
    EXPECT_TRUE(contains(b.output, "compression zip (zlib ")) << b.output;
    if (codec.rfind("libdeflate", 0) == 0) EXPECT_TRUE(contains(b.output, "DEPTHBATCH_EXR_DEFLATE=zlib)")) << b.output;
    for (const std::string ch : {"R", "G", "B", "depth.Z"})
        expect_same_bits(channel_bytes(s.out("deflate"), ch, kFloat), channel_bytes(s.out("zlib"), ch, kFloat), ch);
    const double ratio = static_cast<double>(fs::file_size(s.out("deflate"))) / fs::file_size(s.out("zlib"));
    EXPECT_NEAR(ratio, 1.0, 0.03);
}

// ==== docs/cases.md 4: windows ============================================================================

TEST(Cases, Case4NegativeOriginOverscanAndOffsetDataWindow) {
    Shot s;
    // (a) display (0,0)-(999,999), data (-50,-50)-(1049,1049), RGBA half, a 1-px white ring on the data
    // window's edge, 0.2 inside.
    write_image(
        s.dir / "p.1001.exr", 1100, 1100, {"R", "G", "B", "A"}, "half",
        [](int x, int y, int c) {
            if (c == 3) return 1.0f;
            return (x == -50 || x == 1049 || y == -50 || y == 1049) ? 1.0f : 0.2f;
        },
        -50, -50, 1000, 1000);
    auto r = s.run(".exr", "a", "colorspace: sRGB");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    fs::path out = s.out("a");
    expect_windows(out, {-50, -50, 1100, 1100, 0, 0, 1000, 1000});
    EXPECT_EQ(channel_names(out), (Names{"R", "G", "B", "A", "depth.Z"}));
    for (const char* c : {"R", "G", "B", "A"}) expect_passthrough(out, c, s.dir / "p.1001.exr", c);
    OIIO::ImageBuf buf = read_image(out);
    const int z = channel_index(buf, "depth.Z");
    const float inside = buf.getchannel(500, 500, 0, 0);  // half(0.2)
    EXPECT_NEAR(inside, 0.2f, 1e-3);
    for (int y = -50; y <= 1049; y += 7) {
        ASSERT_EQ(buf.getchannel(-50, y, 0, z), 1.0f) << y;
        ASSERT_EQ(buf.getchannel(1049, y, 0, z), 1.0f) << y;
    }
    EXPECT_EQ(buf.getchannel(-50, 1049, 0, z), 1.0f);
    EXPECT_NEAR(buf.getchannel(500, 500, 0, z), inside, 1e-7);
    EXPECT_NEAR(buf.getchannel(-49, -49, 0, z), inside, 1e-7);
    expect_depth_finite(out);

    // (b) display (0,0)-(500,400), data (30,40)-(429,339).
    fs::remove(s.dir / "p.1001.exr");
    write_image(
        s.dir / "p.1001.exr", 400, 300, {"R", "G", "B", "A"}, "half",
        [](int x, int y, int c) { return c == 3 ? 1.0f : 0.001f * (x + y) + 0.05f * c; }, 30, 40, 501, 401);
    r = s.run(".exr", "b", "colorspace: sRGB");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    out = s.out("b");
    expect_windows(out, {30, 40, 400, 300, 0, 0, 501, 401});  // nothing outside (30,40)-(429,339)
    for (const char* c : {"R", "G", "B", "A"}) expect_passthrough(out, c, s.dir / "p.1001.exr", c);
    buf = read_image(out);
    const int zb = channel_index(buf, "depth.Z");
    for (int y = 40; y < 340; y += 13)
        for (int x = 30; x < 430; x += 13) {
            const float mean =
                (buf.getchannel(x, y, 0, 0) + buf.getchannel(x, y, 0, 1) + buf.getchannel(x, y, 0, 2)) / 3.0f;
            ASSERT_NEAR(buf.getchannel(x, y, 0, zb), mean, 1e-6) << x << "," << y;
        }
}

// ==== docs/cases.md 10: PNG / JPEG, alpha =================================================================

namespace {
/// The sRGB decoding and encoding (IEC 61966-2-1), written out.
double srgb_to_linear(double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); }
double linear_to_srgb(double v) { return v <= 0.0031308 ? v * 12.92 : 1.055 * std::pow(v, 1 / 2.4) - 0.055; }
}  // namespace

// The defaults (issue 25): the RGB passthrough in scene-linear as Nuke reads EXR (an 8-bit sRGB plate decoded
// once, by OCIO), half for 8-bit plates (every code survives: tests/unit/passthrough_color_test.cpp), float for
// 16-bit; alpha never converted; the header names the colorspace. The model sees the plate's sRGB values as
// before, so depth is unchanged. passthrough_colorspace: plate, pixel_type: keep give the plate's codes exactly.
TEST(Cases, Case10PngAndJpegWithAndWithoutAlpha) {
    Shot s;
    const std::string defaults = "passthrough_colorspace: scene_linear, pixel_type: auto";  // the defaults, spelled out
    struct Plate {
        std::string name, ext;
        Names channels;
        std::string type;
        std::function<float(int, int, int)> fn;
        float depth_left, depth_right;
    };
    const float rgb[3] = {200 / 255.0f, 100 / 255.0f, 50 / 255.0f};
    const std::vector<Plate> plates = {
        {"rgba",
         ".png",
         {"R", "G", "B", "A"},
         "uint8",
         [&](int x, int, int c) { return c == 3 ? (x < 160 ? 0.0f : 1.0f) : rgb[c]; },
         0.45752f,
         0.45752f},
        {"grey", ".png", {"Y"}, "uint8", [](int, int, int) { return 128 / 255.0f; }, 0.50196f, 0.50196f},
        {"greya",
         ".png",
         {"Y", "A"},
         "uint8",
         [](int x, int, int c) { return c == 1 ? (x < 160 ? 0.0f : 1.0f) : 128 / 255.0f; },
         0.50196f,
         0.50196f},
        {"rgb16",
         ".png",
         {"R", "G", "B"},
         "uint16",
         [](int, int, int) { return 32768 / 65535.0f; },
         0.500008f,
         0.500008f},
    };
    for (const auto& p : plates) {
        SCOPED_TRACE(p.name);
        for (const auto& f : list_dir(s.dir.path))
            if (f.rfind("p.1001.", 0) == 0) fs::remove(s.dir / f);
        const fs::path in = s.dir / ("p.1001" + p.ext);
        write_image(in, 320, 240, p.channels, p.type, p.fn);
        const auto r = s.run(p.ext, p.name, "colorspace: sRGB", defaults);
        ASSERT_EQ(r.exit_code, 0) << r.output;
        const fs::path out = s.out(p.name);
        const bool alpha = p.channels.back() == "A", wide = p.type == "uint16";
        EXPECT_EQ(channel_names(out), (alpha ? Names{"R", "G", "B", "A", "depth.Z"} : Names{"R", "G", "B", "depth.Z"}));
        const OIIO::TypeDesc t = wide ? kFloat : kHalf;  // auto: half for 8-bit, float for 16-bit
        expect_types(out, alpha ? std::vector<OIIO::TypeDesc>{t, t, t, t, kFloat}
                                : std::vector<OIIO::TypeDesc>{t, t, t, kFloat});
        EXPECT_EQ(meta(out, "depthbatch/colorspace_rgb"), "Linear Rec.709 (sRGB)");
        // oiio:ColorSpace in the file's own header (read with OpenEXR, not through OIIO's reader)
        EXPECT_EQ(depthbatch::exr_text_attribute(out.string(), "oiio:ColorSpace"), "Linear Rec.709 (sRGB)");
        EXPECT_EQ(meta(out, "depthbatch/colorspace_in"), "sRGB");
        OIIO::ImageBuf buf = read_image(out);
        const int z = channel_index(buf, "depth.Z");
        EXPECT_NEAR(buf.getchannel(10, 100, 0, z), p.depth_left, 1e-5);    // alpha 0 half
        EXPECT_NEAR(buf.getchannel(300, 100, 0, z), p.depth_right, 1e-5);  // alpha 1 half
        // Passthrough: the sRGB decoding of the plate's value (half: within half's rounding), alpha as stored.
        const double tol = wide ? 1e-6 : 6e-4;  // relative: half keeps 11 significant bits
        for (int c = 0; c < 3; ++c) {
            const double v = p.fn(10, 100, p.channels.size() >= 3 ? c : 0), lin = srgb_to_linear(v);
            EXPECT_NEAR(buf.getchannel(10, 100, 0, c), lin, lin * tol + 1e-7)
                << "channel " << c << " (plate " << v << ")";
        }
        if (alpha) {
            EXPECT_EQ(buf.getchannel(10, 100, 0, 3), 0.0f) << "alpha is never colour-converted";
            EXPECT_EQ(buf.getchannel(300, 100, 0, 3), 1.0f);
        }
        if (p.name == "rgba") {
            EXPECT_NEAR(buf.getchannel(10, 100, 0, 0), srgb_to_linear(200 / 255.0), 6e-4)
                << "colour under alpha 0 is kept";
            EXPECT_EQ(meta(out, "depthbatch/alpha"),
                      "unassociated: colour as stored in the plate, not premultiplied by A");
        }
        if (p.name == "grey") EXPECT_NEAR(buf.getchannel(5, 5, 0, 1), 0.2158605f, 1e-4) << "code 128, linearised once";
        if (p.name == "rgb16")  // not cut to 8 bits: 32768/65535 decoded, not 128/255
            EXPECT_NEAR(buf.getchannel(5, 5, 0, 1), srgb_to_linear(32768 / 65535.0), 1e-6);
    }
    // The old values on request (docs/cases.md 10): passthrough_colorspace: plate, pixel_type: float give the plate's
    // codes exactly (code/65535 here, the last plate; code/255 alike).
    const auto kept = s.run(".png", "kept", "colorspace: sRGB", "passthrough_colorspace: plate, pixel_type: float");
    ASSERT_EQ(kept.exit_code, 0) << kept.output;
    expect_types(s.out("kept"), {kFloat, kFloat, kFloat, kFloat});
    expect_passthrough(s.out("kept"), "R", s.dir / "p.1001.png", "R");
    EXPECT_EQ(read_image(s.out("kept")).getchannel(5, 5, 0, 1), 32768 / 65535.0f);
    EXPECT_EQ(meta(s.out("kept"), "depthbatch/colorspace_rgb"), "sRGB");
    EXPECT_EQ(depthbatch::exr_text_attribute(s.out("kept").string(), "oiio:ColorSpace"), "sRGB");
    EXPECT_EQ(meta(s.out("kept"), "oiio:ColorSpace"), "sRGB") << "what an OIIO-based tool reads";
    // A JPEG (a real plate): renders, 3 channels in, half RGB in scene-linear; encoded back to sRGB and rounded,
    // every pixel is the decoder's code again (the round trip Nuke's Write to JPEG does); depth is the probe's
    // mean of the plate's own sRGB values.
    for (const auto& f : list_dir(s.dir.path))
        if (f.rfind("p.1001.", 0) == 0) fs::remove(s.dir / f);
    fs::create_symlink(samples_dir() / "plates/carshadow/carshadow.1001.jpg", s.dir / "p.1001.jpg");
    const auto r = s.run(".jpg", "jpg", "colorspace: sRGB", defaults);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(channel_names(s.out("jpg")), (Names{"R", "G", "B", "depth.Z"}));
    expect_types(s.out("jpg"), {kHalf, kHalf, kHalf, kFloat});
    const auto d = depth_values(s.out("jpg"));
    std::vector<std::vector<unsigned char>> codes;
    long changed = 0;
    for (const char* c : {"R", "G", "B"}) {
        codes.push_back(channel_bytes(s.dir / "p.1001.jpg", c, OIIO::TypeDesc::UINT8));
        const auto lin = channel_floats(s.out("jpg"), c);
        ASSERT_EQ(lin.size(), codes.back().size());
        for (size_t i = 0; i < lin.size(); ++i)
            changed += std::lround(linear_to_srgb(lin[i]) * 255.0) != codes.back()[i];
    }
    EXPECT_EQ(changed, 0) << "values that do not encode back to the JPEG's code";
    for (size_t i = 0; i < d.size(); i += 97)
        ASSERT_NEAR(d[i], (codes[0][i] / 255.0f + codes[1][i] / 255.0f + codes[2][i] / 255.0f) / 3.0f, 1e-6);
}

// The default on plates that are already scene-linear, and on a 10-bit DPX (issue 25): a half EXR in
// scene_linear is written bit for bit, still half; the 10-bit DPX (auto: ACEScct) is linearised to Linear
// Rec.709 and written as float, because half would change some 10-bit codes of saturated colours through the
// AP1 -> Rec.709 matrix (passthrough_color_test.cpp); the log says why.
TEST(Cases, DefaultPassthroughOfLinearExrAndTenBitDpx) {
    Shot s;
    const std::string defaults = "passthrough_colorspace: scene_linear, pixel_type: auto";
    const fs::path exr = s.link_sample("Cannon.exr");
    auto r = s.run(".exr", "exr", "", defaults);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(file_spec(s.out("exr")).channelformat(0), kHalf);
    for (const char* c : {"R", "G", "B"}) expect_passthrough(s.out("exr"), c, exr, c);
    EXPECT_EQ(meta(s.out("exr"), "depthbatch/colorspace_rgb"), "Linear Rec.709 (sRGB)");
    fs::remove(exr);
    const fs::path dpx = s.link_sample("dpx_nuke_10bits_rgb.dpx");
    r = s.run(".dpx", "dpx", "", defaults);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "output.pixel_type auto: float (half would change")) << r.output;
    EXPECT_EQ(file_spec(s.out("dpx")).channelformat(0), kFloat);
    EXPECT_EQ(meta(s.out("dpx"), "depthbatch/colorspace_rgb"), "Linear Rec.709 (sRGB)");
    EXPECT_EQ(depthbatch::exr_text_attribute(s.out("dpx").string(), "oiio:ColorSpace"), "Linear Rec.709 (sRGB)");
    EXPECT_EQ(meta(s.out("dpx"), "depthbatch/colorspace_in"), "ACEScct");
}

// The colour tags an output carries say what its RGB is (issue 25): a data plate (input.colorspace: Raw) is
// tagged Raw, not linear; a plate's own chromaticities / colorInteropID (AP1) are dropped once its RGB is converted
// to scene_linear, and from depth-only outputs; plate mode keeps them. An unbelievable PixelAspectRatio is said.
TEST(Cases, ColourTagsFollowTheWrittenRgb) {
    Shot s;
    const std::string defaults = "passthrough_colorspace: scene_linear, pixel_type: auto";
    write_image(s.dir / "p.1001.png", 32, 24, {"R", "G", "B"}, "uint8", [](int, int, int) { return 128 / 255.0f; });
    auto r = s.run(".png", "raw", "colorspace: Raw", defaults);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(depthbatch::exr_text_attribute(s.out("raw").string(), "oiio:ColorSpace"), "Raw");
    EXPECT_EQ(meta(s.out("raw"), "depthbatch/colorspace_rgb"), "Raw");
    EXPECT_NEAR(read_image(s.out("raw")).getchannel(3, 3, 0, 0), 128 / 255.0f, 2e-4) << "data is never linearised";
    fs::remove(s.dir / "p.1001.png");
    {  // ACEScg EXR tagged as such: AP1 chromaticities, colorInteropID, pixelAspectRatio 1000 (nonsense)
        OIIO::ImageSpec spec(32, 24, 3, OIIO::TypeDesc::HALF);
        const float ap1[8] = {0.713f, 0.293f, 0.165f, 0.830f, 0.128f, 0.044f, 0.32168f, 0.33767f};
        spec.attribute("chromaticities", OIIO::TypeDesc(OIIO::TypeDesc::FLOAT, 8), ap1);
        spec.attribute("colorInteropID", "lin_ap1_scene");
        spec.attribute("PixelAspectRatio", 1000.0f);
        const std::vector<float> px(32 * 24 * 3, 0.25f);
        auto out = OIIO::ImageOutput::create((s.dir / "p.1001.exr").string());
        ASSERT_TRUE(out && out->open((s.dir / "p.1001.exr").string(), spec) &&
                    out->write_image(OIIO::TypeDesc::FLOAT, px.data()) && out->close());
    }
    r = s.run(".exr", "ap1", "colorspace: ACEScg", defaults);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "PixelAspectRatio 1000 is not a believable pixel aspect")) << r.output;
    const OIIO::ImageSpec converted = file_spec(s.out("ap1"));
    EXPECT_EQ(converted.find_attribute("chromaticities"), nullptr) << "AP1 primaries on Rec.709 values";
    EXPECT_EQ(depthbatch::exr_text_attribute(s.out("ap1").string(), "colorInteropID"), "");
    EXPECT_EQ(depthbatch::exr_text_attribute(s.out("ap1").string(), "oiio:ColorSpace"), "Linear Rec.709 (sRGB)");
    r = s.run(".exr", "ap1_plate", "colorspace: ACEScg", "passthrough_colorspace: plate");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(file_spec(s.out("ap1_plate")).find_attribute("chromaticities"), nullptr)
        << "plate mode: the plate's RGB, its tags";
    EXPECT_EQ(depthbatch::exr_text_attribute(s.out("ap1_plate").string(), "colorInteropID"), "lin_ap1_scene");
    EXPECT_EQ(depthbatch::exr_text_attribute(s.out("ap1_plate").string(), "oiio:ColorSpace"), "ACEScg");
    r = s.run(".exr", "ap1_depth", "colorspace: ACEScg", "channels: depth");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(file_spec(s.out("ap1_depth")).find_attribute("chromaticities"), nullptr) << "no RGB, no primaries";
    EXPECT_EQ(depthbatch::exr_text_attribute(s.out("ap1_depth").string(), "colorInteropID"), "");
}

// ==== docs/cases.md 12: HDR ===============================================================================

TEST(Cases, Case12HdrPassthroughIsKeptAndDepthStaysInRange) {
    Shot s;
    // 640x360 half, linear Rec.709: -0.05 in the first 10 columns, 0.18 in the middle, a ramp 0 -> 12.0
    // over the right third; A = 0.5 in a block, 1 elsewhere.
    const int W = 640, H = 360, ramp0 = 2 * W / 3;
    auto value = [&](int x) {
        if (x < 10) return -0.05f;
        if (x < ramp0) return 0.18f;
        return 12.0f * (x - ramp0) / (W - 1 - ramp0);
    };
    write_image(s.dir / "p.1001.exr", W, H, {"R", "G", "B", "A"}, "half", [&](int x, int y, int c) {
        if (c == 3) return (x >= 100 && x < 200 && y >= 100 && y < 200) ? 0.5f : 1.0f;
        return value(x);
    });
    const fs::path in = s.dir / "p.1001.exr";
    const auto r = s.run(".exr", "o", "colorspace: lin_rec709", "", "depth: {normalize: raw}\n");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path out = s.out("o");
    for (const char* c : {"R", "G", "B", "A"}) expect_passthrough(out, c, in, c);
    OIIO::ImageBuf buf = read_image(out);
    EXPECT_EQ(buf.getchannel(W - 1, 0, 0, 0), 12.0f) << "12.0 kept";
    EXPECT_EQ(buf.getchannel(0, 0, 0, 0), buf.getchannel(5, 7, 0, 0));
    EXPECT_LT(buf.getchannel(0, 0, 0, 0), -0.049f) << "-0.05 kept";
    const int z = channel_index(buf, "depth.Z");
    const auto R = channel_floats(in, "R");
    long expected_out_of_range = 0;
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            const float lin = R[static_cast<size_t>(y) * W + x], d = buf.getchannel(x, y, 0, z);
            ASSERT_GE(d, 0.0f);
            ASSERT_LE(d, 1.0f);
            if (lin >= 1.0f) ASSERT_GE(d, 0.99999f) << x << " lin " << lin;
            if (lin < 0.0f) ASSERT_EQ(d, 0.0f);
            if (lin > 0.0f && lin < 1.0f) {
                const double srgb = lin <= 0.0031308 ? 12.92 * lin : 1.055 * std::pow(lin, 1 / 2.4) - 0.055;
                ASSERT_NEAR(d, srgb, 1e-4) << x << " lin " << lin;
            }
            expected_out_of_range += lin > 1.0f || lin < 0.0f;
        }
    EXPECT_EQ(logged_count(r.output, "pixels outside 0-1 after colour (clamp)"), expected_out_of_range) << r.output;

    // The job may tone-map instead of clamping: the ACES output transform keeps 4.0 and 12.0 apart.
    const auto v =
        s.run(".exr", "view", "colorspace: lin_rec709", "",
              "depth: {normalize: raw}\ncolor: {hdr: view, display: sRGB - Display, view: ACES 1.0 - SDR Video}\n");
    ASSERT_EQ(v.exit_code, 0) << v.output;
    OIIO::ImageBuf vb = read_image(s.out("view"));
    const int x4 = ramp0 + static_cast<int>(std::lround(4.0 / 12.0 * (W - 1 - ramp0)));
    EXPECT_LT(vb.getchannel(x4, 0, 0, z), vb.getchannel(W - 1, 0, 0, z));
    EXPECT_LT(vb.getchannel(W - 1, 0, 0, z), 1.0f);
    EXPECT_EQ(logged_count(v.output, "pixels outside 0-1 after colour (view)"), -1) << "the view maps HDR into 0-1\n"
                                                                                    << v.output;
    EXPECT_EQ(meta(s.out("view"), "depthbatch/colorspace_model"), "sRGB - Display / ACES 1.0 - SDR Video");
}

TEST(Cases, Case12AcescgNeutralPatches) {
    Shot s;
    const float patches[4] = {0.01f, 0.18f, 1.0f, 4.0f};
    write_image(s.dir / "p.1001.exr", 64, 16, {"R", "G", "B"}, "float",
                [&](int x, int, int) { return patches[x / 16]; });
    const auto r = s.run(".exr", "o", "colorspace: ACEScg", "", "depth: {normalize: raw}\n");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    OIIO::ImageBuf buf = read_image(s.out("o"));
    const int z = channel_index(buf, "depth.Z");
    const float expected[4] = {0.100f, 0.461f, 1.000f, 1.000f};
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(buf.getchannel(16 * i + 8, 8, 0, z), expected[i], 0.002) << patches[i];
    EXPECT_EQ(logged_count(r.output, "pixels outside 0-1 after colour (clamp)"), 16 * 16) << r.output;
    EXPECT_EQ(meta(s.out("o"), "depthbatch/colorspace_in"), "ACEScg");
}

// The same ACEScg patches in an EXR that says what it is (AP1 chromaticities, as Nuke and OIIO write them): auto takes
// ACEScg, the depth equals the explicit `colorspace: ACEScg` one above, and the RGB written is converted to the
// config's scene_linear and tagged so. A frame of the shot that says nothing is of another kind: exit 3 before
// it is rendered, under auto only.
TEST(Cases, Case12AnExrThatSaysItIsAcescgIsTakenAsAcescg) {
    Shot s;
    const float patches[4] = {0.01f, 0.18f, 1.0f, 4.0f};
    const float ap1[8] = {0.713f, 0.293f, 0.165f, 0.830f, 0.128f, 0.044f, 0.32168f, 0.33767f};
    for (int f : {1001, 1002}) {
        const fs::path path = s.dir / ("p." + std::to_string(f) + ".exr");
        write_image(path, 64, 16, {"R", "G", "B"}, "float", [&](int x, int, int) { return patches[x / 16]; });
        if (f == 1002) break;  // says nothing
        OIIO::ImageBuf b(path.string());
        ASSERT_TRUE(b.read(0, 0, true));
        b.specmod().attribute("chromaticities", OIIO::TypeDesc(OIIO::TypeDesc::FLOAT, 8), ap1);
        ASSERT_TRUE(b.write((s.dir / "tagged.exr").string()));
        fs::rename(s.dir / "tagged.exr", path);
    }
    const auto r =
        s.run(".exr", "o", "frames: 1001", "passthrough_colorspace: scene_linear", "depth: {normalize: raw}\n");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output,
                         "input.colorspace auto: float openexr plate chromaticities of ACES AP1 primaries "
                         "(ACEScg) -> 'ACEScg'"))
        << r.output;
    EXPECT_FALSE(contains(r.output, "warning")) << r.output;
    OIIO::ImageBuf buf = read_image(s.out("o"));
    const int z = channel_index(buf, "depth.Z");
    const float expected[4] = {0.100f, 0.461f, 1.000f, 1.000f};
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(buf.getchannel(16 * i + 8, 8, 0, z), expected[i], 0.002) << patches[i];
    EXPECT_EQ(meta(s.out("o"), "depthbatch/colorspace_in"), "ACEScg");
    EXPECT_EQ(meta(s.out("o"), "depthbatch/colorspace_rgb"), "Linear Rec.709 (sRGB)");
    EXPECT_EQ(file_spec(s.out("o")).find_attribute("chromaticities"), nullptr) << "AP1 no longer describes the RGB";
    // A neutral stays neutral through ACEScg -> Linear Rec.709 (OCIO's Bradford adaptation of the ACES white to D65).
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(buf.getchannel(24, 8, 0, c), 0.18f, 0.002f) << c;

    const auto mixed = s.run(".exr", "m", "frames: 1001-1002", "", "depth: {normalize: raw}\n");
    EXPECT_EQ(mixed.exit_code, exit_status(ExitCode::Input)) << mixed.output;
    EXPECT_TRUE(
        contains(mixed.output, "frame 1002 (" + (s.dir / "p.1002.exr").string() +
                                   ") is openexr with float "
                                   "colour, channels R,G,B; auto 'Linear Rec.709 (sRGB)', but frame 1001 was float "
                                   "colour, channels R,G,B; auto 'ACEScg'"))
        << mixed.output;
    EXPECT_FALSE(fs::exists(s.dir / "m/d.1002.exr"));
    // A farm chunk (or a --skip-existing run) holding only frame 1002 decides as the whole shot would: exit 3 too.
    const auto chunk = s.run(".exr", "c", "frames: 1001-1002", "", "depth: {normalize: raw}\n", "", {"--chunk", "2/2"});
    EXPECT_EQ(chunk.exit_code, exit_status(ExitCode::Input)) << chunk.output;
    EXPECT_TRUE(
        contains(chunk.output, "frame 1001 (" + (s.dir / "p.1001.exr").string() +
                                   "), the shot's first, is "
                                   "openexr with float colour, channels R,G,B; auto 'ACEScg', but frame 1002, this "
                                   "run's first, is float colour, channels R,G,B; auto 'Linear Rec.709 (sRGB)'"))
        << chunk.output;
    EXPECT_FALSE(fs::exists(s.dir / "c/d.1002.exr"));
    EXPECT_EQ(s.run(".exr", "x", "frames: 1001-1002, colorspace: ACEScg").exit_code, 0) << "said in the job: no check";
    // What is compared is what each frame resolves to: frame 1002 declaring AP1 another way (its colorInteropID,
    // the chromaticities 4e-4 off) is of the same kind.
    {
        const fs::path path = s.dir / "p.1002.exr";
        OIIO::ImageBuf b(path.string());
        ASSERT_TRUE(b.read(0, 0, true));
        float near_ap1[8];
        std::copy(ap1, ap1 + 8, near_ap1);
        near_ap1[0] += 4e-4f;
        b.specmod().attribute("chromaticities", OIIO::TypeDesc(OIIO::TypeDesc::FLOAT, 8), near_ap1);
        b.specmod().attribute("colorInteropID", "lin_ap1_scene");
        ASSERT_TRUE(b.write((s.dir / "tagged.exr").string()));
        fs::rename(s.dir / "tagged.exr", path);
    }
    const auto same = s.run(".exr", "s", "frames: 1001-1002", "", "depth: {normalize: raw}\n");
    EXPECT_EQ(same.exit_code, 0) << same.output;
}

// ==== docs/cases.md 14: channels ==========================================================================

TEST(Cases, Case14ChannelNamesTypesAndTheOneDepthZ) {
    Shot s;
    const fs::path pconst = write_p_const(s.dir / "pconst.pt", 1000.3);
    s.model = pconst;
    auto plate = [&](const Names& names) {
        for (const auto& f : list_dir(s.dir.path))
            if (f.rfind("p.1001.", 0) == 0) fs::remove(s.dir / f);
        write_image(s.dir / "p.1001.exr", 32, 16, names, "half",
                    [](int x, int, int c) { return 0.1f * c + 0.01f * x; });
    };
    auto expect_ours = [&](const fs::path& out) {
        const OIIO::ImageSpec spec = file_spec(out);
        int z = -1, found = 0;
        for (int c = 0; c < spec.nchannels; ++c)
            if (spec.channelnames[c] == "depth.Z") z = c, ++found;
        ASSERT_EQ(found, 1) << "exactly one depth.Z";
        EXPECT_EQ(spec.channelformat(z), kFloat);
        for (float v : depth_values(out)) ASSERT_NEAR(v, 1000.3f, 1e-4);
    };
    plate({"R", "G", "B", "A"});
    auto r = s.run(".exr", "rgba", "colorspace: sRGB");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(channel_names(s.out("rgba")), (Names{"R", "G", "B", "A", "depth.Z"}));
    expect_types(s.out("rgba"), {kHalf, kHalf, kHalf, kHalf, kFloat});
    expect_ours(s.out("rgba"));

    r = s.run(".exr", "depth", "colorspace: sRGB", "channels: depth");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(channel_names(s.out("depth")), (Names{"depth.Z"}));
    expect_ours(s.out("depth"));

    for (const std::string own : {"Z", "depth.Z"}) {
        SCOPED_TRACE(own);
        plate({"R", "G", "B", "A", own});
        const fs::path in = s.dir / "p.1001.exr";
        for (const std::string layout : {"rgba", "all"}) {
            const std::string name = (own == "Z" ? "z_" : "dz_") + layout;
            r = s.run(".exr", name, "colorspace: sRGB", "channels: " + layout);
            ASSERT_EQ(r.exit_code, 0) << r.output;
            EXPECT_EQ(channel_names(s.out(name)), (Names{"R", "G", "B", "A", "depth.Z"})) << "plate's own dropped";
            expect_ours(s.out(name));
            EXPECT_NE(r.output.find("the plate's own depth " + own + " dropped (output.existing_depth: replace)"),
                      std::string::npos)
                << r.output;

            r = s.run(".exr", name + "_rn", "colorspace: sRGB", "channels: " + layout + ", existing_depth: rename");
            ASSERT_EQ(r.exit_code, 0) << r.output;
            // (OpenEXR stores channels sorted by name; OIIO lists R,G,B,A first, then the rest in that order.)
            EXPECT_EQ(channel_names(s.out(name + "_rn")),
                      own == "Z" ? (Names{"R", "G", "B", "A", "Z_plate", "depth.Z"})
                                 : (Names{"R", "G", "B", "A", "depth.Z", "depth.Z_plate"}));
            expect_ours(s.out(name + "_rn"));
            expect_passthrough(s.out(name + "_rn"), own + "_plate", in, own);
            EXPECT_EQ(meta(s.out(name + "_rn"), "depthbatch/plate_depth"),
                      own + " -> " + own + "_plate (output.existing_depth: rename)");
        }
    }

    // A named or numeric RGB layer still comes out as plain R,G,B,A (Nuke's rgba), never depth.z / Z.
    for (const std::string layer : {"beauty", "0"}) {
        plate({layer + ".R", layer + ".G", layer + ".B", layer + ".A"});
        r = s.run(".exr", "layer_" + layer, "colorspace: sRGB");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_EQ(channel_names(s.out("layer_" + layer)), (Names{"R", "G", "B", "A", "depth.Z"}));
        expect_passthrough(s.out("layer_" + layer), "B", s.dir / "p.1001.exr", layer + ".B");
        expect_ours(s.out("layer_" + layer));
    }
}

// ==== output determinism ============================================================================

TEST(Layout, SameInputsGiveTheSameBytes) {
    // Plates without a DateTime (most sample EXRs, PNG, JPEG) must not get the render time stamped in:
    // overlapping farm chunks compare the bytes of a frame both wrote.
    Shot s;
    s.link_sample("Cannon.exr");
    ASSERT_EQ(s.run(".exr", "a").exit_code, 0);
    ASSERT_EQ(s.run(".exr", "b").exit_code, 0);
    std::ifstream fa(s.out("a"), std::ios::binary), fb(s.out("b"), std::ios::binary);
    const std::string a((std::istreambuf_iterator<char>(fa)), {}), b((std::istreambuf_iterator<char>(fb)), {});
    EXPECT_FALSE(a.empty());
    EXPECT_TRUE(a == b);
}
