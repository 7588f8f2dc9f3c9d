// Test helpers: probe TorchScript models, synthetic plates, running the depthbatch CLI, reading EXRs.
#pragma once

#include <OpenImageIO/imagebuf.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace depthbatch::test {

namespace fs = std::filesystem;

/// The shared sample plates: $DEPTHBATCH_SAMPLES, else ../shared/samples beside the source tree (as configured
/// at build time; `..` there is resolved by the kernel, so a checkout reached through a link works).
fs::path samples_dir();

/// A fresh, empty temporary folder removed at destruction.
struct TempDir {
    TempDir();
    ~TempDir();
    fs::path path;
    fs::path operator/(const std::string& name) const { return path / name; }
};

/// Probe models (CASES.md): scripted TorchScript modules written with torch::jit::Module::define.
/// `body` is the TorchScript source of forward(self, x) (x: [N,3,H,W]); `contract_json` the embedded
/// depthbatch.json ("" = none). Returns the path written.
fs::path write_probe_model(const fs::path& path, const std::string& forward_source, const std::string& contract_json);
/// depthbatch.json for a probe: colorspace sRGB, multiple 1, any size, given kind.
std::string probe_contract(const std::string& kind = "metric_depth", int multiple = 1);
/// P-mean: mean of the three input channels, [N,1,H,W].
fs::path write_p_mean(const fs::path& path, const std::string& kind = "metric_depth", int multiple = 1);
/// P-const(c): c everywhere, [N,1,H,W].
fs::path write_p_const(const fs::path& path, double c, const std::string& kind = "metric_depth");

/// Write a plate: width x height, `channels` named `names`, pixel type `type` ("half", "float",
/// "uint8", "uint16"), pixel values from fn(x, y, c) in data-window coordinates.
void write_image(const fs::path& path, int width, int height, const std::vector<std::string>& names,
                 const std::string& type, const std::function<float(int, int, int)>& fn,
                 int x_origin = 0, int y_origin = 0, int full_width = 0, int full_height = 0);

/// Result of running the CLI.
struct RunResult {
    int exit_code = -1;
    std::string output;  ///< stdout + stderr
};
/// Run `depthbatch <args>` (args are shell-quoted for you), capture output and exit code.
RunResult run_cli(const std::vector<std::string>& args, const std::string& env = "");
/// The same for any program; `env` is a shell prefix such as "env -u LD_LIBRARY_PATH OCIO=x".
RunResult run_program(const fs::path& program, const std::vector<std::string>& args, const std::string& env = "");

/// Write a YAML job file.
fs::path write_job(const fs::path& path, const std::string& yaml);

/// Read an image fully as float; fails the current test on error.
OIIO::ImageBuf read_image(const fs::path& path);
/// The spec stored in an image file (native channel formats, windows, metadata).
OIIO::ImageSpec file_spec(const fs::path& path);
/// Channel names of an image file.
std::vector<std::string> channel_names(const fs::path& path);
/// Index of a channel by name, -1 if absent.
int channel_index(const OIIO::ImageBuf& buf, const std::string& name);

/// A whole file as bytes ("" if unreadable).
std::string read_bytes(const fs::path& path);

/// Files in a folder (names only, sorted).
std::vector<std::string> list_dir(const fs::path& dir);

}  // namespace depthbatch::test
