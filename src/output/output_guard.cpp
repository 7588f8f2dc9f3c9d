#include "output_guard.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/log.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <sys/stat.h>

namespace fs = std::filesystem;

namespace depthbatch {
namespace {

/// `path` with `..` and symbolic links resolved on the file system: the canonical folder plus the name, or the
/// link's target when the path itself is a symbolic link. Never throws. `dirs` caches canonical folders.
std::string canonical_of(const std::string& path, std::map<std::string, std::string>* dirs = nullptr) {
    std::error_code ec;
    const fs::path p = fs::absolute(path, ec);
    struct stat st {};
    const fs::path name = p.filename();
    if ((::lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) || name.empty() || name == "." || name == "..") {
        const fs::path c = fs::weakly_canonical(p, ec);
        return ec ? p.lexically_normal().string() : c.string();
    }
    const std::string parent = p.parent_path().string();
    if (dirs) {
        auto it = dirs->find(parent);
        if (it != dirs->end()) return it->second + "/" + name.string();
    }
    fs::path c = fs::weakly_canonical(p.parent_path(), ec);
    std::string cs = ec ? p.parent_path().lexically_normal().string() : c.string();
    while (cs.size() > 1 && cs.back() == '/') cs.pop_back();
    if (dirs) (*dirs)[parent] = cs;
    return (cs == "/" ? "" : cs) + "/" + name.string();
}

bool inode_of(const std::string& path, std::pair<unsigned long, unsigned long>& id) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return false;
    id = {static_cast<unsigned long>(st.st_dev), static_cast<unsigned long>(st.st_ino)};
    return true;
}

std::mutex g_observer_mutex;
detail::OpenObserver& open_observer() {
    static detail::OpenObserver observer;
    return observer;
}

/// Tell the test hook and the DEPTHBATCH_TRACE_OUTPUTS trace about an open.
void note_open(const std::string& path, OutputRole role) {
    static const char* const trace = std::getenv(detail::kTraceOutputsEnv);
    std::lock_guard<std::mutex> lock(g_observer_mutex);
    if (open_observer()) open_observer()(path, role);
    if (trace && *trace) {
        std::ofstream out(trace, std::ios::app);
        out << output_role_name(role) << "\t" << canonical_of(path) << "\n";
    }
}

// A folder at `path`, or a file there that is not this role's own kind (ReplacePolicy::OwnKind: its marker does not
// hold), is refused: ConfigError naming `key`. Depth frames that exist follow output.overwrite instead (run_job's
// frame selection: exit 6, or replaced only when they are depthbatch frames).
void refuse_folder_or_foreign_file(const std::string& path, OutputRole role, const std::string& key) {
    std::error_code ec;
    if (fs::is_directory(path, ec))
        throw ConfigError(key + ": " + path + " is a folder; give a file path for the " + output_role_name(role));
    if (output_role(role).replace == ReplacePolicy::OwnKind && !kind_marker_holds(path, role))
        throw ConfigError(key + ": " + path + " exists and is not a depthbatch " + output_role_name(role) +
                          ": not replaced (delete it or choose another path)");
}

}  // namespace

detail::OpenObserver detail::set_open_observer(OpenObserver observer) {
    std::lock_guard<std::mutex> lock(g_observer_mutex);
    std::swap(open_observer(), observer);
    return observer;
}

void check_path_fits(const std::string& path, const std::string& key) {
    if (path.size() >= PATH_MAX)
        throw ConfigError(key + ": the path is " + std::to_string(path.size()) +
                          " bytes long; the file system takes at "
                          "most " +
                          std::to_string(PATH_MAX - 1) + " (PATH_MAX): " + printable(path.substr(0, 120)) + "...");
    for (const auto& part : fs::path(path))
        if (part.string().size() > NAME_MAX)
            throw ConfigError(key + ": the name '" + printable(part.string().substr(0, 60)) + "...' is " +
                              std::to_string(part.string().size()) + " bytes long; the file system takes at most " +
                              std::to_string(NAME_MAX) + " (NAME_MAX) in one file or folder name");
}

// ---- Publication ----------------------------------------------------------------------------------------

Publication::Publication(const std::string& path, OutputRole role, std::string key)
    : final_(path), key_(std::move(key)), role_(role), tmp_(std::make_unique<detail::TempFile>(path)) {}

const std::string& Publication::scratch_path() {
    if (!scratch_) scratch_ = std::make_unique<detail::TempFile>(final_);
    return scratch_->path();
}

