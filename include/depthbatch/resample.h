// depthbatch — shrinking the plate to the model's size: the antialiased bilinear ("triangle") filter, computed by
// LibTorch.
//
// The filter is PIL's Image.resize(BILINEAR) (antialiased bilinear): a tent of half-width max(1, scale) source
// pixels around each output pixel's centre ((x + 0.5) * scale), weights normalised over the pixels inside the
// image, applied separably — so a 960x540 plate is averaged, never point-sampled, on its way to 384x224, the way
// Python pipelines (PIL, torchvision, transformers' processors with antialias) prepare it. It is computed by
// torch::nn::functional::interpolate(bilinear, antialias = true, align_corners = false), LibTorch's
// implementation of that filter (aten/src/ATen/native/cpu/UpSampleKernel.cpp, _upsample_bilinear2d_aa):
// 3.5 ms for 960x540 -> 384x224 on one thread, where OIIO's ImageBufAlgo::resize(..., "triangle") took 27 ms
// (bench/stages). OIIO's "triangle" is a slightly different tent (on the bedroom plate: mean difference 2e-5,
// 99th percentile 6e-4, largest 0.018 of the 0-1 range); tests/unit/reformat_test.cpp checks the kernel
// against the formula above written out.
#pragma once

namespace depthbatch {

/// Resize packed interleaved float pixels (`src`: h rows of w pixels of `channels` values, row-major) to
/// W x H with the triangle filter above, writing planar output (`dst_chw`: channels planes of H rows of W).
/// Enlarging is bilinear interpolation (the tent at unit width). Runs on the calling thread (LibTorch's
/// intra-op pool is left to the model). Throws std::invalid_argument for non-positive sizes or channels.
void resize_triangle_to_planar(const float* src, int w, int h, int channels, int W, int H, float* dst_chw);

}  // namespace depthbatch
