// depthbatch — the loader environment, set before any shared library initialises (see set_library_environment).
#include <alloca.h>
#include <cstring>
#include <unistd.h>

namespace {

/// True when `envp` holds NAME=... (`prefix` is "NAME=").
bool has(char** envp, const char* prefix) {
    const size_t n = std::strlen(prefix);
    for (char** e = envp; e && *e; ++e)
        if (std::strncmp(*e, prefix, n) == 0) return true;
    return false;
}

/// The runtime environment LibTorch's libraries read when they are initialised, given to them before they are.
/// A user's own values are respected.
/// - OMP_WAIT_POLICY=PASSIVE: LibTorch's CPU intra-op pool is OpenMP (libgomp), whose threads by default spin
///   after every parallel region, stealing the cores the TBB workers need for decoding and writing: measured
///   on 2 cores, PASSIVE made a 24-frame FastDepth render 1.45x faster (bench/README.md). libgomp reads it once,
///   in its constructor (initialize_env).
/// - ONEDNN_PRIMITIVE_CACHE_CAPACITY=128: oneDNN (LibTorch's CPU convolutions) caches 1024 primitives by
///   default, one set per input shape: plates whose data window changes every frame (renderers' autocrop)
///   grew peak memory 2.4x over 60 frames (bench/shapes). 128 holds the primitives of a network or two at
///   one shape, so a fixed-size job keeps its speed and memory stays bounded.
/// How: ELF runs an executable's DT_PREINIT_ARRAY before the initialisers of every shared library it links (System
/// V ABI; executables only), but a setenv() there does not last: glibc's own initialiser, which runs next, points
/// `environ` back at the process's original block (csu/init-first.c, `__environ = envp`), so libgomp never saw
/// PASSIVE (the log said "OMP_WAIT_POLICY unset"; a C test of preinit setenv + getenv in main shows the same).
/// So when either variable is missing, the process executes itself again (/proc/self/exe, same arguments) with
/// them added, from here: before any library initialiser has run, which costs one more pass of the dynamic
/// loader (mapping and relocating the libraries: 0.2-0.4 s of CPU measured on a busy 2-core machine; the
/// re-execution from main() this replaces also ran LibTorch's initialisers twice, 0.3-0.5 s). A farm task that
/// exports both variables skips it. The second process finds both set and goes on. If the execution
/// fails (no /proc), the process goes on without them and the log says so (run_job: "OMP_WAIT_POLICY unset").
void set_library_environment(int, char** argv, char** envp) {
    static const char omp[] = "OMP_WAIT_POLICY=PASSIVE", dnnl[] = "ONEDNN_PRIMITIVE_CACHE_CAPACITY=128";
    const bool have_omp = has(envp, "OMP_WAIT_POLICY="), have_dnnl = has(envp, "ONEDNN_PRIMITIVE_CACHE_CAPACITY=");
    if (have_omp && have_dnnl) return;
    size_t n = 0;
    while (envp && envp[n]) ++n;
    char** env = static_cast<char**>(alloca((n + 3) * sizeof(char*)));
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) env[k++] = envp[i];
    if (!have_omp) env[k++] = const_cast<char*>(omp);
    if (!have_dnnl) env[k++] = const_cast<char*>(dnnl);
    env[k] = nullptr;
    ::execve("/proc/self/exe", argv, env);  // returns only on failure: go on as we are
}
__attribute__((section(".preinit_array"),
               used)) void (*const preinit_library_environment)(int, char**, char**) = &set_library_environment;

}  // namespace
