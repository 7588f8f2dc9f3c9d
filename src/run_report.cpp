// depthbatch — a finished run's report in words: see run_report.h.
#include "depthbatch/run_report.h"

#include "depthbatch/frame_sequence.h"
#include "depthbatch/log.h"

#include <algorithm>
#include <ostream>

namespace depthbatch {

std::vector<int> undone_frames(const JobReport& report) {
    std::vector<int> undone;
    for (int f : report.requested)
        if (std::none_of(report.frames.begin(), report.frames.end(),
                         [f](const FrameResult& r) { return r.frame == f; }) &&
            std::none_of(report.skipped_frames.begin(), report.skipped_frames.end(),
                         [f](const SkippedFrame& s) { return s.frame == f; }))
            undone.push_back(f);
    return undone;
}

std::vector<int> failed_frames(const JobReport& report) {
    std::vector<int> failed;
    for (const FrameResult& f : report.frames)
        if (f.status != ExitCode::Ok) failed.push_back(f.frame);
    return failed;
}

std::string failure_reason(const JobReport& report) {
    if (!report.error.empty()) return report.error;
    std::string first;
    for (const FrameResult& f : report.frames)
        if (f.status != ExitCode::Ok && first.empty()) first = f.message.substr(0, f.message.find('\n'));
    if (report.exit_code == ExitCode::Interrupted)
        return "interrupted: a stop was requested; re-run with --skip-existing";
    const std::vector<int> failed = failed_frames(report);
    if (failed.empty()) return std::string("exit ") + exit_code_name(report.exit_code);
    return std::to_string(failed.size()) + " frame(s) failed (" + format_frame_spec(failed) + "): " + first;
}

void log_run_summary(const JobConfig& job, const JobReport& report) {
    const double fps = report.wall_s > 0 ? report.rendered / report.wall_s : 0.0;
    log_line_always(LogLevel::Info, detail::concat("done: ", report.rendered, " rendered, ", report.skipped,
                                                   " skipped, ", report.failed, " failed in ", report.wall_s, " s (",
                                                   fps, " frames/s) on ", report.device));
    if (report.rendered > 0) {
        const StageTimes& t = report.totals;
        const double n = report.rendered;
        log_info("per frame: read ", t.read_ms / n, " ms, colour ", t.color_ms / n, ", reformat ", t.reformat_ms / n,
                 ", infer ", t.infer_ms / n, ", restore ", t.restore_ms / n, ", write ", t.write_ms / n,
                 "; inference busy ", report.infer_busy_ms / 1000.0, " s (", report.inference_threads,
                 report.inference_threads == 1 ? " thread" : " threads", "), waited for input ",
                 report.infer_wait_ms / 1000.0, " s; first frame written ", report.first_frame_s,
                 " s after the model loaded");
    }
    long nonfinite = 0, out_of_range = 0;
    size_t clamped = 0;
    for (const FrameResult& f : report.frames)
        nonfinite += f.nonfinite_pixels, out_of_range += f.out_of_range_pixels, clamped += f.depth_clamped;
    std::vector<std::string> pixels;  // per frame: -v, the summary JSON and each EXR's header
    if (nonfinite) pixels.push_back(std::to_string(nonfinite) + " NaN/Inf plate pixels replaced by 0");
    if (out_of_range)
        pixels.push_back(std::to_string(out_of_range) + " pixels outside 0-1 after colour (" +
                         option_name(job.color.hdr) + ")");
    if (clamped) pixels.push_back(std::to_string(clamped) + " depth values clamped");
    for (size_t i = 0; i < pixels.size(); ++i)
        if (i == 0) pixels[0] = "over the rendered frames: " + pixels[0];
        else pixels[0] += ", " + pixels[i];
    if (!pixels.empty()) log_info(pixels[0]);
    if (report.exit_code == ExitCode::Interrupted) {
        std::vector<int> done;
        for (const FrameResult& f : report.frames)
            if (f.status == ExitCode::Ok) done.push_back(f.frame);
        const std::vector<int> undone = undone_frames(report);
        log_error("interrupted: rendered ", done.empty() ? "none" : format_frame_spec(done), "; not rendered ",
                  undone.empty() ? "none" : format_frame_spec(undone),
                  "; no partial files were left; re-run with --skip-existing to finish");
    }
    if (report.exit_code == ExitCode::Partial) {
        std::vector<int> context = report.context_failed;
        std::sort(context.begin(), context.end());
        const std::string also = context.empty() ? std::string()
                                                 : "; context plates " + format_frame_spec(context) +
                                                       " (read, not owned, by this run) missing or failed: the frames "
                                                       "whose windows read them are marked or not written";
        if (report.failed > 0)
            log_error("partial: ", report.failed, " frames failed (", format_frame_spec(failed_frames(report)),
                      "), the rest were rendered", also);
        else log_error("partial: every frame of this run was rendered", also);
    }
}

int run_validate(const JobConfig& job, bool deep, std::ostream& out) {
    const ValidationResult v = validate_job(job, deep);
    for (const std::string& w : v.warnings) log_warning(w);
    for (const std::string& l : v.plan) out << l << "\n";
    out << "valid: a render would exit " << static_cast<int>(v.exit_code) << " (" << exit_code_name(v.exit_code)
        << "); nothing was written" << std::endl;
    return static_cast<int>(v.exit_code);
}

void run_stats(const std::string& job_path, const std::vector<std::string>& sets, std::ostream& out, bool overwrite) {
    const JobConfig job = load_job(job_path, sets);
    if (job.depth.normalize != Normalization::Sequence)
        throw ConfigError(job_path + ": depth.normalize is '" + option_name(job.depth.normalize) +
                          "'; sequence statistics are only used with depth.normalize: sequence");
    const SequenceStats s = job_sequence_stats(job, overwrite);
    out << "range " << s.low << " " << s.high << " (percentiles " << s.percentile_low << "/" << s.percentile_high
        << " of " << s.values << " values over frames " << format_frame_spec(s.sample_frames) << ")\n";
}

}  // namespace depthbatch
