// Unit tests for include/depthbatch/exr_depth_writer.h: the passthrough pixel type, and the proof that
// output.pixel_type: half loses no code value of an 8- or 10-bit plate.
#include "depthbatch/exr_depth_writer.h"

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
