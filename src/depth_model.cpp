// DepthModel, loading (depth_model_impl.h): the file's checks, the contract, the device, precision and TF32.
#include "depth_model_impl.h"
#include "depthbatch/sha256.h"
#include "depth_model_test_seam.h"

#include "depthbatch/error.h"
#include "depthbatch/install_layout.h"
#include "depthbatch/log.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/csrc/jit/serialization/import_read.h>
#include <torch/csrc/jit/passes/frozen_graph_optimizations.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace fs = std::filesystem;

namespace depthbatch {

std::string torch_error_line(const std::string& message) {
    std::istringstream lines(message);
    std::string line, first, raised;
    while (std::getline(lines, line)) {
        if (first.empty() && !line.empty()) first = line;
        const auto colon = line.find("Error: ");
        if (raised.empty() && colon != std::string::npos && line.find(' ') > colon) raised = line;
    }
    if (first.find("TorchScript interpreter") != std::string::npos && !raised.empty()) return raised;
    return first;
}

namespace {

/// Set by DepthModelTestSeam::allow_low_precision_on_cpu: fp16/bf16 on the CPU run as a cast module, for tests of
/// the precision check without a GPU.
bool g_cpu_low_precision = false;

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
    // torch.save writes a zip archive too (data.pkl and the tensors), but no code: weights, not a model to run.
    bool checkpoint = false;
    try {
        caffe2::serialize::PyTorchStreamReader reader(path);
        checkpoint = reader.hasRecord("data.pkl") && !reader.hasRecord("constants.pkl");
    } catch (const std::exception&) {
        return;  // a damaged archive: torch::jit::load says what is wrong with it
    }
    if (checkpoint)
        throw ModelError(path +
                         ": is a PyTorch checkpoint saved with torch.save (weights, no TorchScript code), not a "
                         "model depthbatch can run: export it to TorchScript with depthbatch's exporter, e.g. "
                         "`python -m tools.export depth-anything-v2 --variant vits --checkpoint " +
                         path + " --out model.pt` (docs/models.md, \"2. Export\")");
}

/// Contract from the file's depthbatch.json, with the job's model.* keys layered on top.
ModelContract resolve_contract(const std::string& path, const std::string& embedded, const ContractOverrides& o) {
    ModelContract c;
    if (!embedded.empty()) c = parse_model_contract(embedded, path);
    else if (!o.kind)
        throw MissingContractError(
            path +
            ": the model has no depthbatch.json, so the job must describe it: set at least "
            "model.kind (metric_depth, relative_inverse_depth or relative_depth), model.colorspace, "
            "model.multiple, and model.input_size + model.fixed_size: true for a traced model");
    else c.name = fs::path(path).stem().string();
    if (o.colorspace) c.colorspace = *o.colorspace;
    if (o.multiple) c.multiple = *o.multiple;
    // A job's model.kind against the model's own contract: the job wins (a hand-made contract can be wrong and
    // model.kind is how a job corrects it), said once at load, naming both (issue 26 §4).
    if (o.kind && !embedded.empty() && *o.kind != c.kind)
        log_warning(path, ": the job's model.kind ", depth_kind_name(*o.kind), " overrides the model's own contract (",
                    depth_kind_name(c.kind), "): depth is read as ", depth_kind_name(*o.kind),
                    "; remove model.kind to use the model's");
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

/// The device for model.device (parsed with the job: gpu_device.h ModelDevice) and why it was picked. Throws
/// ConfigError for a CUDA device this LibTorch or this machine does not have.
std::pair<torch::Device, std::string> choose_device(const ModelDevice& device) {
    const std::string dev = device.name();
    // Built with CUDA = libtorch_cuda registered its hooks (hasCUDART() is true in them, whether or not a GPU is
    // visible). Context::hasCUDA() is not that: it is false on a CUDA build with no visible GPU (seen with the
    // 2.14.1+cu130 LibTorch on a machine without one, which then said "built without CUDA").
    const bool built_with_cuda = at::detail::getCUDAHooks().hasCUDART() || at::globalContext().hasCUDA();
    const int gpus = built_with_cuda ? static_cast<int>(torch::cuda::device_count()) : 0;
    if (device.kind == ModelDevice::Kind::Auto) {
        if (gpus > 0)
            return {torch::Device(torch::kCUDA, 0),
                    "auto: LibTorch has CUDA and " + std::to_string(gpus) + " GPU(s) are visible"};
        return {torch::kCPU,
                built_with_cuda
                    ? "auto: LibTorch has CUDA but no GPU is visible; check the driver and CUDA_VISIBLE_DEVICES"
                    : "auto: this LibTorch was built without CUDA"};
    }
    if (device.kind == ModelDevice::Kind::Cpu) return {torch::kCPU, "requested by the job"};
    const int index = std::max(0, device.index);
    if (!built_with_cuda)
        throw ConfigError("model.device '" + dev + "': this LibTorch was built without CUDA (use cpu or auto)");
    if (index >= gpus)
        throw ConfigError("model.device '" + dev + "': " + std::to_string(gpus) + " CUDA device(s) visible");
    return {torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index)), "requested by the job"};
}

