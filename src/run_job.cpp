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
#include <memory>
#include <mutex>
#include <optional>

namespace depthbatch {
namespace {

using namespace detail;

/// Frames each token of the pipeline carries (model.batch) and how many tokens flow at once: pipeline.frames_in_flight
/// (else twice the workers), less the frames the stage chain holds (its windows, a partial batch), in tokens; in the
/// report with the threads that really run, and said in the log.
size_t plan_tokens(const JobContext& ctx, const std::vector<PlannedFrame>& plan, const StageChain& chain,
                   JobReport& report) {
    const JobConfig& job = ctx.job;
    const int batch = std::max(1, job.model.batch);
    const int in_flight = job.pipeline.frames_in_flight > 0 ? job.pipeline.frames_in_flight : 2 * ctx.workers;
    const int held_most = chain.max_held();
    const size_t tokens = static_cast<size_t>(std::max(1, (std::max(in_flight - held_most, 1) + batch - 1) / batch));
    // What really runs: an arena asked for more threads than TBB allows (its default: the cores) gets no more,
    // though its max_concurrency() still says what was asked; LibTorch's count is what it reports back.
    const int workers = std::min(
        ctx.workers, static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism)));
    const int torch_asked = job.model.threads > 0 ? job.model.threads : ctx.workers;
    const auto asked = [](int used, int n) { return used < n ? " (asked " + std::to_string(n) + ")" : std::string(); };
    report.worker_threads = workers;
    report.frames_in_flight = static_cast<int>(tokens) * batch + held_most;
    std::vector<int> todo;
    for (const PlannedFrame& p : plan)
        if (p.write) todo.push_back(p.frame);
    const char* omp_wait = std::getenv("OMP_WAIT_POLICY");
    log_info(todo.size(), " frames (", format_frame_spec(todo), "), ", workers, " worker threads",
             asked(workers, ctx.workers), ", LibTorch ", ctx.torch_threads, " intra-op threads",
             asked(ctx.torch_threads, torch_asked), " (OMP_WAIT_POLICY ",
             omp_wait ? omp_wait : "unset: libgomp's threads spin between forwards", "), ", report.frames_in_flight,
             " frames in flight, batch ", batch);
    return tokens;
}

/// A token of the pipeline: the records of up to model.batch frames, in plan order.
using Records = std::vector<FrameRecord>;

/// One render's frames through the pipeline: the source and the stage chain run serially, in order; prepare and
/// finish in parallel. Each frame is one FrameRecord (frame_record.h) that moves from step to step: made by take(),
/// filled by prepare, owned by the stage chain while it is inside, written by finish, reported from.
class FramePipeline {
public:
    FramePipeline(const JobContext& ctx, const FirstFramePlan& first, const std::vector<PlannedFrame>& plan,
                  const SequenceRange& seq, const Metadata& job_meta, StageChain& chain, JobObserver* observer,
                  const std::atomic<bool>* cancel, JobReport& report)
        : ctx_(ctx), first_(first), plan_(plan), seq_(seq), job_meta_(job_meta), chain_(chain), observer_(observer),
          cancel_(cancel), report_(report), stop_on_error_(ctx.job.pipeline.on_error == OnError::Stop),
          reach_(temporal_reach(ctx)), identity_(ctx.shot.size()) {}

