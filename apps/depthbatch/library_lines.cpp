#include "library_lines.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <thread>
#include <unistd.h>

namespace depthbatch::cli {
namespace {

struct Rewrite {
    std::string_view from, to;
};
constexpr Rewrite kRewrites[] = {{"libpng error: ", "depthbatch: error: libpng: "},
                                 {"libpng warning: ", "depthbatch: warning: libpng: "}};

int g_original = -1;                 // the original stderr (a duplicate of it, close-on-exec)
int g_pipe = -1;                     // the pipe's read end (close-on-exec)
std::atomic<bool> g_routed{false};   // fd 2 is the pipe
std::atomic<bool> g_drained{false};  // the thread has written all and ended

/// write() all of `size` bytes of `data` to `fd`; gives up on an error other than EINTR (a closed stderr).
void write_all(int fd, const char* data, size_t size) noexcept {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        data += n, size -= static_cast<size_t>(n);
    }
}

/// The thread: the pipe to the original stderr, rewritten, until every write end is closed.
void copy_lines() {
    LibraryLines lines;
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(g_pipe, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        const std::string out = lines.feed(std::string_view(buffer, static_cast<size_t>(n)));
        write_all(g_original, out.data(), out.size());
    }
    const std::string rest = lines.finish();
    write_all(g_original, rest.data(), rest.size());
    g_drained = true;
}

extern "C" void on_fatal_signal(int signo) {
    finish_library_lines();
    std::raise(signo);  // SA_RESETHAND: the default action now (a core dump, the shell's "Segmentation fault")
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

std::string LibraryLines::finish() {
    std::string out;
    out.swap(held_);
    line_start_ = true;
    return out;
}

void route_library_lines() {
    if (g_routed.load()) return;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    const int original = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (original < 0) {
        ::close(fds[0]), ::close(fds[1]);
        return;
    }
    g_original = original;
    g_pipe = fds[0];
    try {
        std::thread(copy_lines).detach();
    } catch (const std::exception&) {
        ::close(fds[0]), ::close(fds[1]), ::close(original);
        g_original = g_pipe = -1;
        return;
    }
    std::fflush(stderr);
    ::dup2(fds[1], STDERR_FILENO);  // fd 2 is now the pipe's only write end (fds[1] closes next)
    ::close(fds[1]);
    g_routed = true;
    struct sigaction action {};
    action.sa_handler = on_fatal_signal;
    action.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    for (const int signo : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::sigaction(signo, &action, nullptr);
}

void finish_library_lines() noexcept {
    if (!g_routed.exchange(false)) return;
    ::dup2(g_original, STDERR_FILENO);  // closes the pipe's last write end: the thread reads to its end, then stops
    const timespec tick{0, 5'000'000};
    for (int i = 0; i < 200 && !g_drained.load(); ++i) ::nanosleep(&tick, nullptr);
}

}  // namespace depthbatch::cli