/// True for a module made with torch.jit.trace: PyTorch >= 2.0 stores the example inputs it traced with in
/// traced_inputs.pkl, and their size (width x height, px) is the one size the module is known to accept;
/// *w, *h stay 0 when it cannot be read. Never throws.
bool read_traced_input_size(const std::string& path, int* w, int* h) {
    bool traced = false;
    try {
        caffe2::serialize::PyTorchStreamReader reader(path);
        traced = reader.hasRecord("traced_inputs.pkl");
        if (!traced) return false;
        const c10::IValue inputs = torch::jit::readArchiveAndTensors(
            "traced_inputs", "", "traced_inputs/", std::nullopt, std::nullopt, at::Device(at::kCPU), reader);
        if (inputs.isGenericDict())
            for (const auto& kv : inputs.toGenericDict())
                if (kv.key().isString() && kv.key().toStringRef() == "forward" && kv.value().isList()) {
                    const auto list = kv.value().toList();
                    if (!list.empty() && list.get(0).isTensor() && list.get(0).toTensor().dim() == 4) {
                        *h = static_cast<int>(list.get(0).toTensor().size(2));
                        *w = static_cast<int>(list.get(0).toTensor().size(3));
                    }
                }
    } catch (const c10::Error& e) {
        log_debug(path, ": could not read its traced inputs: ", torch_error_line(e.what()));
    }
    return traced;
}

}  // namespace

DepthModel::DepthModel() : impl_(std::make_unique<Impl>()) {}
// The thread first: a task still queued may read the contract or the path.
DepthModel::~DepthModel() { impl_->thread.stop(); }

std::string DepthModel::default_model_path() {
    if (const char* env = std::getenv("DEPTHBATCH_DEFAULT_MODEL"); env && *env) return env;
    return find_data_file("models/fastdepth-nyu.pt").string();
}

std::optional<ModelContract> DepthModel::embedded_contract(const std::string& model_path) {
    const std::string path = model_path == "default" ? default_model_path() : model_path;
    check_model_file(path);
    try {
        caffe2::serialize::PyTorchStreamReader reader(path);
        if (!reader.hasRecord("extra/depthbatch.json")) return std::nullopt;
        const auto [data, size] = reader.getRecord("extra/depthbatch.json");
        return parse_model_contract(std::string(static_cast<const char*>(data.get()), size), path);
    } catch (const c10::Error& e) {
        throw ModelError(path + ": cannot read as TorchScript (truncated, or not written by torch.jit.save): " +
                         torch_error_line(e.what()));
    }
}

int model_input_frames(const std::string& path) {
    try {
        if (const auto c = DepthModel::embedded_contract(path)) return c->frames;
    } catch (const Error&) {}
    return 1;
}

bool torch_has_cuda() { return at::globalContext().hasCUDA() && torch::cuda::device_count() > 0; }

int set_torch_threads(int threads) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::set_num_threads(threads);
    return at::get_num_threads();
}

