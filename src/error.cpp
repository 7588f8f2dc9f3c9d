#include "depthbatch/error.h"

namespace depthbatch {

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
