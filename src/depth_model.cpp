#include "depthbatch/depth_model.h"
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
namespace {

/// The part of a c10::Error a user can act on: the first line, or, for errors raised inside the
/// TorchScript interpreter (whose first line only says so), the Python-style "XxxError: ..." line.
std::string first_line(const std::string& message) {
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
        throw MissingContractError(path + ": the model has no depthbatch.json, so the job must describe it: set at least "
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

/// The device for model.device ("auto", "cpu", "cuda", "cuda:N", validated by the job parser) and why it
/// was picked. Throws ConfigError for a CUDA device this LibTorch or this machine does not have.
std::pair<torch::Device, std::string> choose_device(const std::string& dev) {
    // Built with CUDA = libtorch_cuda registered its hooks (hasCUDART() is true in them, whether or not a GPU is
    // visible). Context::hasCUDA() is not that: it is false on a CUDA build with no visible GPU (seen with the
    // 2.14.1+cu130 LibTorch on a machine without one, which then said "built without CUDA").
    const bool built_with_cuda = at::detail::getCUDAHooks().hasCUDART() || at::globalContext().hasCUDA();
    const int gpus = built_with_cuda ? static_cast<int>(torch::cuda::device_count()) : 0;
    if (dev == "auto") {
        if (gpus > 0)
            return {torch::Device(torch::kCUDA, 0), "auto: LibTorch has CUDA and " + std::to_string(gpus) + " GPU(s) are visible"};
        return {torch::kCPU, built_with_cuda ? "auto: LibTorch has CUDA but no GPU is visible; check the driver and CUDA_VISIBLE_DEVICES"
                                             : "auto: this LibTorch was built without CUDA"};
    }
    if (dev == "cpu") return {torch::kCPU, "requested by the job"};
    const int index = dev == "cuda" ? 0 : std::stoi(dev.substr(5));
    if (!built_with_cuda)
        throw ConfigError("model.device '" + dev + "': this LibTorch was built without CUDA (use cpu or auto)");
    if (index >= gpus) throw ConfigError("model.device '" + dev + "': " + std::to_string(gpus) + " CUDA device(s) visible");
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
        log_debug(path, ": could not read its traced inputs: ", first_line(e.what()));
    }
    return traced;
}

/// Gives the free heap back to the system when the CPU input shape is new (issue 22 §7, bench/shapes). Called by
/// Impl::forward before a forward whose shape is not among the last 8 distinct ones, so a job of one size (or a
/// tiled job's 2-3 shapes a frame) never pays for it. Why: each new shape makes oneDNN build and cache primitives
/// (up to ONEDNN_PRIMITIVE_CACHE_CAPACITY, 128 in depthbatch), small blocks that stay live among the large
/// activation buffers of that shape's forward. Those buffers are freed after it, but free() gives back only the
/// top of a heap, so with a new size every frame they stayed resident (mallinfo2 after 60 sizes of a 2-layer
/// conv, ~500x400: 89 MB in use, 559 MB free; primitive cache capacity 8: 87 and 86).
/// API: glibc's malloc_trim(0) (<malloc.h>; malloc_trim(3): since glibc 2.8 it releases the whole free pages of
/// every arena, anywhere in the heap, with madvise(MADV_DONTNEED)). oneDNN's own dnnl_set_primitive_cache_capacity
/// (0 and back flushes the cache) cannot be called: LibTorch links oneDNN with hidden visibility (a local 't'
/// symbol of libtorch_cpu.so 2.13, which dlsym does not see). DEPTHBATCH_MALLOC_TRIM=0 turns this off (bench/shapes'
/// "before"); without glibc it does nothing.
void release_free_heap() {
#if defined(__GLIBC__)
    static const bool off = [] {
        const char* v = std::getenv("DEPTHBATCH_MALLOC_TRIM");
        return v && std::strcmp(v, "0") == 0;
    }();
    // Only when there is much to give back (over 64 MiB free in the arenas): malloc_trim walks every arena (~40 ms
    // on a large heap, and the next forward touches its pages again). bench/shapes, one run each: peak RSS
    // changing/fixed FastDepth 1.005, conv 1.103, conv 2K 1.075; fixed-size CPU 0.99-1.05 of no trim. Also requiring
    // free > in use kept the 2K case at 1.19.
    if (off) return;
    const struct mallinfo2 m = mallinfo2();
    if (m.fordblks > (size_t{64} << 20)) malloc_trim(0);
#endif
}

}  // namespace

struct DepthModel::Impl {
    mutable torch::jit::Module module;
    torch::Device device = torch::kCPU;
    at::ScalarType autocast = at::kFloat;   ///< kHalf / kBFloat16 under autocast on CUDA
    bool channels_last = false;
    bool frozen = false;                     ///< model.freeze took: its graph needs the optimizing executor
    mutable std::optional<torch::jit::Module> cpu_fallback;  ///< plain fp32 CPU copy, made on first need
    std::string path;
    const ModelContract* contract = nullptr;   ///< the owning DepthModel's contract_ (set by load)
    mutable bool told_tuple = false, told_transposed = false;   ///< once-per-job debug line / warning
    std::function<bool(size_t, const std::string&)> fault;
    /// CUDA only: the batch's page-locked staging buffer [N,3,H,W] (infer() runs one batch at a time, and
    /// Impl::forward's synchronize ends each batch's use of it before the next overwrites it).
    mutable torch::Tensor pinned_batch;
    /// The last 8 distinct input shapes of CPU forwards, most recently used first, and how many forwards came with
    /// a shape not among them after the first (each calls release_free_heap; DepthModelTestSeam). Eight, so that a tiled
    /// job's global, tile and last-tile batches (2-3 shapes a frame, every frame) never count as new.
    mutable std::vector<std::vector<int64_t>> cpu_shapes;
    mutable int cpu_new_shapes = 0;

