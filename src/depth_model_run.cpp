// DepthModel, running (depth_model_impl.h): staging, the forward on the inference thread (streams and events on
// CUDA), the output's checks and retries, submit, warm_up and check_precision.
#include "depth_model_impl.h"
#include "depth_model_test_seam.h"

#include "depthbatch/error.h"
#include "depthbatch/log.h"

#include <ATen/autocast_mode.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace depthbatch {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

/// The value below which a fraction `q` (0-1) of `v` lies (nth_element on a copy; v non-empty).
float quantile(std::vector<float> v, double q) {
    const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

/// The inputs (frames) of a staged batch: what the fault injector (DepthModelTestSeam) is told.
template <class S> size_t inputs_of(const S& s) {
    return static_cast<size_t>(s.clips) * static_cast<size_t>(s.frames > 0 ? s.frames : 1);
}

/// The rows of `staged` that are the caller's (padding to a warmed batch dropped).
std::vector<DepthImage> trim(std::vector<DepthImage> all, int real, int frames) {
    all.resize(static_cast<size_t>(real) * static_cast<size_t>(frames > 0 ? frames : 1));
    return all;
}

}  // namespace

/// Gives the free heap back to the system when the CPU input shape is new (issue 22 §7, bench/shapes). Called by
/// Impl::forward before a forward whose shape is not among the last 8 distinct ones, so a job of one size (or a
/// tiled job's 2-3 shapes a frame) never pays for it. Why: each new shape makes oneDNN build and cache primitives
/// (up to ONEDNN_PRIMITIVE_CACHE_CAPACITY, 128 in depthbatch), small blocks that stay live among the large
/// activation buffers of that shape's forward. Those buffers are freed after it, but free() gives back only the
/// top of a heap, so with a new size every frame they stayed resident (mallinfo2 after 60 sizes of a 2-layer
/// conv, ~500x400: 89 MB in use, 559 MB free; primitive cache capacity 8: 87 and 86).
/// API: glibc's malloc_trim(0) (<malloc.h>; malloc_trim(3): since glibc 2.8 it releases the whole free pages of
/// every arena, anywhere in the heap, with madvise(MADV_DONTNEED)). oneDNN's own dnnl_set_primitive_cache_capacity
/// (0 and back flushes the cache) cannot be called: LibTorch links oneDNN with hidden visibility (a local 't'
/// symbol of libtorch_cpu.so 2.13, which dlsym does not see). DEPTHBATCH_MALLOC_TRIM=0 turns this off (bench/shapes'
/// "before"); without glibc it does nothing.
void release_free_heap() {
#if defined(__GLIBC__)
    static const bool off = [] {
        const char* v = std::getenv("DEPTHBATCH_MALLOC_TRIM");
        return v && std::strcmp(v, "0") == 0;
    }();
    // Only when there is much to give back (over 64 MiB free in the arenas): malloc_trim walks every arena (~40 ms
    // on a large heap, and the next forward touches its pages again). bench/shapes, one run each: peak RSS
    // changing/fixed FastDepth 1.005, conv 1.103, conv 2K 1.075; fixed-size CPU 0.99-1.05 of no trim. Also requiring
    // free > in use kept the 2K case at 1.19.
    if (off) return;
    const struct mallinfo2 m = mallinfo2();
    if (m.fordblks > (size_t{64} << 20)) malloc_trim(0);
#endif
}

std::string ForwardShape::text() const {
    std::ostringstream s;
    s << batch << "x";
    if (frames > 0) s << frames << "x";
    s << "3x" << height << "x" << width;
    return s.str();
}

double low_precision_error(const std::vector<float>& fp32, const std::vector<float>& low) {
    if (fp32.empty() || fp32.size() != low.size()) return std::numeric_limits<double>::infinity();
    std::vector<float> diff(fp32.size());
    for (size_t i = 0; i < fp32.size(); ++i) {
        if (!std::isfinite(low[i])) return std::numeric_limits<double>::infinity();
        diff[i] = std::abs(low[i] - fp32[i]);
    }
    const double span = static_cast<double>(quantile(fp32, 0.99)) - quantile(fp32, 0.01);
    const double scale = std::max(span, 1e-6 * std::max(1.0, std::abs(static_cast<double>(quantile(fp32, 0.5)))));
    return quantile(std::move(diff), 0.99) / scale;
}

