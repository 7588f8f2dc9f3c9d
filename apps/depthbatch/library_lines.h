// depthbatch — the lines libraries write to stderr themselves, given depthbatch's prefix.
//
// libpng's default handlers write "libpng error: X" and "libpng warning: X" to the C stream `stderr` (fprintf in
// png_default_error, png_default_warning: libpng 1.6's pngerror.c); OpenImageIO 2.4's PNG reader keeps them (its own
// error handler returns, so libpng's default one still prints). Every line depthbatch writes starts
// "depthbatch: LEVEL: " (farm log scrapers match it), so the CLI points the C stream `stderr` at a stream of its own
// (glibc's fopencookie; "stdin, stdout, and stderr are normal variables which you can set": the GNU C Library
// manual, Standard Streams) that rewrites those two prefixes into "depthbatch: error: libpng: X" /
// "depthbatch: warning: libpng: X" and writes everything at once, in the calling thread, to file descriptor 2.
// depthbatch's own log (std::cerr, bound to the original stream) is untouched, and the order of lines on the
// terminal or in the farm log is the order they were written in.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace depthbatch::cli {

/// The rewriting, fed the bytes written to `stderr` in the pieces they arrive in. Only the start of a line is held,
/// and only while it can still become "libpng error: " or "libpng warning: " (at most 16 bytes).
class LibraryLines {
public:
    /// The bytes to write for `bytes`, the next piece written to `stderr`.
    std::string feed(std::string_view bytes);
    /// What is held, without copying (finish_library_lines, which must not allocate).
    const char* held_data() const noexcept { return held_.data(); }
    size_t held_size() const noexcept { return held_.size(); }

private:
    std::string held_;        ///< the start of the current line while it matches a prefix
    bool line_start_ = true;  ///< the next byte begins a line ('\n' or '\r' before it)
};

/// From now on the C stream `stderr` rewrites libpng's lines (LibraryLines) and writes to file descriptor 2,
/// unbuffered. Nothing changes when the stream cannot be made.
void route_library_lines();

/// Write what is held and point `stderr` back at the original stream. Called before std::_Exit (also from the
/// second stop signal's handler: it only calls write() and stores a pointer) and at the end of main. A second call
/// does nothing.
void finish_library_lines() noexcept;

}  // namespace depthbatch::cli
