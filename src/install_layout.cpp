// Data files found relative to the executable; user paths resolved on the file system
// (include/depthbatch/install_layout.h).
#include "depthbatch/install_layout.h"

#include <system_error>

namespace fs = std::filesystem;

namespace depthbatch {

fs::path executable_dir() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
}

std::vector<fs::path> data_dirs() {
    const fs::path dir = executable_dir();
    if (dir.empty()) return {};
    return {dir.parent_path() / "share" / "depthbatch", dir / "share" / "depthbatch"};
}

fs::path find_data_file(const std::string& relative) {
    const std::vector<fs::path> dirs = data_dirs();
    std::error_code ec;
    for (const fs::path& d : dirs)
        if (fs::exists(d / relative, ec)) return d / relative;
    return dirs.empty() ? fs::path(relative) : dirs.front() / relative;
}

std::string resolve_user_path(const fs::path& base, const std::string& path) {
    fs::path p(path);
    if (!p.is_absolute()) p = base / p;
    // Split at the last "..": everything up to it is resolved by the file system.
    fs::path head, tail;
    bool dotdot = false;
    for (const fs::path& part : p) {
        if (part == "..") {
            head /= tail;
            head /= part;
            tail.clear();
            dotdot = true;
        } else if (dotdot) {
            tail /= part;
        } else {
            head /= part;
        }
    }
    if (!dotdot) return p.lexically_normal().string();
    std::error_code ec;
    const fs::path resolved = fs::weakly_canonical(head, ec);
    return ((ec ? head.lexically_normal() : resolved) / tail).lexically_normal().string();
}

}  // namespace depthbatch
