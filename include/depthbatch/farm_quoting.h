// depthbatch — quoting for the farm engines' files: every path a file system allows (spaces, quotes, `$()`,
// backticks, `%`, braces, non-ASCII) written so that each engine's reader gives back exactly those bytes, and
// nothing in a name is ever executed. One function per syntax; src/farm/ uses them, docs/farm.md "On the farm" lists
// the rules per engine.
#pragma once

#include <string>

namespace depthbatch {

/// Quote `text` for a POSIX shell: '...' with each embedded ' written as '\''. Every byte is kept (newlines and
/// non-UTF-8 bytes included); nothing inside is expanded.
std::string shell_quote(const std::string& text);

/// `text` with every byte outside [A-Za-z0-9._-] replaced by '_' ("" gives "job"): names the engines show and
/// file names depthbatch chooses (Slurm job names and log files, OpenCue job names).
std::string farm_safe_name(const std::string& text);

/// True when `text` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool is_valid_utf8(const std::string& text);

/// A YAML double-quoted scalar of `text` (YAML 1.2 §7.3.1, also read by YAML 1.1 parsers): '"', '\' and every
/// C0 control, DEL, U+0085, U+2028 and U+2029 escaped as \uXXXX (the last three are line breaks in YAML 1.1).
/// Throws ConfigError naming `engine` when `text` is not UTF-8 (YAML streams are Unicode).
std::string yaml_quote(const std::string& text, const char* engine);

/// A Python 3 string literal of `text` ("..." with \\, \", \n, \r, \t and \xNN for other controls; non-ASCII
/// UTF-8 as it is, Python sources being UTF-8). Throws ConfigError naming `engine` when `text` is not UTF-8.
std::string python_quote(const std::string& text, const char* engine);

/// One element of a Tcl list (Tcl's own list quoting): {text} when that keeps every byte (no brace, no
/// backslash), else every Tcl-special byte backslash-escaped, a newline as \n and other controls as \u00XX, so
/// the element never holds a brace that counts or a backslash-newline. Safe inside an enclosing braced word.
std::string tcl_list_element(const std::string& text);

/// One argument of a command line split by the Microsoft C runtime rules, which .NET's Process (Deadline's
/// CommandLine plugin, on Windows and on Linux alike) uses: bare when it has no space, tab, newline, vertical
/// tab or '"' and is not empty; else "..." with 2n backslashes before the closing quote and 2n+1 before an
/// embedded '"' (n = the backslashes in the text there).
std::string windows_argv_quote(const std::string& text);

}  // namespace depthbatch
