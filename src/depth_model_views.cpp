// DepthModel::infer_views: an any-view model's window of views -> depth and camera per view (depth_model.h).
// Kept apart from depth_model_run.cpp: a camera solve runs a handful of windows in fp32, without the render path's
// staging, batching, retries and precision machinery.
#include "depth_model_impl.h"
#include "depthbatch/error.h"

#include <torch/csrc/jit/runtime/graph_executor.h>

#include <cmath>
#include <cstring>

namespace depthbatch {
namespace {

/// A [1,S,...] output tensor as float32 on the CPU, contiguous; ModelError naming `what` when its shape is not
/// `want` (-1: any size) or it holds a non-finite value.
torch::Tensor checked(const torch::jit::IValue& v, const std::vector<int64_t>& want, const std::string& what,
                      const std::string& path, const std::vector<int64_t>& in) {
    if (!v.isTensor())
        throw ModelError(path + ": any-view output " + what + " is " + v.type()->annotation_str() + ", not a tensor");
    const torch::Tensor t = v.toTensor();
    bool ok = t.dim() == static_cast<int64_t>(want.size()) && at::isFloatingType(t.scalar_type());
    for (size_t i = 0; ok && i < want.size(); ++i)
        ok = want[i] < 0 ? t.size(static_cast<int64_t>(i)) > 0 : t.size(static_cast<int64_t>(i)) == want[i];
    if (!ok)
        throw ModelError(path + ": any-view output " + what + " is " + shape_text(t.sizes().vec()) + " " +
                         c10::toString(t.scalar_type()) + " for input " + shape_text(in) + "; expected " +
                         shape_text(want) + " float (-1: any size; model_contract.h ViewsContract)");
    torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    if (!torch::isfinite(c).all().item<bool>())
        throw ModelError(path + ": any-view output " + what + " holds non-finite values for input " + shape_text(in));
    return c;
}

}  // namespace

std::vector<ViewOutput> DepthModel::infer_views(const std::vector<const ModelInput*>& views) const {
    if (!contract_.any_view())
        throw RenderError(path_ + ": infer_views needs an any-view model (a views block in its depthbatch.json)");
    const int64_t s = static_cast<int64_t>(views.size());
    if (s < 1 || s > contract_.frames)
        throw RenderError(path_ + ": a window of " + std::to_string(s) + " views; the model takes 1 to " +
                          std::to_string(contract_.frames));
    const int w = views[0]->width, h = views[0]->height;
    torch::Tensor batch = torch::empty({1, s, 3, h, w}, torch::kFloat32);
    for (int64_t i = 0; i < s; ++i) {
        const ModelInput& v = *views[static_cast<size_t>(i)];
        if (v.width != w || v.height != h || v.chw.size() != static_cast<size_t>(3) * w * h)
            throw RenderError(path_ + ": the views of a window must share one size (" + std::to_string(w) + "x" +
                              std::to_string(h) + ", view " + std::to_string(i) + " is " + std::to_string(v.width) +
                              "x" + std::to_string(v.height) + ")");
        std::memcpy(batch[0][i].data_ptr<float>(), v.chw.data(), v.chw.size() * sizeof(float));
    }
    const std::vector<int64_t> in = batch.sizes().vec();
    return impl_->thread.call([&] {
        Impl& m = *impl_;
        m.count_forward();
        c10::InferenceMode guard;
        torch::jit::GraphOptimizerEnabledGuard optimize(m.device.is_cuda());
        torch::jit::IValue result;
        try {
            result = m.module.forward({batch.to(m.device)});
        } catch (const std::exception& e) {
            throw ModelError(path_ + ": any-view forward of " + shape_text(in) + " on " + device_name_ +
                             " failed: " + torch_error_line(e.what()));
        }
        const size_t n_extra = contract_.extra_outputs.size();
        if (!result.isTuple() || result.toTupleRef().elements().size() != 3 + n_extra)
            throw ModelError(path_ + ": an any-view model returns a tuple (depth, " +
                             (n_extra ? std::to_string(n_extra) + " extra output(s), " : std::string()) +
                             "extrinsics, intrinsics), not " + result.type()->annotation_str());
        const auto& e = result.toTupleRef().elements();
        const torch::Tensor depth = checked(e[0], {1, s, -1, -1}, "depth", path_, in);
        const int64_t oh = depth.size(2), ow = depth.size(3);
        std::vector<torch::Tensor> extras;
        for (size_t k = 0; k < n_extra; ++k)
            extras.push_back(checked(e[1 + k], {1, s, oh, ow}, "'" + contract_.extra_outputs[k].name + "'", path_, in));
        const torch::Tensor ext = checked(e[1 + n_extra], {1, s, 3, 4}, "extrinsics", path_, in);
        const torch::Tensor intr = checked(e[2 + n_extra], {1, s, 3, 3}, "intrinsics", path_, in);
        std::vector<ViewOutput> out(static_cast<size_t>(s));
        for (int64_t i = 0; i < s; ++i) {
            ViewOutput& v = out[static_cast<size_t>(i)];
            v.input_width = w, v.input_height = h;
            v.depth.width = static_cast<int>(ow), v.depth.height = static_cast<int>(oh);
            const float* d = depth[0][i].data_ptr<float>();
            v.depth.data.assign(d, d + oh * ow);
            for (const torch::Tensor& x : extras) {
                const float* p = x[0][i].contiguous().data_ptr<float>();
                v.depth.extra.emplace_back(p, p + oh * ow);
            }
            const torch::Tensor ei = ext[0][i].contiguous(), ki = intr[0][i].contiguous();
            for (int k = 0; k < 12; ++k) v.world_to_camera[static_cast<size_t>(k)] = ei.data_ptr<float>()[k];
            for (int k = 0; k < 9; ++k) v.intrinsics[static_cast<size_t>(k)] = ki.data_ptr<float>()[k];
        }
        return out;
    });
}

}  // namespace depthbatch
