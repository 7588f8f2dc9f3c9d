// depthbatch — the loader environment, set before any shared library initialises (see set_library_environment).
#include <cstdlib>

namespace {

/// The runtime environment LibTorch's libraries read when they are loaded, set before they are: ELF runs an
/// executable's DT_PREINIT_ARRAY before the initialisers of every shared library it links (System V ABI;
/// executables only), so no re-execution is needed (the re-exec this replaces loaded LibTorch twice, about
/// 0.3-0.5 s of every start-up). A user's own values are respected.
/// - OMP_WAIT_POLICY=PASSIVE: LibTorch's CPU intra-op pool is OpenMP (libgomp), whose threads by default spin
///   after every parallel region, stealing the cores the TBB workers need for decoding and writing: measured
///   on 2 cores, PASSIVE made a 24-frame FastDepth render 1.45x faster (bench/README.md). libgomp reads it in
///   its constructor (initialize_env).
/// - ONEDNN_PRIMITIVE_CACHE_CAPACITY=128: oneDNN (LibTorch's CPU convolutions) caches 1024 primitives by
///   default, one set per input shape: plates whose data window changes every frame (renderers' autocrop)
///   grew peak memory 2.4x over 60 frames (bench/shapes). 128 holds the primitives of a network or two at
///   one shape, so a fixed-size job keeps its speed and memory stays bounded.
void set_library_environment(int, char**, char**) {
    if (!std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY")) ::setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "128", 1);
    if (!std::getenv("OMP_WAIT_POLICY")) ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
}
__attribute__((section(".preinit_array"), used)) void (*const preinit_library_environment)(int, char**, char**) =
    &set_library_environment;

}  // namespace
