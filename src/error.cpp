#include "depthbatch/error.h"

namespace depthbatch {

std::string library_error_line(const std::string& text) {
    std::string line;
    bool line_break = false;  // a line break since the last character kept
    for (const char c : text) {
        if (c == '\n' || c == '\r') {
            line_break = !line.empty();
            continue;
        }
        if (line_break) line += "; ";
        line += c;
        line_break = false;
    }
    return line;
}

const char* exit_code_name(ExitCode code) noexcept {
    switch (code) {
    case ExitCode::Ok: return "ok";
    case ExitCode::Config: return "config";
    case ExitCode::Input: return "input";
    case ExitCode::Model: return "model";
    case ExitCode::Render: return "render";
    case ExitCode::OutputExists: return "output-exists";
    case ExitCode::Partial: return "partial";
    case ExitCode::Interrupted: return "interrupted";
    }
    return "unknown";
}

}  // namespace depthbatch