// ---- one forward ------------------------------------------------------------------------------------------------

DepthModel::ForwardOutput DepthModel::Impl::launch(torch::jit::Module& m, const torch::Tensor& batch, torch::Device dev,
                                                   bool low_precision, bool injected_oom) {
    if (injected_oom)
        throw c10::OutOfMemoryError(c10::SourceLocation{__func__, __FILE__, __LINE__}, "injected out of memory");
    count_forward();
    ForwardOutput fo;
    fo.launched = Clock::now();
    c10::InferenceMode guard;
    // On the CPU, TorchScript's graph executor optimizations (the profiling executor's specialisation and
    // fusion passes) cost ~0.15-0.2 s on the first forward of each new input shape and gain nothing measurable
    // on a conv network afterwards (FastDepth 384x224, 2 threads: min 31-34 ms a forward either way; the CPU
    // fuser is off by default), while farm chunks are often 1-10 frames: off on the CPU. CUDA keeps them (its
    // fusers pay back over a shot), and so does a frozen module (model.freeze drops the submodules' methods,
    // which only the optimizing executor's inlining stops calling). A process-wide flag, set around each call.
    torch::jit::GraphOptimizerEnabledGuard optimize(dev.is_cuda() || frozen);
    const bool streams = dev.is_cuda() && upload.has_value();
    const torch::Tensor x = to_device(batch, dev, streams, fo);
    if (!dev.is_cuda()) note_cpu_shape(x);
    fo.low = low_precision && dev == device && (low || autocast);
    std::vector<torch::Tensor> extras;
    torch::Tensor out = split_outputs(run_module(m, x, dev, low_precision), extras);
    out = checked_depth(out, batch);
    if (!extras.empty()) out = with_extras(out, extras, batch);
    out = out.to(torch::kFloat32);  // a half output converts on the device
    to_host(out, dev, streams, fo);
    return fo;
}

void DepthModel::Impl::count_forward() {
    std::lock_guard<std::mutex> lock(stats_mutex);
    forward_threads.insert(std::this_thread::get_id());
    if (std::this_thread::get_id() == loader) stats.on_caller_thread = true;
    ++stats.forwards;
}

torch::Tensor DepthModel::Impl::to_device(const torch::Tensor& batch, torch::Device dev, bool streams,
                                          ForwardOutput& fo) {
    torch::Tensor x;
    if (streams) {
        // Upload on its own stream, from page-locked memory (one DMA that does not block the host): it overlaps
        // the forward of the batch before, which runs on the compute stream; the compute stream waits for it.
        {
            c10::StreamGuard on_upload(*upload);
            x = batch.to(dev, batch.scalar_type(), /*non_blocking=*/batch.is_pinned());
        }
        c10::Event uploaded(c10::DeviceType::CUDA);
        uploaded.record(*upload);
        uploaded.block(*compute);
        fo.keep.push_back(x);  // allocated on the upload stream, read on the compute stream: freed after `done`
    } else {
        x = batch.to(dev, batch.scalar_type(), /*non_blocking=*/dev.is_cuda() && batch.is_pinned());
    }
    if (channels_last && dev == device && x.dim() == 4)
        x = x.contiguous(at::MemoryFormat::ChannelsLast);  // not a clip [B,T,3,H,W]
    return x;
}

void DepthModel::Impl::note_cpu_shape(const torch::Tensor& x) {
    const auto seen = std::find_if(cpu_shapes.begin(), cpu_shapes.end(),
                                   [&](const std::vector<int64_t>& s) { return x.sizes() == c10::IntArrayRef(s); });
    if (seen != cpu_shapes.end()) {
        std::rotate(cpu_shapes.begin(), seen, seen + 1);
        return;
    }
    if (!cpu_shapes.empty()) ++cpu_new_shapes, release_free_heap();
    cpu_shapes.insert(cpu_shapes.begin(), x.sizes().vec());
    if (cpu_shapes.size() > 8) cpu_shapes.pop_back();
}

