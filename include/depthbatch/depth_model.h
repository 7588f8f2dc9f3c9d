// depthbatch — a TorchScript depth model: load, contract, device, inference.
//
// LibTorch lives in this module (src/depth_model.cpp) and in the plate's resize (src/resample.cpp); no public
// header includes torch.
// Loading checks, in order, so that a bad model fails before any frame is read: the path exists and is
// a regular, non-empty file; it is not an un-pulled Git LFS pointer; LibTorch can load it as
// TorchScript; its contract (embedded depthbatch.json, else the job's model.* keys) is complete.
// Inference runs under c10::InferenceMode with the module in eval() mode.
//
// Threads: a DepthModel owns one inference thread (src/inference_thread.h) for its whole life. The module is
// loaded, moved to its device, warmed up and run there, and nowhere else: LibTorch's per-thread state (CUDA and
// cuDNN/cuBLAS handles, the current stream, the TorchScript executor's profiling state, the CPU's OpenMP team) is
// made once per job, not once per TBB worker (issue 31: 16 workers each paid 1-4 s on a GPU). Every member
// function may be called from any thread; calls are served one at a time in the order they arrive.
// On CUDA the thread keeps three non-default streams for the job (upload, compute, download): a batch's upload,
// the previous batch's forward and the one before's download overlap, ordered by events; submit() lets a caller
// hand the next batch over before it waits for the last (run_job's inference stage keeps one batch ahead).
#pragma once

#include "depthbatch/gpu_device.h"
#include "depthbatch/model_contract.h"
#include "depthbatch/model_data.h"
#include "depthbatch/option_names.h"
#include "depthbatch/reformat.h"

#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace depthbatch {

enum class Precision { Fp32, Fp16, Bf16, Tf32 };  ///< model.precision
/// Precision's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<Precision, 4> option_names(Precision) {
    return {
        {{Precision::Fp32, "fp32"}, {Precision::Fp16, "fp16"}, {Precision::Bf16, "bf16"}, {Precision::Tf32, "tf32"}}};
}

/// The job's model section (JobConfig::Model): what DepthModel::load takes.
struct ModelSettings {
    std::string path = "default";  ///< absolute path, or "default"
    ModelDevice device;            ///< model.device (gpu_device.h): auto, cpu, cuda or cuda:N
    ProcessingSize size;           ///< model.size (reformat.h)
    ContractOverrides contract;    ///< model.colorspace, multiple, kind, units, input_size, fixed_size
    Precision precision = Precision::Fp32;
    int batch = 1;    ///< frames per forward
    int warmup = -1;  ///< -1 = 3 on CUDA, 0 on CPU
    bool freeze = false;
    bool channels_last = false;
    int threads = 0;  ///< LibTorch intra-op threads, 0 = pipeline decides
    /// model.accept_license: the licence (as the model's contract names it) the job accepts for a model whose
    /// licence forbids commercial use (check_model_license, model_contract.h); "" = none.
    std::string accept_license;
    struct Tiles {
        int size = 0;     ///< tile edge in plate px; 0 = no tiles
        int overlap = 0;  ///< overlap between neighbouring tiles in plate px
    } tiles;
};

/// One input shape a job feeds its model, for DepthModel::warm_up: `batch` inputs (frames or tiles) of
/// `width` x `height` px, or, with `frames` > 0, `batch` clips of `frames` frames ([B,T,3,H,W], a video model's
/// windows).
struct ForwardShape {
    int batch = 1;
    int frames = 0;
    int width = 0, height = 0;
    /// "2x3x224x384" ([N,3,H,W]) or "1x32x3x280x504" ([B,T,3,H,W]), as the log and the summary write it.
    std::string text() const;
};

/// The low-precision check on a job's first frame (DepthModel::check_precision).
struct PrecisionCheck {
    bool ran = false;  ///< false when the precision asked is fp32 or tf32 (nothing to compare)
    Precision asked = Precision::Fp32;
    Precision in_force = Precision::Fp32;  ///< asked, or Fp32 when the check failed
    /// The 99th percentile of |low - fp32| over the frame's depth, as a fraction of the fp32 depth's span (its
    /// 99th minus 1st percentile); +inf when the low-precision depth has non-finite values. -1 when not run.
    double error = -1;
    double tolerance = 0;  ///< kPrecisionTolerance
    std::string how;       ///< "half module" (the module cast to fp16/bf16) or "autocast"
    int frame = 0;         ///< the frame it was checked on (set by the caller)
};