    /// One forward on `device`; returns [N,H,W] float32 on the CPU. Throws c10::Error.
    torch::Tensor forward(torch::jit::Module& m, const torch::Tensor& cpu_batch, torch::Device dev,
                          at::ScalarType precision, bool injected_oom) const;
};

DepthModel::DepthModel() : impl_(std::make_unique<Impl>()) {}
DepthModel::~DepthModel() = default;

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
        throw ModelError(path + ": cannot read as TorchScript (truncated, or not written by torch.jit.save): " + first_line(e.what()));
    }
}

int model_input_frames(const std::string& path) {
    try {
        if (const auto c = DepthModel::embedded_contract(path)) return c->frames;
    } catch (const Error&) {
    }
    return 1;
}

bool torch_has_cuda() { return at::globalContext().hasCUDA() && torch::cuda::device_count() > 0; }

int set_torch_threads(int threads) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::set_num_threads(threads);
    return at::get_num_threads();
}

std::unique_ptr<DepthModel> DepthModel::load(const JobConfig::Model& options) {
    std::unique_ptr<DepthModel> m(new DepthModel());
    m->path_ = options.path == "default" ? default_model_path() : options.path;
    if (options.path == "default" && !fs::exists(m->path_))
        throw ModelError(m->path_ + ": the default model is missing. In a source checkout, scripts/setup prepares "
                         "it (README.md, first command); in an installed prefix, reinstall it "
                         "(cmake --install); or set DEPTHBATCH_DEFAULT_MODEL to a prepared fastdepth-nyu.pt");
    check_model_file(m->path_);

    // Device first: a job asking for a GPU that is not there is a configuration problem.
    std::tie(m->impl_->device, m->device_reason_) = choose_device(options.device);
    m->device_name_ = m->impl_->device.str();
    m->gpu_ = query_gpu_device(m->impl_->device.is_cuda() ? m->impl_->device.index() : -1);

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
        } catch (const std::exception&) {   // unreadable, or a contract this depthbatch refuses: not known
        }
        const std::string newer = describe_load_failure(m->path_, e.what(), exported_torch);
        throw ModelError(!newer.empty() ? newer
                                        : m->path_ + ": cannot load as TorchScript (truncated, or not written by "
                                                     "torch.jit.save): " + first_line(e.what()));
    }
    m->contract_ = resolve_contract(m->path_, extra["depthbatch.json"], options.contract);
    m->impl_->contract = &m->contract_;
    try {
        m->impl_->module.eval();
        m->impl_->module.to(m->impl_->device);
    } catch (const c10::Error& e) {
        throw ModelError(m->path_ + ": cannot move the model to " + m->device_name_ + ": " + first_line(e.what()));
    }
    m->sha256_ = sha256_file(m->path_);
    m->impl_->path = m->path_;
    int traced_w = 0, traced_h = 0;
    m->traced_ = read_traced_input_size(m->path_, &traced_w, &traced_h);
    if (m->traced_) {
        ModelContract& c = m->contract_;
        if (traced_w > 0 && c.width > 0 && (c.width != traced_w || c.height != traced_h))
            throw ModelError(m->path_ + ": traced at " + std::to_string(traced_w) + "x" + std::to_string(traced_h) +
                             " (width x height) but the contract/job says " + std::to_string(c.width) + "x" +
                             std::to_string(c.height) + "; a traced module runs only at the size it was traced at");
        if (traced_w > 0 && !c.fixed_size) {
            log_info(m->path_, ": traced module: fixed input size ", traced_w, "x", traced_h, " (from its traced inputs)");
            c.width = traced_w;
            c.height = traced_h;
            c.fixed_size = true;
        } else if (traced_w == 0 && !c.fixed_size) {
            log_warning(m->path_, ": made with torch.jit.trace but its size is unknown: set model.input_size and "
                        "model.fixed_size: true to the size it was traced at");
        }
    }

    // Precision: autocast on CUDA only. On the CPU half precision is refused with one warning and the
    // job runs in fp32, identical to an explicit fp32 run (CASES.md 8a).
    m->precision_ = options.precision;
    if (options.precision != Precision::Fp32) {
        if (!m->impl_->device.is_cuda()) {
            log_warning("model.precision ", option_name(options.precision), " needs CUDA; running in fp32 on ", m->device_name_);
            m->precision_ = Precision::Fp32;
        } else {
            m->impl_->autocast = options.precision == Precision::Fp16 ? at::kHalf : at::kBFloat16;
            log_warning("model.precision ", option_name(options.precision), ": autocast on ", m->device_name_,
                        "; ViT models can overflow in fp16 (non-finite frames are redone in fp32), and small "
                        "batches may be slower than fp32");
        }
    }
    if (options.freeze) {
        try {
            m->impl_->module = torch::jit::optimize_for_inference(m->impl_->module);
            m->impl_->frozen = true;
            log_info("model.freeze: frozen and optimized for inference (in memory only)");
        } catch (const c10::Error& e) {
            log_warning("model.freeze: cannot freeze this module (", first_line(e.what()), "); running it as it is");
        }
    }
    if (options.channels_last) {
        m->impl_->channels_last = true;
        for (auto p : m->impl_->module.parameters())
            if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
    }
    if (m->impl_->device.is_cuda()) {
        // cuDNN autotuning (torch.backends.cudnn.benchmark): every frame of a job reaches the model at one input
        // size (the plan is the plate's, and plates of a sequence share a size; tiles share theirs), so the search
        // runs once per shape, in the warm-up forward below, and every later forward takes the fastest algorithm.
        at::globalContext().setBenchmarkCuDNN(true);
        log_info("cuDNN autotuning on (one input size a job; the warm-up forward pays for the search)");
    }
    const int warmup = options.warmup >= 0 ? options.warmup : (m->impl_->device.is_cuda() ? 1 : 0);
    if (warmup > 0 && m->contract_.height > 0) {
        ModelInput in;
        in.width = m->contract_.width;
        in.height = m->contract_.height;
        in.chw.assign(static_cast<size_t>(3) * in.width * in.height, 0.5f);
        // A video model warms up on a whole window (the shape every forward of the job has).
        const int t = m->contract_.multi_frame() ? m->contract_.temporal.window : 0;
        for (int i = 0; i < warmup; ++i)
            if (t > 0) m->infer_clips({std::vector<const ModelInput*>(static_cast<size_t>(t), &in)});
            else m->infer({&in});
        log_info("model.warmup: ", warmup, " forward pass(es) at ", in.width, "x", in.height, t > 0 ? " (a window of " + std::to_string(t) + " frames)" : "");
    }
    return m;
}

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

