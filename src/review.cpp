#include "depthbatch/review.h"

#include "atomic_file.h"
#include "output_guard.h"
#include "subprocess.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/log.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

namespace fs = std::filesystem;

namespace depthbatch {

std::string default_review_path(const JobConfig& job) {
    return (fs::path(job.output.path).parent_path() / (fs::path(job.job_file).stem().string() + ".review.png")).string();
}

void write_review(const JobConfig& job, const std::string& png, const std::vector<std::string>& summaries,
                  const std::string& key) {
    const FrameSequence plates(job.input.path), depths(job.output.path);
    const std::vector<int> frames = job.input.frames.empty() ? plates.frames_on_disk() : job.input.frames;
    if (frames.empty()) throw InputError("review: no frames on disk match input.path '" + job.input.path + "'");
    // The sheet and its page go through the job's output guard: never over a plate, the job, the model or another
    // output, and only over an earlier review sheet. Checked before anything is made.
    const std::string html = fs::path(png).replace_extension(".html").string();
    const OutputGuard guard = OutputGuard::for_job(job, frames, job.model.path == "default" ? "" : job.model.path);
    guard.check(png, OutputRole::ReviewSheet, key);
    guard.check(html, OutputRole::ReviewSheet, key);
    if (std::none_of(frames.begin(), frames.end(), [&](int f) { return fs::exists(depths.path(f)); }))
        throw InputError("review: none of the job's " + std::to_string(frames.size()) + " depth frames exist (" +
                         job.output.path + "): render the job first; nothing written");
    // What the runs said about frames that have no output: failed (with the reason) or skipped.
    std::map<int, std::pair<std::string, std::string>> told;
    for (const std::string& path : summaries) {
        std::ifstream in(path);
        nlohmann::json j;
        try {
            in >> j;
            for (const auto& f : j.at("skipped_frames")) told[f.at("frame")] = {"skipped", f.at("reason")};
            for (const auto& f : j.at("failed_frames")) told[f.at("frame")] = {"failed", f.at("reason")};
        } catch (const std::exception& e) {
            throw ConfigError("review: " + path + " is not a depthbatch summary (" + e.what() + ")");
        }
    }
    nlohmann::json manifest = {{"title", fs::path(job.job_file).stem().string()},
                               {"colormap", job.output.preview.colormap}, {"frames", nlohmann::json::array()}};
    for (int f : frames) {
        std::string status = fs::exists(depths.path(f)) ? "rendered" : "missing", reason;
        if (told.count(f) && (status == "missing") == (told[f].first == "failed")) std::tie(status, reason) = told[f];
        manifest["frames"].push_back({{"frame", f}, {"plate", plates.path(f)}, {"depth", depths.path(f)},
                                      {"status", status}, {"reason", reason}});
    }
    const fs::path manifest_path = fs::temp_directory_path() / ("depthbatch-review-" + std::to_string(::getpid()) + ".json");
    {
        std::ofstream out(manifest_path);
        out << manifest.dump();
        if (!out) throw RenderError(manifest_path.string() + ": cannot write the review manifest");
    }
    const char* python_env = std::getenv("DEPTHBATCH_PYTHON");
    const char* tools_env = std::getenv("DEPTHBATCH_TOOLS");
    const std::string python = python_env && *python_env ? python_env : DEPTHBATCH_TOOLS_PYTHON;
    const std::string tools = tools_env && *tools_env ? tools_env : DEPTHBATCH_TOOLS_DIR;
    Publication png_out = Publication::open(png, OutputRole::ReviewSheet, key);
    Publication html_out = Publication::open(html, OutputRole::ReviewSheet, key);
    int status = 0;
    const std::string said = detail::run_capture({python, "-m", "tools.review", manifest_path.string(), png_out.temp_path(),
                                                  html_out.temp_path()},
                                                 status, {"PYTHONPATH=" + tools, "MPLBACKEND=Agg"});
    std::error_code ec;
    fs::remove(manifest_path, ec);
    if (status != 0)
        throw RenderError("review " + png + ": " + python + " -m tools.review failed (exit " + std::to_string(status) +
                          "; the tools venv comes from scripts/setup, or set DEPTHBATCH_PYTHON):\n" + said);
    png_out.publish(true);
    html_out.publish(true);
    log_info("review: ", png, " and ", html, " (", said.substr(0, said.find_last_not_of('\n') + 1), ")");
}

}  // namespace depthbatch
