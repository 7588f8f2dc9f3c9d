#include "job_outputs.h"

#include "depthbatch/color_transform.h"
#include "depthbatch/depth_model.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/job_config.h"
#include "depthbatch/sequence_stats.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;

namespace depthbatch {
namespace {

std::vector<std::string> one_or_none(const std::string& path) {
    return path.empty() ? std::vector<std::string>{} : std::vector<std::string>{path};
}
std::vector<std::string> no_paths(const JobConfig&) { return {}; }
std::vector<std::string> depth_paths(const JobConfig& job) { return one_or_none(job.output.path); }
std::vector<std::string> preview_paths(const JobConfig& job) { return one_or_none(job.output.preview.path); }
std::vector<std::string> summary_paths(const JobConfig& job) { return one_or_none(job.pipeline.summary); }
std::vector<std::string> stats_paths(const JobConfig& job) {
    if (job.depth.normalize != Normalization::Sequence) return {};
    return {job.depth.stats_file.empty() ? default_stats_path(job.output.path) : job.depth.stats_file};
}
std::vector<std::string> camera_solve_paths(const JobConfig& job) {  // the .chan, its .usda and report
    if (!job.camera_solve.enabled()) return {};
    const std::string chan =
        job.camera_solve.chan.empty() ? default_camera_solve_path(job.output.path) : job.camera_solve.chan;
    return {chan, camera_solve_usda_path(chan), camera_solve_report_path(chan)};
}
std::vector<std::string> review_sheet_paths(const JobConfig& job) {  // the PNG and its page
    if (job.pipeline.review.empty()) return {};
    return {job.pipeline.review, fs::path(job.pipeline.review).replace_extension(".html").string()};
}

/// Where a job puts each role's files: one row per OutputRole (output_roles.cpp has the role's kind).
struct JobPathsRow {
    OutputRole role;
    std::vector<std::string> (*paths)(const JobConfig& job);
};
constexpr JobPathsRow kJobPaths[] = {
    {OutputRole::DepthFrame, depth_paths},
    {OutputRole::Preview, preview_paths},
    {OutputRole::Summary, summary_paths},
    {OutputRole::StatsSidecar, stats_paths},
    {OutputRole::ReviewSheet, review_sheet_paths},
    {OutputRole::FarmFile, no_paths},  // submit --out: the command's flag, never a job key
    {OutputRole::CameraSolve, camera_solve_paths},
};

}  // namespace

std::vector<std::string> job_output_paths(const JobConfig& job, OutputRole role) {
    for (const JobPathsRow& row : kJobPaths)
        if (row.role == role) return row.paths(job);
    throw std::logic_error(std::string("output role '") + output_role_name(role) +
                           "' without a row in src/output/job_outputs.cpp");
}

std::string job_output_path(const JobConfig& job, OutputRole role) {
    const std::vector<std::string> paths = job_output_paths(job, role);
    return paths.empty() ? "" : paths.front();
}

std::string default_review_path(const JobConfig& job) {
    return (fs::path(job.output.path).parent_path() / (fs::path(job.job_file).stem().string() + ".review.png"))
        .string();
}

OutputGuard job_output_guard(const JobConfig& job) { return job_output_guard(job, shot_frames(job.input)); }

OutputGuard job_output_guard(const JobConfig& job, const std::vector<int>& shot, const std::string& model_path) {
    OutputGuard g;
    const FrameSequence plates(job.input.path);
    std::vector<int> frames = shot;
    for (int f : plates.frames_on_disk()) frames.push_back(f);
    std::sort(frames.begin(), frames.end());
    frames.erase(std::unique(frames.begin(), frames.end()), frames.end());
    g.protect_frames(plates, frames, "plate frame");
    g.protect(job.job_file, "the job file");
    // The model: the loaded one's path, else job.model.path ("default": the prepared model the job would load).
    std::string model = model_path.empty() || model_path == "default" ? job.model.path : model_path;
    if (model == "default") model = DepthModel::default_model_path();
    g.protect(model, "the model");
    // The OCIO config in force (color.config, else $OCIO, else the shipped one) and the camera's .chan: inputs.
    g.protect(ColorTransform::resolve_config_path(job.color.config),
              job.color.config.empty() ? "the OCIO config in force" : "the OCIO config (color.config)");
    g.protect(job.camera.chan, "the camera's .chan file (camera.chan)");
    // Outputs, in the table's order: the depth frames first (the role every other output must keep clear of).
    for (const OutputRoleRow& row : output_roles())
        for (const std::string& path : job_output_paths(job, row.role)) {
            if (row.per_frame) g.add_output_frames(FrameSequence(path), shot, row.role, row.key);
            else g.add_output(path, row.role, row.key);
        }
    return g;
}

}  // namespace depthbatch
