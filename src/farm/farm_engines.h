// depthbatch — internal: one function per farm engine (one file each in src/farm/), behind farm_job_files
// (include/depthbatch/farm_submit.h), and what they share.
#pragma once

#include "depthbatch/farm_submit.h"

#include <string>
#include <utility>
#include <vector>

namespace depthbatch::farm {

using Files = std::vector<std::pair<std::string, std::string>>;

Files slurm_files(const FarmPlan& plan, const SubmitOptions& o);     // src/farm/slurm.cpp
Files openjd_files(const FarmPlan& plan, const SubmitOptions& o);    // src/farm/openjd.cpp
Files deadline_files(const FarmPlan& plan, const SubmitOptions& o);  // src/farm/deadline.cpp
Files opencue_files(const FarmPlan& plan, const SubmitOptions& o);   // src/farm/opencue.cpp
Files tractor_files(const FarmPlan& plan, const SubmitOptions& o);   // src/farm/tractor.cpp

/// The --set arguments every task passes on, as separate words: the user's, then the plan's (task_sets).
std::vector<std::string> set_args(const FarmPlan& plan, const SubmitOptions& o);

/// The depthbatch command words of a frame task (executable, job, then `tail`, then the --set words) and of
/// the statistics task (executable, "stats", job, --set words).
std::vector<std::string> render_words(const FarmPlan& plan, const SubmitOptions& o,
                                      const std::vector<std::string>& tail);
std::vector<std::string> stats_words(const FarmPlan& plan, const SubmitOptions& o);
/// The task before the chunks (FarmPlan::needs_first_task): what it is called and what it runs.
struct FirstTask {
    std::string title;  ///< "sequence statistics", "camera solve", "camera solve and sequence statistics"
    std::string name;   ///< an identifier: "SequenceStatistics" (with statistics, as before) or "CameraSolve"
    std::string stem;   ///< the engine files' stem: "stats" or "solve"
    std::string verb;   ///< the depthbatch subcommand: "stats" or "solve"
    std::vector<std::string> words;  ///< the whole command (executable, verb, job, --set words)
};
FirstTask first_task(const FarmPlan& plan, const SubmitOptions& o);

/// `text` for a one-line comment: control bytes written as \n, \t, \xNN (printable), so no path ends a comment.
std::string comment(const std::string& text);

/// The chunk `i` (1-based) of the plan's frames as a frame spec ("1001-1010").
std::string chunk_list(const FarmPlan& plan, int i);

}  // namespace depthbatch::farm
