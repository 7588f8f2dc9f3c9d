#include "depthbatch/review.h"

#include "output/atomic_file.h"
#include "job_outputs.h"
#include "review_tools.h"
#include "subprocess.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/install_layout.h"
#include "depthbatch/log.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace depthbatch {
namespace detail {

namespace {
const char* const kModules = "matplotlib, numpy, OpenEXR and PIL";
}

fs::path find_review_script(const std::string& tools_env) {
    std::error_code ec;
    if (!tools_env.empty()) {
        for (const fs::path& p : {fs::path(tools_env) / "review.py", fs::path(tools_env) / "tools" / "review.py"})
            if (fs::is_regular_file(p, ec)) return p;
        throw RenderError("review: $DEPTHBATCH_TOOLS (" + tools_env + ") holds no review.py (nor tools/review.py)");
    }
    const fs::path p = find_data_file("tools/review.py");
    if (!fs::is_regular_file(p, ec))
        throw RenderError("review: " + p.string() +
                          " is missing: this install is incomplete (cmake --install puts "
                          "it there), or set DEPTHBATCH_TOOLS to a folder holding review.py");
    return p;
}

ReviewPython find_review_python(const std::string& python_env, const std::string& configured, const std::string& path) {
    if (!python_env.empty()) return {python_env, "$DEPTHBATCH_PYTHON"};
    std::error_code ec;
    if (!configured.empty() && fs::exists(configured, ec)) return {configured, "the tools venv"};
    std::istringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
        if (dir.empty()) continue;
        const fs::path p = fs::path(dir) / "python3";
        if (::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p, ec)) return {p.string(), "python3 on PATH"};
    }
    throw RenderError(
        "review: no Python to draw the sheet: DEPTHBATCH_PYTHON is not set, the tools venv this build "
        "was configured with (" +
        (configured.empty() ? std::string("none") : configured) +
        ") is gone and there is no python3 on PATH; set DEPTHBATCH_PYTHON to a Python with " + kModules);
}

std::string last_meaningful_line(const std::string& said, bool& from_script) {
    std::istringstream in(said);
    std::string last, review;
    for (std::string line; std::getline(in, line);) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        last = line;
        if (line.rfind("review: ", 0) == 0) review = line.substr(8);
    }
    from_script = !review.empty();
    return from_script ? review : last;
}

}  // namespace detail

namespace {
std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}
}  // namespace

ReviewPaths review_paths(const std::string& out, const std::string& key) {
    std::string ext = fs::path(out).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (ext == ".png") return {out, fs::path(out).replace_extension(".html").string()};
    if (ext == ".html") return {fs::path(out).replace_extension(".png").string(), out};
    throw ConfigError(key + ": " + out +
                      ": the review sheet is a PNG and its page an HTML file beside it; give a path "
                      "ending in .png or .html (either names the pair), not " +
                      (ext.empty() ? std::string("one without an extension") : "'" + ext + "'"));
}

namespace {
/// A path for the manifest: the string when it is UTF-8, else {"fs_hex": its bytes in hex} (a Latin-1 folder):
/// review.py turns it back into the same bytes (os.fsdecode), so the script opens the very file.
nlohmann::json manifest_path_value(const std::string& path) {
    try {
        (void)nlohmann::json(path).dump();
        return path;
    } catch (const nlohmann::json::type_error&) {
        static const char* const digits = "0123456789abcdef";
        std::string hex;
        for (unsigned char c : path) hex += {digits[c >> 4], digits[c & 15]};
        return {{"fs_hex", hex}};
    }
}
}  // namespace