std::unique_ptr<DepthModel> DepthModel::load(const ModelSettings& options) {
    std::unique_ptr<DepthModel> m(new DepthModel());
    m->path_ = options.path == "default" ? default_model_path() : options.path;
    if (options.path == "default" && !fs::exists(m->path_))
        throw ModelError(m->path_ +
                         ": the default model is missing. In a source checkout, scripts/setup prepares "
                         "it (README.md, first command); in an installed prefix, reinstall it "
                         "(cmake --install); a program that embeds the library looks for it beside itself "
                         "(../share/depthbatch/models): set model.path; or set DEPTHBATCH_DEFAULT_MODEL to a "
                         "prepared fastdepth-nyu.pt");
    check_model_file(m->path_);

    // Device first: a job asking for a GPU that is not there is a configuration problem.
    std::tie(m->impl_->device, m->device_reason_) = choose_device(options.device);
    m->device_name_ = m->impl_->device.str();
    m->gpu_ = query_gpu_device(m->impl_->device.is_cuda() ? m->impl_->device.index() : -1);

    m->impl_->loader = std::this_thread::get_id();
    m->asked_precision_ = options.precision;
    // Everything that touches the module, and every CUDA call, on the model's own thread (depth_model.h: Threads).
    m->impl_->thread.call([&] { m->load_on_thread(options); });
    return m;
}