/// The largest error PrecisionCheck::error may have for fp16/bf16 to render: 1% of the depth span at the 99th
/// percentile. Chosen so that fp16 on FastDepth and Depth Anything passes (about 1e-3 of the span on a GPU, issue
/// 31) and bf16 on FastDepth, 0.21 of the span at worst, does not.
inline constexpr double kPrecisionTolerance = 0.01;

/// The figures of a model's inference thread (DepthModel::stats), for the report and the summary.
struct InferenceStats {
    int forward_threads = 0;                 ///< distinct threads that ran a forward pass: 1 (the model's own)
    bool on_caller_thread = false;           ///< a forward ran on the thread that loaded the model (never, by design)
    long forwards = 0;                       ///< forward passes run (warm-up, checks and retries included)
    std::vector<std::string> warmup_shapes;  ///< ForwardShape::text() of each warm-up shape, in order
    int warmup_passes = 0;                   ///< forward passes per warm-up shape
    double warmup_ms = 0;                    ///< wall time of the warm-up (all shapes)
    double busy_ms = 0;                      ///< the inference thread's time in forward passes and their completion
};

class DepthModel;

/// A batch handed to DepthModel::submit: wait() returns what infer() would have (or throws what it would).
class InferenceTicket {
public:
    InferenceTicket() = default;
    /// Blocks until the batch is done. Call once.
    std::vector<DepthImage> wait() { return result_.get(); }
    bool valid() const { return result_.valid(); }
    /// Milliseconds from the forward's launch to its result on the host (inference thread; set once wait() returned).
    double ms() const { return *ms_; }

private:
    friend class DepthModel;
    std::future<std::vector<DepthImage>> result_;
    std::shared_ptr<double> ms_ = std::make_shared<double>(0.0);
};

class DepthModel {
public:
    /// Load `options.path` ("default" = the prepared FastDepth, see default_model_path()) onto
    /// `options.device`. Throws ModelError (naming the path) for a bad file or contract, ConfigError for a
    /// device that does not exist (e.g. "cuda" with a CPU-only LibTorch or no visible GPU).
    static std::unique_ptr<DepthModel> load(const ModelSettings& options);

    /// The model path used for model.path "default": $DEPTHBATCH_DEFAULT_MODEL, else
    /// share/depthbatch/models/fastdepth-nyu.pt found next to the executable (install_layout.h).
    static std::string default_model_path();

    /// The contract embedded in a model file (its depthbatch.json), read without loading the module (cheap: for
    /// `submit`, which plans a farm job without a model); nullopt when the file has none. `path` "default" is
    /// default_model_path(). Throws ModelError for a file that is not a TorchScript archive or a bad contract.
    static std::optional<ModelContract> embedded_contract(const std::string& path);

    virtual ~DepthModel();

    const ModelContract& contract() const { return contract_; }
    const std::string& path() const { return path_; }
    const std::string& sha256() const { return sha256_; }
    /// "cpu" or "cuda:N", and why it was picked (for the log).
    const std::string& device_name() const { return device_name_; }
    /// True when the model runs on a CUDA device (gpu().index >= 0).
    bool on_cuda() const { return gpu_.index >= 0; }
    const std::string& device_reason() const { return device_reason_; }
    /// The GPU behind device_name() (its CUDA index, driver name and UUID, CUDA_VISIBLE_DEVICES); index -1 on the
    /// CPU. describe_device (gpu_device.h) makes the log's line of it.
    const GpuDevice& gpu() const { return gpu_; }
    /// True for modules made with torch.jit.trace (the archive holds traced_inputs.pkl, which
    /// torch.jit.trace has saved since PyTorch 2.0), false for torch.jit.script.
    bool traced() const { return traced_; }
    /// The precision in force: Fp32; Tf32, Fp16 or Bf16 on CUDA only (asked of a CPU model they are Fp32); Fp32
    /// after a failed check_precision().
    Precision precision() const { return precision_; }
    long long parameter_count() const;

