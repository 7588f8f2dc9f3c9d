#include "depthbatch/run_job.h"

#include "job_context.h"

#include "depthbatch/log.h"
#include "output/atomic_file.h"

#include <tbb/global_control.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>

namespace depthbatch {
namespace {

using namespace detail;

void render_frames(const JobContext& ctx, const std::vector<PlannedFrame>& plan, const SequenceRange& seq,
                   const Metadata& job_meta, StageChain& chain, JobObserver* observer, const std::atomic<bool>* cancel,
                   JobReport& report) {
    const JobConfig& job = ctx.job;
    const int batch = std::max(1, job.model.batch);
    const int in_flight = job.pipeline.frames_in_flight > 0 ? job.pipeline.frames_in_flight : 2 * ctx.workers;
    // Frames the stages hold (the stabilizer's window, a partial batch) count in the frames in flight.
    const int held_most = chain.max_held();
    const size_t tokens = static_cast<size_t>(std::max(1, (std::max(in_flight - held_most, 1) + batch - 1) / batch));
    // What really runs: an arena asked for more threads than TBB allows (its default: the cores) gets no more,
    // though its max_concurrency() still says what was asked; LibTorch's count is what it reports back.
    const int workers = std::min(ctx.workers, static_cast<int>(tbb::global_control::active_value(
                                                  tbb::global_control::max_allowed_parallelism)));
    const int torch_asked = job.model.threads > 0 ? job.model.threads : ctx.workers;
    const auto asked = [](int used, int n) { return used < n ? " (asked " + std::to_string(n) + ")" : std::string(); };
    report.worker_threads = workers;
    report.frames_in_flight = static_cast<int>(tokens) * batch + held_most;
    const long written = std::count_if(plan.begin(), plan.end(), [](const PlannedFrame& p) { return p.write; });
    std::vector<int> todo;
    for (const PlannedFrame& p : plan)
        if (p.write) todo.push_back(p.frame);
    const char* omp_wait = std::getenv("OMP_WAIT_POLICY");
    log_info(written, " frames (", format_frame_spec(todo), "), ", workers, " worker threads", asked(workers, ctx.workers),
             ", LibTorch ", ctx.torch_threads, " intra-op threads", asked(ctx.torch_threads, torch_asked),
             " (OMP_WAIT_POLICY ", omp_wait ? omp_wait : "unset: libgomp's threads spin between forwards", "), ",
             report.frames_in_flight,
             " frames in flight, batch ", batch);

    bool sent_last = false;
    std::mutex report_mutex;
    std::atomic<bool> stop{false};
    const bool stop_on_error = job.pipeline.on_error == OnError::Stop;
    size_t next = 0;
    struct Batch {
        std::vector<std::unique_ptr<FrameWork>> frames;
        bool last = false;   ///< the source's final token: no frames, the end of the stream
        bool cut = false;    ///< last, and a stop ended the stream before the plan's end
    };
    std::map<int, std::unique_ptr<FrameWork>> held;   // frames inside the stage chain, by plan index
    std::vector<int> abandoned;
    std::optional<Clock::time_point> infer_idle_since;  // touched only by the serial stage

    tbb::task_arena arena(workers);   // not ctx.workers: asking TBB for more prints a "TBB Warning"
    arena.execute([&] {
        tbb::parallel_pipeline(
            tokens,
            tbb::make_filter<void, Batch*>(tbb::filter_mode::serial_in_order,
                [&](tbb::flow_control& fc) -> Batch* {
                    if (next >= plan.size() || stop.load() || (cancel && cancel->load())) {
                        if (!sent_last) {
                            sent_last = true;
                            return new Batch{{}, true, next < plan.size()};
                        }
                        fc.stop();
                        return nullptr;
                    }
                    auto* b = new Batch();
                    while (next < plan.size() && static_cast<int>(b->frames.size()) < batch) {
                        auto w = std::make_unique<FrameWork>();
                        w->result.frame = plan[next].frame;
                        w->write = plan[next].write;
                        w->result.rerender_reason = plan[next].replace_reason;
                        w->started = Clock::now();
                        w->result.input_path = ctx.input.path(w->result.frame);
                        w->result.output_path = ctx.output.path(w->result.frame);
                        w->plan_index = static_cast<int>(next);
                        w->shot_pos = static_cast<int>(std::lower_bound(ctx.shot.begin(), ctx.shot.end(), w->result.frame) -
                                                       ctx.shot.begin());
                        b->frames.push_back(std::move(w));
                        ++next;
                    }
                    return b;
                }) &
            tbb::make_filter<Batch*, Batch*>(tbb::filter_mode::parallel,
                [&](Batch* b) -> Batch* {
                    for (auto& w : b->frames) {
                        prepare(ctx, *w);
                        if (w->failed() && stop_on_error) stop = true;
                    }
                    return b;
                }) &
            // The stage chain (sequence_stage.h): inference, then the temporal stages; frames come back when ready.
            tbb::make_filter<Batch*, Batch*>(tbb::filter_mode::serial_in_order,
                [&](Batch* b) -> Batch* {
                    const auto t_in = Clock::now();
                    if (infer_idle_since) report.infer_wait_ms += std::chrono::duration<double, std::milli>(t_in - *infer_idle_since).count();
                    for (auto& w : b->frames) {
                        StageFrame f;
                        f.id = w->plan_index, f.frame = w->result.frame, f.shot_pos = w->shot_pos;
                        f.owner = w.get();
                        f.input = std::move(w->input);
                        f.failed = w->failed();
                        held.emplace(f.id, std::move(w));
                        chain.push(std::move(f));
                    }
                    if (b->last) chain.end_segment(b->cut ? SegmentEnd::Stop : SegmentEnd::End);
                    std::vector<std::unique_ptr<FrameWork>> out;
                    for (StageFrame& f : chain.pop_ready()) {
                        auto it = held.find(f.id);
                        std::unique_ptr<FrameWork> w = std::move(it->second);
                        held.erase(it);
                        if (!w->failed()) w->raw = std::move(f.depth);
                        w->result.times.infer_ms += f.infer_ms;   // a video model's share of its windows
                        if (!f.lacked.empty()) w->temporal_cut = format_frame_spec(f.lacked);
                        if (f.abandoned && w->write && !w->failed()) {
                            if (stop.load() || (cancel && cancel->load())) {   // its window lacks frames the stop never read
                                w->write = false;
                                abandoned.push_back(w->result.frame);
                            } else {   // a failed frame inside a chunk's video windows (video_window_stage.h: plan_partial)
                                w->fail(RenderError("frame " + std::to_string(w->result.frame) + ": not written: a failed frame "
                                                    "cut the video windows that make it (a chunk runs only its own windows); "
                                                    "--skip-existing renders it once that frame's plate reads"));
                            }
                        }
                        if (w->failed() && stop_on_error) stop = true;
                        out.push_back(std::move(w));
                    }
                    b->frames.swap(out);
                    infer_idle_since = Clock::now();
                    return b;
                }) &
            tbb::make_filter<Batch*, void>(tbb::filter_mode::parallel,
                [&](Batch* b) {
                    std::unique_ptr<Batch> own(b);
                    for (auto& w : b->frames) {
                        finish(ctx, *w, seq.range, job_meta);
                        if (w->failed() && stop_on_error) stop = true;
                        w->result.seconds = std::chrono::duration<double>(Clock::now() - w->started).count();
                        if (!w->write && !w->failed()) continue;   // warm-up frames are not reported
                        std::lock_guard<std::mutex> lock(report_mutex);
                        // A warm-up frame whose plate was found missing before the render is counted there already.
                        if (!w->write && std::any_of(report.frames.begin(), report.frames.end(), [&](const FrameResult& r) {
                                return r.frame == w->result.frame; }))
                            continue;
                        record_frame(ctx, *w, report);
                        if (observer) observer->on_frame_done(w->result);
                    }
                }));
    });
    // The stages that combine frames (the stabilizer, a video model's windows) start afresh at each size change.
    if (const auto& changes = chain.size_changes(); !changes.empty() && !chain.temporal_names().empty())
        log_warning("the model input size changed at ", changes.size(), " frame(s) (", format_frame_spec(changes),
                    "; the plate's data window changes size): the ", chain.temporal_names(),
                    " cannot combine frames across a size change and start afresh there",
                    changes.size() * 2 >= plan.size() ? ", so they had almost no effect on this shot" : "");
    if (!abandoned.empty())
        log_warning("stop: frames ", format_frame_spec(abandoned), " were not published: the stop cut their temporal "
                    "window short: stabilizer or video model windows (a re-run with --skip-existing renders them whole)");
}


}  // namespace

JobReport run_job(const JobConfig& job, JobObserver* observer, const std::atomic<bool>* cancel) {
    const auto t_start = Clock::now();
    JobObserver quiet;
    JobObserver& watch = observer ? *observer : quiet;
    OpenedRun run = open_run(job, [&watch](const std::string& phase) { watch.on_phase(phase); }, true);
    const std::unique_ptr<JobContext>& ctx = run.ctx;
    JobReport report;
    report.job_file = job.job_file;
    report.device = ctx->model->device_name();
    report.gpu = ctx->model->gpu();
    report.torch_threads = ctx->torch_threads;
    report.model_name = ctx->contract().name;
    report.model_path = ctx->model->path();
    report.model_sha256 = ctx->model->sha256();
    report.settings_sha256 = ctx->settings_sha256;
    report.precision_asked = option_name(job.model.precision);
    report.precision = option_name(ctx->model->precision());
    report.requested = run.requested;
    if (run.stage == OpenedRun::Stage::Empty) {
        log_info("nothing to do: this run's share of the job (", format_frame_spec(ctx->shot), ") is empty");
        close_report(report, *ctx, cancel, t_start);
        return report;
    }
    FrameSelection& selected = run.selected;
    report.skipped = static_cast<int>(selected.skipped.size());
    report.skipped_frames = selected.skipped;
    // Progress counts the missing plates (on_error: continue) in the numerator and the denominator from the start:
    // told with the frames to render before any frame is done, so progress never goes backwards.
    std::vector<int> counted = selected.todo;
    for (const FrameResult& r : selected.missing) counted.push_back(r.frame);
    std::sort(counted.begin(), counted.end());
    auto report_missing = [&] {
        for (FrameResult& r : selected.missing) {
            ++report.failed;
            report.frames.push_back(r);
            watch.on_frame_done(r);
        }
    };
    if (run.stage == OpenedRun::Stage::NothingToDo) {  // a retried farm chunk whose frames all exist
        log_info("nothing to do: ", report.skipped, " frames exist");
        sweep_stale_temporaries(*ctx, report.requested);   // a killed run's temporaries go even when nothing renders
        watch.on_start(counted, report.skipped);
        report_missing();
        close_report(report, *ctx, cancel, t_start);
        return report;
    }
    if (ctx->normalizer->needs_sequence_range()) watch.on_phase("sequence statistics");
    const SequenceRange seq = sequence_range(*ctx);
    StageChain chain = make_stage_chain(*ctx);
    const std::vector<PlannedFrame> plan = plan_frames(*ctx, selected, chain);
    watch.on_phase("rendering");
    watch.on_start(counted, report.skipped);
    report_missing();
    const auto t_render = Clock::now();
    const double busy_before = ctx->model->stats().busy_ms;
    render_frames(*ctx, plan, seq, job_metadata(*ctx, seq, chain.metadata()), chain, &watch, cancel, report);
    report.render_s = std::chrono::duration<double>(Clock::now() - t_render).count();
    const InferenceStats stats = ctx->model->stats();
    report.infer_busy_ms = stats.busy_ms - busy_before;
    report.inference_threads = stats.forward_threads;
    report.warmup_shapes = stats.warmup_shapes;
    report.warmup_passes = stats.warmup_passes;
    report.warmup_ms = stats.warmup_ms;
    report.precision = option_name(ctx->model->precision());
    if (const auto& check = ctx->precision_check) {
        report.precision_error = check->error;
        report.precision_frame = check->frame;
        report.precision_how = check->how;
    }
    if (stats.on_caller_thread) log_warning("a forward pass ran outside the model's inference thread");
    close_report(report, *ctx, cancel, t_start);
    return report;
}


int abandon_frames_in_flight() { return detail::remove_live_temporaries(); }

}  // namespace depthbatch
