// depthbatch (internal) — sequence_stats.h's sidecar written through the job's output guard.
// What the public header cannot say: these functions write through the job's output guard (src/output/), whose
// types are not part of the public API (docs/code-map.md).
#pragma once

#include "output/output_guard.h"

#include "depthbatch/sequence_stats.h"

#include <functional>
#include <string>
#include <vector>

namespace depthbatch {

/// Write `stats` into `out` (a Publication of OutputRole::StatsSidecar that OutputGuard::open made) and publish
/// it. With replace = false an existing file is kept and false is returned (another task won); with
/// replace = true it is replaced. Throws RenderError on I/O failure.
bool write_sequence_stats(Publication& out, const SequenceStats& stats, bool replace);

/// The sidecar policy (sequence_stats.h's header) in one place. The sidecar at `path` is used when it was made for
/// the same job inputs as `want` (mismatch() is ""). One made for another job throws OutputExistsError, naming
/// `advice` (what fixes it, recompute_stats_advice), unless `replace`: then it is recomputed.
/// `force` (depthbatch stats --overwrite): recomputed and replaced whatever the sidecar holds. Otherwise the percentiles want.percentile_low/high of every
/// finite value that `frame_values(f)` returns for the frames f of want.sample_frames (the raw model output,
/// any units) are taken and written atomically; when another task wrote a sidecar first, theirs is used if
/// it matches, else OutputExistsError. Returns the statistics in force. Throws what frame_values throws, and
/// RenderError when the sidecar cannot be written. The sidecar is written through `guard` (OutputGuard::open).
SequenceStats reuse_or_compute_sequence_stats(const OutputGuard& guard, const std::string& path, SequenceStats want,
                                              bool replace, bool force, const std::string& advice,
                                              const std::function<std::vector<float>(int frame)>& frame_values);

}  // namespace depthbatch
