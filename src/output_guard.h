// depthbatch (internal) — the one door every file depthbatch writes goes through.
//
// A job reads plates, a job file, a model and an OCIO config, and writes files in several roles: depth frames
// (output.path), previews (output.preview), the JSON summary (pipeline.summary), the sequence statistics
// sidecar (depth.stats_file), the review sheet (pipeline.review, `depthbatch review --out`: a PNG and an HTML
// page) and farm files (`depthbatch submit --out`). The guard is built once per job from all of them and
// refuses, before anything renders, a path that would destroy something:
//   - a path that is one of the job's inputs: any plate frame (the shot's frames and the frames of the plate
//     pattern found on disk), the job file, the model, the OCIO config;
//   - a path that is another role's output (a preview pattern equal to output.path, a summary named like a
//     depth frame);
//   - an existing file that is not of the kind being written (a summary replaces only a depthbatch summary, a
//     preview only a depthbatch preview...): every writer marks what it writes (kind_marker_holds below);
//   - a path the file system cannot hold (longer than PATH_MAX, a name longer than NAME_MAX).
// "Is" means the same file, whatever the spelling: patterns (####, %04d, $F4, @) are expanded frame by frame,
// `..` and symbolic links are resolved on the file system (the folder's canonical path), and hard links are
// caught by device and inode. Refusals are ConfigError (exit 2) naming the job key (or flag) and both roles.
//
// Writers do not take a path and a bool: they open a Publication (OutputGuard::open or Publication::open),
// write its temporary and publish() it, which applies the role's policy (OpenEXR's single temp-file write policy
// is the model): depth frames are linked into place without ever replacing (unless output.overwrite, handled by
// the EXR writer), other roles replace only a file of their own kind (the marker is checked again at publication).
#pragma once

#include "atomic_file.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace depthbatch {

struct JobConfig;
class FrameSequence;

/// What a written file is. Each role has its own kind marker (what it writes so that it can recognise its own
/// files later) and its own replacement policy.
enum class OutputRole {
    DepthFrame,    ///< output.path: an OpenEXR depth frame (replaced only per output.overwrite, and only an EXR)
    Preview,       ///< output.preview: 8-bit image, ImageDescription "depthbatch preview"
    Summary,       ///< pipeline.summary: JSON, "schema": "depthbatch-summary/N"
    StatsSidecar,  ///< depth.stats_file: JSON, "what": "depthbatch sequence statistics..."
    ReviewSheet,   ///< pipeline.review / review --out: PNG (Software "depthbatch review") + HTML (generator meta)
    FarmFile,      ///< submit --out: listed in the folder's .depthbatch-submit manifest
};

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
}  // namespace output_marker

/// Whether the existing file at `path` is of `role`'s kind (so that writing `role` there may replace it). An
/// empty file is of every kind (nothing to lose). A path that does not exist: true. Never throws.
bool kind_marker_holds(const std::string& path, OutputRole role);

/// Throws ConfigError naming `key` when `path` cannot exist on this file system: longer than PATH_MAX - 1
/// bytes, or a component longer than NAME_MAX bytes.
void check_path_fits(const std::string& path, const std::string& key);

/// A file written under a temporary name beside its final path and published by role (see the file comment).
class Publication {
public:
    /// Open a publication for `path` in `role`; `key` names the job key or flag in messages. Checks the path fits
    /// and that an existing file there is of the role's kind (ConfigError otherwise). Creates the folder.
    static Publication open(const std::string& path, OutputRole role, const std::string& key);

    const std::string& temp_path() const { return tmp_->path(); }
    const std::string& final_path() const { return final_; }
    /// Move the temporary into place. replace = true: rename over a file there, which for every role but
    /// DepthFrame must be of the role's kind (checked again here: ConfigError otherwise; depth frames are
    /// checked by the guard before the render and by the EXR writer's overwrite policy). replace = false: link,
    /// never replacing (Exists / Identical when a file is there: detail::TempFile::publish). RenderError when
    /// the move fails.
    detail::TempFile::Result publish(bool replace = true);

private:
    Publication(const std::string& path, OutputRole role, std::string key);
    std::string final_, key_;
    OutputRole role_;
    std::unique_ptr<detail::TempFile> tmp_;
};

/// The protected inputs and every output of one job (see the file comment). Built once, read-only after.
class OutputGuard {
public:
    /// The guard of `job`: plates (frames `shot` and those on disk), the job file, the model (`model_path`, ""
    /// when unknown), color.config; outputs: output.path and output.preview for `shot`, pipeline.summary,
    /// the statistics sidecar (depth.normalize: sequence), pipeline.review (PNG and HTML).
    static OutputGuard for_job(const JobConfig& job, const std::vector<int>& shot, const std::string& model_path);

    /// An input of the job that nothing may write over (`what` names it in messages: "the job file").
    void protect(const std::string& path, const std::string& what);
    /// Frames `frames` of `pattern` as inputs (`what`: "plate frame" - the frame number is added).
    void protect_frames(const FrameSequence& pattern, const std::vector<int>& frames, const std::string& what);
    /// A path the job writes in `role`, set by `key`.
    void add_output(const std::string& path, OutputRole role, const std::string& key);
    void add_output_frames(const FrameSequence& pattern, const std::vector<int>& frames, OutputRole role,
                           const std::string& key);

    /// Throws ConfigError (exit 2) naming `key` when writing `path` in `role` would write over an input of
    /// the job or another role's output, when an existing file there is not of the role's kind, or when the
    /// path cannot exist (check_path_fits). A folder at `path`: refused too.
    void check(const std::string& path, OutputRole role, const std::string& key) const;

    /// check() every registered output of the roles other than DepthFrame, and of DepthFrame for `frames`
    /// (the frames this run writes); previews for `frames` too. Called before frame 1.
    void preflight(const std::vector<int>& frames) const;

    /// check(), then Publication::open.
    Publication open(const std::string& path, OutputRole role, const std::string& key) const;

private:
    struct Entry {
        std::string what;        ///< "plate frame 1003 (input.path)", "output.preview"
        bool input = false;
        OutputRole role = OutputRole::DepthFrame;
        std::string key;
    };
    struct Output {
        std::string pattern;     ///< a path, or a frame pattern when frames
        bool frames = false;
        OutputRole role;
        std::string key;
    };
    void add(const std::string& path, Entry e);
    const Entry* find(const std::string& path) const;
    std::map<std::string, Entry> by_path_;                       ///< canonical path -> entry
    std::map<std::pair<unsigned long, unsigned long>, Entry> by_inode_;  ///< (st_dev, st_ino) of existing files
    std::vector<Output> outputs_;
};

}  // namespace depthbatch
