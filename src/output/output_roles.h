// depthbatch (internal) — the table of output roles: what every kind of file depthbatch writes is, in one place.
//
// One row per OutputRole: its name in messages, the job key (or flag) that sets its path, whether that path is a
// frame pattern, how a file of its kind is recognised (its marker) and whether it may replace an existing file.
// The guard (output_guard.h), the publication and every message read this table; nothing else switches on a role.
// Where a job puts each role's files (its paths, the defaults) is the layer above: job_outputs.h, which knows the
// job; this table and the writers below it do not.
//
// A new output role is one enum value and one row here (output_roles.cpp), one row in job_outputs.cpp when a job
// key sets its path, plus its writer, which opens its file through OutputGuard::open and writes the Publication
// it gets.
#pragma once

#include <string>
#include <vector>

namespace depthbatch {

/// What a written file is. Each role has its own kind marker (what it writes so that it can recognise its own
/// files later) and its own replacement policy (the table's row).
enum class OutputRole {
    DepthFrame,    ///< output.path: an OpenEXR depth frame (replaced only per output.overwrite, and only an EXR)
    Preview,       ///< output.preview: 8-bit image, ImageDescription "depthbatch preview"
    Summary,       ///< pipeline.summary: JSON, "schema": "depthbatch-summary/N"
    StatsSidecar,  ///< depth.stats_file: JSON, "what": "depthbatch sequence statistics..."
    ReviewSheet,   ///< pipeline.review / review --out: PNG (Software "depthbatch review") + HTML (generator meta)
    FarmFile,      ///< submit --out: listed in the folder's .depthbatch-submit manifest
    CameraSolve,   ///< camera.solve.chan: the .chan, .usda and report (JSON "what": "depthbatch camera solve...")
};

/// Whether a role's file may replace an existing one.
enum class ReplacePolicy {
    /// Depth frames: an existing file is the frame selection's business (output.overwrite: exit 6, skipped, or
    /// replaced only when it is an OpenEXR file); the publication links without replacing unless told to.
    OutputOverwrite,
    /// Every other role: replaces only a file of its own kind (the marker is checked when the publication opens
    /// and again when it is published).
    OwnKind,
};

/// One row of the table.
struct OutputRoleRow {
    OutputRole role;
    const char* name;  ///< in messages: "depth frame", "preview", ...
    const char* key;   ///< the job key or flag that sets the path, in messages: "output.path", "submit --out"
    bool per_frame;    ///< the path is a frame pattern (####, %04d, $F4, @)
    ReplacePolicy replace;
    /// Whether the existing, non-empty regular file at `path` is of this kind (the role's marker). Never throws.
    bool (*marker_holds)(const std::string& path);
};

/// Every role, in OutputRole order.
const std::vector<OutputRoleRow>& output_roles();
/// The row of `role`.
const OutputRoleRow& output_role(OutputRole role);

/// Name of a role for messages ("depth frame", "preview", ...).
const char* output_role_name(OutputRole role);

/// The text each role writes to mark its files (ImageDescription of a preview, PNG Software of a review sheet,
/// the HTML generator meta, the summary schema prefix, the sidecar's "what" prefix).
namespace output_marker {
inline constexpr const char* preview = "depthbatch preview";
inline constexpr const char* review = "depthbatch review";
inline constexpr const char* summary_schema = "depthbatch-summary/";
inline constexpr const char* stats = "depthbatch sequence statistics";
inline constexpr const char* farm_manifest = ".depthbatch-submit";
inline constexpr const char* camera_solve = "depthbatch camera solve";  ///< the report's "what"; the .usda's doc
                                                                        ///< is "depthbatch camera"
}  // namespace output_marker

/// Whether the existing file at `path` is of `role`'s kind (so that writing `role` there may replace it). An
/// empty file is of every kind (nothing to lose). A path that does not exist: true. A folder: false. Never throws.
bool kind_marker_holds(const std::string& path, OutputRole role);

}  // namespace depthbatch
