// depthbatch — leveled logging to a stream (stderr by default), safe from any thread.
//
// The library never prints except through here; the CLI picks the level (-q, -v) and the stream.
#pragma once

#include <iosfwd>
#include <sstream>
#include <string>

namespace depthbatch {

enum class LogLevel : int { Error = 0, Warning = 1, Info = 2, Debug = 3 };

/// Set the global level (messages above it are dropped) and the stream (not owned; must outlive use).
void set_log_level(LogLevel level);
LogLevel log_level();
void set_log_stream(std::ostream* out);

/// Write one line "depthbatch: <level>: message" atomically with respect to other log lines. Control
/// characters in `message` are written as printable() shows them (a path holding a TAB never garbles a
/// farm log); only '\n' stays, for messages that list items on lines of their own.
void log_line(LogLevel level, const std::string& message);

/// log_line whatever the level set: for the one line -q keeps besides warnings and errors (the closing summary,
/// "depthbatch: info: done: ..."). Levels below Warning are still labelled as they are.
void log_line_always(LogLevel level, const std::string& message);

/// `text` with every control character (bytes below 0x20 and 0x7f) written as an escape: \t, \n, \r, else
/// \xNN. Other bytes (UTF-8 included) are kept.
std::string printable(const std::string& text);

namespace detail {
template <typename... Args> std::string concat(const Args&... args) {
    std::ostringstream s;
    (s << ... << args);
    return s.str();
}
}  // namespace detail

template <typename... Args> void log_error(const Args&... a) { log_line(LogLevel::Error, detail::concat(a...)); }
template <typename... Args> void log_warning(const Args&... a) { log_line(LogLevel::Warning, detail::concat(a...)); }
template <typename... Args> void log_info(const Args&... a) {
    if (log_level() >= LogLevel::Info) log_line(LogLevel::Info, detail::concat(a...));
}
template <typename... Args> void log_debug(const Args&... a) {
    if (log_level() >= LogLevel::Debug) log_line(LogLevel::Debug, detail::concat(a...));
}

}  // namespace depthbatch
