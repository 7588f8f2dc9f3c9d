// Slurm: render.sbatch (an array job, one task per chunk) and stats.sbatch, submitted by slurm_submit.
//
// Quoting: the shell lines carry every path in single quotes (shell_quote). #SBATCH lines are read by sbatch,
// not by a shell, and their --output value is a filename pattern ('%' is special, a backslash turns every
// pattern off, a space ends the value), so no user path goes there: the logs go to logs/NAME.%A_%a.log with
// NAME = farm_safe_name(job stem), relative to the job's working folder, and slurm_submit passes that folder
// as `sbatch --chdir=DIR` (an argument, no pattern, no shell). Job names are farm_safe_name too; --partition
// must be one token.
#include "farm/farm_engines.h"

#include "subprocess.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"

#include <sstream>

namespace depthbatch::farm {
namespace {

std::string shell_words(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : " ") + shell_quote(w);
    return out;
}

void check_partition(const std::string& p) {
    if (p.empty()) return;
    for (unsigned char c : p)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-' || c == ','))
            throw ConfigError("--partition '" + comment(p) +
                              "': a Slurm partition name (or a comma-separated list "
                              "of them) of letters, digits, '.', '_' and '-'");
}

}  // namespace

Files slurm_files(const FarmPlan& plan, const SubmitOptions& o) {
    check_partition(o.partition);
    const auto header = [&](const std::string& name, const std::string& log) {
        std::ostringstream s;
        s << "#!/bin/bash\n"
          << "#SBATCH --job-name=" << name << "\n"
          << "#SBATCH --ntasks=1\n"
          << "#SBATCH --output=logs/" << log << "\n"
          << "#SBATCH --open-mode=append\n";  // a requeued task adds to its log, the first try's lines kept
        if (!o.partition.empty()) s << "#SBATCH --partition=" << o.partition << "\n";
        if (plan.gpus > 0) s << "#SBATCH --gpus-per-task=" << plan.gpus << "\n";
        return s.str();
    };
    const std::string submit_here =
        "# Logs go to logs/ under the job's working folder: submit from the folder of this script\n"
        "# (depthbatch submit runs `sbatch --chdir=" +
        comment(o.out_dir) + " ...`).\n";
    const std::string gpu_note = plan.gpus > 0 ? "# Each task asks for " + std::to_string(plan.gpus) +
                                                     " GPU(s); Slurm sets CUDA_VISIBLE_DEVICES and depthbatch runs on "
                                                     "`cuda`, the first of them.\n"
                                               : "";
    Files files;
    const std::vector<std::string> sets = set_args(plan, o);
    std::ostringstream r;
    r << header("depthbatch-" + plan.safe_name, plan.safe_name + ".%A_%a.log") << "#SBATCH --array=1-" << plan.chunks
      << "\n"
      << "# depthbatch render of " << comment(o.job_path) << ": frames " << format_frame_spec(plan.frames) << " in "
      << describe_chunks(plan, FarmEngine::Slurm) << ", one array task per chunk.\n"
      << "# Array indices are chunk numbers (1.." << plan.chunks
      << "), never frame numbers. Written by "
         "`depthbatch submit`.\n"
      << submit_here << gpu_note
      << "# A task stopped by scancel or pre-emption gets SIGTERM: depthbatch finishes or abandons its frames\n"
      << "# within pipeline.grace_s (default 20 s, under Slurm's default KillWait of 30 s) and exits 130;\n"
      << "# a requeued task resumes with --skip-existing.\n"
      << "set -euo pipefail\n"
      << "mkdir -p " << shell_quote(o.out_dir + "/summaries") << "\n"
      << "exec " << shell_quote(o.executable) << " " << shell_quote(o.job_path) << " --chunk \"${SLURM_ARRAY_TASK_ID}/"
      << plan.chunks << "\" --skip-existing"
      << " --summary " << shell_quote(o.out_dir + "/summaries/" + plan.safe_name + ".chunk-")
      << "\"${SLURM_ARRAY_TASK_ID}\".json";
    if (!sets.empty()) r << " " << shell_words(sets);
    r << "\n";
    if (plan.needs_first_task()) {
        const FirstTask first = first_task(plan, o);
        std::ostringstream st;
        st << header("depthbatch-" + plan.safe_name + "-" + first.stem, plan.safe_name + "." + first.stem + ".%j.log")
           << "# depthbatch " << first.title << " of " << comment(o.job_path)
           << (plan.needs_stats ? " (depth.normalize: sequence)" : " (camera.solve)") << ", computed\n"
           << "# once before the render array, which depends on it (--dependency=afterok).\n"
           << submit_here << "set -euo pipefail\n"
           << "exec " << shell_words(first.words) << "\n";
        files.push_back({first.stem + ".sbatch", st.str()});
    }
    files.push_back({"render.sbatch", r.str()});
    return files;
}

}  // namespace depthbatch::farm

namespace depthbatch {

std::pair<std::string, std::string> slurm_submit(const FarmPlan& plan, const SubmitOptions& o) {
    const auto sbatch = [&](std::vector<std::string> argv) {
        int status = 0;
        std::string out = detail::run_capture(argv, status);
        while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
        if (status != 0 || out.empty() || out.find_first_not_of("0123456789;") != std::string::npos)
            throw RenderError("sbatch " + farm::comment(argv.back()) + " failed (exit " + std::to_string(status) +
                              "): " + out);
        return out.substr(0, out.find(';'));  // --parsable: "jobid" or "jobid;cluster"
    };
    const std::string chdir = "--chdir=" + o.out_dir;
    std::string stats_id;
    if (plan.needs_first_task())
        stats_id =
            sbatch({"sbatch", "--parsable", chdir, o.out_dir + "/" + farm::first_task(plan, o).stem + ".sbatch"});
    std::vector<std::string> argv = {"sbatch", "--parsable", chdir};
    if (!stats_id.empty()) {
        argv.push_back("--dependency=afterok:" + stats_id);
        argv.push_back("--kill-on-invalid-dep=yes");
    }
    argv.push_back(o.out_dir + "/render.sbatch");
    return {stats_id, sbatch(argv)};
}

}  // namespace depthbatch
