// Unit tests for src/exr_deflate.h: OpenEXR's ZIP blocks are made by libdeflate in a depthbatch
// executable, with zlib's compress2() contract kept (return codes, stream format), and every pixel read back.
#include "exr_deflate.h"

#include <OpenImageIO/imagebuf.h>
#include <OpenImageIO/imagebufalgo.h>
#include <gtest/gtest.h>
#include <zlib.h>
#ifdef DEPTHBATCH_EXPECT_LIBDEFLATE
#include <libdeflate.h>  // LIBDEFLATE_VERSION_STRING: the version the build found
#endif

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

using namespace depthbatch;
namespace fs = std::filesystem;

namespace {

/// zlib's own compress2 (libz.so.1), whatever this executable defines.
int zlib_compress2(Bytef* dst, uLongf* n, const Bytef* src, uLong len, int level) {
    using F = int (*)(Bytef*, uLongf*, const Bytef*, uLong, int);
    static const F f = reinterpret_cast<F>(dlsym(RTLD_NEXT, "compress2"));
    return f ? f(dst, n, src, len, level) : Z_STREAM_ERROR;
}

/// A plate-like float image: a smooth ramp with 8-bit codes, as a JPEG plate arrives (code / 255).
std::vector<float> plate_like(int w, int h, int channels) {
    std::vector<float> px(static_cast<size_t>(w) * h * channels);
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> noise(-3, 3);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < channels; ++c) {
                const int code = std::clamp((x * 255) / w + c * 20 + noise(rng), 0, 255);
                px[(static_cast<size_t>(y) * w + x) * channels + c] = static_cast<float>(code) / 255.0f;
            }
    return px;
}

bool built_with_libdeflate() {
#ifdef DEPTHBATCH_EXPECT_LIBDEFLATE
    return true;
#else
    return false;
#endif
}

}  // namespace

TEST(ExrDeflate, CodecIsTheOneBuiltWith) {
    const std::string codec = exr_deflate_codec();
#ifdef DEPTHBATCH_EXPECT_LIBDEFLATE
    EXPECT_EQ(codec, std::string("libdeflate ") + LIBDEFLATE_VERSION_STRING);
#else
    EXPECT_EQ(codec, std::string("zlib ") + zlibVersion() + ", built without libdeflate");
#endif
}

// A misspelt DEPTHBATCH_EXR_DEFLATE is not silently taken: the log line names it as ignored. (Read per call;
// "zlib" itself is read once per process, so it is checked through the CLI's log in bench/run, not here.)
TEST(ExrDeflate, AnUnknownSettingIsNamedInTheLog) {
    ::setenv("DEPTHBATCH_EXR_DEFLATE", "zlib-ng", 1);
    const std::string codec = exr_deflate_codec();
    ::unsetenv("DEPTHBATCH_EXR_DEFLATE");
    EXPECT_NE(codec.find("DEPTHBATCH_EXR_DEFLATE='zlib-ng' ignored: zlib or libdeflate"), std::string::npos) << codec;
    EXPECT_EQ(exr_deflate_codec().find("ignored"), std::string::npos);
}

// The point of it all: OpenEXR (through OIIO) calls compress2 for each ZIP block, and the loader binds that
// call to this executable's definition. Every level and ZIPS, read back pixel for pixel.
TEST(ExrDeflate, OpenExrZipBlocksAreMadeByLibdeflateAndReadBackExactly) {
    if (!built_with_libdeflate()) GTEST_SKIP() << "built without libdeflate: OpenEXR uses zlib";
    const int w = 320, h = 96;
    const std::vector<float> px = plate_like(w, h, 4);
    OIIO::ImageSpec spec(w, h, 4, OIIO::TypeDesc::FLOAT);
    const fs::path dir = fs::temp_directory_path() / ("exr_deflate_test_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    for (const std::string compression : {"zip", "zip:1", "zip:9", "zips", "zips:6"}) {
        OIIO::ImageBuf buf(spec, const_cast<float*>(px.data()));
        buf.specmod().attribute("compression", compression);
        const fs::path file = dir / "t.exr";
        const DeflateCounts before = exr_deflate_counts();
        ASSERT_TRUE(buf.write(file.string())) << buf.geterror();
        const DeflateCounts after = exr_deflate_counts();
        // ZIP packs 16 scanlines per block, ZIPS one: 6 or 96 blocks, each one libdeflate call.
        const bool zips = compression.rfind("zips", 0) == 0;
        EXPECT_EQ(after.libdeflate - before.libdeflate, zips ? 96u : 6u) << compression;
        EXPECT_EQ(after.zlib_fallback, before.zlib_fallback) << compression;
        OIIO::ImageBuf back(file.string());
        ASSERT_TRUE(back.read(0, 0, true, OIIO::TypeDesc::FLOAT)) << back.geterror();
        EXPECT_EQ(back.spec().get_string_attribute("compression"), zips ? "zips" : "zip");
        std::vector<float> got(px.size());
        ASSERT_TRUE(back.get_pixels(OIIO::ROI::All(), OIIO::TypeDesc::FLOAT, got.data()));
        EXPECT_EQ(got, px) << compression;
    }
    fs::remove_all(dir);
}

