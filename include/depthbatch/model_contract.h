// depthbatch — the model contract: what a TorchScript depth model takes and what its output means.
//
// It travels inside the model file as the TorchScript extra file "depthbatch.json", written by the
// exporters in tools/ (tools/contract.py documents the same fields from the Python side). A model
// without it (e.g. a Nuke-style .pt) gets the fields from the job's `model:` section instead.
//
// Tensor contract: input [N,3,H,W] float32 RGB in [0,1], encoded in `colorspace`, H and W multiples of
// `multiple`; output [N,1,H',W'] or [N,H',W'] float32 (it is resized back to the plate), H' and W' >= 1 and at most
// `max_scale` times the input's H and W (check_model_output below).
// A multi-frame (video) model (input.frames > 1, with a `temporal` block, docs/video-models.md "Video models"): input
// [B,T,3,H,W], output [B,T,H',W'] (check_clip_output), T = 1 .. frames; the windowing it is run with over a shot
// is the contract's TemporalWindowing (video_window_stage.h).
// An any-view model (Depth Anything 3 any-view: a `views` block, docs/camera-solve.md) takes a set of S views
// [B,S,3,H,W] (S = 1 .. frames) and returns (depth [B,S,H,W], extra outputs..., extrinsics [B,S,3,4], intrinsics
// [B,S,3,3]): the camera of each view beside its depth. It solves a shot's camera (camera_solve.h); it does not render.
#pragma once

#include "depthbatch/option_names.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace depthbatch {

/// What the raw model output means.
enum class DepthKind {
    MetricDepth,           ///< distance along the optical axis in metres (FastDepth on NYU)
    RelativeInverseDepth,  ///< affine-invariant inverse depth / disparity: larger = nearer (Depth Anything)
    RelativeDepth          ///< affine-invariant depth: larger = farther
};

/// DepthKind's spellings, in the contract (output.kind) and the job (model.kind) alike.
constexpr OptionNames<DepthKind, 3> option_names(DepthKind) {
    return {{{DepthKind::MetricDepth, "metric_depth"},
             {DepthKind::RelativeInverseDepth, "relative_inverse_depth"},
             {DepthKind::RelativeDepth, "relative_depth"}}};
}
/// "metric_depth", "relative_inverse_depth", "relative_depth" (option_name).
const char* depth_kind_name(DepthKind kind);
/// Inverse of depth_kind_name; nullopt for an unknown name.
std::optional<DepthKind> parse_depth_kind(const std::string& name);

/// Contract fields a job may state for a model (model.colorspace, multiple, kind, units, input_size, fixed_size;
/// all optional; set ones override the model's own).
struct ContractOverrides {
    std::optional<std::string> colorspace;
    std::optional<int> multiple;
    std::optional<DepthKind> kind;
    std::optional<std::string> units;
    std::optional<int> width_px, height_px;  ///< model.input_size, written [width, height] in the job
    std::optional<bool> fixed_size;
    bool any() const { return colorspace || multiple || kind || units || width_px || fixed_size; }
};

/// The windowing a multi-frame model is run with over a shot (depthbatch.json "temporal"; the official
/// infer_video_depth of DepthAnything/Video-Depth-Anything, video_depth_anything/video_depth.py, for VDA:
/// window 32, overlap 10, keyframes [0,12,24,...,31], crossfade 8, align scale_shift; metric models align none).
/// Windows of `window` frames start every window - overlap frames; a later window's first `overlap` inputs are the
/// previous window's inputs at `keyframes`; its first overlap - crossfade outputs fit it (least squares scale and
/// shift, align kScaleShift) to the aligned reference, its next `crossfade` outputs are cross-faded linearly with the
/// previous window's last `crossfade` frames. Invariants (validate_model_contract): 2 <= window <= input.frames,
/// 1 <= overlap < window, keyframes: `overlap` strictly increasing indices in [0, window) whose last `crossfade` are
/// window - crossfade .. window - 1 (the frames the next window cross-fades), 2 <= crossfade < overlap.
struct TemporalWindowing {
    enum class Align { ScaleShift, None };
    int window = 0;                   ///< frames a forward sees (T)
    int overlap = 0;                  ///< inputs a later window takes from the previous one
    std::vector<int> keyframes;       ///< which of the previous window's inputs (indices 0 .. window - 1)
    int crossfade = 0;                ///< frames cross-faded between consecutive windows
    Align align = Align::ScaleShift;  ///< "scale_shift" (relative models) or "none" (metric: not rescaled)
    int stride() const { return window - overlap; }
    int align_frames() const { return overlap - crossfade; }  ///< outputs each later window is fitted on
};

