// libdeflate behind zlib's compress2()/compress() for OpenEXR's ZIP codecs: see src/exr_deflate.h.
#include "exr_deflate.h"

#include <zlib.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef DEPTHBATCH_HAVE_LIBDEFLATE
#include <libdeflate.h>

#include <dlfcn.h>

#include <array>
#include <memory>
#endif

namespace depthbatch {
namespace {
std::atomic<std::uint64_t> g_libdeflate{0};
std::atomic<std::uint64_t> g_fallback{0};

/// DEPTHBATCH_EXR_DEFLATE: "zlib" sends every block through zlib (to compare, or to rule libdeflate out);
/// unset, empty or "libdeflate" keeps the default; anything else is named in exr_deflate_codec()'s text.
const char* deflate_setting() {
    const char* v = std::getenv("DEPTHBATCH_EXR_DEFLATE");
    return v ? v : "";
}

bool setting_understood() {
    const std::string v = deflate_setting();
    return v.empty() || v == "zlib" || v == "libdeflate";
}

[[maybe_unused]] bool zlib_forced() {
    static const bool forced = std::strcmp(deflate_setting(), "zlib") == 0;
    return forced;
}
}  // namespace

std::string exr_deflate_codec() {
#ifdef DEPTHBATCH_HAVE_LIBDEFLATE
    std::string codec = zlib_forced() ? std::string("zlib ") + zlibVersion() + ", DEPTHBATCH_EXR_DEFLATE=zlib"
                                      : std::string("libdeflate ") + LIBDEFLATE_VERSION_STRING;
#else
    std::string codec = std::string("zlib ") + zlibVersion() + ", built without libdeflate";
#endif
    if (!setting_understood())
        codec += std::string("; DEPTHBATCH_EXR_DEFLATE='") + deflate_setting() + "' ignored: zlib or libdeflate";
    return codec;
}

DeflateCounts exr_deflate_counts() { return {g_libdeflate.load(), g_fallback.load()}; }

}  // namespace depthbatch

#ifdef DEPTHBATCH_HAVE_LIBDEFLATE
namespace {

using Compress2 = int (*)(Bytef*, uLongf*, const Bytef*, uLong, int);

/// zlib's own compress2, the next definition after ours in the loader's search order (libz.so.1).
int zlib_compress2(Bytef* dest, uLongf* dest_len, const Bytef* source, uLong source_len, int level) {
    static const Compress2 next = reinterpret_cast<Compress2>(dlsym(RTLD_NEXT, "compress2"));
    if (!next) return Z_STREAM_ERROR;
    depthbatch::g_fallback.fetch_add(1, std::memory_order_relaxed);
    return next(dest, dest_len, source, source_len, level);
}

struct FreeCompressor {
    void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
};

/// One compressor per level and thread: libdeflate's compressors are not thread-safe, and OpenEXR compresses
/// blocks on its own pool threads and on depthbatch's writer threads at once. ~0.3-1 MB each, kept for reuse.
libdeflate_compressor* compressor(int level) {
    thread_local std::array<std::unique_ptr<libdeflate_compressor, FreeCompressor>, 10> per_level;
    auto& c = per_level[static_cast<size_t>(level)];
    if (!c) c.reset(libdeflate_alloc_compressor(level));
    return c.get();
}

}  // namespace

// zlib's contract (zlib.h): level Z_DEFAULT_COMPRESSION (-1) or 0-9, else Z_STREAM_ERROR; on entry *destLen is
// the size of dest, on exit the size of the zlib stream; Z_BUF_ERROR if it does not fit. libdeflate's levels
// 0-9 are zlib's in intent (0 = stored, 6 = zlib's default); OpenEXR >= 3.2 passes its ZIP level to it as is.
extern "C" int compress2(Bytef* dest, uLongf* destLen, const Bytef* source, uLong sourceLen, int level) {
    if (level == Z_DEFAULT_COMPRESSION) level = 6;
    if (level < 0 || level > 9) return Z_STREAM_ERROR;
    if (depthbatch::zlib_forced()) return zlib_compress2(dest, destLen, source, sourceLen, level);
    libdeflate_compressor* c = compressor(level);
    const size_t n = c ? libdeflate_zlib_compress(c, source, sourceLen, dest, *destLen) : 0;
    if (n == 0) return zlib_compress2(dest, destLen, source, sourceLen, level);  // did not fit, or no memory
    *destLen = static_cast<uLongf>(n);
    depthbatch::g_libdeflate.fetch_add(1, std::memory_order_relaxed);
    return Z_OK;
}

extern "C" int compress(Bytef* dest, uLongf* destLen, const Bytef* source, uLong sourceLen) {
    return compress2(dest, destLen, source, sourceLen, Z_DEFAULT_COMPRESSION);
}
#endif
