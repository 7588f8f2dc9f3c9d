#include "depthbatch/log.h"

#include <atomic>
#include <iostream>
#include <mutex>

namespace depthbatch {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::Info)};
std::ostream* g_stream = &std::cerr;
std::mutex g_mutex;

const char* level_name(LogLevel l) {
    switch (l) {
    case LogLevel::Error: return "error";
    case LogLevel::Warning: return "warning";
    case LogLevel::Info: return "info";
    case LogLevel::Debug: return "debug";
    }
    return "";
}
}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }
void set_log_stream(std::ostream* out) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_stream = out ? out : &std::cerr;
}

std::string printable(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (unsigned char ch : text) {
        if (ch >= 0x20 && ch != 0x7f) out += static_cast<char>(ch);
        else if (ch == '\t') out += "\\t";
        else if (ch == '\n') out += "\\n";
        else if (ch == '\r') out += "\\r";
        else {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[ch >> 4];
            out += hex[ch & 15];
        }
    }
    return out;
}

void log_line(LogLevel level, const std::string& message) {
    if (static_cast<int>(level) > g_level.load()) return;
    log_line_always(level, message);
}

void log_line_always(LogLevel level, const std::string& message) {
    std::string line;
    line.reserve(message.size());
    for (size_t start = 0;;) {  // keep '\n' (multi-line lists), escape every other control character
        const size_t nl = message.find('\n', start);
        line += printable(message.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
        if (nl == std::string::npos) break;
        line += '\n';
        start = nl + 1;
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    *g_stream << "depthbatch: " << level_name(level) << ": " << line << std::endl;
}

}  // namespace depthbatch
