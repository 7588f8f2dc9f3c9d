// Deadline 10: job_info.job + plugin_info.job (CommandLine plugin, <STARTFRAME>/<ENDFRAME>), the same pair for
// the statistics job, submit.sh (deadlinecommand, chaining JobDependencies) and JobPreLoad.py (GPUs).
//
// Quoting: the .job files are key=value lines (the value runs to the end of the line: any byte but a newline).
// The CommandLine plugin starts Executable with the Arguments string through .NET's Process, which splits it
// by the Microsoft C runtime rules (no shell: nothing is expanded), so each word is windows_argv_quote'd.
// GPUs: Deadline gives a Worker's GPU affinity to plugins, not to a CommandLine process. A GPU job's plugin info
// carries DepthbatchGPUsPerTask=N; JobPreLoad.py (written here; the studio installs it once as
// <repository>/custom/plugins/CommandLine/JobPreLoad.py) sets CUDA_VISIBLE_DEVICES from the Worker's GPU
// affinity (or, without one, from the task's render thread, as Deadline's own GPU plugins do) for those jobs
// only, and the task runs on `cuda`.
#include "farm/farm_engines.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"

#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;

namespace depthbatch::farm {
namespace {

const char* kJobPreLoad =
    R"PY(# JobPreLoad.py for Deadline 10's CommandLine plugin, written by `depthbatch submit --engine deadline`.
# Install once: copy to <repository>/custom/plugins/CommandLine/JobPreLoad.py (merge it into a JobPreLoad.py
# already there: Deadline runs one per plugin). Before each task of a CommandLine job whose plugin info says
# DepthbatchGPUsPerTask=N (N > 0: depthbatch jobs on cuda), it sets CUDA_VISIBLE_DEVICES to the N GPUs of this
# task: the Worker's GPU affinity (Worker Properties > GPU Affinity) cut per concurrent task, or without an
# affinity the GPUs N*thread .. N*thread+N-1, as Deadline's own GPU plugins do. Other jobs are left alone.


def depthbatch_cuda_devices(gpus_per_task, thread, override, affinity):
    """CUDA_VISIBLE_DEVICES for a task: a comma-separated list of GPU indices, or None for no GPUs."""
    if gpus_per_task <= 0:
        return None
    if override:
        gpus = [int(g) for g in affinity]
        if not gpus:
            return None
        chosen = gpus[thread * gpus_per_task:(thread + 1) * gpus_per_task]
        if len(chosen) < gpus_per_task:   # more concurrent tasks than the affinity holds: share from the start
            chosen = [gpus[(thread * gpus_per_task + i) % len(gpus)] for i in range(gpus_per_task)]
    else:
        chosen = list(range(thread * gpus_per_task, (thread + 1) * gpus_per_task))
    return ",".join(str(g) for g in chosen)


def __main__(deadlinePlugin):
    try:
        n = int(deadlinePlugin.GetPluginInfoEntryWithDefault("DepthbatchGPUsPerTask", "0") or 0)
    except ValueError:
        n = 0
    if n <= 0:
        return
    devices = depthbatch_cuda_devices(n, deadlinePlugin.GetThreadNumber(), deadlinePlugin.OverrideGpuAffinity(),
                                      list(deadlinePlugin.GpuAffinity()))
    if devices is None:
        deadlinePlugin.LogWarning("depthbatch: this Worker's GPU affinity is empty; CUDA_VISIBLE_DEVICES left as it is")
        return
    deadlinePlugin.SetProcessEnvironmentVariable("CUDA_VISIBLE_DEVICES", devices)
    deadlinePlugin.LogInfo("depthbatch: CUDA_VISIBLE_DEVICES=%s (render thread %d, %d GPU(s) per task)"
                           % (devices, deadlinePlugin.GetThreadNumber(), n))
)PY";

/// A key=value line's value: any byte but a line break.
std::string value(const std::string& key, const std::string& text) {
    if (text.find_first_of("\r\n") != std::string::npos)
        throw ConfigError(key + " '" + comment(text) +
                          "' holds a line break, which Deadline's key=value job files "
                          "cannot carry: rename it");
    return text;
}

std::string arguments(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : " ") + windows_argv_quote(value("argument", w));
    return out;
}

}  // namespace

