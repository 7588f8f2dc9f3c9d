#include "depthbatch/gpu_device.h"

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

namespace depthbatch {

std::string format_gpu_uuid(const unsigned char bytes[16]) {
    std::string out = "GPU-";
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
        char hex[3];
        std::snprintf(hex, sizeof hex, "%02x", bytes[i]);
        out += hex;
    }
    return out;
}

GpuDevice query_gpu_device(int index) {
    GpuDevice d;
    d.index = index < 0 ? -1 : index;
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
        d.visible_set = true;
        d.visible = v;
    }
    if (index < 0) return d;
    // The CUDA driver API (cuda.h), declared here so that no CUDA header is needed: CUresult and CUdevice are
    // int, CUuuid is 16 bytes. The driver numbers devices as the runtime (and LibTorch) does, within
    // CUDA_VISIBLE_DEVICES and in CUDA_DEVICE_ORDER.
    void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return d;
    using Init = int (*)(unsigned);
    using Get = int (*)(int*, int);
    using Name = int (*)(char*, int, int);
    using Uuid = int (*)(unsigned char*, int);
    const auto init = reinterpret_cast<Init>(dlsym(lib, "cuInit"));
    const auto get = reinterpret_cast<Get>(dlsym(lib, "cuDeviceGet"));
    const auto name = reinterpret_cast<Name>(dlsym(lib, "cuDeviceGetName"));
    auto uuid = reinterpret_cast<Uuid>(dlsym(lib, "cuDeviceGetUuid_v2"));
    if (!uuid) uuid = reinterpret_cast<Uuid>(dlsym(lib, "cuDeviceGetUuid"));
    int dev = 0;
    if (init && get && init(0) == 0 && get(&dev, index) == 0) {
        char buf[256] = {};
        if (name && name(buf, sizeof buf - 1, dev) == 0) d.name = buf;
        unsigned char bytes[16] = {};
        if (uuid && uuid(bytes, dev) == 0) d.uuid = format_gpu_uuid(bytes);
    }
    // The library stays loaded: LibTorch's CUDA runtime holds it anyway, and unloading a driver is not safe.
    return d;
}

std::string describe_device(const std::string& device_name, const GpuDevice& gpu) {
    std::string out = device_name;
    if (gpu.index >= 0) {
        if (!gpu.name.empty() || !gpu.uuid.empty()) out += " =";
        if (!gpu.name.empty()) out += " " + gpu.name;
        if (!gpu.uuid.empty()) out += " " + gpu.uuid;
    }
    if (gpu.visible_set) out += " (CUDA_VISIBLE_DEVICES=" + gpu.visible + ")";
    return out;
}

std::string ModelDevice::name() const {
    switch (kind) {
    case Kind::Auto: return "auto";
    case Kind::Cpu: return "cpu";
    case Kind::Cuda: break;
    }
    return index < 0 ? "cuda" : "cuda:" + std::to_string(index);
}

std::optional<ModelDevice> parse_model_device(const std::string& text) {
    if (text == "auto") return ModelDevice{ModelDevice::Kind::Auto, -1};
    if (text == "cpu") return ModelDevice::cpu();
    if (text == "cuda") return ModelDevice{ModelDevice::Kind::Cuda, -1};
    const std::string digits = text.rfind("cuda:", 0) == 0 ? text.substr(5) : std::string();
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    return ModelDevice{ModelDevice::Kind::Cuda, std::stoi(digits)};
}

}  // namespace depthbatch