torch::Tensor DepthModel::Impl::forward(torch::jit::Module& m, const torch::Tensor& cpu_batch, torch::Device dev,
                                        at::ScalarType precision, bool injected_oom) const {
    if (injected_oom) throw c10::OutOfMemoryError(c10::SourceLocation{__func__, __FILE__, __LINE__}, "injected out of memory");
    c10::InferenceMode guard;
    // On the CPU, TorchScript's graph executor optimizations (the profiling executor's specialisation and
    // fusion passes) cost ~0.15-0.2 s on the first forward of each new input shape and gain nothing measurable
    // on a conv network afterwards (FastDepth 384x224, 2 threads: min 31-34 ms a forward either way; the CPU
    // fuser is off by default), while farm chunks are often 1-10 frames: off on the CPU. CUDA keeps them (its
    // fusers pay back over a shot), and so does a frozen module (model.freeze drops the submodules' methods,
    // which only the optimizing executor's inlining stops calling). A process-wide flag, set around each call.
    torch::jit::GraphOptimizerEnabledGuard optimize(dev.is_cuda() || frozen);
    // To a GPU: from page-locked memory (infer() stages the batch there), so the copy is one DMA that does not
    // block the host; the forward is queued behind it on the same stream.
    torch::Tensor x = cpu_batch.to(dev, cpu_batch.scalar_type(), /*non_blocking=*/dev.is_cuda() && cpu_batch.is_pinned());
    if (channels_last && dev == device && x.dim() == 4) x = x.contiguous(at::MemoryFormat::ChannelsLast);   // not a clip [B,T,3,H,W]
    if (!dev.is_cuda()) {   // a CPU shape not among the last 8: release_free_heap
        const auto seen = std::find_if(cpu_shapes.begin(), cpu_shapes.end(),
                                       [&](const std::vector<int64_t>& s) { return x.sizes() == c10::IntArrayRef(s); });
        if (seen != cpu_shapes.end()) {
            std::rotate(cpu_shapes.begin(), seen, seen + 1);
        } else {
            if (!cpu_shapes.empty()) ++cpu_new_shapes, release_free_heap();
            cpu_shapes.insert(cpu_shapes.begin(), x.sizes().vec());
            if (cpu_shapes.size() > 8) cpu_shapes.pop_back();
        }
    }
    torch::jit::IValue result;
    if (precision != at::kFloat && dev.is_cuda()) {
        at::autocast::set_autocast_enabled(at::kCUDA, true);
        at::autocast::set_autocast_dtype(at::kCUDA, precision);
        try {
            result = m.forward({x});
        } catch (...) {
            at::autocast::set_autocast_enabled(at::kCUDA, false);
            at::autocast::clear_cache();
            throw;
        }
        at::autocast::set_autocast_enabled(at::kCUDA, false);
        at::autocast::clear_cache();
    } else {
        result = m.forward({x});
    }
    // A tuple (depth, confidence, ...): its first element is the depth (README "Model contract"); the contract's
    // extra outputs (output.extra_outputs) are the elements after it, in order.
    const size_t n_extra = contract ? contract->extra_outputs.size() : 0;
    std::vector<torch::Tensor> extras;
    if (n_extra > 0 && !result.isTuple())
        throw ModelError(path + ": the contract declares " + std::to_string(n_extra) + " extra output(s) "
                         "(output.extra_outputs) but the model returns one tensor, not a tuple (depth, extra...)");
    if (result.isTuple()) {
        const auto& elements = result.toTupleRef().elements();
        if (elements.empty()) throw ModelError(path + ": model output is an empty tuple, not a tensor [N,1,H,W] or [N,H,W]");
        if (!elements[0].isTensor())
            throw ModelError(path + ": model output is a tuple whose first element is " + elements[0].type()->annotation_str() +
                             ", not a tensor [N,1,H,W] or [N,H,W] (the first element of a tuple is taken as the depth)");
        if (!told_tuple) {
            log_debug(path, ": model output is a tuple of ", elements.size(), " (", result.type()->annotation_str(),
                      "); its first element is the depth, the rest is ignored");
            told_tuple = true;
        }
        if (elements.size() < 1 + n_extra)
            throw ModelError(path + ": the contract declares " + std::to_string(n_extra) + " extra output(s) "
                             "(output.extra_outputs) but the model returns a tuple of " + std::to_string(elements.size()));
        for (size_t k = 0; k < n_extra; ++k) {
            if (!elements[1 + k].isTensor())
                throw ModelError(path + ": extra output '" + contract->extra_outputs[k].name + "' (tuple element " +
                                 std::to_string(2 + k) + ") is " + elements[1 + k].type()->annotation_str() + ", not a tensor");
            extras.push_back(elements[1 + k].toTensor());
        }
        result = elements[0];
    }
    if (!result.isTensor())
        throw ModelError(path + ": model output is " + result.type()->annotation_str() + ", not a tensor [N,1,H,W] or [N,H,W]");
    torch::Tensor out = result.toTensor();
    // Shape and dtype, before anything is allocated for the output (a conversion, the resize to the plate).
    ModelOutputCheck check;
    try {
        check = cpu_batch.dim() == 5
                    ? check_clip_output(out.sizes().vec(), c10::toString(out.scalar_type()), cpu_batch.sizes().vec(), *contract)
                    : check_model_output(out.sizes().vec(), c10::toString(out.scalar_type()), cpu_batch.sizes().vec(), *contract);
    } catch (const ModelError& e) {
        throw ModelError(path + ": " + e.what());
    }
    if (check.transposed && !told_transposed) {
        log_warning(path, ": model output ", shape_text(out.sizes().vec()), " has the height and width of its input ",
                    shape_text(cpu_batch.sizes().vec()), " swapped: its depth is probably rotated (rendering on; "
                    "said once per job)");
        told_transposed = true;
    }
    if (cpu_batch.dim() == 5) out = out.flatten(0, 1);   // [B,T,H,W] -> [B*T,H,W], clip by clip
    else if (out.dim() == 4) out = out.squeeze(1);
    if (!extras.empty()) {   // [N,H,W] depth + k extras of its shape -> [N,1+k,H,W] (infer() splits them)
        std::vector<torch::Tensor> planes{out.to(torch::kFloat32)};
        for (size_t k = 0; k < extras.size(); ++k) {
            torch::Tensor e = extras[k];
            if (cpu_batch.dim() == 5 && e.dim() == 4) e = e.flatten(0, 1);   // a clip's [B,T,H,W] as its frames
            else if (e.dim() == 4 && e.size(1) == 1) e = e.squeeze(1);
            if (e.sizes() != out.sizes() || !e.is_floating_point())
                throw ModelError(path + ": extra output '" + contract->extra_outputs[k].name + "' is " +
                                 shape_text(extras[k].sizes().vec()) + " " + c10::toString(extras[k].scalar_type()) +
                                 ", not floating point of the depth's shape " + shape_text(out.sizes().vec()));
            planes.push_back(e.to(out.device(), torch::kFloat32));
        }
        out = torch::stack(planes, 1);
    }
    if (!dev.is_cuda()) return out.to(torch::kFloat32).contiguous();
    // Back from a GPU: into page-locked memory (about twice the bandwidth of pageable memory), then one
    // synchronize, which is also where a forward's asynchronous CUDA error surfaces.
    torch::Tensor host = torch::empty(out.sizes(), torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(true));
    host.copy_(out.to(torch::kFloat32), /*non_blocking=*/true);   // a half output converts on the GPU
    torch::cuda::synchronize(dev.index());
    return host;
}

