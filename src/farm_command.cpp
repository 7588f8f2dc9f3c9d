// depthbatch — `depthbatch submit` from its flags: see farm_command.h.
#include "depthbatch/farm_command.h"

#include "farm/farm_engines.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/install_layout.h"
#include "depthbatch/log.h"

namespace depthbatch {

namespace fs = std::filesystem;

std::string default_farm_dir(const std::string& job_path) {
    const fs::path job_file(job_path);
    return (job_file.parent_path() / (job_file.stem().string() + ".farm")).string();
}

SubmitOptions submit_options(const SubmitFlags& f, const fs::path& cwd) {
    const auto integer = [](const std::string& flag, const std::string& text, int lo, int hi) {
        if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos ||
            std::stoi(text) < lo || std::stoi(text) > hi)
            throw ConfigError(flag + " '" + printable(text) + "': expected a whole number from " + std::to_string(lo) +
                              " to " + std::to_string(hi));
        return std::stoi(text);
    };
    SubmitOptions o;
    o.engine = farm_engine_from_name(f.engine);
    o.job_path = resolve_user_path(cwd, f.job);
    o.sets = f.sets;
    o.chunk_size_default = f.chunk_size.empty();  // not given (an empty value is refused before this)
    o.chunk_size = o.chunk_size_default ? 10 : integer("--chunk-size", f.chunk_size, 1, 1000000);
    o.gpus_per_task = f.gpus.empty() ? -1 : integer("--gpus-per-task", f.gpus, 0, 64);
    o.target_runtime_s = integer("--target-runtime", f.target_runtime, 0, 7 * 24 * 3600);
    o.partition = f.partition;
    o.executable = (executable_dir() / "depthbatch").string();
    o.out_dir = f.out.empty() ? default_farm_dir(o.job_path) : resolve_user_path(cwd, f.out);
    return o;
}

int run_submit(const SubmitFlags& f, std::ostream& out) {
    SubmitOptions o = submit_options(f, fs::current_path());
    const JobConfig job = load_job(o.job_path, o.sets);  // a bad job fails here, not on the farm
    if (o.engine == FarmEngine::Slurm) o.max_array_size = slurm_max_array_size();
    const FarmPlan plan = plan_farm_job(job, o);
    if (!plan.note.empty()) log_warning(plan.note);
    const auto files = farm_job_files(plan, o);
    log_info(farm_engine_name(o.engine), ": ", plan.frames.size(), " frames (", format_frame_spec(plan.frames), ") in ",
             describe_chunks(plan, o.engine),
             plan.needs_first_task() ? ", after one " + farm::first_task(plan, o).title + " task" : std::string());
    if (f.dry_run) {
        for (const auto& [name, text] : files)
            out << "# ---- " << (fs::path(o.out_dir) / name).string() << "\n" << text;
        log_info("dry run: nothing written or submitted");
        return 0;
    }
    for (const std::string& p : write_farm_files(job, files, o)) out << "wrote " << p << "\n";
    if (o.engine != FarmEngine::Slurm) return 0;
    const auto [stats_id, array_id] = slurm_submit(plan, o);
    if (!stats_id.empty()) out << "submitted " << farm::first_task(plan, o).title << " job " << stats_id << "\n";
    out << "submitted array job " << array_id << " (tasks 1-" << plan.chunks << ")"
        << (stats_id.empty() ? "" : ", starting after job " + stats_id + " succeeds") << "\n"
        << "logs:    " << o.out_dir << "/logs/" << plan.safe_name << "." << array_id << "_<task>.log\n"
        << "follow:  squeue -j " << array_id << (stats_id.empty() ? "" : "," + stats_id) << "\n"
        << "after:   sacct -j " << array_id << " (with accounting), or scontrol show job " << array_id << "\n"
        << "cancel:  scancel " << array_id << " (tasks stop within pipeline.grace_s; resubmit to resume)\n";
    out << "JOB_ID=" << array_id << "\n" << std::flush;
    return 0;
}

}  // namespace depthbatch
