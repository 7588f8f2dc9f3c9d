// stages — each per-frame library call depthbatch makes, alone, on one thread, for bench/run's per-stage table
// (library alone vs inside depthbatch). Same bytes as the bench job: a 960x540 8-bit JPEG plate.
//
//   stages PLATE [--size 224] [--iters 15]
//
// Prints one line per call, `stage name=... ms=...` (median of --iters):
//   read       OIIO: the plate into float (ImageBuf read, convert to FLOAT)
//   colour     OCIO: the CPU processor sRGB -> sRGB (the bench plate's: a no-op) and ACEScg -> sRGB, packed RGB
//   reformat   the plate to the processing size: OIIO ImageBufAlgo::resize "triangle" (before) and
//              resample.h's LibTorch antialiased bilinear (what depthbatch calls), 1 thread
//   restore    OIIO ImageBufAlgo::resample (bilinear) and depthbatch's bilinear_upsample, processing size -> plate
//   write      OIIO/OpenEXR: R,G,B float + depth.Z float, 960x540, per compression (zip = level 4, zip:1, piz,
//              none) and with R,G,B half (output.pixel_type: half); deflate= says what made the ZIP streams
//              (exr_deflate.h: libdeflate, or zlib with DEPTHBATCH_EXR_DEFLATE=zlib)
//   --only write  just the write lines
//   --depth EXR   write this file's depth.Z (depthbatch's output for PLATE) instead of enlarged noise
#include "depthbatch/depth_upsample.h"
#include "exr_deflate.h"
#include "depthbatch/install_layout.h"
#include "depthbatch/resample.h"

#include <OpenColorIO/OpenColorIO.h>
#include <OpenImageIO/imagebuf.h>
#include <OpenImageIO/imagebufalgo.h>
#include <OpenImageIO/imageio.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <unistd.h>
#include <random>
#include <string>
#include <vector>

namespace OCIO = OCIO_NAMESPACE;
using Clock = std::chrono::steady_clock;