/// TemporalWindowing::Align's spellings (contract temporal.align).
constexpr OptionNames<TemporalWindowing::Align, 2> option_names(TemporalWindowing::Align) {
    return {{{TemporalWindowing::Align::ScaleShift, "scale_shift"}, {TemporalWindowing::Align::None, "none"}}};
}
/// "scale_shift", "none" (option_name).
const char* align_name(TemporalWindowing::Align align);

/// How an any-view model is run over a shot to solve its camera (depthbatch.json "views"; tools/depth_anything_3_views.py
/// and tools/camera_oracle.py write it): windows of `window` views, consecutive windows sharing `overlap` frames,
/// whose depth and cameras chain the windows into one path (camera_solve.h). Each window's cameras come in that
/// window's own gauge (world frame and scale): extrinsics OpenCV world-to-camera (x right, y down, z forward),
/// intrinsics in the pixels of the input the model saw. Invariants (validate_model_contract): 2 <= window <=
/// input.frames, 1 <= overlap < window.
struct ViewsContract {
    int window = 0;    ///< views a forward sees by default (0: not an any-view model)
    int overlap = 0;   ///< frames shared by consecutive windows
    std::string pose;  ///< how the model gives the camera: "ray_map", "camera_head", "oracle" (provenance only)
    int stride() const { return window - overlap; }
};

/// An output a model gives besides depth (contract output.extra_outputs, tools/contract.py): the module's forward
/// returns a tuple (depth, extra_1, ..., extra_k), each [N,1,H',W'] or [N,H',W'] of the depth's shape. Written as
/// one EXR channel when a job lists its name in output.passes (restored to the plate bilinearly, float32 or half).
struct ExtraOutput {
    std::string name;     ///< what a job asks for in output.passes: letters, digits, _ (not P or N): "sky"
    std::string channel;  ///< the EXR channel it is written as: "sky.A", "depth.confidence"
};

struct ModelContract {
    std::string name;                 ///< short model name, e.g. "fastdepth-nyu"
    std::string colorspace = "sRGB";  ///< OCIO colorspace (or alias) of the model's RGB input
    int multiple = 1;                 ///< H and W fed to the model are multiples of this (px)
    /// Trained / suggested processing size in px (0 = not stated). Sizes in code are width x height
    /// everywhere; the contract JSON alone writes input.size as [height, width] (PyTorch's [..., H, W]
    /// order); the job writes [width, height] (model.size, model.input_size).
    int height = 0, width = 0;
    bool fixed_size = false;  ///< the module accepts only height x width (a traced module)
    DepthKind kind = DepthKind::RelativeInverseDepth;
    std::string units;  ///< "m" for metric depth, "" otherwise
    /// Focal-dependent metric output (Depth Anything 3 metric): the raw output is depth for a camera of
    /// this focal length in pixels, metres = raw * focal_px / reference_focal_px, focal_px measured in the
    /// pixels the model sees (output.reference_focal_px, 0 = not focal dependent).
    double reference_focal_px = 0;
    /// output.max_scale: the model output's H' and W' may be at most this many times the input's H and W
    /// (1 to 64, default 4). Guards against a model that returns a huge map for a small input.
    double max_scale = 4.0;
    /// output.extra_outputs: what the module returns after the depth, in order (empty = depth only).
    std::vector<ExtraOutput> extra_outputs;
    std::map<std::string, std::string> provenance;  ///< source, source_sha256, license, variant, ...
    /// exported_by.torch: the version of the torch that wrote the file (torch.__version__, e.g. "2.13.0+cpu",
    /// recorded by tools/contract.py save_scripted); "" when the contract does not say (files exported before it
    /// was recorded, contracts from a job). Named when a LibTorch cannot load the file (describe_load_failure).
    std::string exported_torch;
    bool embedded = false;  ///< true when read from the model's own depthbatch.json
    /// input.frames: 1 for a single-frame model ([N,3,H,W] -> [N,H,W]); > 1 (at most kMaxContractFrames) for a
    /// multi-frame model ([B,T,3,H,W] -> [B,T,H,W], T = 1 .. frames), which must carry `temporal`.
    int frames = 1;
    TemporalWindowing temporal;  ///< the "temporal" block (window 0 = none: a single-frame model)
    /// views: an any-view model's camera solve (window 0 = not one). Such a model has input.frames > 1 and no
    /// temporal block; it is not a video model (multi_frame() is false).
    ViewsContract views;
    bool multi_frame() const { return frames > 1 && !any_view(); }
    bool any_view() const { return views.window > 0; }
};