torch::jit::IValue DepthModel::Impl::run_module(torch::jit::Module& m, const torch::Tensor& x, torch::Device dev,
                                                bool low_precision) {
    if (low_precision && low && dev == device) {
        // The module cast to fp16/bf16 (load): the input is cast on the device, the output back to fp32 later.
        // No autocast: its per-op casts doubled the kernels of a launch-bound forward (issue 31: fp16 28 ms a
        // frame against fp32's 17 on Depth Anything V2 Small).
        return low->forward({x.to(low_dtype)});
    }
    if (low_precision && autocast && dev.is_cuda()) {
        // Autocast, for a module that cannot run cast (a float32 constant inside it): its weight-cast cache is
        // this thread's and kept for the job (the weights never change), so only the first forward pays for it.
        at::autocast::set_autocast_enabled(at::kCUDA, true);
        at::autocast::set_autocast_dtype(at::kCUDA, low_dtype);
        torch::jit::IValue result;
        try {
            result = m.forward({x});
        } catch (...) {
            at::autocast::set_autocast_enabled(at::kCUDA, false);
            throw;
        }
        at::autocast::set_autocast_enabled(at::kCUDA, false);
        return result;
    }
    return m.forward({x});
}

torch::Tensor DepthModel::Impl::split_outputs(torch::jit::IValue result, std::vector<torch::Tensor>& extras) {
    // A tuple (depth, confidence, ...): its first element is the depth (docs/models.md "Model contract"); the contract's
    // extra outputs (output.extra_outputs) are the elements after it, in order.
    const size_t n_extra = contract ? contract->extra_outputs.size() : 0;
    if (n_extra > 0 && !result.isTuple())
        throw ModelError(path + ": the contract declares " + std::to_string(n_extra) +
                         " extra output(s) "
                         "(output.extra_outputs) but the model returns one tensor, not a tuple (depth, extra...)");
    if (result.isTuple()) {
        const auto& elements = result.toTupleRef().elements();
        if (elements.empty())
            throw ModelError(path + ": model output is an empty tuple, not a tensor [N,1,H,W] or [N,H,W]");
        if (!elements[0].isTensor())
            throw ModelError(
                path + ": model output is a tuple whose first element is " + elements[0].type()->annotation_str() +
                ", not a tensor [N,1,H,W] or [N,H,W] (the first element of a tuple is taken as the depth)");
        if (!told_tuple) {
            log_debug(path, ": model output is a tuple of ", elements.size(), " (", result.type()->annotation_str(),
                      "); its first element is the depth, the rest is ignored");
            told_tuple = true;
        }
        if (elements.size() < 1 + n_extra)
            throw ModelError(path + ": the contract declares " + std::to_string(n_extra) +
                             " extra output(s) "
                             "(output.extra_outputs) but the model returns a tuple of " +
                             std::to_string(elements.size()));
        for (size_t k = 0; k < n_extra; ++k) {
            if (!elements[1 + k].isTensor())
                throw ModelError(path + ": extra output '" + contract->extra_outputs[k].name + "' (tuple element " +
                                 std::to_string(2 + k) + ") is " + elements[1 + k].type()->annotation_str() +
                                 ", not a tensor");
            extras.push_back(elements[1 + k].toTensor());
        }
        result = elements[0];
    }
    if (!result.isTensor())
        throw ModelError(path + ": model output is " + result.type()->annotation_str() +
                         ", not a tensor [N,1,H,W] or [N,H,W]");
    return result.toTensor();
}