// zlib's contract, kept: a zlib stream zlib inflates, Z_BUF_ERROR when it cannot fit, Z_STREAM_ERROR for a
// level outside -1..9, and a size within a few % of zlib's at the same level.
TEST(ExrDeflate, Compress2KeepsZlibsContract) {
    std::vector<unsigned char> src(1 << 20);
    std::mt19937 rng(3);
    for (size_t i = 0; i < src.size(); ++i)  // half compressible: repeated bytes with random runs
        src[i] = (i / 64) % 2 ? static_cast<unsigned char>(rng()) : static_cast<unsigned char>(i / 4096);
    const uLong bound = compressBound(src.size());
    for (int level : {Z_DEFAULT_COMPRESSION, 0, 1, 4, 6, 9}) {
        std::vector<unsigned char> z(bound), ref(bound), back(src.size());
        uLongf n = bound, nref = bound, nback = back.size();
        ASSERT_EQ(compress2(z.data(), &n, src.data(), src.size(), level), Z_OK) << level;
        ASSERT_EQ(zlib_compress2(ref.data(), &nref, src.data(), src.size(), level), Z_OK) << level;
        ASSERT_EQ(uncompress(back.data(), &nback, z.data(), n), Z_OK) << "zlib cannot inflate level " << level;
        EXPECT_EQ(nback, src.size());
        EXPECT_EQ(back, src) << level;
        EXPECT_LT(std::fabs(static_cast<double>(n) / static_cast<double>(nref) - 1.0), 0.05)
            << "level " << level << ": " << n << " bytes against zlib's " << nref;
    }
    std::vector<unsigned char> small(16);
    uLongf n = small.size();
    EXPECT_EQ(compress2(small.data(), &n, src.data(), src.size(), 4), Z_BUF_ERROR);
    n = bound;
    std::vector<unsigned char> z(bound);
    EXPECT_EQ(compress2(z.data(), &n, src.data(), src.size(), 10), Z_STREAM_ERROR);
    n = bound;
    EXPECT_EQ(compress(z.data(), &n, src.data(), src.size()), Z_OK);
    // Incompressible bytes in zlib's worst-case bound still fit (stored blocks).
    for (auto& b : src) b = static_cast<unsigned char>(rng());
    n = bound;
    EXPECT_EQ(compress2(z.data(), &n, src.data(), src.size(), 4), Z_OK);
    EXPECT_LE(n, bound);
}

// OpenEXR compresses blocks on its pool threads while depthbatch's writers do the same: one compressor per
// thread and level, so streams from four threads at once all inflate to their own input.
TEST(ExrDeflate, ThreadsCompressAtOnce) {
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([t, &ok] {
            std::vector<unsigned char> src(200000);
            for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>((i * (t + 1)) / 97);
            std::vector<unsigned char> z(compressBound(src.size())), back(src.size());
            for (int rep = 0; rep < 20; ++rep) {
                uLongf n = z.size(), nb = back.size();
                if (compress2(z.data(), &n, src.data(), src.size(), 1 + rep % 9) != Z_OK) return;
                if (uncompress(back.data(), &nb, z.data(), n) != Z_OK || back != src) return;
            }
            ok[static_cast<size_t>(t)] = 1;
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(ok, std::vector<int>(4, 1));
}
