// depthbatch — depth conventions and normalization: raw model output -> the depth.Z that is written.
//
// Model kinds (ModelContract): metric depth d (m), relative inverse depth r (Depth Anything: larger =
// nearer), relative depth r (larger = farther). "Depth-like" = metric or relative depth.
// Written conventions (job depth.kind), per pixel, r = raw model value:
//   raw         r unchanged (depth.normalize must be raw)
//   inverse     1/z, Nuke ScanlineRender's depth.Z convention. Depth-like models: 1/d, with 0 for d <= 0
//               or non-finite (infinitely far; never Inf/NaN). Relative inverse models: r itself (it is
//               already inverse depth, up to scale and shift).
//   metric      metres. Metric models: d (clipped to [near, far] when both are set). Relative models need
//               depth.near/far in metres and a frame or sequence range [lo, hi] of r: t in [0,1] is r's
//               position in the range with t = 1 nearest, and
//                 relative inverse: 1/z = 1/far + t (1/near - 1/far)   (linear in disparity)
//                 relative depth:      z = near + t (far - near)
//               Asking metric of a relative model without near/far is a ConfigError, never a silent 1/x.
//   normalized  t in [0,1], linear in the model's own quantity between the near and far ends of the range,
//               0 at near (depth.near_is: 1 flips it to 1 at near). Values outside the range are clamped
//               to [0,1] and counted (reported per frame and in the EXR metadata).
// Ranges (depth.normalize): frame = per-frame percentiles (default 2/98) of r; sequence = the same
// percentiles over a fixed sample of the shot's frames (SequenceStats); fixed = depth.near/far given in
// the model's raw units (metres for metric models; for a relative inverse model near is the larger value).
// For a frame or sequence range the near end is lo for depth-like models and hi for relative inverse ones.
//
// Threads: the rule of depthbatch.h; built once per job, then used through const members only, by every worker
// at once (frame_stages.cpp: finish).
#pragma once

#include "depthbatch/depth_upsample.h"
#include "depthbatch/model_contract.h"
#include "depthbatch/option_names.h"

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace depthbatch {

enum class DepthConvention { Raw, Metric, Inverse, Normalized };  ///< depth.convention: what depth.Z holds
enum class Normalization { Raw, Frame, Sequence, Fixed };         ///< depth.normalize: where the range comes from
/// DepthConvention's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<DepthConvention, 4> option_names(DepthConvention) {
    return {{{DepthConvention::Raw, "raw"},
             {DepthConvention::Metric, "metric"},
             {DepthConvention::Inverse, "inverse"},
             {DepthConvention::Normalized, "normalized"}}};
}
/// Normalization's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<Normalization, 4> option_names(Normalization) {
    return {{{Normalization::Raw, "raw"},
             {Normalization::Frame, "frame"},
             {Normalization::Sequence, "sequence"},
             {Normalization::Fixed, "fixed"}}};
}

/// The job's depth section (JobConfig::Depth): the written convention, its range, stabilization, upsampling.
struct DepthSettings {
    DepthConvention convention = DepthConvention::Raw;  ///< depth.convention (older name depth.kind); a job that
                                                        ///< sets only depth.normalize (not raw) gets Normalized
    Normalization normalize = Normalization::Raw;
    int near_is = 0;                  ///< normalized: value written at the near end (0 or 1)
    std::optional<double> near, far;  ///< fixed range / clip values (model units; metres if metric)
    double percentile_low = 2.0, percentile_high = 98.0;
    int stats_frames = 16;
    std::string stats_file;  ///< absolute path, "" = next to the output
    bool stabilize = false;
    int stabilize_radius = 4;  ///< depth.stabilize_radius R: R frames on each side, a centred window
                               ///< of 2R + 1 frames (the older depth.stabilize_window W: R = W / 2, at least 1)
    /// depth.stabilize_window W as the job wrote it (the older name), else unset: the fingerprint and the EXR
    /// metadata write the window W, so an odd W given before keeps its line (stabilize_window()).
    std::optional<int> stabilize_window_written;
    /// The window W the fingerprint and the EXR metadata (depthbatch/stabilize_window) write: as written, else 2R.
    int stabilize_window() const { return stabilize_window_written.value_or(2 * stabilize_radius); }
    UpsampleSettings upsample;  ///< depth.upsample, guided_radius, guided_epsilon, edge_threshold
};

/// A range of raw model values: the value at the near end and at the far end (near != far).
struct DepthRange {
    double near_value = 0, far_value = 1;
};

class DepthNormalizer {
public:
    /// Validate the job's depth section against the model kind. Throws ConfigError naming the key
    /// (e.g. depth.kind metric for a relative model without depth.near/far).
    DepthNormalizer(const DepthSettings& depth, DepthKind model_kind);

    /// True when apply() needs a range: frame or sequence normalization.
    bool needs_frame_range() const { return normalize_ == Normalization::Frame; }
    bool needs_sequence_range() const { return normalize_ == Normalization::Sequence; }

    /// The near/far-oriented range for percentile values lo <= hi of the raw output.
    DepthRange range_from_percentiles(double lo, double hi) const;

    /// Convert raw values in place. `range` is required for frame/sequence normalization (ignored
    /// otherwise). Returns the number of values clamped (normalized, metric clip).
    size_t apply(float* values, size_t count, const DepthRange* range) const;

    /// EXR metadata describing the written convention (depthbatch/depth_convention, .../near_is,
    /// .../larger_is_nearer, ...).
    std::vector<std::pair<std::string, std::string>> metadata(const DepthRange* range) const;

    DepthConvention kind() const { return kind_; }
    /// Whether larger written values are nearer the camera: inverse (1/z, or a relative inverse model's own
    /// values), raw of a relative inverse model, normalized with depth.near_is 1. False for metres, raw metric
    /// or relative depth, normalized with near_is 0. Written as depthbatch/larger_is_nearer ("1" or "0") by
    /// metadata(); previews and the review sheet put the near end of their colours where this says.
    bool larger_is_nearer() const;
    /// Units of the written values: "m", "1/m", "" (normalized or relative).
    std::string units() const;
    /// Whether the written values are metres: depth.convention metric, or raw of a metric model.
    bool metres() const;

private:
    DepthConvention kind_;
    Normalization normalize_;
    DepthKind model_kind_;
    int near_is_ = 0;
    bool has_near_far_ = false;
    double near_ = 0, far_ = 0;
};

/// Percentiles `p_low`, `p_high` (0-100) of the finite values among `values` (nearest-rank on the sorted
/// finite values). Returns {0, 0} when there is no finite value.
std::pair<double, double> percentile_pair(std::vector<float> values, double p_low, double p_high);

}  // namespace depthbatch
