// depthbatch — the model contract: what a TorchScript depth model takes and what its output means.
//
// It travels inside the model file as the TorchScript extra file "depthbatch.json", written by the
// exporters in tools/ (tools/contract.py documents the same fields from the Python side). A model
// without it (e.g. a Nuke-style .pt) gets the fields from the job's `model:` section instead.
//
// Tensor contract: input [N,3,H,W] float32 RGB in [0,1], encoded in `colorspace`, H and W multiples of
// `multiple`; output [N,1,H',W'] or [N,H',W'] float32 (any H',W': it is resized back to the plate).
#pragma once

#include <map>
#include <optional>
#include <string>

namespace depthbatch {

/// What the raw model output means.
enum class DepthKind {
    MetricDepth,           ///< distance along the optical axis in metres (FastDepth on NYU)
    RelativeInverseDepth,  ///< affine-invariant inverse depth / disparity: larger = nearer (Depth Anything)
    RelativeDepth          ///< affine-invariant depth: larger = farther
};

/// "metric_depth", "relative_inverse_depth", "relative_depth".
const char* depth_kind_name(DepthKind kind);
/// Inverse of depth_kind_name; nullopt for an unknown name.
std::optional<DepthKind> parse_depth_kind(const std::string& name);

struct ModelContract {
    std::string name;                 ///< short model name, e.g. "fastdepth-nyu"
    std::string colorspace = "sRGB";  ///< OCIO colorspace (or alias) of the model's RGB input
    int multiple = 1;                 ///< H and W fed to the model are multiples of this (px)
    /// Trained / suggested processing size in px (0 = not stated). Sizes in code are width x height
    /// everywhere; the contract JSON alone writes input.size as [height, width] (PyTorch's [..., H, W]
    /// order); the job writes [width, height] (model.size, model.input_size).
    int height = 0, width = 0;
    bool fixed_size = false;          ///< the module accepts only height x width (a traced module)
    DepthKind kind = DepthKind::RelativeInverseDepth;
    std::string units;                                ///< "m" for metric depth, "" otherwise
    /// Focal-dependent metric output (Depth Anything 3 metric): the raw output is depth for a camera of
    /// this focal length in pixels, metres = raw * focal_px / reference_focal_px, focal_px measured in the
    /// pixels the model sees (output.reference_focal_px, 0 = not focal dependent).
    double reference_focal_px = 0;
    std::map<std::string, std::string> provenance;    ///< source, source_sha256, license, variant, ...
    bool embedded = false;            ///< true when read from the model's own depthbatch.json
};

/// Parse depthbatch.json text. `origin` (the model path) prefixes every error message.
/// Throws ModelError on malformed JSON, a missing required field or an out-of-range value
/// (multiple < 1, size not a multiple, unknown kind, metric depth without units "m").
ModelContract parse_model_contract(const std::string& json_text, const std::string& origin);

/// Check the invariants above on a contract assembled from a job. Throws ModelError.
void validate_model_contract(const ModelContract& contract, const std::string& origin);

}  // namespace depthbatch
