// depthbatch (internal) — the one way every file depthbatch writes is opened and published.
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
//     preview only a depthbatch preview...): every writer marks what it writes (kind_marker_holds, the role
//     table in output_roles.h);
//   - a path the file system cannot hold (longer than PATH_MAX, a name longer than NAME_MAX).
// "Is" means the same file, whatever the spelling: patterns (####, %04d, $F4, @) are expanded frame by frame,
// `..` and symbolic links are resolved on the file system (the folder's canonical path), and hard links are
// caught by device and inode. Refusals are ConfigError (exit 2) naming the job key (or flag) and both roles.
//
// Writers never take a path: they receive a Publication that OutputGuard::open made (the raw open is private to
// the guard), write its temporary and publish() it, which applies the role's policy (OpenEXR's single temp-file
// write policy is the model): depth frames are linked into place without ever replacing (unless
// output.overwrite, handled by the EXR writer), other roles replace only a file of their own kind (the marker is
// checked again at publication).
#pragma once

#include "atomic_file.h"
#include "output_roles.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace depthbatch {

class FrameSequence;

/// Throws ConfigError naming `key` when `path` cannot exist on this file system: longer than PATH_MAX - 1
/// bytes, or a component longer than NAME_MAX bytes.
void check_path_fits(const std::string& path, const std::string& key);

/// A file written under a temporary name beside its final path and published by its role's policy (see the file
/// comment). Only OutputGuard::open makes one: a writer receives it, writes temp_path() and publish()es it.
class Publication {
public:
    Publication(Publication&&) = default;
    Publication& operator=(Publication&&) = default;

    const std::string& temp_path() const { return tmp_->path(); }
    const std::string& final_path() const { return final_; }
    OutputRole role() const { return role_; }
    /// The job key or flag that set the path, for messages.
    const std::string& key() const { return key_; }
    /// A second hidden temporary beside the final path, for a writer that converts a staging file into
    /// temp_path() (the EXR writer's OpenEXR-only attributes); made on first call, removed with the publication.
    const std::string& scratch_path();
    /// Move the temporary into place. replace = true: rename over a file there, which for a role of
    /// ReplacePolicy::OwnKind must be of the role's kind (checked again here: ConfigError otherwise; depth frames
    /// are checked by the guard before the render and by the EXR writer's overwrite policy). replace = false:
    /// link, never replacing (Exists / Identical when a file is there: detail::TempFile::publish). RenderError
    /// when the move fails.
    detail::TempFile::Result publish(bool replace = true);

private:
    friend class OutputGuard;
    /// The raw open, for OutputGuard::open only: checks the path fits and that an existing file there is of the
    /// role's kind (ConfigError otherwise), creates the folder (RenderError when it cannot).
    static Publication open(const std::string& path, OutputRole role, const std::string& key);
    Publication(const std::string& path, OutputRole role, std::string key);
    std::string final_, key_;
    OutputRole role_;
    std::unique_ptr<detail::TempFile> tmp_, scratch_;
};

/// The protected inputs and every output of one job (see the file comment). Built once, read-only after.
class OutputGuard {
public:
    /// An empty guard: no inputs, no outputs (open() still checks the path, the folder and the role's marker).
    /// For a writer used outside a job (tests, tools).
    OutputGuard() = default;

    // A job's guard is built in one place, job_output_guard (job_outputs.h), from the calls below.

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

    /// The way in: check(), then open the Publication a writer writes (see Publication). `key` "": the role's
    /// key from the table. Every file depthbatch writes is opened here (tests/integration/output_door_test.cpp).
    Publication open(const std::string& path, OutputRole role, const std::string& key = "") const;

private:
    struct Entry {
        std::string what;  ///< "plate frame 1003 (input.path)", "output.preview"
        bool input = false;
        OutputRole role = OutputRole::DepthFrame;
        std::string key;
    };
    struct Output {
        std::string pattern;  ///< a path, or a frame pattern when frames
        bool frames = false;
        OutputRole role;
        std::string key;
    };
    void add(const std::string& path, Entry e);
    const Entry* find(const std::string& path) const;
    std::map<std::string, Entry> by_path_;                               ///< canonical path -> entry
    std::map<std::pair<unsigned long, unsigned long>, Entry> by_inode_;  ///< (st_dev, st_ino) of existing files
    std::vector<Output> outputs_;
};

namespace detail {
/// Debug hook: called with every publication OutputGuard::open makes (final path, role), from any thread (the
/// caller serialises nothing). Set by tests; nullptr: none. Returns the previous observer.
using OpenObserver = std::function<void(const std::string& final_path, OutputRole role)>;
OpenObserver set_open_observer(OpenObserver observer);
/// The environment variable of the same hook in the binary: when DEPTHBATCH_TRACE_OUTPUTS names a file, every
/// open appends a line "ROLE-NAME<TAB>FINAL-PATH" to it (tests/integration/output_door_test.cpp).
inline constexpr const char* kTraceOutputsEnv = "DEPTHBATCH_TRACE_OUTPUTS";
}  // namespace detail

}  // namespace depthbatch
