#include "depthbatch/depth_model.h"

#include "depthbatch/error.h"
#include "depthbatch/log.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/script.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace fs = std::filesystem;

namespace depthbatch {
namespace {

/// First line of a c10::Error message: the rest is a C++ backtrace a user cannot act on.
std::string first_line(const std::string& message) {
    const auto nl = message.find('\n');
    return nl == std::string::npos ? message : message.substr(0, nl);
}

void check_model_file(const std::string& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw ModelError(path + ": model file not found");
    if (fs::is_directory(path, ec)) throw ModelError(path + ": is a directory, not a TorchScript model file");
    const auto size = fs::file_size(path, ec);
    if (ec) throw ModelError(path + ": cannot stat the model file: " + ec.message());
    if (size == 0) throw ModelError(path + ": model file is empty (0 bytes)");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ModelError(path + ": cannot open the model file");
    std::string head(64, '\0');
    in.read(&head[0], static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
    if (head.rfind("version https://git-lfs.github.com/spec/", 0) == 0)
        throw ModelError(path + ": is a Git LFS pointer file (" + std::to_string(size) +
                         " bytes), not the model: the LFS object was never pulled (run 'git lfs pull' where it "
                         "came from)");
    if (head.size() < 4 || head.compare(0, 4, "PK\x03\x04") != 0)
        throw ModelError(path + ": is not a TorchScript file (not a zip archive as torch.jit.save writes)");
}

/// Contract from the file's depthbatch.json, with the job's model.* keys layered on top.
ModelContract resolve_contract(const std::string& path, const std::string& embedded, const ContractOverrides& o) {
    ModelContract c;
    if (!embedded.empty()) c = parse_model_contract(embedded, path);
    else if (!o.kind)
        throw ModelError(path + ": the model has no depthbatch.json, so the job must describe it: set at least "
                         "model.kind (metric_depth, relative_inverse_depth or relative_depth), model.colorspace, "
                         "model.multiple, and model.input_size + model.fixed_size: true for a traced model");
    else c.name = fs::path(path).stem().string();
    if (o.colorspace) c.colorspace = *o.colorspace;
    if (o.multiple) c.multiple = *o.multiple;
    if (o.kind) c.kind = *o.kind;
    if (o.units) c.units = *o.units;
    if (!o.units && c.kind == DepthKind::MetricDepth && c.units.empty()) c.units = "m";
    if (o.width_px) {
        c.width = *o.width_px;
        c.height = *o.height_px;
    }
    if (o.fixed_size) c.fixed_size = *o.fixed_size;
    validate_model_contract(c, path);
    return c;
}

}  // namespace

struct DepthModel::Impl {
    mutable torch::jit::Module module;
    torch::Device device = torch::kCPU;
};

DepthModel::DepthModel() : impl_(std::make_unique<Impl>()) {}
DepthModel::~DepthModel() = default;

std::string DepthModel::default_model_path() {
    if (const char* env = std::getenv("DEPTHBATCH_DEFAULT_MODEL"); env && *env) return env;
    return DEPTHBATCH_DEFAULT_MODEL;
}

int set_torch_threads(int threads) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::set_num_threads(threads);
    return at::get_num_threads();
}

std::unique_ptr<DepthModel> DepthModel::load(const JobConfig::Model& options) {
    std::unique_ptr<DepthModel> m(new DepthModel());
    m->path_ = options.path == "default" ? default_model_path() : options.path;
    if (options.path == "default" && !fs::exists(m->path_))
        throw ModelError(m->path_ + ": the default model is not prepared yet: run scripts/prepare-model "
                         "(README.md, first command)");
    check_model_file(m->path_);

    // Device first: a job asking for a GPU that is not there is a configuration problem.
    const std::string& dev = options.device;
    const bool built_with_cuda = at::globalContext().hasCUDA();
    const int gpus = built_with_cuda ? static_cast<int>(torch::cuda::device_count()) : 0;
    if (dev == "auto") {
        if (gpus > 0) {
            m->impl_->device = torch::Device(torch::kCUDA, 0);
            m->device_reason_ = "auto: LibTorch has CUDA and " + std::to_string(gpus) + " GPU(s) are visible";
        } else {
            m->device_reason_ = built_with_cuda ? "auto: LibTorch has CUDA but no GPU is visible"
                                                : "auto: this LibTorch was built without CUDA";
        }
    } else if (dev != "cpu") {
        const int index = dev == "cuda" ? 0 : std::stoi(dev.substr(5));
        if (!built_with_cuda)
            throw ConfigError("model.device '" + dev + "': this LibTorch was built without CUDA (use cpu or auto)");
        if (index >= gpus)
            throw ConfigError("model.device '" + dev + "': " + std::to_string(gpus) + " CUDA device(s) visible");
        m->impl_->device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
        m->device_reason_ = "requested by the job";
    } else {
        m->device_reason_ = "requested by the job";
    }
    m->device_name_ = m->impl_->device.str();

    std::unordered_map<std::string, std::string> extra{{"depthbatch.json", ""}};
    try {
        m->impl_->module = torch::jit::load(m->path_, torch::kCPU, extra);
    } catch (const c10::Error& e) {
        throw ModelError(m->path_ + ": cannot load as TorchScript (truncated, or not written by torch.jit.save): " +
                         first_line(e.what()));
    }
    m->contract_ = resolve_contract(m->path_, extra["depthbatch.json"], options.contract);
    try {
        m->impl_->module.eval();
        m->impl_->module.to(m->impl_->device);
    } catch (const c10::Error& e) {
        throw ModelError(m->path_ + ": cannot move the model to " + m->device_name_ + ": " + first_line(e.what()));
    }
    m->sha256_ = sha256_file(m->path_);
    const std::string code = m->impl_->module.get_method("forward").function().qualname().qualifiedName();
    (void)code;
    m->traced_ = m->contract_.fixed_size;
    return m;
}

long long DepthModel::parameter_count() const {
    long long n = 0;
    for (const auto& p : impl_->module.parameters()) n += p.numel();
    return n;
}

std::vector<DepthImage> DepthModel::infer(const std::vector<const ModelInput*>& batch) const {
    if (batch.empty()) return {};
    const int w = batch[0]->width, h = batch[0]->height;
    std::vector<torch::Tensor> items;
    for (const ModelInput* in : batch) {
        if (in->width != w || in->height != h) throw RenderError("a batch mixes input sizes");
        items.push_back(torch::from_blob(const_cast<float*>(in->chw.data()), {3, h, w}, torch::kFloat32));
    }
    torch::Tensor out;
    try {
        c10::InferenceMode guard;
        torch::Tensor x = torch::stack(items).to(impl_->device);
        torch::jit::IValue result = impl_->module.forward({x});
        if (result.isTuple() && !result.toTupleRef().elements().empty()) result = result.toTupleRef().elements()[0];
        if (!result.isTensor())
            throw ModelError(path_ + ": model output is a " + result.tagKind() + ", not a tensor [N,1,H,W] or [N,H,W]");
        out = result.toTensor();
        if (out.dim() == 4 && out.size(1) == 1) out = out.squeeze(1);
        if (out.dim() != 3 || out.size(0) != static_cast<int64_t>(batch.size()))
            throw ModelError(path_ + ": model output has shape " + c10::str(out.sizes()) +
                             ", not an image [N,1,H,W] or [N,H,W] with N = " + std::to_string(batch.size()));
        if (!out.is_floating_point())
            throw ModelError(path_ + ": model output is " + std::string(c10::toString(out.scalar_type())) +
                             ", not floating point depth");
        out = out.to(torch::kCPU, torch::kFloat32).contiguous();
    } catch (const c10::Error& e) {
        std::string hint;
        if (contract_.fixed_size)
            hint = " (this model has a fixed input size of " + std::to_string(contract_.width) + "x" +
                   std::to_string(contract_.height) + ", width x height)";
        throw RenderError(path_ + ": forward pass failed on " + device_name_ + " at " + std::to_string(w) + "x" +
                          std::to_string(h) + hint + ": " + first_line(e.what()));
    }
    std::vector<DepthImage> result(batch.size());
    const int oh = static_cast<int>(out.size(1)), ow = static_cast<int>(out.size(2));
    for (size_t i = 0; i < batch.size(); ++i) {
        result[i].width = ow;
        result[i].height = oh;
        const float* src = out[static_cast<int64_t>(i)].data_ptr<float>();
        result[i].data.assign(src, src + static_cast<size_t>(ow) * oh);
    }
    return result;
}

}  // namespace depthbatch
