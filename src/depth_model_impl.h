// depthbatch (internal) — what DepthModel (depth_model.h) keeps behind its Impl, shared by its two source files:
//   depth_model.cpp      loading: the file's checks, the contract, the device, precision and TF32 settings
//   depth_model_run.cpp  running: staging, the forward on the inference thread (streams and events on CUDA),
//                        the output's checks and retries, submit, warm_up, check_precision
// Everything here except `thread` and the figures under `stats_mutex` is touched only on the inference thread.
#pragma once

#include "depthbatch/depth_model.h"
#include "inference_thread.h"

#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <torch/script.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace depthbatch {

/// The part of a c10::Error a user can act on: the first line, or, for errors raised inside the TorchScript
/// interpreter (whose first line only says so), the Python-style "XxxError: ..." line.
std::string torch_error_line(const std::string& message);

/// Gives glibc's free heap back to the system (malloc_trim) when it holds over 64 MiB; depth_model_run.cpp says why.
void release_free_heap();

/// A batch ready for the device: [N,3,H,W] ([B,T,3,H,W] for clips) float32 on the CPU, pinned on CUDA.
struct DepthModel::Staged {
    torch::Tensor batch;
    int clips = 0;   ///< N (or B)
    int frames = 0;  ///< 0 for single frames, else T
    int real = 0;    ///< the inputs (frames 0) or clips that are the caller's; the rest pads to a warmed batch
    int width = 0, height = 0;
};

/// One forward as launched: its output is on the host once `done` has completed (CUDA), at once on the CPU.
struct DepthModel::ForwardOutput {
    torch::Tensor host;               ///< [N,H,W] or [N,1+k,H,W] float32 on the CPU (pinned on CUDA)
    std::optional<c10::Event> done;   ///< CUDA: recorded on the download stream after the copy
    std::vector<torch::Tensor> keep;  ///< device tensors the streams may still read: freed after `done`
    std::chrono::steady_clock::time_point launched;
    bool low = false;  ///< ran at fp16/bf16 (a non-finite result is redone in fp32)
};

struct DepthModel::Impl {
    /// First member, so destroyed last; ~Impl stops it before the rest goes.
    detail::InferenceThread thread{1};

    torch::jit::Module module;  ///< fp32, on `device`
    torch::Device device = torch::kCPU;
    /// fp16/bf16: the module cast to that type (`low`), or autocast when the cast module cannot run (`autocast`).
    at::ScalarType low_dtype = at::kFloat;
    std::optional<torch::jit::Module> low;
    bool autocast = false;
    bool channels_last = false;
    bool frozen = false;                             ///< model.freeze took: its graph needs the optimizing executor
    std::optional<torch::jit::Module> cpu_fallback;  ///< plain fp32 CPU copy, made on first need
    std::string path;
    const ModelContract* contract = nullptr;           ///< the owning DepthModel's contract_ (set by load)
    bool told_tuple = false, told_transposed = false;  ///< once-per-job debug line / warning
    std::function<bool(size_t, const std::string&)> fault;
    /// CUDA: the job's streams, made on the inference thread at load (compute is its current stream).
    std::optional<c10::Stream> upload, compute, download;
    /// CUDA: the largest warmed batch per (frames, width, height); smaller batches are padded to it (warm_up).
    std::map<std::tuple<int, int, int>, int> warmed;
    /// The last 8 distinct input shapes of CPU forwards, most recently used first, and how many forwards came with
    /// a shape not among them after the first (each calls release_free_heap; DepthModelTestSeam). Eight, so that a
    /// tiled job's global, tile and last-tile batches (2-3 shapes a frame, every frame) never count as new.
    std::vector<std::vector<int64_t>> cpu_shapes;
    int cpu_new_shapes = 0;

    /// Figures for stats(), read from other threads.
    mutable std::mutex stats_mutex;
    std::set<std::thread::id> forward_threads;
    std::thread::id loader;  ///< the thread that called load()
    InferenceStats stats;

    ~Impl() { thread.stop(); }

    /// Launch one forward of `batch` (the staged CPU tensor) on `dev` with `module` ("low" precision: the cast
    /// module or autocast as set up, else fp32). Returns without waiting on CUDA. Throws c10::Error (OOM among
    /// them) and ModelError for an output that is not a depth image.
    ForwardOutput launch(torch::jit::Module& m, const torch::Tensor& batch, torch::Device dev, bool low_precision,
                         bool injected_oom);
    // launch's steps, in order.
    /// Counts the forward and the thread it runs on (stats()).
    void count_forward();
    /// `batch` on `dev`: on the upload stream when `streams` (the compute stream waits for it; the device copy is
    /// kept in fo.keep), channels-last for a [N,3,H,W] batch when the model asked for it.
    torch::Tensor to_device(const torch::Tensor& batch, torch::Device dev, bool streams, ForwardOutput& fo);
    /// A CPU input shape: moved to the front of cpu_shapes, or added (a new one releases the free heap).
    void note_cpu_shape(const torch::Tensor& x);
    /// The module's forward of `x`: the cast module, autocast (CUDA) or fp32, as `low_precision` and load chose.
    torch::jit::IValue run_module(torch::jit::Module& m, const torch::Tensor& x, torch::Device dev, bool low_precision);
    /// The depth tensor of a forward's result (a tensor, or a tuple's first element); the contract's extra outputs
    /// appended to `extras`. Throws ModelError naming the model for a result that is neither.
    torch::Tensor split_outputs(torch::jit::IValue result, std::vector<torch::Tensor>& extras);
    /// `out` checked against `batch` (check_model_output / check_clip_output; ModelError naming the model) and made
    /// [N,H,W] ([B,T,H,W] clips flattened to their frames).
    torch::Tensor checked_depth(torch::Tensor out, const torch::Tensor& batch);
    /// [N,H,W] depth and k extras of its shape -> [N,1+k,H,W] float32 (infer() splits them). Throws ModelError for
    /// an extra of another shape or not floating point.
    torch::Tensor with_extras(const torch::Tensor& out, const std::vector<torch::Tensor>& extras,
                              const torch::Tensor& batch) const;
    /// fo.host: `out` itself on the CPU; on CUDA a page-locked copy made on the download stream (`done` marks it).
    void to_host(const torch::Tensor& out, torch::Device dev, bool streams, ForwardOutput& fo);
    /// Waits for `out` and returns its host tensor (the CUDA download's event).
    torch::Tensor land(ForwardOutput& out);
    /// launch + land.
    torch::Tensor forward(torch::jit::Module& m, const torch::Tensor& batch, torch::Device dev, bool low_precision,
                          bool injected_oom) {
        ForwardOutput out = launch(m, batch, dev, low_precision, injected_oom);
        return land(out);
    }
    /// The module a forward in force runs: the cast module when low precision is on, else the fp32 one.
    bool low_precision() const { return low.has_value() || autocast; }
};

}  // namespace depthbatch
