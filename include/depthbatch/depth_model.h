// depthbatch — a TorchScript depth model: load, contract, device, inference.
//
// LibTorch lives in this module (src/depth_model.cpp) and in the plate's resize (src/resample.cpp); no public
// header includes torch.
// Loading checks, in order, so that a bad model fails before any frame is read: the path exists and is
// a regular, non-empty file; it is not an un-pulled Git LFS pointer; LibTorch can load it as
// TorchScript; its contract (embedded depthbatch.json, else the job's model.* keys) is complete.
// Inference runs under c10::InferenceMode with the module in eval() mode.
#pragma once

#include "depthbatch/gpu_device.h"
#include "depthbatch/job_config.h"
#include "depthbatch/model_contract.h"
#include "depthbatch/model_data.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace depthbatch {

class DepthModel {
public:
    /// Load `options.path` ("default" = the prepared FastDepth, see default_model_path()) onto
    /// `options.device`. Throws ModelError (naming the path) for a bad file or contract, ConfigError for a
    /// device that does not exist (e.g. "cuda" with a CPU-only LibTorch or no visible GPU).
    static std::unique_ptr<DepthModel> load(const JobConfig::Model& options);

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
    const std::string& device_reason() const { return device_reason_; }
    /// The GPU behind device_name() (its CUDA index, driver name and UUID, CUDA_VISIBLE_DEVICES); index -1 on the
    /// CPU. describe_device (gpu_device.h) makes the log's line of it.
    const GpuDevice& gpu() const { return gpu_; }
    /// True for modules made with torch.jit.trace (the archive holds traced_inputs.pkl, which
    /// torch.jit.trace has saved since PyTorch 2.0), false for torch.jit.script.
    bool traced() const { return traced_; }
    /// The precision in force: Fp32, or Fp16/Bf16 (autocast, CUDA only; asked of a CPU model it is Fp32).
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
    /// Half precision (CASES.md 7): an fp16/bf16 result with Inf, NaN or all zeros is redone in fp32 and
    /// logged. Out of memory (CASES.md 8 neighbours): the batch is split in halves and retried, and a
    /// single frame that still fails runs on a CPU fp32 copy of the module, with a warning; nothing is lost.
    /// On CUDA the batch is stacked into a reused page-locked (pinned) host buffer and copied to the device
    /// without blocking; the depth comes back into pinned memory and one synchronize ends the call. load() turns
    /// cuDNN autotuning on (cudnn.benchmark) for a CUDA model: a job feeds one input size, and the warm-up
    /// forward (model.warmup, 1 on CUDA) pays for the search. Written without a GPU to run it on: bench/gpu-check.
    /// Not thread-safe, although const: call it from one thread at a time (run_job's serial inference
    /// stage). It mutates shared state: the TorchScript module's forward, the lazily made CPU fallback copy
    /// and the device's allocator/autocast state.
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

private:
    /// infer() and infer_clips(): `batch` holds `clips` clips of `frames` frames each (frames 0: a plain [N,3,H,W]
    /// batch of single frames, clips = N).
    std::vector<DepthImage> run(const std::vector<const ModelInput*>& batch, int clips, int frames) const;
    friend struct DepthModelTestSeam;  ///< src/depth_model_test_seam.h: fault injection for tests only
    DepthModel();
    struct Impl;
    std::unique_ptr<Impl> impl_;
    ModelContract contract_;
    std::string path_, sha256_, device_name_, device_reason_;
    GpuDevice gpu_;
    bool traced_ = false;
    Precision precision_ = Precision::Fp32;
};

/// input.frames of the contract embedded in the model file at `path` (DepthModel::embedded_contract): > 1 for a
/// multi-frame (video) model; 1 when it has none, or the file cannot be read (loading it names the problem).
int model_input_frames(const std::string& path);

/// True when this LibTorch was built with CUDA and at least one GPU is visible.
bool torch_has_cuda();

/// Set LibTorch's intra-op thread count (0 = the number of cores) and return the value in force.
int set_torch_threads(int threads);

}  // namespace depthbatch
