// Unit tests for include/depthbatch/passthrough_color.h: the RGB passthrough converted to scene_linear with the
// shipped OCIO config, and the proof behind output.pixel_type: auto — which codes survive linearise, half,
// encode back.
#include "depthbatch/passthrough_color.h"

#include "depthbatch/error.h"

#include <Imath/half.h>
#include <OpenColorIO/OpenColorIO.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace depthbatch;

namespace {

const std::string kShipped = DEPTHBATCH_SOURCE_DIR "/configs/ocio/config.ocio";

/// The sRGB decoding (IEC 61966-2-1), written out to check OCIO's numbers against.
double srgb_to_linear(double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); }

PlateInfo integer_plate(const char* format, OIIO::TypeDesc type, int bits) {
    PlateInfo p;
    p.format = format;
    p.file_spec = OIIO::ImageSpec(4, 4, 3, type);
    p.file_spec.attribute("oiio:BitsPerSample", bits);
    p.r = 0, p.g = 1, p.b = 2;
    return p;
}

}  // namespace

// sRGB 8-bit (auto's colorspace for JPEG/PNG/TIFF) -> the shipped config's scene_linear (Linear Rec.709): the
// sRGB decoding, channel by channel; code 128 is 0.2158605.
TEST(PassthroughColor, SrgbPlateBecomesSceneLinear) {
    const auto p = PassthroughColor::create(kShipped, "sRGB", PassthroughColorspace::SceneLinear);
    EXPECT_TRUE(p->converts());
    EXPECT_EQ(p->written(), "Linear Rec.709 (sRGB)");
    EXPECT_EQ(p->plate(), "sRGB Encoded Rec.709 (sRGB)");
    std::vector<float> rgb;
    for (int k = 0; k < 256; ++k) rgb.insert(rgb.end(), {k / 255.0f, k / 255.0f, k / 255.0f});
    p->apply(rgb.data(), 256);
    for (int k = 0; k < 256; ++k)
        for (int c = 0; c < 3; ++c) ASSERT_NEAR(rgb[3 * k + c], srgb_to_linear(k / 255.0), 2e-6) << "code " << k;
    EXPECT_NEAR(rgb[3 * 128], 0.2158605f, 1e-6);
}

// An EXR plate in scene_linear converts nothing (bit for bit); plate mode converts nothing either.
TEST(PassthroughColor, SceneLinearPlateAndPlateModeAreUntouched) {
    for (const auto& p : {PassthroughColor::create(kShipped, "scene_linear", PassthroughColorspace::SceneLinear),
                          PassthroughColor::create(kShipped, "lin_rec709", PassthroughColorspace::SceneLinear),
                          PassthroughColor::create(kShipped, "sRGB", PassthroughColorspace::Plate)}) {
        EXPECT_FALSE(p->converts());
        std::vector<float> rgb = {0.5f, -0.25f, 12.0f, NAN, 1e-30f, 65504.0f};
        const std::vector<float> before = rgb;
        p->apply(rgb.data(), 2);
        EXPECT_EQ(0, std::memcmp(rgb.data(), before.data(), rgb.size() * sizeof(float)));
    }
    EXPECT_EQ(PassthroughColor::create(kShipped, "sRGB", PassthroughColorspace::Plate)->written(), "sRGB");
}