torch::Tensor DepthModel::Impl::checked_depth(torch::Tensor out, const torch::Tensor& batch) {
    // Shape and dtype, before anything is allocated for the output (a conversion, the resize to the plate).
    ModelOutputCheck check;
    try {
        check = batch.dim() == 5 ? check_clip_output(out.sizes().vec(), c10::toString(out.scalar_type()),
                                                     batch.sizes().vec(), *contract)
                                 : check_model_output(out.sizes().vec(), c10::toString(out.scalar_type()),
                                                      batch.sizes().vec(), *contract);
    } catch (const ModelError& e) {
        throw ModelError(path + ": " + e.what());
    }
    if (check.transposed && !told_transposed) {
        log_warning(path, ": model output ", shape_text(out.sizes().vec()), " has the height and width of its input ",
                    shape_text(batch.sizes().vec()),
                    " swapped: its depth is probably rotated (rendering on; "
                    "said once per job)");
        told_transposed = true;
    }
    if (batch.dim() == 5) return out.flatten(0, 1);  // [B,T,H,W] -> [B*T,H,W], clip by clip
    if (out.dim() == 4) return out.squeeze(1);
    return out;
}

torch::Tensor DepthModel::Impl::with_extras(const torch::Tensor& out, const std::vector<torch::Tensor>& extras,
                                            const torch::Tensor& batch) const {
    std::vector<torch::Tensor> planes{out.to(torch::kFloat32)};
    for (size_t k = 0; k < extras.size(); ++k) {
        torch::Tensor e = extras[k];
        if (batch.dim() == 5 && e.dim() == 4) e = e.flatten(0, 1);  // a clip's [B,T,H,W] as its frames
        else if (e.dim() == 4 && e.size(1) == 1) e = e.squeeze(1);
        if (e.sizes() != out.sizes() || !e.is_floating_point())
            throw ModelError(path + ": extra output '" + contract->extra_outputs[k].name + "' is " +
                             shape_text(extras[k].sizes().vec()) + " " + c10::toString(extras[k].scalar_type()) +
                             ", not floating point of the depth's shape " + shape_text(out.sizes().vec()));
        planes.push_back(e.to(out.device(), torch::kFloat32));
    }
    return torch::stack(planes, 1);
}

void DepthModel::Impl::to_host(const torch::Tensor& out, torch::Device dev, bool streams, ForwardOutput& fo) {
    if (!dev.is_cuda()) {
        fo.host = out.contiguous();
        return;
    }
    // Back from the GPU into page-locked memory (about twice the bandwidth of pageable memory), on the download
    // stream once the forward is done, so that it overlaps the next batch's forward. `done` marks its end; a
    // forward's asynchronous CUDA error surfaces when it is waited for (land).
    fo.host = torch::empty(out.sizes(), torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(true));
    fo.keep.push_back(out);
    if (streams) {
        c10::Event computed(c10::DeviceType::CUDA);
        computed.record(*compute);
        computed.block(*download);
        c10::StreamGuard on_download(*download);
        fo.host.copy_(out, /*non_blocking=*/true);
        fo.done.emplace(c10::DeviceType::CUDA);
        fo.done->record(*download);
    } else {
        fo.host.copy_(out, /*non_blocking=*/true);
        c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
        fo.done.emplace(c10::DeviceType::CUDA);
        fo.done->record(cuda.getStream(dev));
    }
}

torch::Tensor DepthModel::Impl::land(ForwardOutput& fo) {
    if (fo.done) fo.done->synchronize();
    fo.keep.clear();
    return fo.host;
}

// ---- batches ----------------------------------------------------------------------------------------------------