std::vector<DepthImage> DepthModel::infer(const std::vector<const ModelInput*>& batch) const {
    // A multi-frame model sees each frame as a clip of one frame ([N,1,3,H,W]): frames stay independent.
    return run(batch, static_cast<int>(batch.size()), contract_.multi_frame() ? 1 : 0);
}

std::vector<std::vector<DepthImage>> DepthModel::infer_clips(const std::vector<std::vector<const ModelInput*>>& clips) const {
    if (clips.empty()) return {};
    if (!contract_.multi_frame()) throw RenderError(path_ + ": infer_clips needs a multi-frame model (input.frames > 1)");
    const size_t t = clips[0].size();
    std::vector<const ModelInput*> all;
    for (const auto& clip : clips) {
        if (clip.size() != t || t == 0 || t > static_cast<size_t>(contract_.frames))
            throw RenderError(path_ + ": clips of a forward must share one length of 1 to " + std::to_string(contract_.frames) + " frames");
        all.insert(all.end(), clip.begin(), clip.end());
    }
    std::vector<DepthImage> flat = run(all, static_cast<int>(clips.size()), static_cast<int>(t));
    std::vector<std::vector<DepthImage>> out(clips.size());
    for (size_t b = 0; b < clips.size(); ++b)
        for (size_t i = 0; i < t; ++i) out[b].push_back(std::move(flat[b * t + i]));
    return out;
}

