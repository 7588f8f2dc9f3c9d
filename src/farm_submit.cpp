#include "depthbatch/farm_submit.h"
#include "depthbatch/run_job.h"
#include "depthbatch/depth_model.h"
#include "depthbatch/video_window_stage.h"

#include "farm/farm_engines.h"
#include "job_outputs.h"
#include "subprocess.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/log.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <filesystem>
#include <fstream>
#include <set>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;

namespace depthbatch {

namespace farm {

std::vector<std::string> set_args(const FarmPlan& plan, const SubmitOptions& o) {
    std::vector<std::string> out;
    for (const auto* list : {&o.sets, &plan.task_sets})
        for (const auto& s : *list) {
            out.push_back("--set");
            out.push_back(s);
        }
    return out;
}

std::vector<std::string> render_words(const FarmPlan& plan, const SubmitOptions& o,
                                      const std::vector<std::string>& tail) {
    std::vector<std::string> words = {o.executable, o.job_path};
    words.insert(words.end(), tail.begin(), tail.end());
    const auto sets = set_args(plan, o);
    words.insert(words.end(), sets.begin(), sets.end());
    return words;
}

std::vector<std::string> stats_words(const FarmPlan& plan, const SubmitOptions& o) {
    std::vector<std::string> words = {o.executable, "stats", o.job_path};
    const auto sets = set_args(plan, o);
    words.insert(words.end(), sets.begin(), sets.end());
    return words;
}

FirstTask first_task(const FarmPlan& plan, const SubmitOptions& o) {
    FirstTask t;
    if (plan.needs_stats) {
        t.title = plan.needs_solve ? "camera solve and sequence statistics" : "sequence statistics";
        t.name = "SequenceStatistics", t.stem = "stats", t.verb = "stats";
        t.words = stats_words(plan, o);
    } else {
        t.title = "camera solve", t.name = "CameraSolve", t.stem = "solve", t.verb = "solve";
        t.words = {o.executable, "solve", o.job_path};
        const auto sets = set_args(plan, o);
        t.words.insert(t.words.end(), sets.begin(), sets.end());
    }
    return t;
}

std::string comment(const std::string& text) { return printable(text); }

std::string chunk_list(const FarmPlan& plan, int i) {
    return format_frame_spec(chunk_frames(plan.frames, i, plan.chunks));
}

}  // namespace farm

FarmEngine farm_engine_from_name(const std::string& name) {
    for (FarmEngine e :
         {FarmEngine::Slurm, FarmEngine::OpenJD, FarmEngine::Deadline, FarmEngine::OpenCue, FarmEngine::Tractor})
        if (name == farm_engine_name(e)) return e;
    throw ConfigError("--engine '" + name + "' is not one of: slurm, openjd, deadline, opencue, tractor");
}

const char* farm_engine_name(FarmEngine engine) {
    switch (engine) {
    case FarmEngine::Slurm: return "slurm";
    case FarmEngine::OpenJD: return "openjd";
    case FarmEngine::Deadline: return "deadline";
    case FarmEngine::OpenCue: return "opencue";
    case FarmEngine::Tractor: return "tractor";
    }
    return "?";
}

std::string openjd_range_expression(const std::vector<int>& frames) {
    std::string s = format_frame_spec(frames);
    std::replace(s.begin(), s.end(), 'x', ':');
    return s;
}

std::vector<int> task_frame_counts(const FarmPlan& plan, FarmEngine engine) {
    const long n = static_cast<long>(plan.frames.size());
    std::vector<int> counts;
    for (long i = 1; i <= plan.chunks; ++i) {
        if (engine == FarmEngine::Slurm || engine == FarmEngine::Tractor)  // --chunk I/N, as chunk_frames cuts
            counts.push_back(static_cast<int>(n * i / plan.chunks - n * (i - 1) / plan.chunks));
        else counts.push_back(static_cast<int>(std::min<long>(plan.chunk_size, n - (i - 1) * plan.chunk_size)));
    }
    return counts;
}

std::string describe_chunks(const FarmPlan& plan, FarmEngine engine) {
    const std::vector<int> counts = task_frame_counts(plan, engine);
    const std::string chunks = std::to_string(plan.chunks) + (plan.chunks == 1 ? " chunk of " : " chunks of ");
    if (counts.empty()) return chunks + "0 frames";
    const auto [least, most] = std::minmax_element(counts.begin(), counts.end());
    if (*least == *most) return chunks + std::to_string(*most) + (*most == 1 ? " frame" : " frames");
    if (counts.back() == *least && std::count(counts.begin(), counts.end(), *most) == plan.chunks - 1)
        return chunks + std::to_string(*most) + " frames (the last " + std::to_string(counts.back()) + ")";
    return chunks + std::to_string(*least) + "-" + std::to_string(*most) + " frames";
}

FarmPlan plan_farm_job(const JobConfig& job, const SubmitOptions& o) {
    if (o.chunk_size < 1) throw ConfigError("--chunk-size must be at least 1 frame");
    FarmPlan plan;
    plan.name = fs::path(o.job_path).stem().string();
    plan.safe_name = farm_safe_name(plan.name);
    plan.output_path = job.output.path;
    plan.frames = shot_frames(job.input);
    if (plan.frames.empty()) throw InputError("no frames on disk match input.path '" + job.input.path + "'");
    plan.needs_stats = job.depth.normalize == Normalization::Sequence;
    bool focal_dependent = false;  // the model's metres need the camera (DA3 metric)
    if (job.camera_solve.enabled() && job.model.path != "default") try {
            const auto c = DepthModel::embedded_contract(job.model.path);
            focal_dependent = c && c->reference_focal_px > 0;
        } catch (const Error&) {}
    plan.needs_solve = camera_solve_in_force(job, focal_dependent);
    const long n = static_cast<long>(plan.frames.size());
    plan.chunk_size = static_cast<int>(std::min<long>(o.chunk_size, n));
    plan.chunks = static_cast<int>((n + plan.chunk_size - 1) / plan.chunk_size);
    // A video model's chunks run their own windows plus a bounded context (docs/video-models.md "Video models": farm chunks): by
    // default, chunks of a multiple of the window stride whose windows total at most 1.3x the whole render's.
    std::optional<ModelContract> contract;
    try {
        if (model_input_frames(job.model.path) > 1) contract = DepthModel::embedded_contract(job.model.path);
    } catch (const Error&) {}
    if (contract && contract->multi_frame()) {
        const TemporalWindowing& t = contract->temporal;
        const int frames = static_cast<int>(n);
        if (o.chunk_size_default) {
            plan.chunk_size = video_chunk_size(t, frames);
            plan.chunks = (frames + plan.chunk_size - 1) / plan.chunk_size;
        }
        long total = 0;
        int first = 0;
        for (const int count : task_frame_counts(plan, o.engine)) {
            if (count > 0) total += static_cast<long>(video_chunk_windows(t, frames, first, first + count - 1).size());
            first += count;
        }
        char ratio[32];
        std::snprintf(ratio, sizeof ratio, "%.2f", static_cast<double>(total) / window_count(t, frames));
        plan.note = "video model (input.frames " + std::to_string(contract->frames) + ", align " + align_name(t.align) +
                    "): " + describe_chunks(plan, o.engine) + " run " + std::to_string(total) + " windows of " +
                    std::to_string(t.window) + " frames in all, " + ratio + "x the whole render's " +
                    std::to_string(window_count(t, frames)) +
                    (o.chunk_size_default ? " (the default chunk size: a multiple of the window stride " +
                                                std::to_string(t.stride()) + " within 1.3x, or the whole shot)"
                                          : "");
    }
    // Slurm refuses array indices >= MaxArraySize; ours run 1..chunks.
    if (o.engine == FarmEngine::Slurm && o.max_array_size > 1 && plan.chunks > o.max_array_size - 1) {
        const long most = o.max_array_size - 1;
        const int fitted = static_cast<int>((n + most - 1) / most);
        plan.note = std::to_string(plan.chunks) + " chunks of " + std::to_string(plan.chunk_size) +
                    " frames need array "
                    "indices up to " +
                    std::to_string(plan.chunks) + ", but this cluster's MaxArraySize is " +
                    std::to_string(o.max_array_size) + " (indices 0-" + std::to_string(most) + "): using chunks of " +
                    std::to_string(fitted) + " frames (" + std::to_string((n + fitted - 1) / fitted) + " chunks)";
        plan.chunk_size = fitted;
        plan.chunks = static_cast<int>((n + fitted - 1) / fitted);
    }
    // GPUs: the engine hands each task its GPUs through CUDA_VISIBLE_DEVICES, renumbered from 0 in the task.
    const std::string device = job.model.device.name();
    const bool cuda = job.model.device.is_cuda(), cuda_n = cuda && job.model.device.index >= 0;
    plan.gpus = o.gpus_per_task >= 0 ? o.gpus_per_task : (cuda ? 1 : 0);
    if (plan.gpus > 0 && cuda_n) plan.task_sets.push_back("model.device=cuda");
    const auto add_note = [&](const std::string& text) { plan.note += (plan.note.empty() ? "" : "; ") + text; };
    if (plan.gpus > 0 && cuda_n)
        add_note("model.device " + device + " runs as `cuda` on the farm: the first GPU the engine gives the task");
    if (plan.gpus > 0 && job.model.device.kind == ModelDevice::Kind::Cpu)
        add_note("each task asks for " + std::to_string(plan.gpus) +
                 " GPU(s) but model.device is cpu: they stay unused");
    if (plan.gpus == 0 && cuda)
        add_note("model.device is " + device +
                 " but --gpus-per-task 0 asks the engine for no GPU: the tasks use "
                 "whatever GPU their machine shows them");
    return plan;
}

std::vector<std::pair<std::string, std::string>> farm_job_files(const FarmPlan& plan, const SubmitOptions& o) {
    switch (o.engine) {
    case FarmEngine::Slurm: return farm::slurm_files(plan, o);
    case FarmEngine::OpenJD: return farm::openjd_files(plan, o);
    case FarmEngine::Deadline: return farm::deadline_files(plan, o);
    case FarmEngine::OpenCue: return farm::opencue_files(plan, o);
    case FarmEngine::Tractor: return farm::tractor_files(plan, o);
    }
    return {};
}

std::vector<std::string> write_farm_files(const JobConfig& job,
                                          const std::vector<std::pair<std::string, std::string>>& files,
                                          const SubmitOptions& o) {
    const fs::path dir(o.out_dir);
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
        throw ConfigError("submit --out: " + o.out_dir + " exists and is not a folder");
    const OutputGuard guard = job_output_guard(job);
    // Every file is checked before the first is written: a refusal leaves the folder as it was.
    for (const auto& [name, text] : files) guard.check((dir / name).string(), OutputRole::FarmFile, "submit --out");
    guard.check((dir / output_marker::farm_manifest).string(), OutputRole::FarmFile, "submit --out");
    fs::create_directories(dir, ec);
    if (ec) throw RenderError("submit --out: cannot create " + o.out_dir + ": " + ec.message());
    if (o.engine == FarmEngine::Slurm) fs::create_directories(dir / "logs", ec);
    // The manifest first (listing what this submit writes), so that every file below is of its kind.
    std::string manifest = "# files written by depthbatch submit; a later submit replaces only these\n";
    std::set<std::string> names;
    {
        std::ifstream in(dir / output_marker::farm_manifest);
        for (std::string line; std::getline(in, line);)
            if (!line.empty() && line[0] != '#') names.insert(line);
    }
    for (const auto& f : files) names.insert(f.first);
    names.insert(output_marker::farm_manifest);
    for (const auto& n : names) manifest += n + "\n";
    std::vector<std::pair<std::string, std::string>> all = {{output_marker::farm_manifest, manifest}};
    all.insert(all.end(), files.begin(), files.end());
    std::vector<std::string> written;
    for (const auto& [name, text] : all) {
        const fs::path p = dir / name;
        Publication pub = guard.open(p.string(), OutputRole::FarmFile, "submit --out");
        {
            std::ofstream out(pub.temp_path());
            out << text;
            out.close();
            if (!out) throw RenderError(p.string() + ": cannot write");
        }
        if (p.extension() == ".sbatch" || p.extension() == ".sh")
            fs::permissions(pub.temp_path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                                 fs::perms::others_read | fs::perms::others_exec);
        pub.publish(true);
        if (name != output_marker::farm_manifest) written.push_back(p.string());
    }
    return written;
}

int slurm_max_array_size() {
    int status = 0;
    const std::string out = detail::run_capture({"scontrol", "show", "config"}, status);
    if (status != 0) return 0;
    static const std::regex re(R"(MaxArraySize\s*=\s*(\d+))");
    std::smatch m;
    if (!std::regex_search(out, m, re)) return 0;
    return std::stoi(m[1]);
}

}  // namespace depthbatch