Publication Publication::open(const std::string& path, OutputRole role, const std::string& key) {
    check_path_fits(path, key);
    refuse_folder_or_foreign_file(path, role, key);
    std::error_code ec;
    const fs::path folder = fs::path(path).parent_path();
    if (!folder.empty()) fs::create_directories(folder, ec);
    if (ec) throw RenderError(key + ": cannot create the folder " + folder.string() + ": " + ec.message());
    return Publication(path, role, key);
}

detail::TempFile::Result Publication::publish(bool replace) {
    if (replace && output_role(role_).replace == ReplacePolicy::OwnKind && !kind_marker_holds(final_, role_))
        throw ConfigError(key_ + ": " + final_ + " appeared while writing and is not a depthbatch " +
                          output_role_name(role_) + ": not replaced");
    return tmp_->publish(replace);
}

// ---- OutputGuard ----------------------------------------------------------------------------------------

void OutputGuard::add(const std::string& path, Entry e) {
    by_path_.emplace(canonical_of(path), e);
    std::pair<unsigned long, unsigned long> id;
    if (inode_of(path, id)) by_inode_.emplace(id, std::move(e));
}

void OutputGuard::protect(const std::string& path, const std::string& what) {
    if (path.empty()) return;
    Entry e;
    e.what = what;
    e.input = true;
    add(path, std::move(e));
}

void OutputGuard::protect_frames(const FrameSequence& pattern, const std::vector<int>& frames,
                                 const std::string& what) {
    std::map<std::string, std::string> dirs;
    for (int f : frames) {
        const std::string p = pattern.path(f);
        Entry e;
        e.what = what + " " + std::to_string(f) + " (" + p + ")";
        e.input = true;
        by_path_.emplace(canonical_of(p, &dirs), e);
        std::pair<unsigned long, unsigned long> id;
        if (inode_of(p, id)) by_inode_.emplace(id, std::move(e));
    }
}

void OutputGuard::add_output(const std::string& path, OutputRole role, const std::string& key) {
    if (path.empty()) return;
    Entry e;
    e.what = key + " (" + std::string(output_role_name(role)) + ")";
    e.role = role;
    e.key = key;
    add(path, std::move(e));
    outputs_.push_back({path, false, role, key});
}

void OutputGuard::add_output_frames(const FrameSequence& pattern, const std::vector<int>& frames, OutputRole role,
                                    const std::string& key) {
    std::map<std::string, std::string> dirs;
    for (int f : frames) {
        const std::string p = pattern.path(f);
        Entry e;
        e.what = key + " (" + std::string(output_role_name(role)) + " " + std::to_string(f) + ")";
        e.role = role;
        e.key = key;
        by_path_.emplace(canonical_of(p, &dirs), e);
        std::pair<unsigned long, unsigned long> id;
        if (inode_of(p, id)) by_inode_.emplace(id, std::move(e));
    }
    outputs_.push_back({pattern.pattern(), true, role, key});
}

const OutputGuard::Entry* OutputGuard::find(const std::string& path) const {
    // By name and by inode: an input found either way wins (a summary path that is also a hard link to a plate
    // is the plate, whatever role its name was registered for).
    const Entry* by_name = nullptr;
    if (auto it = by_path_.find(canonical_of(path)); it != by_path_.end()) by_name = &it->second;
    const Entry* by_id = nullptr;
    std::pair<unsigned long, unsigned long> id;
    if (inode_of(path, id))
        if (auto it = by_inode_.find(id); it != by_inode_.end()) by_id = &it->second;
    if (by_id && by_id->input) return by_id;
    return by_name ? by_name : by_id;
}

void OutputGuard::check(const std::string& path, OutputRole role, const std::string& key) const {
    check_path_fits(path, key);
    if (const Entry* e = find(path)) {
        if (e->input)
            throw ConfigError(key + ": " + path + " is " + e->what + ": refusing to write a " + output_role_name(role) +
                              " over an input of the job; choose another path for the " + output_role_name(role));
        if (e->role != role)
            throw ConfigError(key + ": " + path + " is also " + e->what +
                              ": refusing to write one output over another");
    }
    refuse_folder_or_foreign_file(path, role, key);
}

void OutputGuard::preflight(const std::vector<int>& frames) const {
    for (const Output& o : outputs_) {
        if (!o.frames) {
            check(o.pattern, o.role, o.key);
            continue;
        }
        const FrameSequence seq(o.pattern);
        for (int f : frames) check(seq.path(f), o.role, o.key);
    }
}

Publication OutputGuard::open(const std::string& path, OutputRole role, const std::string& key) const {
    const std::string k = key.empty() ? output_role(role).key : key;
    check(path, role, k);
    Publication pub = Publication::open(path, role, k);
    note_open(path, role);
    return pub;
}

}  // namespace depthbatch