Files deadline_files(const FarmPlan& plan, const SubmitOptions& o) {
    Files files;
    const std::string out_dir = fs::path(plan.output_path).parent_path().string();
    const std::string gpus = plan.gpus > 0 ? "DepthbatchGPUsPerTask=" + std::to_string(plan.gpus) + "\n" : "";
    // One summary per task, as Slurm's: the job's pipeline.summary would be one file every task replaces.
    const auto render =
        render_words(plan, o,
                     {"--range", "<STARTFRAME>-<ENDFRAME>", "--skip-existing", "--summary",
                      o.out_dir + "/summaries/" + plan.safe_name + ".frames-<STARTFRAME>-<ENDFRAME>.json"});
    std::ostringstream ji, pi;
    ji << "Plugin=CommandLine\n"
       << "Name=depthbatch " << plan.safe_name << "\n"
       << "Comment=" << value("the job file", "depth pass of " + o.job_path) << "\n"
       << "Frames=" << format_frame_spec(plan.frames) << "\n"
       << "ChunkSize=" << plan.chunk_size << "\n"
       << "OutputDirectory0=" << value("output.path", out_dir) << "\n"
       << "OutputFilename0=" << value("output.path", fs::path(plan.output_path).filename().string()) << "\n";
    pi << "Executable=" << value("the executable", o.executable) << "\n"
       << "Arguments=" << arguments(std::vector<std::string>(render.begin() + 1, render.end())) << "\n"
       << "Shell=default\nShellExecute=False\nSingleFramesOnly=False\n"
       << gpus;
    std::ostringstream submit;
    submit << "#!/bin/bash\n"
           << "# Submit the depthbatch render of " << comment(o.job_path)
           << " to Deadline 10 (written by `depthbatch submit`).\n";
    if (plan.gpus > 0)
        submit << "# A GPU job: the Repository needs JobPreLoad.py (beside this script) as\n"
               << "# <repository>/custom/plugins/CommandLine/JobPreLoad.py, else every task sees all GPUs of its "
                  "Worker.\n";
    submit << "set -euo pipefail\ncd \"$(dirname \"$0\")\"\n";
    if (plan.needs_first_task()) {
        const FirstTask first = first_task(plan, o);
        std::ostringstream sji, spi;
        sji << "Plugin=CommandLine\nName=depthbatch " << plan.safe_name << " " << first.title
            << "\nFrames=0\nChunkSize=1\n";
        const auto& stats = first.words;
        spi << "Executable=" << value("the executable", o.executable)
            << "\nArguments=" << arguments(std::vector<std::string>(stats.begin() + 1, stats.end()))
            << "\nShell=default\nShellExecute=False\nSingleFramesOnly=False\n"
            << gpus;
        files.push_back({first.stem + "_job_info.job", sji.str()});
        files.push_back({first.stem + "_plugin_info.job", spi.str()});
        submit << "stats=$(deadlinecommand " << first.stem << "_job_info.job " << first.stem
               << "_plugin_info.job | sed -n 's/^JobID=//p')\n"
               << "[ -n \"$stats\" ] || { echo 'depthbatch: the " << first.title
               << " job was not accepted' >&2; exit 1; }\n"
               << "{ cat job_info.job; echo \"JobDependencies=$stats\"; } > job_info.submitted.job\n"
               << "deadlinecommand job_info.submitted.job plugin_info.job\n";
    } else {
        submit << "deadlinecommand job_info.job plugin_info.job\n";
    }
    files.push_back({"job_info.job", ji.str()});
    files.push_back({"plugin_info.job", pi.str()});
    files.push_back({"submit.sh", submit.str()});
    files.push_back({"JobPreLoad.py", kJobPreLoad});
    return files;
}

}  // namespace depthbatch::farm
