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

void log_line(LogLevel level, const std::string& message) {
    if (static_cast<int>(level) > g_level.load()) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    *g_stream << "depthbatch: " << level_name(level) << ": " << message << std::endl;
}

}  // namespace depthbatch