namespace {

std::string g_only;  // --only STAGE: time that stage; the others run once, for their results

bool skipped(const char* stage) { return !g_only.empty() && g_only != stage; }

double median_ms(const char* stage, int iters, const std::function<void()>& f) {
    f();  // warm
    if (skipped(stage)) return 0.0;
    std::vector<double> ms;
    for (int i = 0; i < iters; ++i) {
        const auto t0 = Clock::now();
        f();
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::nth_element(ms.begin(), ms.begin() + static_cast<long>(ms.size() / 2), ms.end());
    return ms[ms.size() / 2];
}

void line(const char* stage, const std::string& name, double ms, const std::string& extra = "") {
    if (skipped(stage)) return;
    std::printf("stage %s name=%s ms=%.2f%s\n", stage, name.c_str(), ms, extra.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: stages PLATE [--size 224] [--iters 15] [--only write] [--depth EXR]\n");
        return 2;
    }
    const std::string plate = argv[1];
    int size = 224, iters = 15;
    std::string depth_file;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        if (k == "--size") size = std::stoi(argv[i + 1]);
        else if (k == "--iters") iters = std::stoi(argv[i + 1]);
        else if (k == "--only") g_only = argv[i + 1];
        else if (k == "--depth") depth_file = argv[i + 1];
    }
    OIIO::attribute("threads", 1);
    OIIO::attribute("exr_threads", 1);

    OIIO::ImageBuf rgb;
    line("read", "oiio_float", median_ms("read", iters, [&] {
             OIIO::ImageBuf b(plate);
             b.read(0, 0, true, OIIO::TypeDesc::FLOAT);
             rgb = b;
         }));
    const int W = rgb.spec().width, H = rgb.spec().height;

    const std::string config = depthbatch::find_data_file("ocio/config.ocio").string();
    OCIO::ConstConfigRcPtr cfg = OCIO::Config::CreateFromFile(config.c_str());
    for (const auto& [from, name] :
         {std::pair<std::string, std::string>{"sRGB", "srgb_noop"}, {"ACEScg", "acescg_to_srgb"}}) {
        OCIO::ConstCPUProcessorRcPtr cpu = cfg->getProcessor(from.c_str(), "sRGB")->getDefaultCPUProcessor();
        std::vector<float> px(static_cast<const float*>(rgb.localpixels()),
                              static_cast<const float*>(rgb.localpixels()) + static_cast<size_t>(W) * H * 3);
        line("colour", name, median_ms("colour", iters, [&] {
                 OCIO::PackedImageDesc desc(px.data(), W, H, 3);
                 cpu->apply(desc);
             }));
    }

    // The processing size depthbatch picks for FastDepth (short side `size`, multiples of 32).
    const double s = static_cast<double>(size) / std::min(W, H);
    const int w = std::max(32, static_cast<int>(std::lround(W * s / 32)) * 32),
              h = std::max(32, static_cast<int>(std::lround(H * s / 32)) * 32);
    line("reformat", "oiio_resize_triangle",
         median_ms("reformat", iters,
                   [&] {
                       OIIO::ImageBuf dst(OIIO::ImageSpec(w, h, 3, OIIO::TypeDesc::FLOAT));
                       OIIO::ImageBufAlgo::resize(dst, rgb, "triangle", 0.0f, {}, 1);
                   }),
         " size=" + std::to_string(w) + "x" + std::to_string(h));

    std::vector<float> planar(static_cast<size_t>(3) * w * h);
    line("reformat", "torch_triangle",
         median_ms("reformat", iters,
                   [&] {
                       depthbatch::resize_triangle_to_planar(static_cast<const float*>(rgb.localpixels()), W, H, 3, w,
                                                             h, planar.data());
                   }),
         " size=" + std::to_string(w) + "x" + std::to_string(h));

    OIIO::ImageBuf small(OIIO::ImageSpec(w, h, 1, OIIO::TypeDesc::FLOAT));
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(1.0f, 6.0f);
    for (int i = 0; i < w * h; ++i) static_cast<float*>(small.localpixels())[i] = u(rng);
    line("restore", "oiio_resample_bilinear", median_ms("restore", iters, [&] {
             OIIO::ImageBuf dst(OIIO::ImageSpec(W, H, 1, OIIO::TypeDesc::FLOAT));
             OIIO::ImageBufAlgo::resample(dst, small, true, {}, 1);
         }));
    std::vector<float> big(static_cast<size_t>(W) * H);
    line("restore", "bilinear_upsample", median_ms("restore", iters, [&] {
             depthbatch::bilinear_upsample(static_cast<const float*>(small.localpixels()), w, h, W, H, big.data());
         }));

    // The written frame: R,G,B from the plate, depth.Z from the enlarged depth, or with --depth the depth.Z that
    // depthbatch wrote for this plate (the same bytes as the render: real depth compresses better than noise).
    if (!depth_file.empty()) {
        OIIO::ImageBuf d(depth_file);
        const int zc = d.spec().channelindex("depth.Z");
        if (zc < 0 || d.spec().width != W || d.spec().height != H) {
            std::fprintf(stderr, "stages: %s has no %dx%d depth.Z\n", depth_file.c_str(), W, H);
            return 2;
        }
        OIIO::ROI roi = d.roi();
        roi.chbegin = zc, roi.chend = zc + 1;
        d.get_pixels(roi, OIIO::TypeDesc::FLOAT, big.data());
    }
    std::vector<float> frame(static_cast<size_t>(W) * H * 4);
    const float* src = static_cast<const float*>(rgb.localpixels());
    for (size_t i = 0; i < static_cast<size_t>(W) * H; ++i) {
        for (int c = 0; c < 3; ++c) frame[4 * i + c] = src[3 * i + c];
        frame[4 * i + 3] = big[i];
    }
    const std::string out =
        (std::filesystem::temp_directory_path() / ("stages-" + std::to_string(::getpid()) + ".exr")).string();
    for (const auto& [compression, rgb_type] : {std::pair<std::string, OIIO::TypeDesc>{"zip", OIIO::TypeDesc::FLOAT},
                                                {"zip:1", OIIO::TypeDesc::FLOAT},
                                                {"piz", OIIO::TypeDesc::FLOAT},
                                                {"none", OIIO::TypeDesc::FLOAT},
                                                {"zip", OIIO::TypeDesc::HALF},
                                                {"zip:1", OIIO::TypeDesc::HALF}}) {
        OIIO::ImageSpec spec(W, H, 4, OIIO::TypeDesc::FLOAT);
        spec.channelnames = {"R", "G", "B", "depth.Z"};
        spec.channelformats = {rgb_type, rgb_type, rgb_type, OIIO::TypeDesc::FLOAT};
        spec.attribute("compression", compression);
        const double ms = median_ms("write", iters, [&] {
            auto o = OIIO::ImageOutput::create(out);
            o->open(out, spec);
            o->write_image(OIIO::TypeDesc::FLOAT, frame.data());
            o->close();
        });
        line(
            "write", compression + (rgb_type == OIIO::TypeDesc::HALF ? "_rgb_half" : "_rgb_float"), ms,
            " bytes=" + std::to_string(std::filesystem::file_size(out)) + " deflate=" + [] {
                std::string c = depthbatch::exr_deflate_codec();
                c.resize(c.find(' '));
                return c;
            }());
    }
    std::filesystem::remove(out);
    return 0;
}
