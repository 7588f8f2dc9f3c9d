// Test helpers shared by every suite: temporary folders, expected exceptions, probe TorchScript models,
// synthetic plates and other test files (writers fail the test when the write fails), running the depthbatch
// CLI and the tools/ Python, reading images and the depth.Z channel of outputs.
#pragma once

#include "depthbatch/error.h"
#include "depthbatch/log.h"

#include <gtest/gtest.h>
#include <OpenImageIO/imagebuf.h>
#include <nlohmann/json.hpp>

#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace depthbatch::test {

namespace fs = std::filesystem;

using depthbatch::ExitCode;

/// The process exit status the CLI gives for `code` (error.h; docs/errors.md "Exit codes"), to compare with
/// RunResult::exit_code: EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)).
constexpr int exit_status(ExitCode code) { return static_cast<int>(code); }

/// The shared sample plates: $DEPTHBATCH_SAMPLES, else ../shared/samples beside the source tree (as configured
/// at build time; `..` there is resolved by the kernel, so a checkout reached through a link works).
fs::path samples_dir();

/// A fresh, empty temporary folder removed at destruction. The one temporary folder of the tests: no suite
/// makes its own.
struct TempDir {
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    fs::path path;
    fs::path operator/(const std::string& name) const { return path / name; }
};

/// True when `text` contains `part`.
inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Run `call`, which must throw E; return the exception's message (what()). When it throws nothing, or
/// another exception, a failure is recorded at the caller's line (non-fatal) and "" is returned, so checks on
/// the message fail too. `what` names the call in the failure message. E.g.
///     const std::string msg = expect_error<ConfigError>([&] { parse_frame_spec("1-"); }, "parse_frame_spec");
template <class E, class Call> std::string expect_error(Call&& call, const std::string& what = "the call",
                                                        const char* file = __builtin_FILE(),
                                                        int line = __builtin_LINE()) {
    try {
        call();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE_AT(file, line) << what << " threw another exception than expected: " << e.what();
        return {};
    }
    ADD_FAILURE_AT(file, line) << what << " did not throw";
    return {};
}

/// Probe models (docs/cases.md): scripted TorchScript modules written with torch::jit::Module::define.
/// `body` is the TorchScript source of forward(self, x) (x: [N,3,H,W]); `contract_json` the embedded
/// depthbatch.json ("" = none). Returns the path written.
fs::path write_probe_model(const fs::path& path, const std::string& forward_source, const std::string& contract_json);
/// depthbatch.json for a probe: colorspace sRGB, multiple 1, any size, given kind.
std::string probe_contract(const std::string& kind = "metric_depth", int multiple = 1);
/// P-mean: mean of the three input channels, [N,1,H,W].
fs::path write_p_mean(const fs::path& path, const std::string& kind = "metric_depth", int multiple = 1);
/// P-const(c): c everywhere, [N,1,H,W].
fs::path write_p_const(const fs::path& path, double c, const std::string& kind = "metric_depth");
/// A video model: [B,T,3,H,W] -> [B,T,H,W], each frame's grey plus half the mean grey of its window (so a frame's
/// depth depends on the frames around it), in the VDA windowing (32 frames, overlap 10, crossfade 8); relative
/// (align scale_shift) or, `metric`, a metric model (output metric_depth, align none).
fs::path write_probe_video_model(const fs::path& path, bool metric = false);
/// A tiny any-view model (model_contract.h ViewsContract, window 8, overlap 3): [B,S,3,H,W] -> depth 2 + the views'
/// mean colour, every camera [I|0] (a locked-off shot), fx = fy = W, principal point at the centre.
fs::path write_probe_views_model(const fs::path& path);

/// Write a plate: width x height, `channels` named `names`, pixel type `type` ("half", "float",
/// "uint8", "uint16"), pixel values from fn(x, y, c) in data-window coordinates. A failed write is a fatal
/// failure of the current test naming the path (wrap the call in ASSERT_NO_FATAL_FAILURE to stop there).
void write_image(const fs::path& path, int width, int height, const std::vector<std::string>& names,
                 const std::string& type, const std::function<float(int, int, int)>& fn, int x_origin = 0,
                 int y_origin = 0, int full_width = 0, int full_height = 0);