DepthModel::Staged DepthModel::stage(const std::vector<const ModelInput*>& batch, int clips, int frames) const {
    Staged s;
    s.clips = clips, s.frames = frames;
    if (batch.empty()) return s;
    const int w = batch[0]->width, h = batch[0]->height;
    s.width = w, s.height = h;
    const size_t plane = static_cast<size_t>(3) * w * h;
    for (const ModelInput* in : batch) {
        if (in->width != w || in->height != h) throw RenderError("a batch mixes input sizes");
        if (in->chw.size() != plane)
            throw RenderError("a model input holds " + std::to_string(in->chw.size()) + " values, not 3 x " +
                              std::to_string(w) + " x " + std::to_string(h));
    }
    // A CUDA batch smaller than a warmed batch of its size is padded to it (warm_up): no forward meets a shape
    // the warm-up did not (cuDNN would autotune again, seconds on a large model).
    const int n = static_cast<int>(batch.size());
    int rows = n;
    if (impl_->device.is_cuda() && frames == 0) {
        std::lock_guard<std::mutex> lock(impl_->stats_mutex);
        const auto it = impl_->warmed.find({0, w, h});
        if (it != impl_->warmed.end() && it->second > n) rows = it->second;
    }
    s.real = frames > 0 ? clips : n;
    const std::vector<int64_t> shape =
        frames > 0 ? std::vector<int64_t>{clips, frames, 3, h, w} : std::vector<int64_t>{rows, 3, h, w};
    if (frames == 0) s.clips = rows;
    // On a GPU straight into page-locked memory, fresh for each batch (the caching host allocator hands a block
    // back only once the copies that read it have completed), so a batch can be staged while another is in flight.
    s.batch = torch::empty(shape, torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(impl_->device.is_cuda()));
    float* dst = s.batch.data_ptr<float>();
    for (int i = 0; i < rows; ++i)
        std::memcpy(dst + static_cast<size_t>(i) * plane, batch[static_cast<size_t>(std::min(i, n - 1))]->chw.data(),
                    plane * sizeof(float));
    return s;
}

[[noreturn]] void DepthModel::forward_failed(const std::exception& e, const Staged& s) const {
    const std::vector<int64_t> shape = s.batch.sizes().vec();
    auto where = [&](const std::string& dev) {
        std::string hint;
        if (contract_.fixed_size)
            hint = " (this model has a fixed input size of " + std::to_string(contract_.width) + "x" +
                   std::to_string(contract_.height) + ", width x height)";
        return path_ + ": forward pass failed on " + dev + " at " + std::to_string(s.width) + "x" +
               std::to_string(s.height) +
               (s.frames > 0 ? " (" + std::to_string(s.clips) + " clip(s) of " + std::to_string(s.frames) + " frames)"
                             : "") +
               hint;
    };
    if (const auto* known = dynamic_cast<const Error*>(&e))
        throw Error(known->code(), known->what());  // the output check
    log_debug(path_, ": forward pass failed; LibTorch said:\n", e.what());
    std::string msg = torch_error_line(e.what());
    if (msg.size() > 300) msg = msg.substr(0, 300) + "... (the full text with -v)";
    const bool cuda_text = msg.find("CUDA") != std::string::npos || msg.find("cuda") != std::string::npos;
    if (impl_->device.is_cuda() && cuda_text) throw RenderError(where(device_name_) + ": " + msg);  // the device
    // Anything else is the model not running on this input (a shape it was not written or traced for,
    // a module tied to another device): the same for every frame, so a model error.
    std::string hint;
    if (!impl_->device.is_cuda() && cuda_text)
        hint =
            " [device mismatch: the model holds tensors or code tied to a CUDA device (traced or saved on a "
            "GPU?) but runs on " +
            device_name_ + "; re-export it on the CPU, or run with model.device cuda]";
    else if (traced_ && !contract_.fixed_size)  // the trace hint only for a module made with torch.jit.trace
        hint = " [input " + shape_text(shape) + (s.frames > 0 ? " (B,T,C,H,W)" : " (N,C,H,W)") +
               "; a module made with torch.jit.trace runs only at the size it was traced at, which this file does "
               "not record: set model.input_size [w, h] and model.fixed_size: true]";
    else if (!contract_.fixed_size)
        hint = " [input " + shape_text(shape) + (s.frames > 0 ? " (B,T,C,H,W)" : " (N,C,H,W)") +
               "; a model that runs at one size only: set model.input_size [w, h] and model.fixed_size: true]";
    throw ModelError(where(device_name_) + ": " + msg + hint);
}

