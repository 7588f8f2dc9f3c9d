#include "atomic_file.h"

#include "depthbatch/error.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <climits>
#include <csignal>
#include <unistd.h>

namespace fs = std::filesystem;

namespace depthbatch::detail {
namespace {
std::string host_name() {
    char name[256] = {0};
    if (::gethostname(name, sizeof name - 1) != 0 || !name[0]) return "host";
    std::string h(name);
    std::replace(h.begin(), h.end(), '.', '_');  // dots separate the fields of the temporary's name
    return h;
}

// The temporaries of this process that are being written (for remove_live_temporaries).
std::mutex g_live_mutex;
std::set<std::string>& live_temporaries() {
    static std::set<std::string> live;
    return live;
}
void forget_live(const std::string& path) {
    std::lock_guard<std::mutex> lock(g_live_mutex);
    live_temporaries().erase(path);
}

bool same_bytes(const std::string& a, const std::string& b) {
    std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
    if (!fa || !fb) return false;
    return std::equal(std::istreambuf_iterator<char>(fa), std::istreambuf_iterator<char>(),
                      std::istreambuf_iterator<char>(fb), std::istreambuf_iterator<char>());
}
}  // namespace

TempFile::TempFile(const std::string& final_path) : final_(final_path) {
    static std::atomic<unsigned> counter{0};
    const fs::path p(final_path);
    // .<final name>.<host>.<pid>.<n>.tmp, the final name shortened so that the whole fits NAME_MAX: a legal
    // 245-byte file name must still get a temporary (remove_stale_temporaries reads the fields from the end).
    const std::string tail =
        "." + host_name() + "." + std::to_string(::getpid()) + "." + std::to_string(counter++) + ".tmp";
    std::string name = p.filename().string();
    const size_t room = NAME_MAX > tail.size() + 2 ? NAME_MAX - tail.size() - 1 : 1;
    if (name.size() > room) name.resize(room);
    path_ = (p.parent_path() / ("." + name + tail)).string();
    std::lock_guard<std::mutex> lock(g_live_mutex);
    live_temporaries().insert(path_);
}

TempFile::~TempFile() {
    if (!path_.empty()) {
        std::error_code ec;
        fs::remove(path_, ec);
        forget_live(path_);
    }
}

int remove_live_temporaries() {
    std::lock_guard<std::mutex> lock(g_live_mutex);
    int removed = 0;
    for (const std::string& path : live_temporaries()) removed += ::unlink(path.c_str()) == 0 ? 1 : 0;
    live_temporaries().clear();
    return removed;
}

TempFile::Result TempFile::publish(bool replace) {
    if (replace) {
        std::error_code ec;
        fs::rename(path_, final_, ec);
        if (ec) throw RenderError(final_ + ": cannot move the finished file into place: " + ec.message());
        forget_live(path_);
        path_.clear();
        return Result::Published;
    }
    if (::link(path_.c_str(), final_.c_str()) == 0) return Result::Published;  // the temporary goes in ~TempFile
    const int err = errno;
    if (err == EEXIST) return same_bytes(path_, final_) ? Result::Identical : Result::Exists;
    throw RenderError(final_ + ": cannot move the finished file into place: " + std::strerror(err));
}

int remove_stale_temporaries(const std::string& folder, const std::set<std::string>* owned) {
    // .<final name>.<host>.<pid>.<n>.tmp
    const std::string host = host_name();
    int removed = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(folder.empty() ? "." : folder, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.size() < 8 || name[0] != '.' || name.compare(name.size() - 4, 4, ".tmp") != 0) continue;
        const std::string stem = name.substr(0, name.size() - 4);  // .<final>.<host>.<pid>.<n>
        const auto n_dot = stem.rfind('.');
        const auto pid_dot = n_dot == std::string::npos ? n_dot : stem.rfind('.', n_dot - 1);
        const auto host_dot = pid_dot == std::string::npos ? pid_dot : stem.rfind('.', pid_dot - 1);
        if (host_dot == std::string::npos || stem.compare(host_dot + 1, pid_dot - host_dot - 1, host) != 0) continue;
        if (owned) {  // only the temporaries of these final names (a long one shortened to fit NAME_MAX)
            const std::string final_name = stem.substr(1, host_dot - 1);
            const bool shortened = name.size() == NAME_MAX;
            const bool ours = owned->count(final_name) > 0 ||
                              (shortened && std::any_of(owned->begin(), owned->end(), [&](const std::string& o) {
                                   return o.compare(0, final_name.size(), final_name) == 0;
                               }));
            if (!ours) continue;
        }
        const std::string pid_text = stem.substr(pid_dot + 1, n_dot - pid_dot - 1);
        if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
        const long pid = std::stol(pid_text);
        if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)) continue;  // still running
        if (fs::remove(entry.path(), ec)) ++removed;
    }
    return removed;
}

}  // namespace depthbatch::detail
