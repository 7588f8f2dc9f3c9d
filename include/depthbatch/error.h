// depthbatch — error classes and the exit codes the CLI maps them to.
//
// Setup code (job parsing, model loading, OCIO) throws one of the classes below; per-frame work inside
// the TBB pipeline returns a FrameResult instead (see run_job.h), because oneTBB cancels the whole
// pipeline on the first exception. Only apps/depthbatch/main.cpp turns them into process exit codes.
#pragma once

#include <stdexcept>
#include <string>

namespace depthbatch {

/// Process exit codes, one per failure class. Documented in docs/errors.md ("Exit codes").
enum class ExitCode : int {
    Ok = 0,
    Config = 2,        ///< bad job file, unknown/mistyped key, bad flag or --set, bad frame spec
    Input = 3,         ///< missing or unreadable plate frame (missing file, truncated image, deep EXR, ...)
    Model = 4,         ///< model file missing/not TorchScript/LFS pointer, contract or output-shape error
    Render = 5,        ///< failure while rendering (non-finite depth, device failure, EXR write failure)
    OutputExists = 6,  ///< outputs already exist and the overwrite policy is "error"
    Partial = 7,       ///< pipeline.on_error: continue, and some frames failed (the rest were rendered)
    Interrupted = 130  ///< SIGINT/SIGTERM: frames in flight finished or abandoned, no partial file left
};

/// Base of every depthbatch exception. what() is the full, user-facing message.
class Error : public std::runtime_error {
public:
    Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
    ExitCode code() const noexcept { return code_; }

private:
    ExitCode code_;
};

/// A job file, flag or override is wrong. The message names the file, line and key.
struct ConfigError : Error {
    explicit ConfigError(const std::string& m) : Error(ExitCode::Config, m) {}
};
/// A plate frame is missing or cannot be decoded. The message names the frame and path.
struct InputError : Error {
    explicit InputError(const std::string& m) : Error(ExitCode::Input, m) {}
};
/// The model cannot be loaded or breaks the model contract. The message names the model path.
struct ModelError : Error {
    explicit ModelError(const std::string& m) : Error(ExitCode::Model, m) {}
};
/// The model file has no embedded depthbatch.json and the job does not state its contract (model.kind ...).
/// A ModelError (exit 4); its own type so that callers that can do without a contract (`depthbatch info`)
/// catch it without reading the message.
struct MissingContractError : ModelError {
    explicit MissingContractError(const std::string& m) : ModelError(m) {}
};
/// Rendering a frame failed after its inputs were read (inference, depth checks, writing).
struct RenderError : Error {
    explicit RenderError(const std::string& m) : Error(ExitCode::Render, m) {}
};
/// Outputs exist and the job does not allow overwriting them.
struct OutputExistsError : Error {
    explicit OutputExistsError(const std::string& m) : Error(ExitCode::OutputExists, m) {}
};

/// `text`, a library's error message, as one line: OpenImageIO's may span several (its PNG reader's "PNG read error:
/// X\nPNG library error"), and every line depthbatch writes carries its prefix. Trailing line breaks are dropped,
/// the others written "; ".
std::string library_error_line(const std::string& text);

/// Short name of an exit code ("config", "input", ...), used in logs and the JSON report.
const char* exit_code_name(ExitCode code) noexcept;

}  // namespace depthbatch