std::vector<DepthImage> DepthModel::run_staged(const Staged& s) const {
    if (s.clips == 0) return {};
    try {
        const bool oom = impl_->fault && impl_->fault(inputs_of(s), device_name_);
        return finish(s, impl_->launch(impl_->module, s.batch, impl_->device, impl_->low_precision(), oom));
    } catch (const c10::OutOfMemoryError& e) {
        if (s.clips > 1) {  // halves of whole clips (a clip's frames are one forward)
            log_warning("out of memory on ", device_name_, " with a batch of ", s.clips, s.frames > 0 ? " clips" : "",
                        "; retrying in halves");
            const int first = s.clips / 2;
            Staged a = s, b = s;
            a.batch = s.batch.narrow(0, 0, first), a.clips = first;
            b.batch = s.batch.narrow(0, first, s.clips - first), b.clips = s.clips - first;
            std::vector<DepthImage> out = run_staged(a);
            for (auto& d : run_staged(b)) out.push_back(std::move(d));
            return out;
        }
        log_warning("out of memory on ", device_name_, " for a single frame (", torch_error_line(e.what()),
                    "); running it on the CPU in fp32");
        try {
            if (!impl_->cpu_fallback) {
                impl_->cpu_fallback = impl_->module.clone();
                impl_->cpu_fallback->to(torch::kCPU);
            }
            return finish(s, impl_->launch(*impl_->cpu_fallback, s.batch, torch::kCPU, false, false));
        } catch (const Error&) {
            throw;
        } catch (const std::exception& e2) {
            throw RenderError(path_ + ": forward pass failed on cpu (fallback) at " + std::to_string(s.width) + "x" +
                              std::to_string(s.height) + ": " + torch_error_line(e2.what()));
        }
    } catch (
        const Error&) {  // the output check (a ModelError naming the shapes), finish's non-finite check: as they are
        throw;
    } catch (const std::exception& e) {  // c10::Error, and torch::jit::JITException (a std::runtime_error)
        forward_failed(e, s);
    }
}

std::vector<DepthImage> DepthModel::finish(const Staged& s, ForwardOutput&& fo) const {
    torch::Tensor out;
    try {
        out = impl_->land(fo);
    } catch (const std::exception& e) {  // a CUDA error raised by the forward surfaces here
        forward_failed(e, s);
    }
    // Non-finite depth never reaches a file. Half precision gets one fp32 retry (docs/cases.md 7).
    auto bad_values = [](const torch::Tensor& t) { return (~torch::isfinite(t)).sum().item<int64_t>(); };
    int64_t bad = bad_values(out);
    const bool all_zero = out.numel() > 0 && out.abs().max().item<float>() == 0.0f;
    if ((bad > 0 || all_zero) && fo.low) {
        log_warning(option_name(precision_), " output has ", bad, " non-finite values", all_zero ? " (all zero)" : "",
                    "; redoing the batch in fp32");
        try {
            out = impl_->forward(impl_->module, s.batch, impl_->device, false, false);
        } catch (const std::exception& e) {
            throw RenderError(path_ + ": forward pass failed on " + device_name_ +
                              " (fp32 retry): " + torch_error_line(e.what()));
        }
        bad = bad_values(out);
    }
    if (bad > 0)
        throw RenderError(path_ + ": the model returned " + std::to_string(bad) +
                          " non-finite depth values (Inf/NaN) at " + std::to_string(s.width) + "x" +
                          std::to_string(s.height));

    const size_t n = static_cast<size_t>(out.size(0));
    std::vector<DepthImage> result(n);
    const bool stacked = out.dim() == 4;  // [N,1+k,H,W]: depth and the contract's extra outputs
    const int oh = static_cast<int>(out.size(-2)), ow = static_cast<int>(out.size(-1));
    const size_t plane = static_cast<size_t>(ow) * oh;
    for (size_t i = 0; i < n; ++i) {
        result[i].width = ow;
        result[i].height = oh;
        const torch::Tensor item = out[static_cast<int64_t>(i)];
        const float* src = stacked ? item[0].data_ptr<float>() : item.data_ptr<float>();
        result[i].data.assign(src, src + plane);
        for (int64_t k = 1; stacked && k < out.size(1); ++k) {
            const float* e = item[k].data_ptr<float>();
            result[i].extra.emplace_back(e, e + plane);
        }
        if (contract_.kind == DepthKind::MetricDepth)
            for (float v : result[i].data)
                if (v < 0) {
                    ++result[i].negative;
                    result[i].negative_min = std::min(result[i].negative_min, v);
                }
    }
    return result;
}

