// depthbatch — the lines libraries write to stderr themselves, given depthbatch's prefix.
//
// libpng's default handlers write "libpng error: X" and "libpng warning: X" straight to stderr (png_default_error,
// png_default_warning in libpng 1.6's pngerror.c); OpenImageIO 2.4's PNG reader keeps them (its own error handler
// returns, so libpng's default one still prints). Every line depthbatch writes starts "depthbatch: LEVEL: " (farm log
// scrapers match it), so the CLI routes stderr through a pipe and a thread that rewrites those two prefixes into
// "depthbatch: error: libpng: X" / "depthbatch: warning: libpng: X". Every other byte passes unchanged, as soon as
// it is read (the terminal bar's '\r' lines included).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace depthbatch::cli {

/// The rewriting, fed the bytes of stderr in the pieces they arrive in. Only the start of a line is held, and only
/// while it can still become "libpng error: " or "libpng warning: " (at most 16 bytes).
class LibraryLines {
public:
    /// The bytes to write for `bytes`, the next piece of stderr.
    std::string feed(std::string_view bytes);
    /// The bytes still held (a line start that ended before it could be told apart); called once, at the end.
    std::string finish();

private:
    std::string held_;        ///< the start of the current line while it matches a prefix
    bool line_start_ = true;  ///< the next byte begins a line ('\n' or '\r' before it)
};

/// From now on, fd 2 is a pipe read by a thread that writes LibraryLines' output to the original stderr. Fatal
/// signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) first hand stderr back and write what the pipe holds, so a
/// crash's last words are kept. On any failure (no pipe, no thread) stderr stays as it was.
void route_library_lines();

/// Hand fd 2 back to the original stderr and write what the pipe still holds (waits up to 1 s for the thread).
/// Async-signal-safe: called before std::_Exit and from the fatal-signal handler, and at the end of main. A second
/// call does nothing.
void finish_library_lines() noexcept;

}  // namespace depthbatch::cli
