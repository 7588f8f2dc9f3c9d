// model_floor — the model-only floor for bench/run: N forward passes at the processing size, no I/O.
//
// It goes through the same code as the depthbatch binary: DepthModel::load (same LibTorch, same device
// choice, same contract), set_torch_threads (same intra-op thread count as run_job picks), the same
// processing size (ReformatPlan::make from the plate size and model.size) and DepthModel::infer (same
// batching, same copy of the output back to the CPU). Only reading, colour, reformat, restore,
// normalization and writing are missing, so depthbatch wall / (frames x floor) is the pipeline's overhead.
//
//   model_floor [--model PATH|default] [--device cpu|cuda|auto] [--plate WxH] [--size model|plate|N|WxH]
//               [--batch B] [--threads T] [--iters N] [--freeze] [--precision fp32|tf32|fp16|bf16] [--pipelined]
//
// --threads is model.threads as run_job resolves it (0 = all cores). The warm-up at the shape (DepthModel::warm_up,
// as run_job's), then --iters timed forwards of a batch of --batch inputs, each waited for (infer) or, with
// --pipelined, one batch ahead as run_job's inference stage submits them (submit: the model's thread has the next
// batch before the last is waited for). fp16/bf16 are checked against fp32 first, as a job does. Prints one line:
//   model_floor ms_per_frame=... median_ms_per_frame=... cpu_ms_per_frame=... (process CPU, all threads)
//   ms_per_batch=... input=WxH batch=B iters=N threads=T device=... precision=... pipelined=0|1 model=...
#include "depthbatch/depth_model.h"
#include "depthbatch/error.h"
#include "depthbatch/job_config.h"
#include "depthbatch/reformat.h"

#include <algorithm>
#include <chrono>
#include <sys/resource.h>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <vector>

using namespace depthbatch;

namespace {

/// CPU time of the whole process so far (user + system, all threads), ms.
double process_cpu_ms() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr,
                 "model_floor: %s\nusage: model_floor [--model PATH|default] [--device cpu|cuda|auto] "
                 "[--plate WxH] [--size model|plate|N|WxH] [--batch B] [--threads T] [--iters N] [--freeze] "
                 "[--precision fp32|tf32|fp16|bf16] [--pipelined]\n",
                 why.c_str());
    std::exit(2);
}

bool parse_wxh(const std::string& s, int& w, int& h) {
    return std::sscanf(s.c_str(), "%dx%d", &w, &h) == 2 && w > 0 && h > 0;
}

}  // namespace

int main(int argc, char** argv) {
    JobConfig::Model options;
    options.device = ModelDevice::cpu();
    int plate_w = 960, plate_h = 540, batch = 1, threads = 0, iters = 10;
    std::string size = "model";
    bool pipelined = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        if (a == "--model") options.path = value();
        else if (a == "--device") {
            const auto device = parse_model_device(value());
            if (!device) usage("--device wants auto, cpu, cuda or cuda:N");
            options.device = *device;
        } else if (a == "--plate") {
            if (!parse_wxh(value(), plate_w, plate_h)) usage("--plate wants WxH");
        } else if (a == "--size") size = value();
        else if (a == "--batch") batch = std::atoi(value().c_str());
        else if (a == "--threads") threads = std::atoi(value().c_str());
        else if (a == "--iters") iters = std::atoi(value().c_str());
        else if (a == "--freeze") options.freeze = true;
        else if (a == "--pipelined") pipelined = true;
        else if (a == "--precision") {
            const std::string p = value();
            if (p == "fp32") options.precision = Precision::Fp32;
            else if (p == "tf32") options.precision = Precision::Tf32;
            else if (p == "fp16") options.precision = Precision::Fp16;
            else if (p == "bf16") options.precision = Precision::Bf16;
            else usage("--precision wants fp32, tf32, fp16 or bf16");
        } else if (a == "-h" || a == "--help") usage("help");
        else usage("unknown argument " + a);
    }
    if (batch < 1 || iters < 1) usage("--batch and --iters must be >= 1");

    ProcessingSize ps;
    int w = 0, h = 0;
    if (size == "model") ps.mode = ProcessingSize::Mode::Model;
    else if (size == "plate") ps.mode = ProcessingSize::Mode::Plate;
    else if (parse_wxh(size, w, h)) {
        ps.mode = ProcessingSize::Mode::Explicit;
        ps.width_px = w;
        ps.height_px = h;
    } else {
        ps.mode = ProcessingSize::Mode::ShortSide;
        ps.short_side_px = std::atoi(size.c_str());
        if (ps.short_side_px < 1) usage("bad --size " + size);
    }

    try {
        options.batch = batch;
        options.threads = threads;
        // run_job: set_torch_threads(model.threads > 0 ? model.threads : workers), workers = cores by default.
        const int torch_threads = set_torch_threads(threads);
        auto model = DepthModel::load(options);
        const ReformatPlan plan = ReformatPlan::make(plate_w, plate_h, ps, model->contract());

        std::mt19937 rng(1234);
        std::uniform_real_distribution<float> u(0.0f, 1.0f);
        std::vector<ModelInput> inputs(static_cast<size_t>(batch));
        std::vector<const ModelInput*> ptrs;
        for (auto& in : inputs) {
            in.width = plan.input_width;
            in.height = plan.input_height;
            in.chw.resize(static_cast<size_t>(3) * in.width * in.height);
            for (float& v : in.chw) v = u(rng);
            ptrs.push_back(&in);
        }

        if (model->precision() == Precision::Fp16 || model->precision() == Precision::Bf16)
            model->check_precision(inputs[0]);
        model->warm_up({ForwardShape{batch, 0, plan.input_width, plan.input_height}}, 1);
        std::vector<double> ms;
        const double cpu0 = process_cpu_ms();
        if (pipelined) {  // one batch ahead, as run_job's inference stage: the wall time per batch
            const auto t0 = std::chrono::steady_clock::now();
            InferenceTicket ahead = model->submit(ptrs);
            for (int i = 0; i < iters; ++i) {
                InferenceTicket next = i + 1 < iters ? model->submit(ptrs) : InferenceTicket();
                if (ahead.wait().size() != ptrs.size()) throw RenderError("model returned a wrong batch size");
                ahead = std::move(next);
            }
            const double total =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            ms.assign(static_cast<size_t>(iters), total / iters);
        } else {
            for (int i = 0; i < iters; ++i) {
                const auto t0 = std::chrono::steady_clock::now();
                const auto out = model->infer(ptrs);
                const auto t1 = std::chrono::steady_clock::now();
                if (out.size() != ptrs.size()) throw RenderError("model returned a wrong batch size");
                ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
            }
        }
        const double cpu_ms = process_cpu_ms() - cpu0;  // every thread of the process: LibTorch's pool too
        double total = 0;
        for (double v : ms) total += v;
        std::vector<double> sorted = ms;
        std::sort(sorted.begin(), sorted.end());
        const double mean_batch = total / iters;
        const double median_batch = sorted[sorted.size() / 2];
        std::printf(
            "model_floor ms_per_frame=%.3f median_ms_per_frame=%.3f cpu_ms_per_frame=%.3f ms_per_batch=%.3f "
            "input=%dx%d batch=%d iters=%d threads=%d device=%s precision=%s pipelined=%d model=%s\n",
            mean_batch / batch, median_batch / batch, cpu_ms / iters / batch, mean_batch, plan.input_width,
            plan.input_height, batch, iters, torch_threads, model->device_name().c_str(),
            option_name(model->precision()), pipelined ? 1 : 0, model->path().c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "model_floor: %s\n", e.what());
        return 1;
    }
}