// A plate's R, G, B are converted in place; alpha is not; a grey plate's one channel gets the converted grey.
TEST(PassthroughColor, PlateChannelsConvertedAlphaUntouched) {
    const auto p = PassthroughColor::create(kShipped, "sRGB", PassthroughColorspace::SceneLinear);
    Plate plate;
    plate.file_spec = OIIO::ImageSpec(3, 70, 4, OIIO::TypeDesc::UINT8);  // 70 rows: more than one block of 64
    plate.pixels.reset(OIIO::ImageSpec(3, 70, 4, OIIO::TypeDesc::FLOAT));
    plate.r = 2, plate.g = 1, plate.b = 0, plate.a = 3;  // stored B, G, R, A
    float* px = static_cast<float*>(plate.pixels.localpixels());
    for (int i = 0; i < 3 * 70; ++i) px[4 * i] = 0.2f, px[4 * i + 1] = 0.5f, px[4 * i + 2] = 0.8f, px[4 * i + 3] = 0.5f;
    p->apply(plate);
    for (int i = 0; i < 3 * 70; ++i) {
        ASSERT_NEAR(px[4 * i], srgb_to_linear(0.2), 2e-6);
        ASSERT_NEAR(px[4 * i + 1], srgb_to_linear(0.5), 2e-6);
        ASSERT_NEAR(px[4 * i + 2], srgb_to_linear(0.8), 2e-6);
        ASSERT_EQ(px[4 * i + 3], 0.5f) << "alpha is never colour-converted";
    }
    Plate grey;
    grey.file_spec = OIIO::ImageSpec(2, 2, 2, OIIO::TypeDesc::UINT8);
    grey.pixels.reset(OIIO::ImageSpec(2, 2, 2, OIIO::TypeDesc::FLOAT));
    grey.r = grey.g = grey.b = 0, grey.a = 1;
    float* g = static_cast<float*>(grey.pixels.localpixels());
    for (int i = 0; i < 4; ++i) g[2 * i] = 128 / 255.0f, g[2 * i + 1] = 1.0f;
    p->apply(grey);
    for (int i = 0; i < 4; ++i) {
        EXPECT_NEAR(g[2 * i], srgb_to_linear(128 / 255.0), 2e-6);
        EXPECT_EQ(g[2 * i + 1], 1.0f);
    }
}

// The round-trip proof behind output.pixel_type: auto. Every 8-bit code of an sRGB plate (auto's colorspace for
// 8-bit files), linearised to the shipped config's scene_linear, stored as half and encoded back, is the same
// code — as a grey and in each channel beside 0, 128 and 255 in the others (the transform is per channel, so
// that covers every colour) — and without a conversion too (plate mode). So auto writes such plates as half.
TEST(PassthroughColor, EveryEightBitCodeSurvivesHalf) {
    const auto linear = PassthroughColor::create(kShipped, "sRGB", PassthroughColorspace::SceneLinear);
    EXPECT_EQ(linear->half_losses(8), 0);
    EXPECT_EQ(PassthroughColor::create(kShipped, "sRGB", PassthroughColorspace::Plate)->half_losses(8), 0);
    // Written out once more, all 256 codes, with OCIO directly: decode, half, encode.
    std::vector<float> rgb;
    for (int k = 0; k < 256; ++k) rgb.insert(rgb.end(), {k / 255.0f, k / 255.0f, k / 255.0f});
    linear->apply(rgb.data(), 256);
    for (float& v : rgb) v = static_cast<float>(Imath::half(v));
    linear->inverse(rgb.data(), 256);
    for (int k = 0; k < 256; ++k) ASSERT_EQ(std::lround(rgb[3 * k] * 255.0), k) << "8-bit code " << k;
    EXPECT_EQ(linear->pixel_type(PassthroughType::Auto, integer_plate("png", OIIO::TypeDesc::UINT8, 8)),
              PassthroughType::Half);
    EXPECT_EQ(linear->pixel_type(PassthroughType::Auto, integer_plate("tiff", OIIO::TypeDesc::UINT16, 16)),
              PassthroughType::Keep)
        << "16-bit: float";
    EXPECT_EQ(linear->pixel_type(PassthroughType::Keep, integer_plate("png", OIIO::TypeDesc::UINT8, 8)),
              PassthroughType::Keep);
    EXPECT_EQ(linear->pixel_type(PassthroughType::Float, integer_plate("png", OIIO::TypeDesc::UINT8, 8)),
              PassthroughType::Float);
}

