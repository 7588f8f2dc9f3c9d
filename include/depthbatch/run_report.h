// depthbatch — what a finished run's JobReport (run_job.h) says to a person: the frames it did not get to, the frames
// that failed, why its exit code is not 0, and the closing log lines (counts, speed, per-stage times, plate pixels
// replaced, what an interrupted or partial run left). `depthbatch JOB` ends with these; the JSON summary is
// write_summary_json's. The `validate` and `stats` commands' stdout are here too.
#pragma once

#include "depthbatch/job_config.h"
#include "depthbatch/run_job.h"

#include <ostream>
#include <string>
#include <vector>

namespace depthbatch {

/// The frames of report.requested that were neither started (report.frames) nor kept (report.skipped_frames),
/// in the order requested: what a stopped run left to do.
std::vector<int> undone_frames(const JobReport& report);

/// The frames of report.frames whose status is not Ok, in the order they were started.
std::vector<int> failed_frames(const JobReport& report);

/// Why a finished render's exit code is not 0, in one line (an engine's failure line, e.g. OpenJD's openjd_fail:):
/// report.error when set; "interrupted: a stop was requested; re-run with --skip-existing"; "N frame(s) failed
/// (SPEC): FIRST" with the first failed frame's message up to its first newline; else "exit NAME".
std::string failure_reason(const JobReport& report);

/// The closing log lines of a render: "done: R rendered, S skipped, F failed in W s (FPS frames/s) on DEVICE" (kept
/// under -q), the milliseconds per frame of each stage, the plate pixels replaced or clamped over the rendered
/// frames (job.color.hdr named), and for an interrupted run the frames rendered and not (an error line), for a
/// partial one the failed frames.
void log_run_summary(const JobConfig& job, const JobReport& report);

/// `depthbatch validate JOB` / `depthbatch JOB --dry-run`: validate_job(job, deep), its warnings logged, its plan
/// lines on `out`, then "valid: a render would exit N (NAME); nothing was written". Returns that exit code as an
/// int. Throws what validate_job throws.
int run_validate(const JobConfig& job, bool deep, std::ostream& out);

/// `depthbatch stats JOB`: the sequence statistics sidecar alone (job_sequence_stats, before farm chunks run), then
/// "range LOW HIGH (percentiles PL/PH of N values over frames SPEC)" on `out`. Throws ConfigError naming
/// `job_path` for a job whose depth.normalize is not sequence, else what load_job and job_sequence_stats throw.
/// `overwrite` (--overwrite): recompute and replace the sidecar whatever it holds (after a sample plate was
/// re-delivered; then `depthbatch JOB --skip-existing` renders again the frames normalized with the old one).
void run_stats(const std::string& job_path, const std::vector<std::string>& sets, std::ostream& out,
               bool overwrite = false);

}  // namespace depthbatch