void DepthModel::load_on_thread(const ModelSettings& options) {
    DepthModel* m = this;
    std::unordered_map<std::string, std::string> extra{{"depthbatch.json", ""}};
    try {
        m->impl_->module = torch::jit::load(m->path_, torch::kCPU, extra);
    } catch (const std::exception& e) {
        // c10::Error, and torch::jit::ErrorReport (a std::exception, not a c10::Error: an operator this LibTorch does
        // not have; its what() starts with a newline), which escaped as "error: unexpected:" (exit 5). A file that needs
        // a newer LibTorch names the operator, the exporting torch, this LibTorch and the fix (describe_load_failure).
        std::string exported_torch;
        try {
            if (const auto c = embedded_contract(m->path_)) exported_torch = c->exported_torch;
        } catch (const std::exception&) {
            // LibTorch's reader refuses the file (a newer file format version) or this depthbatch refuses its contract:
            // the version as the file records it, read past both.
            exported_torch = recorded_exporting_torch(m->path_);
        }
        const std::string newer = describe_load_failure(m->path_, e.what(), exported_torch);
        throw ModelError(!newer.empty() ? newer
                                        : m->path_ +
                                              ": cannot load as TorchScript (truncated, or not written by "
                                              "torch.jit.save): " +
                                              torch_error_line(e.what()));
    }
    m->contract_ = resolve_contract(m->path_, extra["depthbatch.json"], options.contract);
    m->impl_->contract = &m->contract_;
    Impl& impl = *m->impl_;
    const bool cuda = impl.device.is_cuda();
    if (cuda) {
        // This thread's device and its three streams for the whole job; the compute stream becomes its current
        // stream, so the module's kernels go there (depth_model_run.cpp: Impl::launch). The device-generic c10
        // interfaces dispatch to LibTorch's CUDA implementation at run time: no CUDA header is needed to build.
        c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
        guard.setDevice(impl.device);
        impl.upload = guard.getStreamFromGlobalPool(impl.device);
        impl.compute = guard.getStreamFromGlobalPool(impl.device);
        impl.download = guard.getStreamFromGlobalPool(impl.device);
        guard.exchangeStream(*impl.compute);
    }
    try {
        impl.module.eval();
        impl.module.to(impl.device);
    } catch (const c10::Error& e) {
        throw ModelError(m->path_ + ": cannot move the model to " + m->device_name_ + ": " +
                         torch_error_line(e.what()));
    }
    m->sha256_ = sha256_file(m->path_);
    impl.path = m->path_;
    int traced_w = 0, traced_h = 0;
    m->traced_ = read_traced_input_size(m->path_, &traced_w, &traced_h);
    if (m->traced_) {
        ModelContract& c = m->contract_;
        if (traced_w > 0 && c.width > 0 && (c.width != traced_w || c.height != traced_h))
            throw ModelError(m->path_ + ": traced at " + std::to_string(traced_w) + "x" + std::to_string(traced_h) +
                             " (width x height) but the contract/job says " + std::to_string(c.width) + "x" +
                             std::to_string(c.height) + "; a traced module runs only at the size it was traced at");
        if (traced_w > 0 && !c.fixed_size) {
            log_info(m->path_, ": traced module: fixed input size ", traced_w, "x", traced_h,
                     " (from its traced inputs)");
            c.width = traced_w;
            c.height = traced_h;
            c.fixed_size = true;
        } else if (traced_w == 0 && !c.fixed_size) {
            log_warning(m->path_,
                        ": made with torch.jit.trace but its size is unknown: set model.input_size and "
                        "model.fixed_size: true to the size it was traced at");
        }
    }
    if (options.freeze) {
        try {
            impl.module = torch::jit::optimize_for_inference(impl.module);
            impl.frozen = true;
            log_info("model.freeze: frozen and optimized for inference (in memory only)");
        } catch (const c10::Error& e) {
            log_warning("model.freeze: cannot freeze this module (", torch_error_line(e.what()),
                        "); running it as it is");
        }
    }
    if (options.channels_last) {
        impl.channels_last = true;
        for (auto p : impl.module.parameters())
            if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
    }

    // Precision. fp32 on CUDA is IEEE fp32: PyTorch lets cuDNN convolutions use TF32 by default (10-bit mantissa
    // products; the CUDA depth differed from the CPU's by 4.3e-3 of the span, issue 31), so TF32 is off unless the
    // job asks for tf32. fp16/bf16 run the module cast to that type (the input cast on the device, the output back
    // to fp32), checked against fp32 on the job's first frame (check_precision). On the CPU every precision but
    // fp32 is refused with one warning and the job runs in fp32, identical to an explicit fp32 run (docs/cases.md 8a).
    m->precision_ = options.precision;
    const bool low = options.precision == Precision::Fp16 || options.precision == Precision::Bf16;
    if (options.precision != Precision::Fp32 && !cuda && !(low && g_cpu_low_precision)) {
        log_warning("model.precision ", option_name(options.precision), " needs CUDA; running in fp32 on ",
                    m->device_name_);
        m->precision_ = Precision::Fp32;
    }
    if (cuda) {
        const bool tf32 = m->precision_ == Precision::Tf32;
        at::globalContext().setAllowTF32CuDNN(tf32);
        at::globalContext().setAllowTF32CuBLAS(tf32);
        if (tf32) log_info("model.precision tf32: TF32 convolutions and matrix products on ", m->device_name_);
    }
    if (low && m->precision_ == options.precision) {
        impl.low_dtype = options.precision == Precision::Fp16 ? at::kHalf : at::kBFloat16;
        try {
            impl.low = impl.module.clone();
            impl.low->to(impl.low_dtype);
        } catch (const c10::Error& e) {
            log_info(m->path_, ": cannot cast the model to ", option_name(options.precision), " (",
                     torch_error_line(e.what()), "); autocast instead");
            impl.low.reset();
            impl.autocast = true;
        }
        log_info("model.precision ", option_name(options.precision), ": ",
                 impl.autocast ? "autocast"
                               : "the module cast to " + std::string(option_name(options.precision)) +
                                     " (input cast on the device, depth returned as fp32)",
                 " on ", m->device_name_, "; checked against fp32 on the first frame (tolerance ",
                 kPrecisionTolerance * 100, "% of the depth span)");
    }
    if (cuda) {
        // cuDNN autotuning (torch.backends.cudnn.benchmark): every frame of a job reaches the model at one input
        // size (the plan is the plate's, and plates of a sequence share a size; tiles share theirs), so the search
        // runs once per shape, in warm_up at the job's shapes, and every later forward takes the fastest algorithm.
        at::globalContext().setBenchmarkCuDNN(true);
        log_info("cuDNN autotuning on (the warm-up at the job's shapes pays for the search)");
    }
}

void DepthModelTestSeam::allow_low_precision_on_cpu(bool allow) { g_cpu_low_precision = allow; }

int DepthModelTestSeam::cpu_new_shapes(const DepthModel& model) { return model.impl_->cpu_new_shapes; }

void DepthModelTestSeam::set_fault_injector(DepthModel& model,
                                            std::function<bool(size_t, const std::string&)> injector) {
    model.impl_->fault = std::move(injector);
}

long long DepthModel::parameter_count() const {
    long long n = 0;
    for (const auto& p : impl_->module.parameters()) n += p.numel();
    return n;
}

}  // namespace depthbatch
