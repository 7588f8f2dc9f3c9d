#include "depthbatch/resample.h"

#include <c10/util/ParallelGuard.h>
#include <torch/nn/functional/upsampling.h>
#include <torch/torch.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace depthbatch {

void resize_triangle_to_planar(const float* src, int w, int h, int channels, int W, int H, float* dst_chw) {
    if (w < 1 || h < 1 || W < 1 || H < 1 || channels < 1)
        throw std::invalid_argument("resize_triangle_to_planar: " + std::to_string(w) + "x" + std::to_string(h) +
                                    " -> " + std::to_string(W) + "x" + std::to_string(H) + ", " +
                                    std::to_string(channels) + " channels");
    // The pipeline calls this from several worker threads at once, and LibTorch's intra-op pool belongs to the
    // model stage: c10::ParallelGuard marks this thread as inside a parallel region, so at::parallel_for runs
    // the kernel inline here instead of forking the OpenMP pool (ATen/Parallel-inl.h, in_parallel_region()).
    c10::InferenceMode inference;
    c10::ParallelGuard inline_here(true);
    const at::Tensor in =
        torch::from_blob(const_cast<float*>(src), {1, h, w, channels}, torch::kFloat32).permute({0, 3, 1, 2});
    const at::Tensor out = torch::nn::functional::interpolate(in, torch::nn::functional::InterpolateFuncOptions()
                                                                      .size(std::vector<int64_t>{H, W})
                                                                      .mode(torch::kBilinear)
                                                                      .align_corners(false)
                                                                      .antialias(true));
    const at::Tensor planar = out.contiguous();  // [1, C, H, W]
    std::memcpy(dst_chw, planar.data_ptr<float>(), sizeof(float) * static_cast<size_t>(channels) * W * H);
}

}  // namespace depthbatch