/// Limits of the contract's numbers (a larger value is refused rather than allocated).
constexpr int kMaxContractSize = 16384;     ///< input.size: each side 1 .. 16384 px
constexpr int kMaxContractMultiple = 1024;  ///< input.multiple: 1 .. 1024 px
constexpr double kMaxOutputScale = 64;      ///< output.max_scale: 1 .. 64
constexpr int kMaxContractDepth = 32;       ///< JSON nesting (objects/arrays inside each other)
constexpr int kMaxContractFrames = 1024;    ///< input.frames: 1 .. 1024

/// Parse depthbatch.json text. `origin` (the model path) prefixes every error message.
/// Throws ModelError, naming the field (input.size, input.multiple, output.kind, ...), on malformed JSON
/// (invalid UTF-8 included), JSON that is not an object or nests deeper than kMaxContractDepth, a missing required
/// field, a field of the wrong type, or an out-of-range value (multiple outside 1..1024, a size side outside
/// 1..16384 or not a multiple, unknown kind, metric depth without units "m", max_scale outside 1..64,
/// reference_focal_px < 0), input.frames outside 1..1024, a temporal block that breaks TemporalWindowing's
/// invariants (temporal.window, temporal.overlap, temporal.keyframes, temporal.crossfade, temporal.align named), a
/// multi-frame model without one (or a views block) or a single-frame model with one, a views block that breaks
/// ViewsContract's invariants or comes with a temporal block, align scale_shift on a metric model,
/// output.extra_outputs not a list of {name, channel} with valid, unique names and channels, exported_by not an object
/// or exported_by.torch not a string of 1-64 printable ASCII characters, a control character (C0, DEL, C1) in name,
/// input.colorspace, output.units or a provenance key or text (they reach the log and the EXR metadata; the error
/// names the field). Other top-level keys are provenance (kept as text, else never refused), so contracts with and
/// without exported_by both parse.
/// Never throws anything else for any input bytes (tests/fuzz/fuzz_contract.cpp).
ModelContract parse_model_contract(const std::string& json_text, const std::string& origin);

/// The version of the LibTorch depthbatch runs on (TORCH_VERSION of <torch/version.h>, e.g. "2.13.0").
std::string libtorch_version();

/// The message for a model file this LibTorch cannot load, when `libtorch_error` (what() of the exception
/// torch::jit::load threw, as LibTorch wrote it) says the file needs a newer LibTorch; "" otherwise (a truncated or
/// foreign file: the caller keeps its own message). Recognised: an operator this LibTorch does not have ("Unknown
/// builtin op: aten::X", "Schema not found for node ... aten::X"), an operator called with arguments its schema
/// here lacks ("aten::X(...) -> ...:" then "Keyword argument K unknown." / "Expected at most N argument(s)"), an
/// unknown type, and a file format version newer than this LibTorch reads. The message starts with `path`, names
/// the operator (or type, or version), this LibTorch (libtorch_version()), `exported_torch` (the contract's
/// exported_by.torch; "" = not recorded, said so) and the fix: re-export with tools/ (whose exports call only
/// operators LibTorch 2.4 has) or run a LibTorch at least as new as the exporting torch. Pure function of its
/// arguments and libtorch_version(); never throws. DepthModel::load throws it as a ModelError (exit 4).
std::string describe_load_failure(const std::string& path, const std::string& libtorch_error,
                                  const std::string& exported_torch);

