// depthbatch — which GPU a task runs on, for the log and the JSON summary: on a farm the engine hands a task its
// GPU(s) through CUDA_VISIBLE_DEVICES (docs/farm.md "On the farm": GPUs), and "cuda:0" alone does not say which card of
// the machine that was. The name and UUID come from the CUDA driver (libcuda.so.1, opened at run time, so this
// compiles and runs without CUDA); the UUID is the one nvidia-smi -L and CUDA_VISIBLE_DEVICES use.
#pragma once

#include <optional>
#include <string>

namespace depthbatch {

/// model.device, parsed once where the job is read: auto (a GPU when LibTorch has CUDA and one is visible, else
/// the CPU), cpu, cuda (the first visible GPU) or cuda:N.
struct ModelDevice {
    enum class Kind { Auto, Cpu, Cuda };
    Kind kind = Kind::Auto;
    int index = -1;  ///< Cuda: N of cuda:N; -1 for plain cuda (the first visible GPU, ordinal 0)

    static ModelDevice cpu() { return {Kind::Cpu, -1}; }
    bool is_cuda() const { return kind == Kind::Cuda; }
    /// The job's spelling: "auto", "cpu", "cuda", "cuda:1".
    std::string name() const;
    bool operator==(const ModelDevice& o) const { return kind == o.kind && index == o.index; }
    bool operator!=(const ModelDevice& o) const { return !(*this == o); }
};

/// `text` as a model.device ("auto", "cpu", "cuda", "cuda:N" with N decimal digits, at most 9 of them); nullopt
/// for anything else. Never throws.
std::optional<ModelDevice> parse_model_device(const std::string& text);

struct GpuDevice {
    int index = -1;    ///< the CUDA ordinal in this process (cuda:N, numbered within CUDA_VISIBLE_DEVICES); -1 = CPU
    std::string name;  ///< the driver's name, e.g. "NVIDIA H200" ("" when the driver cannot tell)
    std::string uuid;  ///< "GPU-8b1c3f0e-...": format_gpu_uuid ("" when the driver cannot tell)
    bool visible_set = false;  ///< CUDA_VISIBLE_DEVICES was set in the environment
    std::string visible;       ///< its value, as the engine set it (e.g. "3" or "GPU-...,GPU-...")
};

/// The 16 bytes of a CUDA UUID (CUuuid) as nvidia-smi writes it: "GPU-" then 8-4-4-4-12 lowercase hex digits.
std::string format_gpu_uuid(const unsigned char bytes[16]);

/// CUDA ordinal `index` of this process as the driver names it (cuDeviceGetName, cuDeviceGetUuid through
/// libcuda.so.1), with CUDA_VISIBLE_DEVICES from the environment. index < 0 gives a CPU entry (index -1, the
/// environment still read). Name and UUID stay "" when the driver library or the device is not there. Never
/// throws.
GpuDevice query_gpu_device(int index);

/// One line for the log: `device_name` ("cpu", "cuda:0"), then for a GPU its name and UUID, and
/// CUDA_VISIBLE_DEVICES when set, e.g. "cuda:0 = NVIDIA H200 GPU-8b1c3f0e-... (CUDA_VISIBLE_DEVICES=3)".
std::string describe_device(const std::string& device_name, const GpuDevice& gpu);

}  // namespace depthbatch
