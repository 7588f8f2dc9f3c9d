// depthbatch (internal) — the deflate behind OpenEXR's ZIP/ZIPS compression: libdeflate, as OpenEXR itself uses from 3.2 on.
//
// OpenEXR's ZIP and ZIPS codecs store each block as a zlib stream (RFC 1950 around RFC 1951 deflate). Up to 3.1
// (Debian 12's libopenexr 3.1.5, which OpenImageIO 2.4 writes through) OpenEXR makes those streams with zlib's
// compress2(); from 3.2 on it makes them with libdeflate (libdeflate_zlib_compress), which writes the same format
// 1.4-2x faster at the same level (https://github.com/ebiggers/libdeflate; OpenEXR 3.2 release notes). Writing
// the depth EXR is most of depthbatch's CPU time outside the model (bench/run: ~190 of ~230 ms a 960x540 frame
// with zlib), so when depthbatch is built with libdeflate (Debian: libdeflate-dev), src/exr_deflate.cpp defines
// zlib's compress2() and compress() in the depthbatch executable, exported to the dynamic symbol table: the
// dynamic loader resolves OpenEXR's calls (libOpenEXR and libOpenEXRCore) to them, as it resolves any symbol
// to the executable's definition first. They compress with libdeflate at zlib's level and fall back to zlib's
// own compress2 (dlsym RTLD_NEXT) if libdeflate cannot (an allocation failure, or a destination too small for
// its output). Files are unchanged in format: every reader inflates them with zlib; tests check that OpenEXR
// and zlib read back every pixel, and the bytes written per level stay within a few % of zlib's.
// Reading is untouched (uncompress() stays zlib's). DEPTHBATCH_EXR_DEFLATE=zlib in the environment sends every
// block to zlib (bench/run compares the two in one run; a way to rule libdeflate out of a problem); CMake's
// -DDEPTHBATCH_WITH_LIBDEFLATE=OFF builds without it.
#pragma once

#include <cstdint>
#include <string>

namespace depthbatch {

/// What makes OpenEXR's zlib streams in this process: "libdeflate 1.14" (the version built against),
/// "zlib 1.2.13, DEPTHBATCH_EXR_DEFLATE=zlib" or "zlib 1.2.13, built without libdeflate"; a value of
/// DEPTHBATCH_EXR_DEFLATE other than zlib or libdeflate is named as ignored. Logged with the output channels
/// (exr_depth_writer.h describe_output). Never throws but std::bad_alloc.
std::string exr_deflate_codec();

/// Number of blocks (calls to compress2/compress in this process) that libdeflate has compressed, and that
/// went to zlib (a fallback, or DEPTHBATCH_EXR_DEFLATE=zlib). For tests and bench/stages: a ZIP EXR write with
/// libdeflate must raise the first by one per block (16 scanlines for ZIP, 1 for ZIPS).
struct DeflateCounts {
    std::uint64_t libdeflate = 0;
    std::uint64_t zlib_fallback = 0;
};
DeflateCounts exr_deflate_counts();

}  // namespace depthbatch