    /// Run one batch. All inputs must share one size (width x height, multiples of contract().multiple;
    /// exactly the contract's size for fixed-size models). Returns one depth image per input, float32 in
    /// the model's units, at the model's output size.
    /// The output, checked before anything is allocated for it (check_model_output, model_contract.h): a tensor,
    /// or a tuple whose first element is the depth tensor (the rest, e.g. a confidence map, is ignored; a debug
    /// line says so once); float32, or float16/bfloat16/float64 converted to float32. A metric model's
    /// negative values are counted in DepthImage::negative and kept as they are.
    /// Throws ModelError (message: the model path, then the output's and the input's shapes) when the output
    /// is a list, dict or other non-tensor (its TorchScript type named, e.g. "List[Tensor]"), has a zero
    /// dimension, is an integer/bool/complex dtype (named, e.g. "Long"), is more than contract().max_scale times
    /// the input's H or W, or has the input's H and W swapped on a non-square input of a fixed_size model;
    /// the same swap on a model of any size is a warning naming both shapes, given once per DepthModel (job).
    /// Throws ModelError when the output is not an image ([N,1,H,W] or [N,H,W] float) or the forward pass
    /// fails for this input (a size the module cannot take, a module tied to another device: the message names
    /// the model, the device, the input shape and a hint; LibTorch's full text goes to the debug log), and
    /// RenderError when a CUDA device itself fails or the output holds non-finite depth in fp32 (message gives
    /// the count of bad values).
    /// Half precision (docs/cases.md 7): an fp16/bf16 result with Inf, NaN or all zeros is redone in fp32 and
    /// logged. Out of memory (docs/cases.md 8 neighbours): the batch is split in halves and retried, and a
    /// single frame that still fails runs on a CPU fp32 copy of the module, with a warning; nothing is lost.
    /// On CUDA the batch is stacked into page-locked (pinned) host memory and copied to the device on the upload
    /// stream; the depth comes back into pinned memory on the download stream, and the call ends when that copy's
    /// event has completed. load() turns cuDNN autotuning on (cudnn.benchmark) for a CUDA model: a job feeds one
    /// input size, and warm_up() pays for the search. fp32 on CUDA is IEEE fp32 (TF32 off for cuDNN and cuBLAS);
    /// model.precision tf32 allows TF32. Measured on a GPU by bench/gpu-check.
    /// Runs on the model's inference thread (above) whichever thread calls it, and waits for the result.
    /// A multi-frame model (contract().multi_frame()) takes each input of infer() as a clip of one frame
    /// ([N,1,3,H,W]): the frames stay independent (and lose the model's temporal context).
    std::vector<DepthImage> infer(const std::vector<const ModelInput*>& batch) const;

    /// A multi-frame model's forward over B clips of T frames each ([B,T,3,H,W] -> [B,T,H',W'], check_clip_output),
    /// T = 1 .. contract().frames, every frame of one size; returns clips[b][t]'s depth at out[b][t]. Everything
    /// infer() does applies (autocast on CUDA with model.precision fp16/bf16 and its fp32 retry, pinned staging, the
    /// non-finite check); out of memory splits the batch into halves of whole clips, and a single clip that still
    /// fails runs on the CPU in fp32. Throws RenderError for clips of different lengths or a single-frame model,
    /// and as infer() otherwise.
    std::vector<std::vector<DepthImage>> infer_clips(const std::vector<std::vector<const ModelInput*>>& clips) const;

    /// An any-view model's forward over one window of S views ([1,S,3,H,W] -> a tuple: depth [1,S,H',W'], the
    /// contract's extra outputs [1,S,H',W'] each, extrinsics [1,S,3,4], intrinsics [1,S,3,3]; model_contract.h
    /// ViewsContract), S = 2 .. contract().frames, every view of one size. fp32 on the model's device, whatever
    /// model.precision says (a camera is not worth a half-precision risk). Returns one ViewOutput per view, in order.
    /// Throws RenderError for a model without a views block or views of different sizes, ModelError naming the model
    /// and the shapes for an output that is not that tuple (or holds non-finite values), as infer() for a failed
    /// forward.
    std::vector<ViewOutput> infer_views(const std::vector<const ModelInput*>& views) const;

