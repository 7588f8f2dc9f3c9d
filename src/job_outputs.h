// depthbatch (internal) — where a job puts its files: the paths it writes in each output role, the defaults, and
// the job's output guard built from them.
//
// The layer above the role table (output_roles.h: what a kind of file is) and the guard (output_guard.h: the one way to write a file):
// those two know nothing of a job, so the writers that receive a Publication never reach the job through them.
// This file knows the job (job_config.h) and is read by the commands: the render (job_plan.cpp), the summary
// (job_report.cpp), review and submit.
#pragma once

#include "output/output_guard.h"
#include "output/output_roles.h"

#include <string>
#include <vector>

namespace depthbatch {

struct JobConfig;

/// The paths (frame patterns for per-frame roles) `job` writes in `role`, in the order written; empty when the
/// job writes none in it (a role set only by a flag, such as submit --out, or switched off). The statistics
/// sidecar: depth.stats_file, else default_stats_path(output.path), only with depth.normalize: sequence; the
/// review sheet: pipeline.review and its .html page. Never throws.
std::vector<std::string> job_output_paths(const JobConfig& job, OutputRole role);

/// The first of job_output_paths ("" when none): e.g. the statistics sidecar.
std::string job_output_path(const JobConfig& job, OutputRole role);

/// The review sheet's path when neither pipeline.review nor review --out names one: JOB-NAME.review.png in
/// output.path's folder.
std::string default_review_path(const JobConfig& job);

/// The guard of `job`, the one place a job's guard is built: plates (frames `shot` and those on disk), the job
/// file, the model (`model_path`; "" or "default": job.model.path, "default" resolved to
/// DepthModel::default_model_path()), the OCIO config in force, the camera's .chan; outputs: every role's
/// job_output_paths, per-frame roles for `shot`. Throws ConfigError when two of them are the same file (see
/// OutputGuard), ModelError when the default model is not prepared.
OutputGuard job_output_guard(const JobConfig& job, const std::vector<int>& shot, const std::string& model_path = "");

/// The same for the shot of `job` (shot_frames(job.input)): the guard of a command that renders nothing (review,
/// submit, a failure summary).
OutputGuard job_output_guard(const JobConfig& job);

}  // namespace depthbatch