std::vector<DepthImage> DepthModel::run(const std::vector<const ModelInput*>& batch, int clips, int frames) const {
    if (batch.empty()) return {};
    const Staged s = stage(batch, clips, frames);
    return impl_->thread.call([&] {
        const auto t0 = Clock::now();
        std::vector<DepthImage> out = trim(run_staged(s), s.real, s.frames);
        std::lock_guard<std::mutex> lock(impl_->stats_mutex);
        impl_->stats.busy_ms += ms_since(t0);
        return out;
    });
}

std::vector<DepthImage> DepthModel::infer(const std::vector<const ModelInput*>& batch) const {
    // A multi-frame model sees each frame as a clip of one frame ([N,1,3,H,W]): frames stay independent.
    return run(batch, static_cast<int>(batch.size()), contract_.multi_frame() ? 1 : 0);
}

std::vector<std::vector<DepthImage>> DepthModel::infer_clips(
    const std::vector<std::vector<const ModelInput*>>& clips) const {
    if (clips.empty()) return {};
    if (!contract_.multi_frame())
        throw RenderError(path_ + ": infer_clips needs a multi-frame model (input.frames > 1)");
    const size_t t = clips[0].size();
    std::vector<const ModelInput*> all;
    for (const auto& clip : clips) {
        if (clip.size() != t || t == 0 || t > static_cast<size_t>(contract_.frames))
            throw RenderError(path_ + ": clips of a forward must share one length of 1 to " +
                              std::to_string(contract_.frames) + " frames");
        all.insert(all.end(), clip.begin(), clip.end());
    }
    std::vector<DepthImage> flat = run(all, static_cast<int>(clips.size()), static_cast<int>(t));
    std::vector<std::vector<DepthImage>> out(clips.size());
    for (size_t b = 0; b < clips.size(); ++b)
        for (size_t i = 0; i < t; ++i) out[b].push_back(std::move(flat[b * t + i]));
    return out;
}

InferenceTicket DepthModel::submit(const std::vector<const ModelInput*>& batch) const {
    InferenceTicket ticket;
    auto promise = std::make_shared<std::promise<std::vector<DepthImage>>>();
    ticket.result_ = promise->get_future();
    if (batch.empty()) {
        promise->set_value({});
        return ticket;
    }
    const int frames = contract_.multi_frame() ? 1 : 0;
    auto s = std::make_shared<const Staged>(stage(batch, static_cast<int>(batch.size()), frames));  // on this thread
    std::shared_ptr<double> ms = ticket.ms_;
    Impl* impl = impl_.get();
    auto account = [impl](Clock::time_point t0) {
        std::lock_guard<std::mutex> lock(impl->stats_mutex);
        impl->stats.busy_ms += ms_since(t0);
    };
    impl->thread.post([this, impl, s, promise, ms, account] {
        const auto t0 = Clock::now();
        std::shared_ptr<ForwardOutput> fo;
        try {
            const bool oom = impl->fault && impl->fault(inputs_of(*s), device_name_);
            fo = std::make_shared<ForwardOutput>(
                impl->launch(impl->module, s->batch, impl->device, impl->low_precision(), oom));
        } catch (...) {
            // The launch failed (out of memory, a model that cannot take this input): the synchronous path, with its
            // halves, its CPU fallback and its messages.
            // (*ms before the promise: wait() may return the moment it is set.)
            try {
                std::vector<DepthImage> r = trim(run_staged(*s), s->real, s->frames);
                *ms = ms_since(t0);
                promise->set_value(std::move(r));
            } catch (...) {
                *ms = ms_since(t0);
                promise->set_exception(std::current_exception());
            }
            account(t0);
            return;
        }
        account(t0);
        impl->thread.defer(
            [this, s, promise, ms, fo, account] {
                const auto t1 = Clock::now();
                try {
                    std::vector<DepthImage> r = trim(finish(*s, std::move(*fo)), s->real, s->frames);
                    *ms = ms_since(fo->launched);
                    promise->set_value(std::move(r));
                } catch (...) {
                    *ms = ms_since(fo->launched);
                    promise->set_exception(std::current_exception());
                }
                account(t1);
            },
            [fo] { return !fo->done || fo->done->query(); });
    });
    return ticket;
}