/// exported_by.torch as recorded in the model file at `path`, read without LibTorch's reader: for a file LibTorch
/// refuses before its records can be read (a file format version newer than it reads), whose contract
/// DepthModel::embedded_contract therefore cannot return. Reads the ZIP entry `<archive>/extra/depthbatch.json` as
/// torch.jit.save writes it (stored, uncompressed: PyTorchStreamWriter, caffe2/serialize/inline_container.cc; ZIP
/// local file header layout: PKWARE APPNOTE.TXT 4.3.7) and takes the string `exported_by.torch` from its JSON when it
/// is 1-64 printable ASCII characters. "" when the file, the entry or the value is not there or not readable so
/// (a compressed entry, a file not written by torch.jit.save). Never throws.
std::string recorded_exporting_torch(const std::string& path);

/// Check the invariants above on a contract assembled from a job. Throws ModelError naming the field.
void validate_model_contract(const ModelContract& contract, const std::string& origin);

/// What check_model_output found in an output it accepts.
struct ModelOutputCheck {
    int height = 0, width = 0;  ///< H', W' of the output (px)
    /// The output's H' x W' is the input's W x H (exactly or at one scale) on a non-square input: likely a
    /// transposed (rotated) depth map. Only returned for a model that is not fixed_size (there it throws).
    bool transposed = false;
};

/// The shape and dtype check of a model's raw output, before anything is allocated for it: a pure function
/// of sizes, so it is unit-tested and fuzzed without LibTorch. `out_sizes` is the output tensor's shape,
/// `dtype` its c10 scalar type name ("Float", "Double", "Half", "BFloat16" are floating point, anything else is
/// not), `in_sizes` the input batch's [N,3,H,W]. Returns the output's H', W'; throws ModelError, whose message
/// names the output's and the input's shapes ("[1,1,0,0]", "[1,3,48,64]"), when:
///   - any dimension of the output is 0 ("model output [1,1,0,0] has a zero dimension for input [1,3,64,64]");
///   - it is not [N,1,H',W'] or [N,H',W'] with the input's N;
///   - its dtype is not floating point (integer, bool, complex: named, e.g. "Long");
///   - H' or W' is more than contract.max_scale times the input's H or W;
///   - H' x W' is the input's W x H on a non-square input and the contract is fixed_size (a traced model
///     at its one size: a transposed output is a bug of the export, never a valid depth map).
ModelOutputCheck check_model_output(const std::vector<int64_t>& out_sizes, const std::string& dtype,
                                    const std::vector<int64_t>& in_sizes, const ModelContract& contract);

/// check_model_output for a multi-frame model: `in_sizes` is [B,T,3,H,W] and the output must be [B,T,H',W'] (same
/// B and T; the other checks as above, on each frame). Throws ModelError naming both shapes.
ModelOutputCheck check_clip_output(const std::vector<int64_t>& out_sizes, const std::string& dtype,
                                   const std::vector<int64_t>& in_sizes, const ModelContract& contract);

/// "[1,3,48,64]".
std::string shape_text(const std::vector<int64_t>& sizes);

/// The licence a contract records (its provenance field "license": an SPDX identifier such as "MIT", "Apache-2.0",
/// "CC-BY-NC-4.0", as tools/ exporters write it from the checkpoint's model card); "" when it records none.
std::string contract_license(const ModelContract& contract);

/// Whether a licence forbids commercial use: a Creative Commons NonCommercial licence (SPDX identifiers CC-BY-NC-*,
/// CC-BY-NC-SA-*, CC-BY-NC-ND-*: https://spdx.org/licenses/; the deeds' "CC BY-NC 4.0"), or a text that says
/// non-commercial, noncommercial or not for commercial use. Case, spaces, underscores and hyphens do not matter.
/// Depth Anything V2 Base/Large, Video Depth Anything Base/Large and Depth Anything 3 Large/Giant/Nested are
/// CC-BY-NC-4.0 (their model cards).
bool is_non_commercial_license(const std::string& license);

/// Whether `accepted` (job key model.accept_license) names `license`: the same name, whatever its case, spaces,
/// underscores or hyphens (SPDX identifiers are case-insensitive; model cards write cc-by-nc-4.0). False when empty.
bool license_accepted(const std::string& license, const std::string& accepted);

/// Refuses a model whose licence forbids commercial use (is_non_commercial_license) unless the job accepts that
/// licence by name (license_accepted): ConfigError (exit 2) naming the model at `model_path`, its licence and the
/// key. Nothing for any other licence, or none recorded.
void check_model_license(const ModelContract& contract, const std::string& model_path, const std::string& accepted);

}  // namespace depthbatch
