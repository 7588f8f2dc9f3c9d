#include "support/test_support.h"

#include <gtest/gtest.h>
#include <OpenImageIO/imageio.h>
#include <torch/script.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <chrono>
#include <csignal>
#include <poll.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace depthbatch::test {

fs::path samples_dir() {
    if (const char* env = std::getenv("DEPTHBATCH_SAMPLES"); env && *env) return fs::path(env);
    return fs::path(DEPTHBATCH_SAMPLES);
}

TempDir::TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("depthbatch-test-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
}
TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
}

fs::path write_probe_model(const fs::path& path, const std::string& forward_source, const std::string& contract_json) {
    torch::jit::Module m("Probe");
    m.define(forward_source);
    torch::jit::ExtraFilesMap extra;
    if (!contract_json.empty()) extra["depthbatch.json"] = contract_json;
    m.save(path.string(), extra);
    return path;
}

std::string probe_contract(const std::string& kind, int multiple) {
    const std::string units = kind == "metric_depth" ? "m" : "";
    return R"({"format": 1, "name": "probe", "input": {"colorspace": "sRGB", "multiple": )" + std::to_string(multiple) +
           R"(, "size": null, "fixed_size": false, "mean": null, "std": null}, "output": {"kind": ")" + kind +
           R"(", "units": ")" + units + R"("}, "source": "tests/support probe"})";
}

fs::path write_p_mean(const fs::path& path, const std::string& kind, int multiple) {
    return write_probe_model(path, "def forward(self, x):\n    return x.mean(dim=1, keepdim=True)\n",
                             probe_contract(kind, multiple));
}

fs::path write_probe_video_model(const fs::path& path, bool metric) {
    return write_probe_model(
        path,
        "def forward(self, x):\n"
        "    m = x.mean(dim=2)\n"
        "    return m + 0.5 * m.mean(dim=1, keepdim=True)\n",
        std::string(
            R"({"format": 1, "name": "probe-video", "input": {"colorspace": "sRGB", "multiple": 14, "frames": 32},
 "output": {"kind": ")") +
            (metric ? "metric_depth\", \"units\": \"m" : "relative_inverse_depth") +
            R"("}, "temporal": {"window": 32, "overlap": 10,
 "keyframes": [0,12,24,25,26,27,28,29,30,31], "crossfade": 8, "align": ")" +
            (metric ? "none" : "scale_shift") + R"("}, "license": "MIT"})");
}

fs::path write_probe_views_model(const fs::path& path) {
    return write_probe_model(path,
                             "def forward(self, x):\n"
                             "    b = x.size(0)\n"
                             "    s = x.size(1)\n"
                             "    h = x.size(3)\n"
                             "    w = x.size(4)\n"
                             "    d = 2.0 + x.mean(dim=2)\n"
                             "    e = torch.eye(3, 4).expand(b, s, 3, 4).contiguous()\n"
                             "    k = torch.eye(3) * float(w)\n"
                             "    k[2, 2] = 1.0\n"
                             "    k[0, 2] = float(w) / 2.0\n"
                             "    k[1, 2] = float(h) / 2.0\n"
                             "    return (d, e, k.expand(b, s, 3, 3).contiguous())\n",
                             R"({"format": 1, "name": "probe-views", "input": {"colorspace": "sRGB", "multiple": 14,
 "frames": 32}, "output": {"kind": "relative_depth", "units": ""}, "views": {"window": 8, "overlap": 3, "pose":
 "probe"}, "license": "MIT"})");
}

fs::path write_p_const(const fs::path& path, double c, const std::string& kind) {
    char src[256];
    std::snprintf(src, sizeof src, "def forward(self, x):\n    return x[:, 0:1, :, :] * 0.0 + %.9g\n", c);
    return write_probe_model(path, src, probe_contract(kind));
}

void write_image(const fs::path& path, int width, int height, const std::vector<std::string>& names,
                 const std::string& type, const std::function<float(int, int, int)>& fn, int x_origin, int y_origin,
                 int full_width, int full_height) {
    const int nch = static_cast<int>(names.size());
    OIIO::TypeDesc t = type == "half"     ? OIIO::TypeDesc::HALF
                       : type == "uint8"  ? OIIO::TypeDesc::UINT8
                       : type == "uint16" ? OIIO::TypeDesc::UINT16
                                          : OIIO::TypeDesc::FLOAT;
    OIIO::ImageSpec spec(width, height, nch, t);
    spec.channelnames = names;
    spec.x = x_origin;
    spec.y = y_origin;
    spec.full_x = 0;
    spec.full_y = 0;
    spec.full_width = full_width ? full_width : width;
    spec.full_height = full_height ? full_height : height;
    spec.alpha_channel = -1;
    for (int c = 0; c < nch; ++c)
        if (names[c] == "A") spec.alpha_channel = c;
    std::vector<float> px(static_cast<size_t>(width) * height * nch);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
            for (int c = 0; c < nch; ++c)
                px[(static_cast<size_t>(y) * width + x) * nch + c] = fn(x + x_origin, y + y_origin, c);
    auto out = OIIO::ImageOutput::create(path.string());
    ASSERT_TRUE(out) << path << ": " << OIIO::geterror();
    ASSERT_TRUE(out->open(path.string(), spec)) << path << ": " << out->geterror();
    ASSERT_TRUE(out->write_image(OIIO::TypeDesc::FLOAT, px.data())) << path << ": " << out->geterror();
    ASSERT_TRUE(out->close()) << path << ": " << out->geterror();
}

