// depthbatch — sequence statistics that do not depend on how a shot is chunked.
//
// `depth.normalize: sequence` needs one range for the whole shot. It comes from a statistics pass over
// a fixed sample of the shot's frames (sample_frames(): evenly spaced over input.frames, first and last
// included), never over the frames of the chunk being rendered, so a farm task rendering 1001-1025 and
// one rendering 1025-1050 use the same numbers. The pass writes a JSON sidecar next to the output
// (atomically, never replacing one that another task wrote first: the loser reads the winner's), and
// every later run of the job reuses it. `depthbatch stats JOB` runs the pass alone, before the chunks.
// A sidecar made for another job (different model, plate, frames, size or percentiles) is refused with
// OutputExistsError unless the job may overwrite outputs.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace depthbatch {

struct SequenceStats {
    // What the statistics depend on: a sidecar is reused only when all of these match.
    std::string model_sha256;
    std::string input_pattern;  ///< the plate path pattern
    std::string shot_frames;    ///< format_frame_spec(input.frames)
    std::string processing;     ///< model input size and colour path, e.g. "384x224 sRGB->sRGB fp32"
    double percentile_low = 2, percentile_high = 98;
    std::vector<int> sample_frames;
    /// plate_identity() of each sample frame's plate when the statistics were taken (parallel to sample_frames;
    /// empty in a sidecar of depthbatch 0.3 and older, which recorded none): a re-delivered sample plate makes the
    /// sidecar another job's (mismatch).
    std::vector<std::string> sample_plates;
    // The result: percentiles of the raw model output over every pixel of the sampled frames.
    double low = 0, high = 0;
    long long values = 0;  ///< finite values the percentiles were taken over

    /// "" when `other` was made for the same job inputs, else which field differs.
    std::string mismatch(const SequenceStats& other) const;
    /// The sha256 of everything above (inputs and result), in a fixed text: what each frame normalized with these
    /// statistics records (EXR depthbatch/stats_sha256), so that --skip-existing renders it again once the sidecar
    /// in force is another (recomputed after a sample plate was re-delivered, deleted, made for other settings).
    std::string identity() const;
};

/// At most `count` frames of `shot` (sorted), evenly spaced, always including the first and the last.
std::vector<int> sample_frames(const std::vector<int>& shot, int count);

/// The sidecar path for an output pattern: "<folder>/<name with the frame token removed>.stats.json",
/// e.g. depth/shot_depth.####.exr -> depth/shot_depth.stats.json.
std::string default_stats_path(const std::string& output_pattern);

/// What every message about stale statistics tells the user to do, the one spelling of it: "recompute them with
/// `depthbatch stats 'JOB' --overwrite`, then render with --skip-existing: the frames normalized with the old
/// statistics render again". `sidecar`, when not "": the sidecar's path, for a run whose sidecar is not the one the
/// job file alone names (--output or --set moved it): the command then carries `--set depth.stats_file='PATH'`.
std::string recompute_stats_advice(const std::string& job_file, const std::string& sidecar = "");

/// The sample frames of `stats` whose plate has changed since it was taken (`identity_now(frame)`: plate_identity()
/// now), ascending; empty when it recorded none.
std::vector<int> changed_sample_plates(const SequenceStats& stats,
                                       const std::function<std::string(int frame)>& identity_now);

/// Read a sidecar; nullopt if it does not exist. Throws ConfigError if it exists but is not ours.
std::optional<SequenceStats> read_sequence_stats(const std::string& path);

}  // namespace depthbatch