std::vector<DepthImage> DepthModel::run(const std::vector<const ModelInput*>& batch, int clips, int frames) const {
    if (batch.empty()) return {};
    const int w = batch[0]->width, h = batch[0]->height;
    std::vector<torch::Tensor> items;
    for (const ModelInput* in : batch) {
        if (in->width != w || in->height != h) throw RenderError("a batch mixes input sizes");
        items.push_back(torch::from_blob(const_cast<float*>(in->chw.data()), {3, h, w}, torch::kFloat32));
    }
    // [N,3,H,W], or [B,T,3,H,W] for a multi-frame model (frames > 0).
    const std::vector<int64_t> shape = frames > 0 ? std::vector<int64_t>{clips, frames, 3, h, w}
                                                  : std::vector<int64_t>{static_cast<int64_t>(batch.size()), 3, h, w};
    // On a GPU the batch is stacked straight into page-locked (pinned) host memory, reused while the batch
    // shape stays (every frame of a job has one): Impl::forward copies it to the device without blocking.
    torch::Tensor cpu_batch;
    if (impl_->device.is_cuda()) {
        if (!impl_->pinned_batch.defined() || impl_->pinned_batch.sizes() != c10::IntArrayRef(shape))
            impl_->pinned_batch = torch::empty(shape, torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(true));
        torch::Tensor flat = impl_->pinned_batch.view({static_cast<int64_t>(batch.size()), 3, h, w});
        torch::stack_out(flat, items);
        cpu_batch = impl_->pinned_batch;
    } else {
        cpu_batch = torch::stack(items).view(shape);
    }
    auto where = [&](const std::string& dev) {
        std::string hint;
        if (contract_.fixed_size)
            hint = " (this model has a fixed input size of " + std::to_string(contract_.width) + "x" +
                   std::to_string(contract_.height) + ", width x height)";
        return path_ + ": forward pass failed on " + dev + " at " + std::to_string(w) + "x" + std::to_string(h) +
               (frames > 0 ? " (" + std::to_string(clips) + " clip(s) of " + std::to_string(frames) + " frames)" : "") + hint;
    };

    torch::Tensor out;
    try {
        const bool oom = impl_->fault && impl_->fault(batch.size(), device_name_);
        out = impl_->forward(impl_->module, cpu_batch, impl_->device, impl_->autocast, oom);
    } catch (const c10::OutOfMemoryError& e) {
        if (clips > 1) {   // halves of whole clips (a clip's frames are one forward)
            log_warning("out of memory on ", device_name_, " with a batch of ", clips, frames > 0 ? " clips" : "", "; retrying in halves");
            const int per = frames > 0 ? frames : 1, first = clips / 2;
            const auto mid = batch.begin() + static_cast<std::ptrdiff_t>(first) * per;
            std::vector<DepthImage> a = run({batch.begin(), mid}, first, frames);
            std::vector<DepthImage> b = run({mid, batch.end()}, clips - first, frames);
            for (auto& d : b) a.push_back(std::move(d));
            return a;
        }
        log_warning("out of memory on ", device_name_, " for a single frame (", first_line(e.what()),
                    "); running it on the CPU in fp32");
        try {
            if (!impl_->cpu_fallback) {
                impl_->cpu_fallback = impl_->module.clone();
                impl_->cpu_fallback->to(torch::kCPU);
            }
            out = impl_->forward(*impl_->cpu_fallback, cpu_batch, torch::kCPU, at::kFloat, false);
        } catch (const c10::Error& e2) {
            throw RenderError(where("cpu (fallback)") + ": " + first_line(e2.what()));
        }
    } catch (const Error&) {   // the output check (a ModelError naming the shapes): as it is
        throw;
    } catch (const std::exception& e) {   // c10::Error, and torch::jit::JITException (a std::runtime_error)
        log_debug(path_, ": forward pass failed; LibTorch said:\n", e.what());
        std::string msg = first_line(e.what());
        if (msg.size() > 300) msg = msg.substr(0, 300) + "... (the full text with -v)";
        const bool cuda_text = msg.find("CUDA") != std::string::npos || msg.find("cuda") != std::string::npos;
        if (impl_->device.is_cuda() && cuda_text) throw RenderError(where(device_name_) + ": " + msg);  // the device
        // Anything else is the model not running on this input (a shape it was not written or traced for,
        // a module tied to another device): the same for every frame, so a model error.
        std::string hint;
        if (!impl_->device.is_cuda() && cuda_text)
            hint = " [device mismatch: the model holds tensors or code tied to a CUDA device (traced or saved on a "
                   "GPU?) but runs on " + device_name_ + "; re-export it on the CPU, or run with model.device cuda]";
        else if (traced_ && !contract_.fixed_size)   // the trace hint only for a module made with torch.jit.trace
            hint = " [input " + shape_text(shape) + (frames > 0 ? " (B,T,C,H,W)" : " (N,C,H,W)") +
                   "; a module made with torch.jit.trace runs only at the size it was traced at, which this file does "
                   "not record: set model.input_size [w, h] and model.fixed_size: true]";
        else if (!contract_.fixed_size)
            hint = " [input " + shape_text(shape) + (frames > 0 ? " (B,T,C,H,W)" : " (N,C,H,W)") +
                   "; a model that runs at one size only: set model.input_size [w, h] and model.fixed_size: true]";
        throw ModelError(where(device_name_) + ": " + msg + hint);
    }

    // Non-finite depth never reaches a file. Half precision gets one fp32 retry (CASES.md 7).
    auto bad_values = [](const torch::Tensor& t) { return (~torch::isfinite(t)).sum().item<int64_t>(); };
    int64_t bad = bad_values(out);
    const bool all_zero = out.numel() > 0 && out.abs().max().item<float>() == 0.0f;
    if ((bad > 0 || all_zero) && impl_->autocast != at::kFloat) {
        log_warning(option_name(precision_), " output has ", bad, " non-finite values", all_zero ? " (all zero)" : "",
                    "; redoing the batch in fp32");
        try {
            out = impl_->forward(impl_->module, cpu_batch, impl_->device, at::kFloat, false);
        } catch (const c10::Error& e) {
            throw RenderError(where(device_name_) + " (fp32 retry): " + first_line(e.what()));
        }
        bad = bad_values(out);
    }
    if (bad > 0)
        throw RenderError(path_ + ": the model returned " + std::to_string(bad) + " non-finite depth values (Inf/NaN) at " +
                          std::to_string(w) + "x" + std::to_string(h));

    std::vector<DepthImage> result(batch.size());
    const bool stacked = out.dim() == 4;   // [N,1+k,H,W]: depth and the contract's extra outputs
    const int oh = static_cast<int>(out.size(-2)), ow = static_cast<int>(out.size(-1));
    const size_t plane = static_cast<size_t>(ow) * oh;
    for (size_t i = 0; i < batch.size(); ++i) {
        result[i].width = ow;
        result[i].height = oh;
        const torch::Tensor item = out[static_cast<int64_t>(i)];
        const float* src = stacked ? item[0].data_ptr<float>() : item.data_ptr<float>();
        result[i].data.assign(src, src + plane);
        for (int64_t k = 1; stacked && k < out.size(1); ++k) {
            const float* e = item[k].data_ptr<float>();
            result[i].extra.emplace_back(e, e + plane);
        }
        if (contract_.kind == DepthKind::MetricDepth)
            for (float v : result[i].data)
                if (v < 0) {
                    ++result[i].negative;
                    result[i].negative_min = std::min(result[i].negative_min, v);
                }
    }
    return result;
}

}  // namespace depthbatch
