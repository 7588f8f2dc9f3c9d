// depthbatch — `depthbatch submit JOB` from its flags as written: the options and their defaults (the engine's files
// in JOB.farm beside the job file, 10 frames per task), the plan (farm_submit.h), the files written (or printed for
// --dry-run), for Slurm the submission, and the lines it prints on stdout.
#pragma once

#include "depthbatch/farm_submit.h"

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace depthbatch {

/// The flags of `depthbatch submit` as written ("" = not given).
struct SubmitFlags {
    std::string job, engine = "slurm", out, partition, chunk_size, gpus, target_runtime = "0";
    std::vector<std::string> sets;
    bool dry_run = false;
};

/// Where `depthbatch submit` writes the engine's files (and Slurm's logs) without --out: JOB.farm beside the job
/// file, its stem ("/shows/a/shot.yaml" -> "/shows/a/shot.farm"). `job_path` as given (absolute for submit).
std::string default_farm_dir(const std::string& job_path);

/// The SubmitOptions for `flags`, user paths (the job, --out) resolved against `cwd`: out_dir is --out, else
/// default_farm_dir; chunk_size 10 unless --chunk-size (1 to 1,000,000); gpus_per_task -1 unless --gpus-per-task
/// (0 to 64); target_runtime_s 0 to 604800; the executable is the depthbatch beside this program
/// (install_layout.h: executable_dir). Throws ConfigError "--chunk-size 'X': expected a whole number from 1 to
/// 1000000" (the same for the others) and for an unknown engine. Reads no file.
SubmitOptions submit_options(const SubmitFlags& flags, const std::filesystem::path& cwd);

/// Run `depthbatch submit`: load the job (a bad job fails here, not on the farm), plan it, log the plan, then with
/// --dry-run write each file's text to `out` under "# ---- PATH" and nothing else; without it write the files
/// ("wrote PATH" lines) and, for Slurm, submit them and print the job ids, where the logs go, how to follow and
/// cancel, and "JOB_ID=N". Returns 0; throws ConfigError, InputError, RenderError as the steps do.
int run_submit(const SubmitFlags& flags, std::ostream& out);

}  // namespace depthbatch
