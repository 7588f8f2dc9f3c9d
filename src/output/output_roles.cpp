#include "output_roles.h"

#include "depthbatch/sha256.h"

#include <OpenImageIO/imageio.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

namespace fs = std::filesystem;

namespace depthbatch {
namespace {

/// The file's first `n` bytes ("" when it cannot be read).
std::string head_of(const std::string& path, size_t n) {
    std::ifstream in(path, std::ios::binary);
    std::string s(n, '\0');
    in.read(s.data(), static_cast<std::streamsize>(n));
    s.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
    return s;
}

/// An image's metadata string `name` ("" when the file is no image OIIO reads).
std::string image_attribute(const std::string& path, const char* name) {
    auto in = OIIO::ImageInput::open(path);
    if (!in) {
        (void)OIIO::geterror();  // clear OIIO's global error: this was only a look
        return "";
    }
    std::string v = in->spec().get_string_attribute(name);
    in->close();
    return v;
}

std::string lower_extension(const std::string& path) {
    std::string e = fs::path(path).extension().string();
    for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return e;
}

/// The manifest of farm files a depthbatch submit wrote in `folder` (file names, one a line).
std::set<std::string> farm_manifest(const fs::path& folder) {
    std::set<std::string> names;
    std::ifstream in(folder / output_marker::farm_manifest);
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && line[0] != '#') names.insert(line);
    return names;
}

// ---- the markers ----

bool exr_magic(const std::string& path) {  // OpenEXR's magic number 20000630, little-endian
    return head_of(path, 4) == std::string("\x76\x2f\x31\x01", 4);
}
bool preview_marked(const std::string& path) {
    return image_attribute(path, "ImageDescription") == output_marker::preview;
}
bool summary_marked(const std::string& path) {
    return head_of(path, 4096).find(std::string("\"") + output_marker::summary_schema) != std::string::npos;
}
bool stats_marked(const std::string& path) {
    return head_of(path, 1 << 20).find(std::string("\"what\": \"") + output_marker::stats) != std::string::npos;
}
bool review_marked(const std::string& path) {
    const std::string ext = lower_extension(path);
    if (ext == ".html" || ext == ".htm")
        return head_of(path, 4096).find(std::string("content=\"") + output_marker::review) != std::string::npos;
    return image_attribute(path, "Software").rfind(output_marker::review, 0) == 0;
}
bool farm_listed(const std::string& path) {
    const fs::path p(path);
    return farm_manifest(p.parent_path()).count(p.filename().string()) > 0;
}

/// A camera solve's files: the report by its "what"; the .usda by its layer doc (camera.h usd_camera_text); the .chan,
/// which holds numbers only, by the report beside it naming its sha256 (chan_sha256).
bool camera_solve_marked(const std::string& path) {
    const std::string ext = lower_extension(path);
    const auto report_marked = [](const std::string& p) {
        return head_of(p, 1 << 20).find(std::string("\"what\": \"") + output_marker::camera_solve) != std::string::npos;
    };
    if (ext == ".json") return report_marked(path);
    if (ext == ".usda") return head_of(path, 4096).find("doc = \"depthbatch camera\"") != std::string::npos;
    const std::string report = fs::path(path).replace_extension(".json").string();
    return report_marked(report) &&
           head_of(report, 1 << 20).find("\"chan_sha256\": \"" + sha256_file(path) + "\"") != std::string::npos;
}

}  // namespace

const std::vector<OutputRoleRow>& output_roles() {
    using P = ReplacePolicy;
    // role                      name                           key                 per_frame replace          marker
    static const std::vector<OutputRoleRow> rows = {
        {OutputRole::DepthFrame, "depth frame", "output.path", true, P::OutputOverwrite, exr_magic},
        {OutputRole::Preview, "preview", "output.preview", true, P::OwnKind, preview_marked},
        {OutputRole::Summary, "JSON summary", "pipeline.summary", false, P::OwnKind, summary_marked},
        {OutputRole::StatsSidecar, "sequence statistics sidecar", "depth.stats_file", false, P::OwnKind, stats_marked},
        {OutputRole::ReviewSheet, "review sheet", "pipeline.review", false, P::OwnKind, review_marked},
        {OutputRole::FarmFile, "farm file", "submit --out", false, P::OwnKind, farm_listed},
        {OutputRole::CameraSolve, "camera solve", "camera.solve.chan", false, P::OwnKind, camera_solve_marked},
    };
    return rows;
}

const OutputRoleRow& output_role(OutputRole role) {
    const auto& rows = output_roles();
    const auto it = std::find_if(rows.begin(), rows.end(), [&](const OutputRoleRow& r) { return r.role == role; });
    if (it == rows.end()) throw std::logic_error("output role without a row in src/output/output_roles.cpp");
    return *it;
}

const char* output_role_name(OutputRole role) { return output_role(role).name; }

bool kind_marker_holds(const std::string& path, OutputRole role) {
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (ec || !fs::exists(status)) return true;
    if (!fs::is_regular_file(status)) return false;
    if (fs::file_size(path, ec) == 0 && !ec) return true;
    return output_role(role).marker_holds(path);
}

}  // namespace depthbatch
