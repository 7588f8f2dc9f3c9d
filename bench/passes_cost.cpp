// passes_cost — CPU time of the P and N passes (passes.h) per frame, one thread: a 2K frame (2048x1080 by
// default) of depth holding a sphere before a tilted wall (edges all around the sphere), the camera of a 35 mm
// lens on Nuke's default 24.576 mm haperture; with --chan, a camera transform (world-space passes). Prints the
// median of --iters runs of each pass and of both, in milliseconds of the thread's CPU time, and the ratio of P + N to the 10 ms target:
//   passes_cost P_ms=... N_ms=... PN_ms=... plate=WxH world=0|1 target_ms=10 ratio=...
//
//   passes_cost [--plate WxH] [--iters N] [--chan]
#include "depthbatch/camera.h"
#include "depthbatch/passes.h"

#include <algorithm>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace depthbatch;

int main(int argc, char** argv) {
    int W = 2048, H = 1080, iters = 21;
    bool chan = false;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        if (k == "--chan") chan = true;
        else if (k == "--plate" && i + 1 < argc) std::sscanf(argv[++i], "%dx%d", &W, &H);
        else if (k == "--iters" && i + 1 < argc) iters = std::max(1, std::stoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: passes_cost [--plate WxH] [--iters N] [--chan]\n");
            return 2;
        }
    }
    CameraSettings settings;
    settings.focal_mm = 35;
    ChanSample sample;
    sample.translate[0] = 1, sample.translate[1] = 1.6, sample.translate[2] = 4;
    sample.rotate_deg[0] = -5, sample.rotate_deg[1] = 20, sample.rotate_deg[2] = 1;
    const PlateCamera cam =
        make_plate_camera(settings, PlateWindows{0, 0, W, H, 0, 0, W, H}, 1.0, chan ? &sample : nullptr);
    std::vector<float> depth(static_cast<size_t>(W) * H);
    for (int j = 0; j < H; ++j)
        for (int i = 0; i < W; ++i) {
            double r[3];
            cam.ray(i, j, r);
            const double cx = 0.3, cy = -0.1, cz = -5, rad = 1.4;  // the sphere
            const double a = r[0] * r[0] + r[1] * r[1] + 1, b = r[0] * cx + r[1] * cy - cz;
            const double disc = b * b - a * (cx * cx + cy * cy + cz * cz - rad * rad);
            const double wall = 12 / (1 - 0.2 * r[0] - 0.1 * r[1]);  // a tilted wall
            depth[static_cast<size_t>(j) * W + i] = static_cast<float>(disc > 0 ? (b - std::sqrt(disc)) / a : wall);
        }
    std::vector<float> planes(6 * depth.size());
    float* const p[3] = {&planes[0], &planes[depth.size()], &planes[2 * depth.size()]};
    float* const n[3] = {&planes[3 * depth.size()], &planes[4 * depth.size()], &planes[5 * depth.size()]};
    // CPU time of this thread (CLOCK_THREAD_CPUTIME_ID): on a shared machine, wall time also counts the time
    // other processes held the core.
    const auto cpu_ms = [] {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
    };
    const auto median_ms = [&](auto&& run) {
        std::vector<double> t;
        for (int k = 0; k < iters; ++k) {
            const double t0 = cpu_ms();
            run();
            t.push_back(cpu_ms() - t0);
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    };
    const double p_ms = median_ms([&] { position_pass(depth.data(), W, H, cam, p); });
    const double n_ms = median_ms([&] { normal_pass(depth.data(), W, H, cam, n); });
    const double pn_ms = median_ms([&] {
        position_pass(depth.data(), W, H, cam, p);
        normal_pass(depth.data(), W, H, cam, n);
    });
    std::printf("passes_cost P_ms=%.2f N_ms=%.2f PN_ms=%.2f plate=%dx%d world=%d target_ms=10 ratio=%.2f\n", p_ms, n_ms,
                pn_ms, W, H, chan ? 1 : 0, pn_ms / 10.0);
    return 0;
}