// ---- warm-up and the precision check ----------------------------------------------------------------------------

void DepthModel::warm_up(const std::vector<ForwardShape>& shapes, int passes) const {
    if (passes <= 0 || shapes.empty()) return;
    const auto t0 = Clock::now();
    impl_->thread.call([&] {
        for (const ForwardShape& shape : shapes) {
            Staged s;
            s.clips = shape.batch, s.frames = shape.frames, s.real = shape.batch;
            s.width = shape.width, s.height = shape.height;
            const std::vector<int64_t> dims =
                shape.frames > 0 ? std::vector<int64_t>{shape.batch, shape.frames, 3, shape.height, shape.width}
                                 : std::vector<int64_t>{shape.batch, 3, shape.height, shape.width};
            s.batch = torch::full(dims, 0.5f,
                                  torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(impl_->device.is_cuda()));
            for (int i = 0; i < passes; ++i) run_staged(s);
            std::lock_guard<std::mutex> lock(impl_->stats_mutex);
            int& warmed = impl_->warmed[{shape.frames, shape.width, shape.height}];
            warmed = std::max(warmed, shape.batch);
            impl_->stats.warmup_shapes.push_back(shape.text());
        }
    });
    std::lock_guard<std::mutex> lock(impl_->stats_mutex);
    impl_->stats.warmup_passes = passes;
    impl_->stats.warmup_ms += ms_since(t0);
}

PrecisionCheck DepthModel::check_precision(const ModelInput& frame) {
    PrecisionCheck r;
    r.asked = asked_precision_;
    r.in_force = precision_;
    r.tolerance = kPrecisionTolerance;
    if (!impl_->low_precision()) return r;
    const Staged s = stage({&frame}, 1, contract_.multi_frame() ? 1 : 0);
    // One forward of the frame at fp32 or at the low precision, its depth plane as it comes (no fp32 retry).
    auto depth = [&](bool low) {
        const torch::Tensor out = impl_->forward(impl_->module, s.batch, impl_->device, low, false);
        const torch::Tensor plane = (out.dim() == 4 ? out[0][0] : out[0]).contiguous();
        return std::vector<float>(plane.data_ptr<float>(), plane.data_ptr<float>() + plane.numel());
    };
    return impl_->thread.call([&] {
        r.ran = true;
        const std::vector<float> fp32 = depth(false);
        std::vector<float> low;
        try {
            low = depth(true);
        } catch (const std::exception& e) {
            if (!impl_->low) throw;
            // The cast module cannot run (a float32 constant or buffer meets a half tensor): autocast instead.
            log_info(path_, ": the model cannot run cast to ", option_name(precision_), " (",
                     torch_error_line(e.what()), "); autocast instead");
            impl_->low.reset();
            impl_->autocast = true;
            try {
                low = depth(true);
            } catch (const std::exception& e2) {  // nothing runs at this precision: fp32 (error stays +inf)
                log_debug(path_, ": autocast failed too: ", e2.what());
                low.clear();
            }
        }
        r.how = impl_->autocast ? "autocast" : "half module";
        r.error = low_precision_error(fp32, low);
        if (!(r.error <= r.tolerance)) {
            impl_->low.reset();
            impl_->autocast = false;
            precision_ = Precision::Fp32;
            r.in_force = Precision::Fp32;
        }
        return r;
    });
}

InferenceStats DepthModel::stats() const {
    std::lock_guard<std::mutex> lock(impl_->stats_mutex);
    InferenceStats s = impl_->stats;
    s.forward_threads = static_cast<int>(impl_->forward_threads.size());
    return s;
}

}  // namespace depthbatch