    /// The source: the next model.batch planned frames' records; nullptr once the plan is done, or stopped.
    Records* take() {
        if (next_ >= plan_.size() || stopping()) return nullptr;
        auto* b = new Records();
        while (next_ < plan_.size() && b->size() < static_cast<size_t>(std::max(1, ctx_.job.model.batch))) {
            const PlannedFrame& p = plan_[next_];
            const auto pos = std::lower_bound(ctx_.shot.begin(), ctx_.shot.end(), p.frame) - ctx_.shot.begin();
            FrameRecord& f = b->emplace_back(static_cast<int>(next_++), p.frame, static_cast<int>(pos));
            f.write = p.write;
            f.started = Clock::now();
            f.result.rerender_reason = p.replace_reason;
            f.result.input_path = ctx_.input.path(f.frame);
            f.result.output_path = ctx_.output.path(f.frame);
        }
        return b;
    }
    /// read + colour + reformat, in parallel.
    void prepare_all(Records& b) {
        for (FrameRecord& f : b) {
            prepare(ctx_, first_, f);
            if (f.failed() && stop_on_error_) stop_ = true;
        }
    }
    /// The stage chain (sequence_stage.h): inference, then the temporal stages; the token leaves with the frames
    /// that are ready (others, or none).
    void through_chain(Records& b) {
        const auto t_in = Clock::now();
        if (idle_since_)
            report_.infer_wait_ms += std::chrono::duration<double, std::milli>(t_in - *idle_since_).count();
        for (FrameRecord& f : b) {
            if (f.shot_pos >= 0 && static_cast<size_t>(f.shot_pos) < identity_.size())
                identity_[f.shot_pos] = f.plate_identity;
            chain_.push(std::move(f));
        }
        b = settle(chain_.pop_ready());
        idle_since_ = Clock::now();
    }
    /// restore + convention + write, in parallel; each frame in the report.
    void finish_all(Records& b) {
        for (FrameRecord& f : b) {
            finish(ctx_, first_, f, seq_.range, job_meta_);
            if (f.failed() && stop_on_error_) stop_ = true;
            f.result.seconds = std::chrono::duration<double>(Clock::now() - f.started).count();
            if (!f.write && !f.failed()) continue;  // warm-up frames are not reported
            std::lock_guard<std::mutex> lock(report_mutex_);
            // A warm-up frame whose plate was found missing before the render is counted there already.
            if (!f.write && std::any_of(report_.frames.begin(), report_.frames.end(),
                                        [&](const FrameResult& r) { return r.frame == f.frame; }))
                continue;
            // A frame this run reads only as context is not one of its frames: never counted (progress stays within
            // N/N), said once; what it cut is marked or fails on its own.
            if (!f.write) {
                if (std::find(report_.context_failed.begin(), report_.context_failed.end(), f.frame) ==
                    report_.context_failed.end()) {
                    report_.context_failed.push_back(f.frame);
                    log_warning(f.result.message,
                                " (not a frame of this run: it is read as context by the frames around it)");
                }
                if (stop_on_error_ && report_.exit_code == ExitCode::Ok) report_.exit_code = f.result.status;
                continue;
            }
            record_frame(ctx_, f, report_);
            if (observer_) observer_->on_frame_done(f.result);
        }
    }
    /// The frames are over (the pipeline has drained): what the chain still holds is finished with what there is,
    /// or abandoned when a stop cut the plan short, then written.
    void flush() {
        Records rest = settle(chain_.flush(next_ < plan_.size() ? SegmentEnd::Stop : SegmentEnd::End));
        finish_all(rest);
    }
    /// Frames not published because a stop cut their temporal window.
    const std::vector<int>& abandoned() const { return abandoned_; }

private:
    bool stopping() const { return stop_.load() || (cancel_ && cancel_->load()); }
    /// Frames out of the chain: one a stage abandoned is not published on a stop (its window lacks frames the stop
    /// never read); otherwise it was a failed frame inside a chunk's video windows (video_window_stage.h:
    /// plan_partial), and fails.
    Records settle(std::vector<FrameRecord> out) {
        for (FrameRecord& f : out) {
            if (reach_.any() && f.write && !f.failed()) f.context_plates = context_plates_of(f.shot_pos);
            if (f.abandoned && f.write && !f.failed()) {
                if (stopping()) {
                    f.write = false;
                    abandoned_.push_back(f.frame);
                } else {
                    f.fail(RenderError("frame " + std::to_string(f.frame) +
                                       ": not written: a failed frame cut the video "
                                       "windows that make it (a chunk runs only its own windows); --skip-existing "
                                       "renders it once that frame's plate reads"));
                }
            }
            if (f.failed() && stop_on_error_) stop_ = true;
        }
        return out;
    }

    /// The context_plates value of the frame at shot position `pos` (context_plates.h): the identities of its
    /// context's plates as they were read by this render; a plate it did not read (none should be) as it is now.
    std::string context_plates_of(int pos) const {
        std::vector<int> frames;
        for (int p : context_positions(reach_, static_cast<int>(ctx_.shot.size()), pos))
            frames.push_back(ctx_.shot[static_cast<size_t>(p)]);
        return context_plates_value(frames, [this](int frame) {
            const size_t p =
                static_cast<size_t>(std::lower_bound(ctx_.shot.begin(), ctx_.shot.end(), frame) - ctx_.shot.begin());
            return identity_[p] ? *identity_[p] : plate_identity(ctx_.input.path(frame));
        });
    }

    const JobContext& ctx_;
    const FirstFramePlan& first_;
    const std::vector<PlannedFrame>& plan_;
    const SequenceRange& seq_;
    const Metadata& job_meta_;
    StageChain& chain_;
    JobObserver* observer_;
    const std::atomic<bool>* cancel_;
    JobReport& report_;
    const bool stop_on_error_;
    std::atomic<bool> stop_{false};
    size_t next_ = 0;                              ///< the source's place in the plan
    std::optional<Clock::time_point> idle_since_;  ///< the chain step's last exit (report.infer_wait_ms)
    std::mutex report_mutex_;
    std::vector<int> abandoned_;
    const TemporalReach reach_;
    std::vector<std::optional<std::string>> identity_;  ///< each shot position's plate identity as read (serial step)
};