/// Result of running the CLI.
struct RunResult {
    int exit_code = -1;
    std::string output;  ///< stdout + stderr
};
/// Run `depthbatch <args>` (args are shell-quoted for you), capture output and exit code.
RunResult run_cli(const std::vector<std::string>& args, const std::string& env = "");
/// The same for any program; `env` is a shell prefix such as "env -u LD_LIBRARY_PATH OCIO=x".
RunResult run_program(const fs::path& program, const std::vector<std::string>& args, const std::string& env = "");
/// A program running in the background, its stdout and stderr read through a pipe as they come (for the
/// tests of what a farm wrapper sees while a render runs, and of stop requests). The destructor kills it.
class Background {
public:
    /// Start `program args...` with `env` ("NAME=value" entries added to this environment).
    Background(const fs::path& program, const std::vector<std::string>& args, const std::vector<std::string>& env = {});
    ~Background();
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;
    /// Read output until a line holding `text` has arrived (true) or `timeout_s` passed or the pipe closed.
    bool wait_for(const std::string& text, double timeout_s);
    /// True while the process has not exited.
    bool running();
    /// Send `signal` to the process.
    void signal(int sig);
    /// Wait for the exit, reading the rest of the output: the exit code, 128 + N for a signal N, or -1 when it
    /// had not exited after `timeout_s` (it is then killed).
    int wait(double timeout_s);
    /// Everything read so far.
    const std::string& output() const { return output_; }
    int pid() const { return pid_; }

private:
    bool read_some(double timeout_s);
    int pid_ = -1, fd_ = -1, status_ = -1;
    bool exited_ = false;
    std::string output_;
};
/// The depthbatch CLI in the background.
std::unique_ptr<Background> start_cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {});

/// The same for the tools/ venv Python (DEPTHBATCH_TEST_PYTHON) with the source tree on PYTHONPATH, so
/// `-m tools.export ...` works from any folder.
RunResult run_python(const std::vector<std::string>& args);

/// Write `bytes` to a file, replacing it; a failed write is a failure of the current test naming the path.
/// Returns the path.
fs::path write_file(const fs::path& path, const std::string& bytes);
/// Write a YAML job file (write_file).
fs::path write_job(const fs::path& path, const std::string& yaml);

/// Read an image fully as float; fails the current test on error.
OIIO::ImageBuf read_image(const fs::path& path);
/// The spec stored in an image file (native channel formats, windows, metadata).
OIIO::ImageSpec file_spec(const fs::path& path);
/// Channel names of an image file.
std::vector<std::string> channel_names(const fs::path& path);
/// Index of a channel by name, -1 if absent.
int channel_index(const OIIO::ImageBuf& buf, const std::string& name);

/// The depth.Z channel of an output EXR as float, row by row over the data window. Fails the current
/// test (and returns nothing) when the file cannot be read or has no depth.Z.
std::vector<float> depth_values(const fs::path& exr);
/// depth.Z of an output EXR at pixel (x, y) in image (data-window) coordinates; NaN, and a failure of the
/// current test, when the file cannot be read or has no depth.Z.
float depth_at(const fs::path& exr, int x, int y);

/// A JSON file (a summary, a sidecar); a file that does not parse is a failure of the current test (and null).
nlohmann::json read_json(const fs::path& path);
/// A whole file as bytes ("" if unreadable).
std::string read_bytes(const fs::path& path);
/// A file of raw little-endian float32 values (as numpy's tofile writes them; empty if unreadable).
std::vector<float> read_f32(const fs::path& path);

/// Files in a folder (names only, sorted).
std::vector<std::string> list_dir(const fs::path& dir);

/// Captures log lines for the life of the object.
struct LogCapture {
    std::ostringstream text;
    LogCapture() { set_log_stream(&text); }
    ~LogCapture() { set_log_stream(nullptr); }
    /// How many warnings were logged (lines "depthbatch: warning: ..."), only those containing `part` when given.
    size_t warnings(const std::string& part = "") const {
        std::istringstream lines(text.str());
        size_t n = 0;
        for (std::string line; std::getline(lines, line);)
            n += line.rfind("depthbatch: warning: ", 0) == 0 && line.find(part) != std::string::npos;
        return n;
    }
};

}  // namespace depthbatch::test