RunResult run_cli(const std::vector<std::string>& args, const std::string& env) {
    return run_program(DEPTHBATCH_BIN, args, env);
}

RunResult run_program(const fs::path& program, const std::vector<std::string>& args, const std::string& env) {
    const auto quote = [](const std::string& a) {
        std::string q = "'";
        for (char ch : a) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
        return q + "'";
    };
    std::string cmd = env.empty() ? "" : env + " ";
    cmd += quote(program.string());
    for (const auto& a : args) cmd += " " + quote(a);
    cmd += " 2>&1";
    RunResult r;
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) return r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
    const int status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

Background::Background(const fs::path& program, const std::vector<std::string>& args,
                       const std::vector<std::string>& env) {
    int fds[2];
    if (::pipe(fds) != 0) {
        ADD_FAILURE() << "pipe: " << std::strerror(errno);
        return;
    }
    std::vector<std::string> argv_s = {program.string()};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
        ::dup2(fds[1], 1);
        ::dup2(fds[1], 2);
        ::close(fds[0]);
        ::close(fds[1]);
        for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
        std::vector<char*> argv;
        for (auto& a : argv_s) argv.push_back(a.data());
        argv.push_back(nullptr);
        ::execv(argv[0], argv.data());
        std::_Exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
    if (pid_ < 0) ADD_FAILURE() << "fork: " << std::strerror(errno);
}

Background::~Background() {
    if (pid_ > 0 && !exited_) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) ::close(fd_);
}

bool Background::read_some(double timeout_s) {
    if (fd_ < 0) return false;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(timeout_s * 1000));
    if (ready <= 0) return ready == 0;
    char buf[4096];
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) {
        ::close(fd_);
        fd_ = -1;
        return false;
    }
    output_.append(buf, static_cast<size_t>(n));
    return true;
}

bool Background::wait_for(const std::string& text, double timeout_s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (output_.find(text) == std::string::npos) {
        const double left = std::chrono::duration<double>(end - std::chrono::steady_clock::now()).count();
        if (left <= 0 || !read_some(std::min(left, 0.2))) return output_.find(text) != std::string::npos;
    }
    return true;
}

bool Background::running() {
    if (exited_ || pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return false;
    }
    return true;
}

void Background::signal(int sig) {
    if (pid_ > 0 && !exited_) ::kill(pid_, sig);
}

int Background::wait(double timeout_s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (running()) {
        const double left = std::chrono::duration<double>(end - std::chrono::steady_clock::now()).count();
        if (left <= 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
            exited_ = true;
            return -1;
        }
        if (!read_some(std::min(left, 0.05))) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    while (read_some(0.2)) {}
    return status_;
}

std::unique_ptr<Background> start_cli(const std::vector<std::string>& args, const std::vector<std::string>& env) {
    return std::make_unique<Background>(DEPTHBATCH_BIN, args, env);
}

RunResult run_python(const std::vector<std::string>& args) {
    return run_program(DEPTHBATCH_TEST_PYTHON, args, "env PYTHONPATH='" DEPTHBATCH_SOURCE_DIR "'");
}

fs::path write_file(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
    out.close();
    EXPECT_TRUE(out) << "could not write " << path;
    return path;
}

fs::path write_job(const fs::path& path, const std::string& yaml) { return write_file(path, yaml); }

OIIO::ImageBuf read_image(const fs::path& path) {
    OIIO::ImageBuf buf(path.string());
    EXPECT_TRUE(buf.read(0, 0, true, OIIO::TypeDesc::FLOAT)) << path << ": " << buf.geterror();
    return buf;
}

OIIO::ImageSpec file_spec(const fs::path& path) {
    auto in = OIIO::ImageInput::open(path.string());
    EXPECT_TRUE(in) << path << ": " << OIIO::geterror();
    return in ? in->spec() : OIIO::ImageSpec();
}

std::vector<std::string> channel_names(const fs::path& path) {
    auto in = OIIO::ImageInput::open(path.string());
    if (!in) return {};
    return in->spec().channelnames;
}

int channel_index(const OIIO::ImageBuf& buf, const std::string& name) {
    const auto& names = buf.spec().channelnames;
    for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == name) return static_cast<int>(i);
    return -1;
}

std::vector<float> depth_values(const fs::path& exr) {
    OIIO::ImageBuf buf = read_image(exr);
    const int z = channel_index(buf, "depth.Z");
    EXPECT_GE(z, 0) << exr << " has no depth.Z";
    std::vector<float> values;
    if (z < 0) return values;
    values.reserve(static_cast<size_t>(buf.spec().width) * buf.spec().height);
    for (OIIO::ImageBuf::ConstIterator<float> it(buf); !it.done(); ++it) values.push_back(it[z]);
    return values;
}

float depth_at(const fs::path& exr, int x, int y) {
    OIIO::ImageBuf buf = read_image(exr);
    const int z = channel_index(buf, "depth.Z");
    EXPECT_GE(z, 0) << exr << " has no depth.Z";
    return z < 0 ? std::numeric_limits<float>::quiet_NaN() : buf.getchannel(x, y, 0, z);
}

nlohmann::json read_json(const fs::path& path) {
    std::ifstream in(path);
    nlohmann::json j;
    try {
        in >> j;
    } catch (const std::exception& e) {
        ADD_FAILURE() << path << ": " << e.what();
    }
    return j;
}

std::string read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<float> read_f32(const fs::path& path) {
    const std::string bytes = read_bytes(path);
    std::vector<float> values(bytes.size() / sizeof(float));
    if (!values.empty()) std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
    return values;
}

std::vector<std::string> list_dir(const fs::path& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace depthbatch::test