void render_frames(const JobContext& ctx, const FirstFramePlan& first, const std::vector<PlannedFrame>& plan,
                   const SequenceRange& seq, const Metadata& job_meta, StageChain& chain, JobObserver* observer,
                   const std::atomic<bool>* cancel, JobReport& report) {
    const size_t tokens = plan_tokens(ctx, plan, chain, report);
    FramePipeline frames(ctx, first, plan, seq, job_meta, chain, observer, cancel, report);
    tbb::task_arena arena(report.worker_threads);  // not ctx.workers: asking TBB for more prints a "TBB Warning"
    arena.execute([&] {
        using tbb::filter_mode;
        tbb::parallel_pipeline(
            tokens, tbb::make_filter<void, Records*>(filter_mode::serial_in_order, [&](tbb::flow_control& fc) {
                        Records* b = frames.take();
                        if (!b) fc.stop();
                        return b;
                    }) & tbb::make_filter<Records*, Records*>(filter_mode::parallel, [&](Records* b) {
                        return frames.prepare_all(*b), b;
                    }) & tbb::make_filter<Records*, Records*>(filter_mode::serial_in_order, [&](Records* b) {
                        return frames.through_chain(*b), b;
                    }) & tbb::make_filter<Records*, void>(filter_mode::parallel, [&](Records* b) {
                        std::unique_ptr<Records> own(b);
                        frames.finish_all(*b);
                    }));
        frames.flush();
    });
    // The stages that combine frames (the stabilizer, a video model's windows) start afresh at each size change.
    if (const auto& changes = chain.size_changes(); !changes.empty() && !chain.temporal_names().empty())
        log_warning("the model input size changed at ", changes.size(), " frame(s) (", format_frame_spec(changes),
                    "; the plate's data window changes size): the ", chain.temporal_names(),
                    " cannot combine frames across a size change: each starts afresh there",
                    changes.size() * 2 >= plan.size() ? ", so they had almost no effect on this shot" : "");
    if (!frames.abandoned().empty())
        log_warning(
            "stop: frames ", format_frame_spec(frames.abandoned()),
            " were not published: the stop cut their temporal "
            "window short: stabilizer or video model windows (a re-run with --skip-existing renders them whole)");
}

}  // namespace

JobReport run_job(const JobConfig& job, JobObserver* observer, const std::atomic<bool>* cancel) {
    const auto t_start = Clock::now();
    JobObserver quiet;
    JobObserver& watch = observer ? *observer : quiet;
    OpenedRun run = open_run(
        job, [&watch](const std::string& phase) { watch.on_phase(phase); }, true);
    const std::unique_ptr<const JobContext>& ctx = run.ctx;
    JobReport report;
    report.job_file = job.job_file;
    report.device = ctx->model->device_name();
    report.gpu = ctx->model->gpu();
    report.torch_threads = ctx->torch_threads;
    report.model_name = ctx->contract().name;
    report.model_path = ctx->model->path();
    report.model_sha256 = ctx->model->sha256();
    report.model_license = contract_license(ctx->contract());
    if (is_non_commercial_license(report.model_license)) report.license_accepted = job.model.accept_license;
    report.settings_sha256 = ctx->settings_sha256;
    report.camera_solve = ctx->camera_solve_note;
    report.camera_consistency = ctx->camera_consistency;
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
        sweep_stale_temporaries(*ctx, report.requested);  // a killed run's temporaries go even when nothing renders
        watch.on_start(counted, report.skipped);
        report_missing();
        close_report(report, *ctx, cancel, t_start);
        return report;
    }
    const FirstFramePlan& first = *run.first;
    if (ctx->normalizer->needs_sequence_range()) watch.on_phase("sequence statistics");
    const SequenceRange seq = sequence_range(*ctx, first);
    StageChain chain = make_stage_chain(*ctx);
    const std::vector<PlannedFrame> plan = plan_frames(*ctx, selected, chain);
    std::vector<std::string> context_lines;
    report.context_failed = check_context_plates(*ctx, plan, run.requested, &context_lines);
    for (const std::string& line : context_lines) log_warning(line);
    check_chunk_sizes(*ctx, plan);
    watch.on_phase("rendering");
    watch.on_start(counted, report.skipped);
    report_missing();
    const auto t_render = Clock::now();
    const double busy_before = ctx->model->stats().busy_ms;
    render_frames(*ctx, first, plan, seq, job_metadata(*ctx, first, seq, chain.metadata()), chain, &watch, cancel,
                  report);
    report.render_s = std::chrono::duration<double>(Clock::now() - t_render).count();
    const InferenceStats stats = ctx->model->stats();
    report.infer_busy_ms = stats.busy_ms - busy_before;
    report.inference_threads = stats.forward_threads;
    report.warmup_shapes = stats.warmup_shapes;
    report.warmup_passes = stats.warmup_passes;
    report.warmup_ms = stats.warmup_ms;
    report.precision = option_name(ctx->model->precision());
    if (const auto& check = first.precision_check) {
        report.precision_error = check->error;
        report.precision_frame = check->frame;
        report.precision_how = check->how;
    }
    if (stats.on_caller_thread) log_warning("a forward pass ran outside the model's inference thread");
    if (!ctx->camera_solve_note.empty()) {
        std::vector<int> written;
        for (const FrameResult& f : report.frames)
            if (f.status == ExitCode::Ok) written.push_back(f.frame);
        std::sort(written.begin(), written.end());
        report.camera_render_consistency = rendered_camera_consistency(*ctx, first, written);
    }
    close_report(report, *ctx, cancel, t_start);
    return report;
}

int abandon_frames_in_flight() { return detail::remove_live_temporaries(); }

}  // namespace depthbatch