    /// infer() without waiting: the batch is staged (copied) at once, on the calling thread, so the inputs may go
    /// as soon as submit() returns; the forward runs on the inference thread after what was submitted before.
    /// On CUDA, the thread launches it and may launch the next batch before this one's result is back.
    /// InferenceTicket::wait() gives infer()'s result or throws its errors (OOM halves, CPU fallback, fp32 retry:
    /// all as infer()). Throws RenderError at once for a batch that mixes sizes.
    InferenceTicket submit(const std::vector<const ModelInput*>& batch) const;

    /// `passes` forward passes (results dropped) at each of `shapes`, the shapes the job will feed (the processing
    /// size at its batch, tiles, a video model's windows): cuDNN's autotuning (on for a CUDA model), kernel
    /// selection, the allocator's pools and the CPU's primitive caches are paid here, not by the first frames.
    /// On CUDA, a later batch smaller than a warmed batch of its size (a shot's last, a frame's last tiles) is
    /// padded to it, so no forward meets a shape the warm-up did not. Recorded in stats(). Throws as infer().
    void warm_up(const std::vector<ForwardShape>& shapes, int passes) const;

    /// With fp16/bf16 in force: the job's first frame (`frame`, as the pipeline feeds it) at fp32 and at the low
    /// precision; over kPrecisionTolerance (or with non-finite values) the model renders fp32 from now on
    /// (precision() says Fp32) and the result says so: the caller warns once and records it. A low precision
    /// that cannot run as a cast module (a float32 constant inside the model, say) falls back to autocast first.
    /// Nothing is run for fp32/tf32 (ran false). Throws as infer() for a forward that fails at fp32.
    PrecisionCheck check_precision(const ModelInput& frame);

    /// The inference thread's figures so far.
    InferenceStats stats() const;

private:
    /// infer() and infer_clips(): `batch` holds `clips` clips of `frames` frames each (frames 0: a plain [N,3,H,W]
    /// batch of single frames, clips = N). stage() copies it into one tensor (pinned on CUDA; padded to a warmed
    /// batch, `real` inputs of it the caller's); run_staged() runs it on the inference thread and returns `real`
    /// depth images.
    struct Staged;
    struct ForwardOutput;
    Staged stage(const std::vector<const ModelInput*>& batch, int clips, int frames) const;
    std::vector<DepthImage> run(const std::vector<const ModelInput*>& batch, int clips, int frames) const;
    std::vector<DepthImage> run_staged(const Staged& staged) const;
    /// Waits for `out`, checks it (non-finite values: an fp32 retry after fp16/bf16, else RenderError) and splits
    /// it into depth images (all rows of `staged`).
    std::vector<DepthImage> finish(const Staged& staged, ForwardOutput&& out) const;
    /// Throws the Error a failed forward of `staged` is reported as (RenderError for the device, ModelError else).
    [[noreturn]] void forward_failed(const std::exception& e, const Staged& staged) const;
    friend struct DepthModelTestSeam;  ///< src/depth_model_test_seam.h: fault injection for tests only
    DepthModel();
    /// load()'s part on the inference thread: the module, the contract, streams, precision.
    void load_on_thread(const ModelSettings& options);
    struct Impl;
    std::unique_ptr<Impl> impl_;
    ModelContract contract_;
    std::string path_, sha256_, device_name_, device_reason_;
    GpuDevice gpu_;
    bool traced_ = false;
    Precision precision_ = Precision::Fp32;
    Precision asked_precision_ = Precision::Fp32;  ///< the job's model.precision (precision_ is what is in force)
};

/// How far a low-precision depth image is from the fp32 one of the same input: the 99th percentile of |low - fp32|
/// over the pixels, as a fraction of the fp32 depth's span (its 99th minus 1st percentile; at least 1e-6 of its
/// median's magnitude, so that a flat image compares in absolute terms). +inf when the sizes differ, either is empty
/// or `low` has a non-finite value. Used by DepthModel::check_precision against kPrecisionTolerance.
double low_precision_error(const std::vector<float>& fp32, const std::vector<float>& low);

/// input.frames of the contract embedded in the model file at `path` (DepthModel::embedded_contract): > 1 for a
/// multi-frame (video) model; 1 when it has none, or the file cannot be read (loading it names the problem).
int model_input_frames(const std::string& path);

/// True when this LibTorch was built with CUDA and at least one GPU is visible.
bool torch_has_cuda();

/// Set LibTorch's intra-op thread count (0 = the number of cores) and return the value in force.
int set_torch_threads(int threads);

}  // namespace depthbatch
