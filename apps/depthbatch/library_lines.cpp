#include "library_lines.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <unistd.h>

namespace depthbatch::cli {
namespace {

struct Rewrite {
    std::string_view from, to;
};
constexpr Rewrite kRewrites[] = {{"libpng error: ", "depthbatch: error: libpng: "},
                                 {"libpng warning: ", "depthbatch: warning: libpng: "}};

LibraryLines g_lines;                    // the stream's state (stdio locks the stream around each write)
std::atomic<FILE*> g_original{nullptr};  // the C stream `stderr` was, while ours stands in for it

/// write() all of `size` bytes of `data` to file descriptor 2; gives up on an error other than EINTR (a closed
/// stderr).
void write_all(const char* data, size_t size) noexcept {
    while (size > 0) {
        const ssize_t n = ::write(STDERR_FILENO, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        data += n, size -= static_cast<size_t>(n);
    }
}

/// fopencookie's write function: every piece written to `stderr`, rewritten, at once.
ssize_t write_rewritten(void*, const char* data, size_t size) {
    const std::string out = g_lines.feed(std::string_view(data, size));
    write_all(out.data(), out.size());
    return static_cast<ssize_t>(size);
}

}  // namespace

std::string LibraryLines::feed(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    for (const char c : bytes) {
        if (!line_start_ && held_.empty()) {
            out += c;
            line_start_ = c == '\n' || c == '\r';
            continue;
        }
        held_ += c;
        line_start_ = false;
        bool prefix = false;
        for (const Rewrite& r : kRewrites) {
            if (held_ == r.from) {
                out += r.to;
                held_.clear();
                prefix = false;
                break;
            }
            prefix = prefix || r.from.substr(0, held_.size()) == held_;
        }
        if (prefix || held_.empty()) continue;
        out += held_;  // not a library line: as it came
        held_.clear();
        line_start_ = c == '\n' || c == '\r';
    }
    return out;
}

void route_library_lines() {
    if (g_original.load()) return;
    cookie_io_functions_t io{};
    io.write = write_rewritten;
    FILE* ours = ::fopencookie(nullptr, "w", io);
    if (!ours) return;
    std::setvbuf(ours, nullptr, _IONBF, 0);
    std::fflush(stderr);
    g_original = stderr;
    stderr = ours;
}

void finish_library_lines() noexcept {
    FILE* original = g_original.exchange(nullptr);
    if (!original) return;
    stderr = original;
    // What is held is at most the start of a line that could have been libpng's (no allocation here: this runs in
    // a signal handler too).
    write_all(g_lines.held_data(), g_lines.held_size());
}

}  // namespace depthbatch::cli