std::string write_review(const JobConfig& job, const std::string& out, const std::vector<std::string>& summaries,
                         const std::string& key) {
    const ReviewPaths paths = review_paths(out, key);  // before anything is read, drawn or made
    const std::string& png = paths.png;
    const std::string& html = paths.html;
    const FrameSequence plates(job.input.path), depths(job.output.path);
    const std::vector<int> frames = shot_frames(job.input);
    if (frames.empty()) throw InputError("review: no frames on disk match input.path '" + job.input.path + "'");
    // The sheet and its page go through the job's output guard: never over a plate, the job, the model or another
    // output, and only over an earlier review sheet. Checked before anything is made.
    const OutputGuard guard = job_output_guard(job, frames);
    guard.check(png, OutputRole::ReviewSheet, key);
    guard.check(html, OutputRole::ReviewSheet, key);
    if (std::none_of(frames.begin(), frames.end(), [&](int f) { return fs::exists(depths.path(f)); }))
        throw InputError("review: none of the job's " + std::to_string(frames.size()) + " depth frames exist (" +
                         job.output.path + "): render the job first; nothing written");
    // What the runs said about frames that have no output: failed (with the reason) or skipped.
    std::map<int, std::pair<std::string, std::string>> told;
    for (const std::string& path : summaries) {
        std::ifstream in(path);
        if (!in) {
            std::error_code ec;
            throw ConfigError("review: summary " + path + (fs::exists(path, ec) ? ": cannot be read" : ": not found") +
                              " (--summary names a render's JSON summary, pipeline.summary); nothing written");
        }
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
                               {"marker", output_marker::review},  // the sheet's own mark (output_roles.h)
                               {"colormap", option_name(job.output.preview.colormap)},
                               {"frames", nlohmann::json::array()}};
    for (int f : frames) {
        std::string status = fs::exists(depths.path(f)) ? "rendered" : "missing", reason;
        if (told.count(f) && (status == "missing") == (told[f].first == "failed")) std::tie(status, reason) = told[f];
        manifest["frames"].push_back({{"frame", f},
                                      {"plate", manifest_path_value(plates.path(f))},
                                      {"depth", manifest_path_value(depths.path(f))},
                                      {"status", status},
                                      {"reason", reason}});
    }
    // The script and its Python before anything is written: a missing one leaves nothing behind.
    const fs::path script = detail::find_review_script(env("DEPTHBATCH_TOOLS"));
    const detail::ReviewPython python =
        detail::find_review_python(env("DEPTHBATCH_PYTHON"), DEPTHBATCH_TOOLS_PYTHON, env("PATH"));
    // The manifest's text before any file is made: the title and the reasons are only shown (bytes that are not
    // UTF-8 become U+FFFD there); paths went in losslessly above.
    const std::string manifest_text = manifest.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    Publication png_out = guard.open(png, OutputRole::ReviewSheet, key);
    Publication html_out = guard.open(html, OutputRole::ReviewSheet, key);
    const fs::path manifest_path =
        fs::temp_directory_path() / ("depthbatch-review-" + std::to_string(::getpid()) + ".json");
    struct RemoveManifest {  // on every way out, an exception included
        const fs::path& path;
        ~RemoveManifest() {
            std::error_code ec;
            fs::remove(path, ec);
        }
    } remove_manifest{manifest_path};
    {
        std::ofstream manifest_out(manifest_path);
        manifest_out << manifest_text;
        if (!manifest_out.flush()) throw RenderError(manifest_path.string() + ": cannot write the review manifest");
    }
    // Run by its path, never as tools.review: nothing else of tools/ is needed, and -B with
    // PYTHONDONTWRITEBYTECODE writes no __pycache__ into an install or a checkout. PYTHONPATH is left as it is
    // (a studio's Python may find matplotlib through it).
    const std::vector<std::string> argv = {
        python.exe, "-B", script.string(), manifest_path.string(), png_out.temp_path(), html_out.temp_path()};
    std::vector<std::string> extra_env = {"MPLBACKEND=Agg", "PYTHONDONTWRITEBYTECODE=1"};
    const bool debug = log_level() >= LogLevel::Debug;
    if (debug) extra_env.push_back("DEPTHBATCH_REVIEW_TRACEBACK=1");
    log_debug("review: ", python.exe, " (", python.origin, ") -B ", script.string());
    int status = 0;
    const std::string said = detail::run_capture(argv, status, extra_env);
    const std::string all = said.substr(0, said.find_last_not_of("\n") + 1);
    bool from_script = false;
    const std::string line = detail::last_meaningful_line(said, from_script);
    if (status != 0) {
        log_debug("review: ", python.exe, " ", script.string(), " exited ", status, "; it printed:\n", all);
        throw RenderError(
            "review: cannot make " + png + " with " + python.origin + " (" + python.exe +
            "): " + (line.empty() ? "no output" : line) +
            (from_script || status < 0 ? "" : " (exit " + std::to_string(status) + "; -v shows all it printed)"));
    }
    if (!all.empty()) log_debug("review: ", script.string(), " printed:\n", all);
    png_out.publish(true);
    html_out.publish(true);
    return line;
}

}  // namespace depthbatch