// 10-bit DPX: auto's colorspace is the config's compositing_log role (ACEScct, AP1 primaries); scene_linear is
// Linear Rec.709, so the conversion has a gamut matrix, which spreads a bright channel's half rounding into the
// dark channels of a saturated colour. All 1024 codes as greys survive; as saturated colours some do not, so
// auto writes such a plate as float — it never loses a code. Without the matrix (10-bit codes through half
// alone, or a plate colorspace on AP1 to an AP1 scene_linear) every code survives.
TEST(PassthroughColor, TenBitDpxCodesAndTheAutoChoice) {
    const auto acescct = PassthroughColor::create(kShipped, "ACEScct", PassthroughColorspace::SceneLinear);
    ASSERT_TRUE(acescct->converts());
    // Greys: all 1024 codes.
    std::vector<float> rgb;
    for (int k = 0; k < 1024; ++k) rgb.insert(rgb.end(), {k / 1023.0f, k / 1023.0f, k / 1023.0f});
    acescct->apply(rgb.data(), 1024);
    for (float& v : rgb) v = static_cast<float>(Imath::half(v));
    acescct->inverse(rgb.data(), 1024);
    int grey_lost = 0;
    for (int k = 0; k < 1024; ++k)
        for (int c = 0; c < 3; ++c) grey_lost += std::lround(rgb[3 * k + c] * 1023.0) != k;
    EXPECT_EQ(grey_lost, 0) << "10-bit ACEScct greys through Linear Rec.709 half";
    const long lost = acescct->half_losses(10);
    const PlateInfo dpx = integer_plate("dpx", OIIO::TypeDesc::UINT16, 10);
    std::string why;
    const PassthroughType t = acescct->pixel_type(PassthroughType::Auto, dpx, &why);
    if (lost > 0) {
        EXPECT_EQ(t, PassthroughType::Float) << why;
        EXPECT_NE(why.find("half would change " + std::to_string(lost) + " of the 1024 10-bit codes"),
                  std::string::npos)
            << why;
    } else {
        EXPECT_EQ(t, PassthroughType::Half) << why;
    }
    std::cout << "10-bit ACEScct -> Linear Rec.709: " << lost << " of 1024 codes change through half; auto: " << why
              << "\n";
    // Plate mode and a 10-bit sRGB-encoded plate: every code survives, auto is half.
    const auto plate = PassthroughColor::create(kShipped, "ACEScct", PassthroughColorspace::Plate);
    EXPECT_EQ(plate->half_losses(10), 0);
    EXPECT_EQ(plate->pixel_type(PassthroughType::Auto, dpx), PassthroughType::Half);
    EXPECT_EQ(PassthroughColor::create(kShipped, "sRGB", PassthroughColorspace::SceneLinear)->half_losses(10), 0);
}

// half / float plates keep their type under auto (half stays half, float stays float).
TEST(PassthroughColor, AutoKeepsHalfAndFloatPlates) {
    const auto p = PassthroughColor::create(kShipped, "scene_linear", PassthroughColorspace::SceneLinear);
    PlateInfo h = integer_plate("openexr", OIIO::TypeDesc::HALF, 16),
              f = integer_plate("openexr", OIIO::TypeDesc::FLOAT, 32);
    EXPECT_EQ(integer_bits(h), 0);
    EXPECT_EQ(p->pixel_type(PassthroughType::Auto, h), PassthroughType::Keep);
    EXPECT_EQ(p->pixel_type(PassthroughType::Auto, f), PassthroughType::Keep);
    EXPECT_EQ(integer_bits(integer_plate("dpx", OIIO::TypeDesc::UINT16, 12)), 12);
    EXPECT_EQ(p->pixel_type(PassthroughType::Auto, integer_plate("dpx", OIIO::TypeDesc::UINT16, 12)),
              PassthroughType::Keep)
        << "12-bit: float";
}

TEST(PassthroughColor, ConfigWithoutSceneLinearIsAClearError) {
    const std::string path = testing::TempDir() + "/no_scene_linear.ocio";
    std::ofstream(path) << "ocio_profile_version: 2\nroles:\n  default: raw\ncolorspaces:\n"
                           "  - !<ColorSpace>\n    name: raw\n    isdata: true\n"
                           "  - !<ColorSpace>\n    name: log\n    to_scene_reference: !<LogTransform> {base: 2}\n";
    try {
        PassthroughColor::create(path, "log", PassthroughColorspace::SceneLinear);
        ADD_FAILURE() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("has no scene_linear role; set output.passthrough_colorspace: plate"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_NO_THROW(PassthroughColor::create(path, "log", PassthroughColorspace::Plate));
    EXPECT_THROW(PassthroughColor::create("/nonexistent/config.ocio", "sRGB", PassthroughColorspace::SceneLinear),
                 ConfigError);
}
