// depthbatch (internal) — run_job.h's JSON summary written into a Publication.
// What the public header cannot say: these functions write through the job's output guard (src/output/), whose
// types are not part of the public API (docs/code-map.md).
#pragma once

#include "output/output_guard.h"

#include "depthbatch/run_job.h"

namespace depthbatch {

/// Write `report` as the job's JSON summary (schema "depthbatch-summary/1", docs/farm.md "Summary JSON"): job
/// file and the sha256 of its text, frames requested/rendered/skipped/failed with reasons, per-frame
/// seconds and stage milliseconds, device, model name and sha256, depthbatch version, exit code. Written
/// into `out` (a Publication of OutputRole::Summary that the job's OutputGuard::open made) and published
/// atomically (a reader never sees half a file). Throws RenderError if the file cannot be written.
void write_summary_json(const JobReport& report, Publication& out);

}  // namespace depthbatch
