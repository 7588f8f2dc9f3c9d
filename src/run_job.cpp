#include "depthbatch/run_job.h"

#include "depthbatch/color_transform.h"
#include "depthbatch/depth_model.h"
#include "depthbatch/exr_depth_writer.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/log.h"
#include "depthbatch/plate.h"
#include "depthbatch/reformat.h"

#include <OpenImageIO/imageio.h>
#include <tbb/global_control.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace depthbatch {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// One frame travelling through the pipeline.
struct FrameWork {
    FrameResult result;
    std::optional<Plate> plate;
    ReformatPlan plan;
    ModelInput input;
    DepthImage raw;
    bool failed() const { return result.status != ExitCode::Ok; }
    void fail(const Error& e) {
        result.status = e.code();
        result.message = e.what();
    }
};

std::string list_some(const std::vector<std::string>& items, size_t most = 5) {
    std::ostringstream s;
    for (size_t i = 0; i < items.size() && i < most; ++i) s << "\n  " << items[i];
    if (items.size() > most) s << "\n  ... and " << items.size() - most << " more";
    return s.str();
}

std::string mb(long long bytes) { return std::to_string(bytes / (1024 * 1024)); }

}  // namespace

JobReport run_job(const JobConfig& job, JobObserver* observer, const std::atomic<bool>* cancel) {
    const auto t_start = Clock::now();
    JobReport report;

    // ---- frames ------------------------------------------------------------------------------------
    const FrameSequence input(job.input.path), output(job.output.path);
    std::vector<int> shot = job.input.frames;
    if (shot.empty()) {
        shot = input.frames_on_disk();
        if (shot.empty()) throw InputError("no frames on disk match input.path '" + job.input.path + "'");
    }
    const std::vector<int>& frames = job.render_frames.empty() ? shot : job.render_frames;

    // ---- model (before any frame is read) ----------------------------------------------------------
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const int workers = job.pipeline.threads > 0 ? job.pipeline.threads : static_cast<int>(cores);
    report.torch_threads = set_torch_threads(workers);
    std::unique_ptr<DepthModel> model = DepthModel::load(job.model);
    const ModelContract& contract = model->contract();
    report.device = model->device_name();
    log_info("model ", model->path(), " (", contract.name, ", ", depth_kind_name(contract.kind),
             contract.units.empty() ? "" : " in " + contract.units, ", sha256 ", model->sha256().substr(0, 12), ")");
    log_info("device ", model->device_name(), " (", model->device_reason(), ")");

    // ---- inputs exist, outputs do not --------------------------------------------------------------
    std::vector<std::string> missing, existing;
    std::vector<int> todo;
    for (int f : frames) {
        if (!fs::is_regular_file(input.path(f))) missing.push_back("frame " + std::to_string(f) + ": " + input.path(f));
        if (fs::exists(output.path(f))) {
            if (job.output.overwrite == OverwritePolicy::Error) existing.push_back(output.path(f));
            if (job.output.overwrite == OverwritePolicy::Skip) {
                ++report.skipped;
                continue;
            }
        }
        todo.push_back(f);
    }
    if (!missing.empty())
        throw InputError(std::to_string(missing.size()) + " of " + std::to_string(frames.size()) +
                         " plate frames are missing:" + list_some(missing));
    if (!existing.empty())
        throw OutputExistsError(std::to_string(existing.size()) + " output frames already exist (set "
                                "output.overwrite to skip or overwrite, or pass --skip-existing / --overwrite):" +
                                list_some(existing));
    if (report.skipped) log_info("skipping ", report.skipped, " frames whose output exists");

    // ---- colour: decided from the first frame's header ---------------------------------------------
    std::shared_ptr<const ColorTransform> color;
    ReformatPlan first_plan;
    if (!todo.empty()) {
        const std::string first = input.path(todo.front());
        auto in = OIIO::ImageInput::open(first);
        if (!in) throw InputError("frame " + std::to_string(todo.front()) + " (" + first + "): cannot open: " + OIIO::geterror());
        const OIIO::ImageSpec spec = in->spec();
        in.reset();
        std::string from = job.input.colorspace;
        if (from == "auto") {
            from = ColorTransform::auto_colorspace(spec);
            log_info("input.colorspace auto: ", spec.format.c_str(), " plate -> '", from, "'");
        }
        color = ColorTransform::create(ColorTransform::resolve_config_path(job.color.config), from, contract.colorspace);
        log_info("colour '", from, "' -> '", contract.colorspace, "' (", color->config_path(), ")",
                 color->is_noop() ? ", no-op" : "");
        first_plan = ReformatPlan::make(spec.width, spec.height, job.model.size, contract);
        // Dry run at the real size: a model that cannot take it, or whose output is not an image,
        // fails here with the model exit code, before any frame is read or written.
        ModelInput probe;
        probe.width = first_plan.input_width;
        probe.height = first_plan.input_height;
        probe.chw.assign(static_cast<size_t>(3) * probe.width * probe.height, 0.5f);
        try {
            model->infer({&probe});
        } catch (const RenderError& e) {
            throw ModelError(e.what());
        }
        log_info("reformat ", spec.width, "x", spec.height, " -> ", first_plan.scaled_width, "x",
                 first_plan.scaled_height, " -> model input ", first_plan.input_width, "x", first_plan.input_height);
    }

    // ---- pipeline ----------------------------------------------------------------------------------
    const int in_flight = job.pipeline.frames_in_flight > 0 ? job.pipeline.frames_in_flight : 2 * workers;
    report.worker_threads = workers;
    report.frames_in_flight = in_flight;
    log_info(todo.size(), " frames (", format_frame_spec(todo), "), ", workers, " worker threads, LibTorch ",
             report.torch_threads, " intra-op threads, ", in_flight, " frames in flight");

    const ExrWriteOptions write_options{job.output.compression, job.output.overwrite};
    Metadata base_meta = {
        {"depthbatch/version", DEPTHBATCH_VERSION},
        {"depthbatch/model", contract.name},
        {"depthbatch/model_path", model->path()},
        {"depthbatch/model_sha256", model->sha256()},
        {"depthbatch/depth_kind", depth_kind_name(contract.kind)},
        {"depthbatch/depth_units", contract.units},
        {"depthbatch/device", model->device_name()},
    };
    if (color) {
        base_meta.push_back({"depthbatch/colorspace_in", color->from()});
        base_meta.push_back({"depthbatch/colorspace_model", color->to()});
    }

    std::mutex report_mutex;
    std::atomic<bool> stop{false};
    size_t next = 0;
    auto finish = [&](FrameWork& w) {
        std::lock_guard<std::mutex> lock(report_mutex);
        if (w.failed()) {
            ++report.failed;
            if (report.exit_code == ExitCode::Ok) report.exit_code = w.result.status;
            log_error(w.result.message);
        } else {
            ++report.rendered;
            const StageTimes& t = w.result.times;
            log_info("frame ", w.result.frame, " -> ", w.result.output_path, "  read ", std::lround(t.read_ms),
                     " ms, colour ", std::lround(t.color_ms), ", reformat ", std::lround(t.reformat_ms), ", infer ",
                     std::lround(t.infer_ms), ", restore ", std::lround(t.restore_ms), ", write ",
                     std::lround(t.write_ms));
        }
        report.frames.push_back(w.result);
        if (observer) observer->on_frame_done(w.result);
    };

    tbb::task_arena arena(workers);
    arena.execute([&] {
        tbb::parallel_pipeline(
            static_cast<size_t>(in_flight),
            tbb::make_filter<void, FrameWork*>(tbb::filter_mode::serial_in_order,
                [&](tbb::flow_control& fc) -> FrameWork* {
                    if (next >= todo.size() || stop.load() || (cancel && cancel->load())) {
                        fc.stop();
                        return nullptr;
                    }
                    auto* w = new FrameWork();
                    w->result.frame = todo[next++];
                    w->result.input_path = input.path(w->result.frame);
                    w->result.output_path = output.path(w->result.frame);
                    return w;
                }) &
            tbb::make_filter<FrameWork*, FrameWork*>(tbb::filter_mode::parallel,
                [&](FrameWork* w) -> FrameWork* {
                    try {
                        auto t0 = Clock::now();
                        w->plate = read_plate(w->result.input_path, w->result.frame);
                        w->result.times.read_ms = ms_since(t0);
                        t0 = Clock::now();
                        OIIO::ImageBuf rgb = plate_rgb(*w->plate);
                        color->apply(rgb);
                        w->result.times.color_ms = ms_since(t0);
                        t0 = Clock::now();
                        w->plan = ReformatPlan::make(w->plate->width(), w->plate->height(), job.model.size, contract);
                        w->input = w->plan.to_model_input(rgb, &w->result.clamped_values);
                        w->result.times.reformat_ms = ms_since(t0);
                    } catch (const Error& e) {
                        w->fail(e);
                        stop = true;
                    } catch (const std::exception& e) {
                        w->fail(InputError("frame " + std::to_string(w->result.frame) + ": " + e.what()));
                        stop = true;
                    }
                    return w;
                }) &
            tbb::make_filter<FrameWork*, FrameWork*>(tbb::filter_mode::serial_in_order,
                [&](FrameWork* w) -> FrameWork* {
                    if (w->failed()) return w;
                    try {
                        const auto t0 = Clock::now();
                        w->raw = std::move(model->infer({&w->input}).front());
                        w->input = ModelInput();
                        w->result.times.infer_ms = ms_since(t0);
                    } catch (const Error& e) {
                        w->fail(RenderError("frame " + std::to_string(w->result.frame) + ": " + e.what()));
                        stop = true;
                    }
                    return w;
                }) &
            tbb::make_filter<FrameWork*, void>(tbb::filter_mode::parallel,
                [&](FrameWork* w) {
                    std::unique_ptr<FrameWork> own(w);
                    if (!w->failed()) {
                        try {
                            auto t0 = Clock::now();
                            OIIO::ImageBuf depth = w->plan.restore(w->raw);
                            w->raw = DepthImage();
                            w->result.times.restore_ms = ms_since(t0);
                            t0 = Clock::now();
                            Metadata meta = base_meta;
                            meta.push_back({"depthbatch/source", w->result.input_path});
                            meta.push_back({"depthbatch/frame", std::to_string(w->result.frame)});
                            write_depth_exr(w->result.output_path, *w->plate, depth, meta, write_options);
                            w->result.times.write_ms = ms_since(t0);
                        } catch (const Error& e) {
                            w->fail(e);
                            stop = true;
                        }
                    }
                    w->plate.reset();
                    finish(*w);
                }));
    });

    std::sort(report.frames.begin(), report.frames.end(),
              [](const FrameResult& a, const FrameResult& b) { return a.frame < b.frame; });
    if (report.exit_code == ExitCode::Ok && cancel && cancel->load() && report.rendered + report.skipped < static_cast<int>(frames.size()))
        report.exit_code = ExitCode::Interrupted;
    report.wall_s = std::chrono::duration<double>(Clock::now() - t_start).count();
    (void)mb;
    return report;
}

}  // namespace depthbatch
