// depthbatch (internal) — publishing a finished file atomically, shared by the EXR writer and the
// sequence-statistics sidecar.
//
// A file is written under a hidden temporary name in its final folder, then moved into place in one
// step: rename(2) when replacing is allowed, link(2) when it is not (link never replaces, so a file
// that another farm task published meanwhile is never overwritten). An interrupted run leaves at most a
// hidden ".name.<host>.<pid>.<n>.tmp", never a partial file under the final name; the next run on the same
// host removes those whose process is gone (remove_stale_temporaries).
#pragma once

#include <set>
#include <string>

namespace depthbatch::detail {

/// A hidden temporary path beside `final_path`, unique in this process; removed by the destructor
/// unless publish() moved it.
class TempFile {
public:
    explicit TempFile(const std::string& final_path);
    ~TempFile();
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    const std::string& path() const { return path_; }

    enum class Result { Published, Exists, Identical };
    /// Move the temporary to `final_path`. replace = true: rename over anything there. replace = false:
    /// Exists if a file is already there (Identical when it holds exactly the same bytes), which is left
    /// untouched. Throws RenderError on any other failure, naming `final_path`.
    Result publish(bool replace);

private:
    std::string final_, path_;
};

/// Remove the temporaries this process is still writing (a stop request whose grace period ran out: the
/// process exits next, so no frame in flight will be published). Safe from any thread, not from a signal
/// handler. Returns how many were removed.
int remove_live_temporaries();

/// Remove hidden temporaries in `folder` left by depthbatch processes of this host that no longer run
/// (a killed render). Those of other hosts (shared storage) and of live processes are left alone; with `owned`,
/// also those of any final name (file name, no folder) not in it (another job's frames). Returns how many were
/// removed.
int remove_stale_temporaries(const std::string& folder, const std::set<std::string>* owned = nullptr);

}  // namespace depthbatch::detail
