// The job's report (job_context.h): each finished frame's log line and counts, the closing figures, and the JSON
// summary (docs/farm.md "Summary JSON"), written through the output guard.
#include "job_context.h"
#include "run_job_pvt.h"
#include "job_outputs.h"

#include "depthbatch/log.h"

#include "depthbatch/error.h"
#include "depthbatch/sha256.h"

#include <csignal>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

namespace depthbatch {
namespace detail {

void record_frame(const JobContext& ctx, const FrameRecord& w, JobReport& report) {
    if (w.failed()) {
        ++report.failed;
        if (report.exit_code == ExitCode::Ok) report.exit_code = w.result.status;
        log_error(w.result.message);
    } else {
        ++report.rendered;
        if (report.first_frame_s < 0)
            report.first_frame_s = std::chrono::duration<double>(Clock::now() - ctx.loaded).count();
        const StageTimes& t = w.result.times;
        StageTimes& sum = report.totals;
        sum.read_ms += t.read_ms, sum.color_ms += t.color_ms, sum.reformat_ms += t.reformat_ms;
        sum.infer_ms += t.infer_ms, sum.restore_ms += t.restore_ms, sum.write_ms += t.write_ms;
        log_debug(
            "frame ", w.result.frame, " -> ", w.result.output_path, "  read ", std::lround(t.read_ms), " ms, colour ",
            std::lround(t.color_ms), ", reformat ", std::lround(t.reformat_ms), ", infer ", std::lround(t.infer_ms),
            ", restore ", std::lround(t.restore_ms), ", write ", std::lround(t.write_ms),
            w.result.nonfinite_pixels
                ? ", " + std::to_string(w.result.nonfinite_pixels) + " NaN/Inf plate pixels replaced by 0"
                : "",
            w.result.out_of_range_pixels
                ? ", " + std::to_string(w.result.out_of_range_pixels) + " pixels outside 0-1 after colour (" +
                      option_name(ctx.job.color.hdr) + ")"
                : "",
            w.result.depth_clamped ? ", " + std::to_string(w.result.depth_clamped) + " depth values clamped" : "");
    }
    report.frames.push_back(w.result);
}

/// The pipeline itself: source (serial, in order) -> read + colour + reformat (parallel) -> inference and
/// stabilization (serial, in order) -> restore + convention + write (parallel), at most
/// report.frames_in_flight frames at once. Fills report's counts, frames and timings.

std::atomic<int> g_stop_signal{0};

/// What stopped the job, for the summary: the signal when one was noted (note_stop_signal).
std::string stop_reason() {
    const int signo = g_stop_signal.load();
    if (signo == 0) return "interrupted: a stop was requested";
    const char* name = signo == SIGTERM ? "SIGTERM" : signo == SIGINT ? "SIGINT" : signo == SIGHUP ? "SIGHUP" : nullptr;
    return "interrupted by signal " + std::to_string(signo) + (name ? std::string(" (") + name + ")" : std::string());
}

void close_report(JobReport& report, const JobContext& ctx, const std::atomic<bool>* cancel,
                  Clock::time_point t_start) {
    const JobConfig& job = ctx.job;
    std::sort(report.frames.begin(), report.frames.end(),
              [](const FrameResult& a, const FrameResult& b) { return a.frame < b.frame; });
    const bool undone = report.rendered + report.skipped + report.failed < static_cast<int>(report.requested.size());
    if (cancel && cancel->load() && undone) {
        report.exit_code = ExitCode::Interrupted;
        if (report.error.empty()) {
            const int left =
                static_cast<int>(report.requested.size()) - report.rendered - report.skipped - report.failed;
            report.error = stop_reason() + ": " + std::to_string(left) + " of " +
                           std::to_string(report.requested.size()) +
                           " frames not rendered; re-run with --skip-existing";
        }
    } else if (job.pipeline.on_error == OnError::Continue && (report.failed > 0 || !report.context_failed.empty()))
        report.exit_code = ExitCode::Partial;
    report.wall_s = std::chrono::duration<double>(Clock::now() - t_start).count();
    if (job.pipeline.summary.empty()) return;
    try {  // the frames are published: a summary that cannot be written never turns the render into a failure
        Publication out = ctx.guard.open(job.pipeline.summary, OutputRole::Summary);
        write_summary_json(report, out);
    } catch (const Error& e) {
        log_error("pipeline.summary not written: ", e.what());
    }
}

}  // namespace detail

using namespace detail;

void note_stop_signal(int signo) noexcept { g_stop_signal.store(signo); }

void write_failure_summary(const JobConfig& job, ExitCode code, const std::string& message) {
    if (job.pipeline.summary.empty()) return;
    // Refused because outputs exist (exit 6): nothing was attempted, and the summary there is the record of the
    // render that made them; it stays.
    if (code == ExitCode::OutputExists) return;
    try {
        Publication out = job_output_guard(job).open(job.pipeline.summary, OutputRole::Summary);
        JobReport report;
        report.job_file = job.job_file;
        report.exit_code = code;
        report.error = message;
        write_summary_json(report, out);
    } catch (const std::exception& e) {  // e.g. the guard refused the summary path itself: the error says why
        log_debug("no failure summary: ", e.what());
    }
}

JobReport write_stop_summary(const JobConfig& job, const std::vector<FrameResult>& finished,
                             const std::vector<int>& todo, int skipped) {
    JobReport report;
    report.job_file = job.job_file;
    report.frames = finished;
    for (const FrameResult& f : report.frames) (f.status == ExitCode::Ok ? report.rendered : report.failed)++;
    report.requested = todo;
    report.skipped = skipped;
    report.exit_code = ExitCode::Interrupted;
    report.error = stop_reason() + ", and the grace period (" + std::to_string(job.pipeline.grace_s) +
                   " s) ran out: the frames in flight were abandoned";
    if (!job.pipeline.summary.empty()) {
        try {
            Publication out = job_output_guard(job).open(job.pipeline.summary, OutputRole::Summary);
            write_summary_json(report, out);
        } catch (const std::exception& e) {
            log_error("pipeline.summary not written: ", e.what());
        }
    }
    return report;
}

void write_summary_json(const JobReport& r, Publication& pub) {
    const std::string& path = pub.final_path();
    using json = nlohmann::ordered_json;
    auto stages = [](const StageTimes& t) {
        return json{{"read_ms", t.read_ms},   {"color_ms", t.color_ms},     {"reformat_ms", t.reformat_ms},
                    {"infer_ms", t.infer_ms}, {"restore_ms", t.restore_ms}, {"write_ms", t.write_ms}};
    };
    std::string job_sha256;
    if (!r.job_file.empty()) {
        try {
            job_sha256 = sha256_file(r.job_file);
        } catch (const Error&) {  // the job file went away since it was read: say so in the summary
        }
    }
    json frames = json::array(), failed = json::array(), skipped = json::array();
    for (const FrameResult& f : r.frames) {
        json frame = {{"frame", f.frame},
                      {"status", f.status == ExitCode::Ok ? "rendered" : "failed"},
                      {"exit_class", exit_code_name(f.status)},
                      {"message", f.message},
                      {"input", f.input_path},
                      {"output", f.output_path},
                      {"seconds", f.seconds},
                      {"times", stages(f.times)},
                      {"nonfinite_plate_pixels", f.nonfinite_pixels},
                      {"out_of_range_pixels", f.out_of_range_pixels},
                      {"depth_values_clamped", f.depth_clamped}};
        if (!f.rerender_reason.empty()) frame["replaced_existing_because"] = f.rerender_reason;
        frames.push_back(frame);
        if (f.status != ExitCode::Ok) failed.push_back({{"frame", f.frame}, {"reason", f.message}});
    }
    for (const SkippedFrame& f : r.skipped_frames)
        skipped.push_back({{"frame", f.frame}, {"output", f.output_path}, {"reason", f.reason}});
    const json j = {
        {"schema", std::string(output_marker::summary_schema) + "1"},
        {"depthbatch_version", DEPTHBATCH_VERSION},
        {"job", {{"file", r.job_file}, {"sha256", job_sha256}, {"settings_sha256", r.settings_sha256}}},
        {"model",
         {{"name", r.model_name},
          {"path", r.model_path},
          {"sha256", r.model_sha256},
          {"license", r.model_license.empty() ? json(nullptr) : json(r.model_license)},
          {"license_accepted", r.license_accepted.empty() ? json(nullptr) : json(r.license_accepted)}}},
        {"camera_solve",
         r.camera_solve.empty()
             ? json(nullptr)
             : json{{"note", r.camera_solve},
                    {"consistency", r.camera_consistency ? json(*r.camera_consistency) : json(nullptr)},
                    {"render_consistency",
                     r.camera_render_consistency ? json(*r.camera_render_consistency) : json(nullptr)}}},
        {"device", r.device},
        {"device_info",
         {{"index", r.gpu.index >= 0 ? json(r.gpu.index) : json(nullptr)},
          {"name", r.gpu.name.empty() ? json(nullptr) : json(r.gpu.name)},
          {"uuid", r.gpu.uuid.empty() ? json(nullptr) : json(r.gpu.uuid)},
          {"cuda_visible_devices", r.gpu.visible_set ? json(r.gpu.visible) : json(nullptr)}}},
        {"exit_code", static_cast<int>(r.exit_code)},
        {"exit_name", exit_code_name(r.exit_code)},
        {"error", r.error},
        {"frames_requested",
         {{"count", r.requested.size()}, {"spec", r.requested.empty() ? "" : format_frame_spec(r.requested)}}},
        {"rendered", r.rendered},
        {"skipped", r.skipped},
        {"failed", r.failed},
        {"failed_frames", failed},
        {"skipped_frames", skipped},
        {"context_failed", r.context_failed},
        {"wall_s", r.wall_s},
        {"render_s", r.render_s},
        {"frames_per_s", r.wall_s > 0 ? r.rendered / r.wall_s : 0.0},
        {"worker_threads", r.worker_threads},
        {"torch_threads", r.torch_threads},
        {"frames_in_flight", r.frames_in_flight},
        {"stage_totals", stages(r.totals)},
        {"infer_busy_ms", r.infer_busy_ms},
        {"infer_wait_ms", r.infer_wait_ms},
        {"first_frame_s", r.first_frame_s < 0 ? json(nullptr) : json(r.first_frame_s)},
        {"inference",
         {{"threads", r.inference_threads},
          {"warmup", {{"shapes", r.warmup_shapes}, {"passes", r.warmup_passes}, {"ms", r.warmup_ms}}},
          {"precision_asked", r.precision_asked},
          {"precision", r.precision},
          {"precision_check",
           r.precision_error < 0
               ? json(nullptr)
               : json{{"frame", r.precision_frame},
                      {"how", r.precision_how},
                      {"error", std::isfinite(r.precision_error) ? json(r.precision_error) : json("inf")},
                      {"tolerance", kPrecisionTolerance}}}}},
        {"frames", frames}};
    // Paths are bytes: one that is not UTF-8 (a Latin-1 plate name) is written with U+FFFD in its place rather
    // than failing the summary (nlohmann's type_error 316).
    const std::string text = j.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    {
        std::ofstream out(pub.temp_path());
        out << text << "\n";
        out.close();
        if (!out) throw RenderError(path + ": cannot write the JSON summary (" + std::strerror(errno) + ")");
    }
    pub.publish(true);
}

}  // namespace depthbatch
