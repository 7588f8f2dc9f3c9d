// upsample_cost — CPU time of depth.upsample per frame, for bench/edges: one thread, a real plate enlarged to the
// size asked (default 1920x1080), the processing size FastDepth's default gives (short side 224), a depth map
// at that size, then per method the median of --iters runs of what run_job does for it:
//   bilinear   ReformatPlan::restore (OIIO resample)
//   guided     ReformatPlan::make_guide (the plate's luma at both sizes) + restore (the fast guided filter)
//   edge_hard  the same, with the edge snapping
// Prints one line per method: upsample_cost method=... ms=... plate=WxH model=WxH, and guided/bilinear.
//
//   upsample_cost PLATE_IMAGE [--plate WxH] [--size N] [--iters N]
#include "depthbatch/job_config.h"
#include "depthbatch/reformat.h"

#include <OpenImageIO/imagebuf.h>
#include <OpenImageIO/imagebufalgo.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

using namespace depthbatch;

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: upsample_cost PLATE_IMAGE [--plate WxH] [--size N] [--iters N]\n");
        return 2;
    }
    int W = 1920, H = 1080, size = 224, iters = 15;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string k = argv[i], v = argv[i + 1];
        if (k == "--plate") std::sscanf(v.c_str(), "%dx%d", &W, &H);
        else if (k == "--size") size = std::stoi(v);
        else if (k == "--iters") iters = std::stoi(v);
    }
    OIIO::attribute("threads", 1);  // one thread: the CPU time a pipeline worker spends on the frame
    OIIO::ImageBuf src(argv[1]);
    OIIO::ImageBuf rgb(OIIO::ImageSpec(W, H, 3, OIIO::TypeDesc::FLOAT));
    if (!OIIO::ImageBufAlgo::resize(rgb, src, "triangle", 0.0f, {}, 1)) {
        std::fprintf(stderr, "upsample_cost: %s: %s\n", argv[1], rgb.geterror().c_str());
        return 2;
    }
    ProcessingSize ps;
    ps.mode = ProcessingSize::Mode::ShortSide;
    ps.short_side_px = size;
    ModelContract c;
    c.multiple = 32;
    const ReformatPlan plan = ReformatPlan::make(W, H, ps, c);
    const ModelInput in = plan.to_model_input(rgb);
    DepthImage depth{in.width, in.height, std::vector<float>(static_cast<size_t>(in.width) * in.height)};
    for (int y = 0; y < in.height; ++y)  // a depth map with edges where the plate has them: 1 + 4 * luma
        for (int x = 0; x < in.width; ++x) {
            const size_t i = static_cast<size_t>(y) * in.width + x, n = depth.data.size();
            depth.data[i] = 1.0f + 4.0f * rec709(in.chw[i], in.chw[n + i], in.chw[2 * n + i]);
        }
    double bilinear_ms = 0;
    for (DepthUpsample m : {DepthUpsample::Bilinear, DepthUpsample::Guided, DepthUpsample::EdgeHard}) {
        UpsampleSettings s;
        s.method = m;
        std::vector<double> ms;
        for (int i = 0; i < iters; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            std::optional<UpsampleGuide> guide;
            if (plan.guided(s)) guide = plan.make_guide(in, rgb);
            const OIIO::ImageBuf out = plan.restore(depth, s, guide ? &*guide : nullptr);
            ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            if (out.spec().width != W) return 1;
        }
        std::nth_element(ms.begin(), ms.begin() + static_cast<long>(ms.size() / 2), ms.end());
        const double med = ms[ms.size() / 2];
        if (m == DepthUpsample::Bilinear) bilinear_ms = med;
        std::printf(
            "upsample_cost method=%s ms=%.2f plate=%dx%d model=%dx%d%s\n", option_name(m), med, W, H, plan.scaled_width,
            plan.scaled_height,
            m == DepthUpsample::Bilinear ? "" : (" ratio_to_bilinear=" + std::to_string(med / bilinear_ms)).c_str());
    }
    return 0;
}
