// Unit tests for include/depthbatch/exr_depth_writer.h: the passthrough pixel type, and the proof that
// output.pixel_type: half loses no code value of an 8- or 10-bit plate.
#include "depthbatch/exr_depth_writer.h"
#include "exr_depth_writer_pvt.h"
#include "depthbatch/error.h"
#include "depthbatch/plate.h"
#include "output/output_guard.h"
#include "support/test_support.h"

#include <Imath/half.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace depthbatch;

// Every code k of a b-bit plate arrives as the float k / (2^b - 1) (plate_reader.cpp); written as half and
// read back, round(value * (2^b - 1)) must be k again — for b = 8 and 10 — and half must keep codes apart.
// For 12 bits it does not hold.
TEST(PassthroughType, EightAndTenBitCodesRoundTripThroughHalf) {
    for (int bits : {8, 10}) {
        const int max = (1 << bits) - 1;
        int lost = 0;
        float previous = -1.0f;
        for (int k = 0; k <= max; ++k) {
            const float stored = static_cast<float>(Imath::half(static_cast<float>(k) / static_cast<float>(max)));
            lost += static_cast<int>(std::lround(stored * max)) != k;
            EXPECT_GT(stored, previous) << bits << "-bit code " << k << " shares a half with the one below";
            previous = stored;
        }
        EXPECT_EQ(lost, 0) << bits << "-bit codes that do not round-trip through half";
    }
    int lost12 = 0;
    for (int k = 0; k <= 4095; ++k)
        lost12 += static_cast<int>(std::lround(static_cast<float>(Imath::half(k / 4095.0f)) * 4095)) != k;
    EXPECT_GT(lost12, 0) << "12-bit codes would not all survive: they must stay float";
}

TEST(PassthroughType, KeepWritesIntegerCodesAsExactFloats) {
    using T = OIIO::TypeDesc;
    EXPECT_EQ(passthrough_type(T::UINT8, PassthroughType::Keep), T::FLOAT) << "docs/cases.md 10: code/255 exactly";
    EXPECT_EQ(passthrough_type(T::UINT16, PassthroughType::Keep), T::FLOAT);
    EXPECT_EQ(passthrough_type(T::HALF, PassthroughType::Keep), T::HALF);
    EXPECT_EQ(passthrough_type(T::FLOAT, PassthroughType::Keep), T::FLOAT);
    EXPECT_EQ(passthrough_type(T::FLOAT, PassthroughType::Half), T::HALF);
    EXPECT_EQ(passthrough_type(T::UINT8, PassthroughType::Half), T::HALF);
    EXPECT_EQ(passthrough_type(T::HALF, PassthroughType::Float), T::FLOAT);
}

// Issue 32 §9: a write the file system refuses says the OS's reason once ("(Permission denied) (Permission denied)"
// before: OIIO's open error already holds it). /sys: a folder root may "write" (access(2)) where sysfs refuses.
TEST(ExrDepthWriter, TheOsReasonOfAFailedWriteIsSaidOnce) {
    if (!std::filesystem::is_directory("/sys")) GTEST_SKIP() << "no /sys";
    test::TempDir dir;
    test::write_image(dir / "p.1001.png", 8, 4, {"R", "G", "B"}, "uint8", [](int x, int, int) { return x / 8.0f; });
    const Plate plate = read_plate((dir / "p.1001.png").string(), 1001);
    OIIO::ImageBuf depth(OIIO::ImageSpec(8, 4, 1, OIIO::TypeDesc::FLOAT));
    const std::string msg = test::expect_error<RenderError>([&] {
        Publication out = OutputGuard().open("/sys/depthbatch-test.1001.exr", OutputRole::DepthFrame);
        write_depth_exr(out, plate, depth, {}, ExrWriteOptions());
    });
    EXPECT_EQ(msg.rfind("/sys/depthbatch-test.1001.exr: cannot write: ", 0), 0u) << msg;
    const size_t open = msg.rfind(" ("), close = msg.rfind(')');
    ASSERT_NE(open, std::string::npos) << msg;
    const std::string reason = msg.substr(open, close - open + 1);  // " (Permission denied)", or EROFS's
    EXPECT_EQ(msg.find(reason), open) << "the reason twice: " << msg;
    EXPECT_TRUE(reason == " (Permission denied)" || reason == " (Read-only file system)" ||
                reason == " (Operation not permitted)")
        << msg;
}
