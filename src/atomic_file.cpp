#include "atomic_file.h"

#include "depthbatch/error.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace fs = std::filesystem;

namespace depthbatch::detail {
namespace {
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
    path_ = (p.parent_path() / ("." + p.filename().string() + "." + std::to_string(::getpid()) + "." +
                                std::to_string(counter++) + ".tmp"))
                .string();
}

TempFile::~TempFile() {
    if (!path_.empty()) {
        std::error_code ec;
        fs::remove(path_, ec);
    }
}

TempFile::Result TempFile::publish(bool replace) {
    if (replace) {
        std::error_code ec;
        fs::rename(path_, final_, ec);
        if (ec) throw RenderError(final_ + ": cannot move the finished file into place: " + ec.message());
        path_.clear();
        return Result::Published;
    }
    if (::link(path_.c_str(), final_.c_str()) == 0) return Result::Published;  // the temporary goes in ~TempFile
    const int err = errno;
    if (err == EEXIST) return same_bytes(path_, final_) ? Result::Identical : Result::Exists;
    throw RenderError(final_ + ": cannot move the finished file into place: " + std::strerror(err));
}

}  // namespace depthbatch::detail
