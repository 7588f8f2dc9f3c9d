// depthbatch — command line. Builds a JobConfig from a job file and flags, calls the library, maps the
// outcome to an exit code (docs/errors.md "Exit codes"). Nothing else lives here.
#include "depthbatch/depth_model.h"
#include "depthbatch/error.h"
#include "depthbatch/farm_submit.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/install_layout.h"
#include "depthbatch/job_config.h"
#include "depthbatch/job_keys.h"
#include "depthbatch/log.h"
#include "depthbatch/progress.h"
#include "depthbatch/review.h"
#include "depthbatch/run_job.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <thread>
#include <unistd.h>

namespace {

std::atomic<bool> g_cancel{false};
// First SIGINT/SIGTERM (Ctrl-C, scancel, pre-emption, a Deadline task stop): stop starting frames; frames in
// flight finish if they can within pipeline.grace_s, else the watchdog abandons them (stop_watchdog).
// Second: leave at once (a hidden temporary file may remain in the output folder, never a partial EXR).
extern "C" void on_signal(int signo) {
    if (!g_cancel.load()) depthbatch::note_stop_signal(signo);   // the summary's error names it
    if (g_cancel.exchange(true)) std::_Exit(static_cast<int>(depthbatch::ExitCode::Interrupted));
}

int code(depthbatch::ExitCode c) { return static_cast<int>(c); }

int print_info(const std::string& model_path) {
    depthbatch::JobConfig::Model options;
    options.path = model_path;
    options.device = depthbatch::ModelDevice::cpu();
    std::unique_ptr<depthbatch::DepthModel> model;
    try {
        model = depthbatch::DepthModel::load(options);
    } catch (const depthbatch::MissingContractError&) {
        // No depthbatch.json: load anyway to show what the file itself tells (size if traced, parameters).
        options.contract.kind = depthbatch::DepthKind::RelativeInverseDepth;
        model = depthbatch::DepthModel::load(options);
    }
    const auto& c = model->contract();
    std::cout << "model        " << model->path() << "\n"
              << "sha256       " << model->sha256() << "\n"
              << "name         " << c.name << "\n"
              << "contract     " << (c.embedded ? "embedded depthbatch.json" : "none (from job keys)") << "\n"
              << "input        RGB [0,1] in '" << c.colorspace << "', multiple of " << c.multiple << " px";
    if (c.height) std::cout << ", size " << c.width << "x" << c.height << " (w x h)";
    std::cout << (c.fixed_size ? ", fixed size" : ", any size") << "\n";
    if (c.multi_frame()) {   // a video model: its clips and the windowing it is run with (video_window_stage.h)
        const depthbatch::TemporalWindowing& t = c.temporal;
        std::string keys;
        for (int k : t.keyframes) keys += (keys.empty() ? "" : ",") + std::to_string(k);
        std::cout << "frames       " << c.frames << " (multi-frame: [B,T,3,H,W] -> [B,T,H,W], T 1.." << c.frames << ")\n"
                  << "temporal     window " << t.window << ", overlap " << t.overlap << " (stride " << t.stride()
                  << "), keyframes [" << keys << "], crossfade " << t.crossfade << ", align " << depthbatch::align_name(t.align)
                  << "\n";
    }
    std::cout << "output       "
              << (c.embedded ? std::string(depthbatch::depth_kind_name(c.kind)) + (c.units.empty() ? "" : " (" + c.units + ")")
                             : std::string("unknown: the job must state model.kind"))
              << ", at most " << c.max_scale << "x the input's height and width"
              << (c.max_scale != 4.0 ? " (output.max_scale)" : "") << "\n";
    if (c.reference_focal_px > 0)
        std::cout << "focal        metric for a " << c.reference_focal_px
                  << " px focal length at the processing size (output.reference_focal_px): metres = raw x "
                     "focal_px / " << c.reference_focal_px << ", focal_px = (fx + fy) / 2; the job states the "
                     "camera (camera.focal, camera.fov or camera.focal_px)\n";
    for (const auto& e : c.extra_outputs)
        std::cout << "extra output " << e.name << " -> EXR channel " << e.channel << " (output.passes: [" << e.name << "])\n";
    std::cout << "parameters   " << model->parameter_count() << "\n"
              << "module       " << (model->traced() ? "traced (torch.jit.trace: fixed input size)" : "scripted (torch.jit.script)")
              << "\n";
    if (c.embedded)   // the contract's exported_by.torch (docs/models.md "Which LibTorch loads a model")
        std::cout << "exported by  "
                  << (c.exported_torch.empty() ? std::string("not recorded (exported before depthbatch recorded it)")
                                               : "torch " + c.exported_torch)
                  << "; running on LibTorch " << depthbatch::libtorch_version() << "\n";
    for (const auto& [k, v] : c.provenance) std::cout << k << std::string(k.size() < 13 ? 13 - k.size() : 1, ' ') << v << "\n";
    return 0;
}

/// `depthbatch stats JOB`: the sequence statistics sidecar alone (before farm chunks run).
int run_stats(const std::string& job_path, const std::vector<std::string>& sets) {
    using namespace depthbatch;
    JobConfig job = load_job(job_path, sets);
    if (job.depth.normalize != Normalization::Sequence)
        throw ConfigError(job_path + ": depth.normalize is '" + option_name(job.depth.normalize) +
                          "'; sequence statistics are only used with depth.normalize: sequence");
    const SequenceStats s = job_sequence_stats(job);
    std::cout << "range " << s.low << " " << s.high << " (percentiles " << s.percentile_low << "/"
              << s.percentile_high << " of " << s.values << " values over frames "
              << format_frame_spec(s.sample_frames) << ")\n";
    return 0;
}

/// The error for flag `name` given an empty value.
std::string empty_value_error(const std::string& name) {
    return name + " is given an empty value (an unset variable in the command?): give a value, or leave " + name + " out";
}

/// A flag given an empty value (`--chunk "$CHUNK"` with CHUNK unset) is an error naming it, never the flag left out:
/// an empty --chunk or --range would render every frame of the shot in every farm task, an empty --output the
/// job's own path. Walks `app`, its option groups and subcommands. --frames has its own message (job_from_flags).
void refuse_empty_values(CLI::App& app) {
    for (CLI::Option* o : app.get_options()) {
        if (o->count() == 0 || o->get_type_size() == 0 || o->check_name("--frames")) continue;
        for (const std::string& v : o->results())
            if (v.find_first_not_of(" \t") == std::string::npos) {
                if (!o->nonpositional())   // the job file or model argument
                    throw depthbatch::ConfigError("the " + o->get_name() + " argument is empty (an unset variable in "
                                                  "the command?)");
                throw depthbatch::ConfigError(empty_value_error(o->get_name()));
            }
    }
    for (CLI::App* sub : app.get_subcommands(std::function<bool(CLI::App*)>{})) refuse_empty_values(*sub);
}

/// The render flags that override job keys.
struct RenderFlags {
    std::string frames, device, output_path, chunk, range, summary, grace;
    std::vector<std::string> sets;
    bool overwrite = false, skip_existing = false, dry_run = false;
    std::string threads;   ///< kept as written and checked by the job reader: "010" is 10, never octal 8
    bool frames_given = false;
};

/// Job + flags -> the JobConfig to render. Flags become --set overrides, so they are checked like job keys.
depthbatch::JobConfig job_from_flags(const std::string& job_path, const RenderFlags& f) {
    using namespace depthbatch;
    std::vector<JobOverride> overrides;
    for (const std::string& s : f.sets) overrides.push_back({s, "", false});
    // A flag that stands for a key names itself in an error about its value, which it takes as written (a path
    // 'take #2/d.####.exr' is that path; --set values are YAML).
    auto flag = [&](const char* name, const char* key, const std::string& value) {
        overrides.push_back({std::string(key) + "=" + value, std::string(name) + " " + printable(value), true});
    };
    if (!f.device.empty()) flag("--device", "model.device", f.device);
    if (!f.output_path.empty()) flag("--output", "output.path", f.output_path);
    if (f.overwrite) overrides.push_back({"output.overwrite=overwrite", "--overwrite", true});
    if (f.skip_existing) overrides.push_back({"output.overwrite=skip", "--skip-existing", true});
    if (!f.threads.empty()) flag("--threads", "pipeline.threads", f.threads);
    if (!f.summary.empty()) flag("--summary", "pipeline.summary", f.summary);
    if (!f.grace.empty()) flag("--grace", "pipeline.grace_s", f.grace);
    JobConfig job = load_job(job_path, overrides);
    if (f.frames_given && f.frames.find_first_not_of(" \t") == std::string::npos)
        throw ConfigError("--frames is empty (an unset $CHUNK?): give a frame spec such as 1001-1050");
    if (!f.frames.empty()) {
        try {
            job.render.frames = parse_frame_spec(f.frames);
        } catch (const ConfigError& e) {
            throw ConfigError(std::string("--frames: ") + e.what());
        }
    }
    // Decimal integers as written ("010" is 10), like every other number the user gives.
    static const std::regex range_re(R"(^\s*(-?\d{1,9})\s*-\s*(-?\d{1,9})\s*$)"), chunk_re(R"(^\s*(\d{1,9})\s*/\s*(\d{1,9})\s*$)");
    std::smatch m;
    if (!f.range.empty()) {
        if (!std::regex_match(f.range, m, range_re))
            throw ConfigError("--range '" + printable(f.range) + "': expected FIRST-LAST, e.g. 1001-1010 (an engine's "
                              "<STARTFRAME>-<ENDFRAME>)");
        job.render.range = {std::stoi(m[1]), std::stoi(m[2])};
        if (job.render.range->second < job.render.range->first)
            throw ConfigError("--range '" + f.range + "' ends before it starts");
    }
    if (!f.chunk.empty()) {
        if (!std::regex_match(f.chunk, m, chunk_re) || std::stoi(m[1]) < 1 || std::stoi(m[1]) > std::stoi(m[2]))
            throw ConfigError("--chunk '" + printable(f.chunk) + "': expected I/N with 1 <= I <= N, e.g. 3/8 (the 3rd "
                              "of 8 chunks; an unset $SLURM_ARRAY_TASK_ID gives '/8')");
        job.render.chunk_index = std::stoi(m[1]);
        job.render.chunk_count = std::stoi(m[2]);
    }
    return job;
}

/// `depthbatch validate JOB` / `depthbatch JOB --dry-run`: the plan on stdout, the exit code the render would give.
int run_validate(const depthbatch::JobConfig& job, bool deep = false) {
    using namespace depthbatch;
    const ValidationResult v = validate_job(job, deep);
    for (const std::string& w : v.warnings) log_warning(w);
    for (const std::string& l : v.plan) std::cout << l << "\n";
    std::cout << "valid: a render would exit " << static_cast<int>(v.exit_code) << " (" << exit_code_name(v.exit_code)
              << "); nothing was written" << std::endl;
    return static_cast<int>(v.exit_code);
}

/// The closing log lines: counts, speed (kept by -q), per-stage milliseconds per frame, plate pixels replaced.
void log_summary(const depthbatch::JobConfig& job, const depthbatch::JobReport& report) {
    using namespace depthbatch;
    const double fps = report.wall_s > 0 ? report.rendered / report.wall_s : 0.0;
    log_line_always(LogLevel::Info, detail::concat("done: ", report.rendered, " rendered, ", report.skipped, " skipped, ",
                                                   report.failed, " failed in ", report.wall_s, " s (", fps,
                                                   " frames/s) on ", report.device));
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
    std::vector<std::string> pixels;   // per frame: -v, the summary JSON and each EXR's header
    if (nonfinite) pixels.push_back(std::to_string(nonfinite) + " NaN/Inf plate pixels replaced by 0");
    if (out_of_range)
        pixels.push_back(std::to_string(out_of_range) + " pixels outside 0-1 after colour (" + option_name(job.color.hdr) + ")");
    if (clamped) pixels.push_back(std::to_string(clamped) + " depth values clamped");
    for (size_t i = 0; i < pixels.size(); ++i)
        if (i == 0) pixels[0] = "over the rendered frames: " + pixels[0];
        else pixels[0] += ", " + pixels[i];
    if (!pixels.empty()) log_info(pixels[0]);
    if (report.exit_code == ExitCode::Interrupted) {
        std::vector<int> done, undone;
        for (const FrameResult& f : report.frames)
            if (f.status == ExitCode::Ok) done.push_back(f.frame);
        for (int f : report.requested)
            if (std::none_of(report.frames.begin(), report.frames.end(), [f](const FrameResult& r) { return r.frame == f; }) &&
                std::none_of(report.skipped_frames.begin(), report.skipped_frames.end(),
                             [f](const SkippedFrame& s) { return s.frame == f; }))
                undone.push_back(f);
        log_error("interrupted: rendered ", done.empty() ? "none" : format_frame_spec(done), "; not rendered ",
                  undone.empty() ? "none" : format_frame_spec(undone),
                  "; no partial files were left; re-run with --skip-existing to finish");
    }
    if (report.exit_code == ExitCode::Partial) {
        std::vector<int> failed;
        for (const FrameResult& f : report.frames)
            if (f.status != ExitCode::Ok) failed.push_back(f.frame);
        log_error("partial: ", report.failed, " frames failed (", format_frame_spec(failed), "), the rest were rendered");
    }
}

/// After the first stop request: if the render is still running when pipeline.grace_s has passed, remove the
/// temporaries of frames in flight, say what was done, write the summary and exit 130 (a forward pass cannot
/// be interrupted, so it is abandoned rather than waited for). `finished` is set when run_job returns.
void stop_watchdog(const depthbatch::JobConfig& job, const depthbatch::ProgressReporter& progress,
                   const std::atomic<bool>& finished) {
    using namespace depthbatch;
    using Clock = std::chrono::steady_clock;
    while (!g_cancel.load()) {
        if (finished.load()) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(job.pipeline.grace_s));
    log_warning("stop requested: no new frames; frames in flight have ", job.pipeline.grace_s, " s (pipeline.grace_s) to finish");
    while (Clock::now() < deadline) {
        if (finished.load()) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (finished.load()) return;
    const int removed = abandon_frames_in_flight();
    log_error("grace period of ", job.pipeline.grace_s, " s over: abandoned the frames in flight (", removed,
              " temporary files removed)");
    const JobReport report = write_stop_summary(job, progress.finished(), progress.todo(), progress.skipped());
    log_summary(job, report);
    std::cout.flush();
    std::_Exit(static_cast<int>(ExitCode::Interrupted));
}

/// `depthbatch submit JOB --engine E`: the engine's job files in --out, and for Slurm the submission itself.
struct SubmitFlags {
    std::string job, engine = "slurm", out, partition, chunk_size, gpus, target_runtime = "0";
    std::vector<std::string> sets;
    bool dry_run = false;
};
int run_submit(const SubmitFlags& f) {
    using namespace depthbatch;
    namespace fs = std::filesystem;
    const auto integer = [](const std::string& flag, const std::string& text, int lo, int hi) {
        if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos ||
            std::stoi(text) < lo || std::stoi(text) > hi)
            throw ConfigError(flag + " '" + printable(text) + "': expected a whole number from " + std::to_string(lo) +
                              " to " + std::to_string(hi));
        return std::stoi(text);
    };
    SubmitOptions o;
    o.engine = farm_engine_from_name(f.engine);
    o.job_path = resolve_user_path(fs::current_path(), f.job);
    o.sets = f.sets;
    o.chunk_size_default = f.chunk_size.empty();   // not given (an empty value is refused before this)
    o.chunk_size = o.chunk_size_default ? 10 : integer("--chunk-size", f.chunk_size, 1, 1000000);
    o.gpus_per_task = f.gpus.empty() ? -1 : integer("--gpus-per-task", f.gpus, 0, 64);
    o.target_runtime_s = integer("--target-runtime", f.target_runtime, 0, 7 * 24 * 3600);
    o.partition = f.partition;
    o.executable = (executable_dir() / "depthbatch").string();
    const fs::path job_file(o.job_path);
    o.out_dir = f.out.empty() ? (job_file.parent_path() / (job_file.stem().string() + ".farm")).string()
                              : resolve_user_path(fs::current_path(), f.out);
    const JobConfig job = load_job(o.job_path, o.sets);   // a bad job fails here, not on the farm
    if (o.engine == FarmEngine::Slurm) o.max_array_size = slurm_max_array_size();
    const FarmPlan plan = plan_farm_job(job, o);
    if (!plan.note.empty()) log_warning(plan.note);
    const auto files = farm_job_files(plan, o);
    log_info(farm_engine_name(o.engine), ": ", plan.frames.size(), " frames (", format_frame_spec(plan.frames), ") in ",
             plan.chunks, " chunks of up to ", plan.chunk_size, " frames",
             plan.needs_stats ? ", after one sequence statistics task" : "");
    if (f.dry_run) {
        for (const auto& [name, text] : files) std::cout << "# ---- " << (fs::path(o.out_dir) / name).string() << "\n" << text;
        log_info("dry run: nothing written or submitted");
        return 0;
    }
    for (const std::string& p : write_farm_files(job, files, o)) std::cout << "wrote " << p << "\n";
    if (o.engine != FarmEngine::Slurm) return 0;
    const auto [stats_id, array_id] = slurm_submit(plan, o);
    if (!stats_id.empty()) std::cout << "submitted sequence statistics job " << stats_id << "\n";
    std::cout << "submitted array job " << array_id << " (tasks 1-" << plan.chunks << ")"
              << (stats_id.empty() ? "" : ", starting after job " + stats_id + " succeeds") << "\n"
              << "logs:    " << o.out_dir << "/logs/" << plan.safe_name << "." << array_id << "_<task>.log\n"
              << "follow:  squeue -j " << array_id << (stats_id.empty() ? "" : "," + stats_id) << "\n"
              << "after:   sacct -j " << array_id << " (with accounting), or scontrol show job " << array_id << "\n"
              << "cancel:  scancel " << array_id << " (tasks stop within pipeline.grace_s; resubmit to resume)\n";
    std::cout << "JOB_ID=" << array_id << "\n" << std::flush;
    return 0;
}

/// Why a finished render's exit code is not 0, in one line (for openjd_fail:).
std::string failure_reason(const depthbatch::JobReport& report) {
    using namespace depthbatch;
    if (!report.error.empty()) return report.error;
    std::vector<int> failed;
    std::string first;
    for (const FrameResult& f : report.frames)
        if (f.status != ExitCode::Ok) {
            failed.push_back(f.frame);
            if (first.empty()) first = f.message.substr(0, f.message.find('\n'));
        }
    if (report.exit_code == ExitCode::Interrupted) return "interrupted: a stop was requested; re-run with --skip-existing";
    if (failed.empty()) return std::string("exit ") + exit_code_name(report.exit_code);
    return std::to_string(failed.size()) + " frame(s) failed (" + format_frame_spec(failed) + "): " + first;
}

/// Render with progress in `style` (docs/farm.md "On the farm"), stop requests honoured within the grace.
int render_job(const depthbatch::JobConfig& job, depthbatch::ProgressStyle style, bool verbose, bool quiet) {
    using namespace depthbatch;
    ProgressReporter progress(std::cout, style, quiet);
    const LogLevel level = log_level();
    if (style == ProgressStyle::Bar) {   // log lines go above the bar; per-frame lines only with -v
        set_log_stream(&progress.log_stream(std::cerr));
        if (!verbose) set_log_level(LogLevel::Warning);
    }
    // While the job runs: the stop watchdog and the progress display; when it returns or throws, one teardown.
    struct Session {
        std::atomic<bool> finished{false};
        std::thread watchdog;
        ProgressReporter& progress;
        LogLevel level;
        ~Session() {
            finished = true;
            watchdog.join();
            progress.finish();
            set_log_stream(nullptr);
            set_log_level(level);
        }
    };
    JobReport report;
    {
        Session session{{}, {}, progress, quiet ? LogLevel::Warning : level};
        session.watchdog = std::thread(stop_watchdog, std::cref(job), std::cref(progress), std::cref(session.finished));
        std::signal(SIGINT, on_signal);
        std::signal(SIGTERM, on_signal);
        report = run_job(job, &progress, &g_cancel);
    }
    log_summary(job, report);
    if (report.exit_code != ExitCode::Ok) report_task_failure(std::cout, style, failure_reason(report));
    if (!job.pipeline.review.empty() && report.exit_code != ExitCode::Interrupted) {
        try {   // the sheet is a convenience: it never changes the job's exit code
            std::vector<std::string> summaries;
            if (!job.pipeline.summary.empty()) summaries.push_back(job.pipeline.summary);
            const std::string held = write_review(job, job.pipeline.review, summaries);
            const ReviewPaths sheet = review_paths(job.pipeline.review, "pipeline.review");
            log_info("review: ", sheet.png, " and ", sheet.html, " (", held, ")");
        } catch (const Error& e) {
            log_warning("pipeline.review: ", e.what());
        }
    }
    return code(report.exit_code);
}

}  // namespace

int main(int argc, char** argv) {
    using namespace depthbatch;
    // A progress reader that goes away (`depthbatch JOB | head -1`) must not kill the render: writes to the
    // closed pipe fail with EPIPE instead, and ProgressReporter says so once on stderr.
    std::signal(SIGPIPE, SIG_IGN);
    CLI::App app{"depthbatch: render depth passes (OpenEXR depth.Z) for image sequences with a depth model.\n"
                 "Exit codes: 0 ok, 2 bad job or flags, 3 missing/unreadable plate, 4 model error,\n"
                 "5 render failure, 6 outputs exist, 7 partial (pipeline.on_error: continue), 130 interrupted."};
    app.set_version_flag("--version", DEPTHBATCH_VERSION_STRING);
    app.add_flag_callback("--help-job", [] { std::cout << job_keys_help(); throw CLI::Success(); },
                          "Print every job file key with its default and what it does, and exit");
    app.require_subcommand(0, 1);

    std::string job_path;
    RenderFlags flags;
    bool quiet = false, verbose = false;
    app.add_option("job", job_path, "Job file (.yaml, .yml or .toml)");
    auto* render = app.add_option_group("Render", "Override the job");
    render->add_option("--frames", flags.frames, "Frames to render in this run, e.g. 1001-1050 or 1001-1100x2 (a farm chunk)");
    render->add_option("--device", flags.device, "auto, cpu, cuda or cuda:N (model.device)");
    render->add_option("--output", flags.output_path, "Output path pattern (output.path), relative to the current folder");
    render->add_option("--set", flags.sets, "Override any job key: --set model.size=518 (repeatable)")->allow_extra_args(false);
    auto* ow = render->add_flag("--overwrite", flags.overwrite, "Replace existing output frames (output.overwrite=overwrite)");
    render->add_flag("--skip-existing", flags.skip_existing, "Render only frames whose output is missing (output.overwrite=skip)")
        ->excludes(ow);
    render->add_option("--threads", flags.threads, "Worker threads for the pipeline and LibTorch (0 = all cores, up to 1024)");
    auto* frames_opt = render->get_option("--frames");
    render->add_option("--range", flags.range, "Only the job's frames from FIRST to LAST, e.g. 1001-1010 (an engine's "
                                                "<STARTFRAME>-<ENDFRAME>)")->excludes(frames_opt);
    render->add_option("--chunk", flags.chunk, "The I-th of N contiguous chunks of the frames, I/N counted from 1 "
                                                "(a farm task: --chunk $SLURM_ARRAY_TASK_ID/8)");
    render->add_option("--summary", flags.summary, "Write the JSON summary here (pipeline.summary)");
    render->add_option("--grace", flags.grace, "Seconds a stop request (SIGTERM) may take before frames in flight "
                                                "are abandoned (pipeline.grace_s, default 20)");
    std::string progress_style = "auto";
    app.add_option("--progress", progress_style,
                   "auto (default: the farm engine's dialect from its environment, else a bar on a terminal, else "
                   "lines), lines, deadline, tractor, openjd, bar or none (docs/farm.md \"On the farm\")")
        ->check(CLI::IsMember({"auto", "lines", "deadline", "tractor", "openjd", "bar", "none"}));
    app.add_flag("-q,--quiet", quiet, "Only warnings, errors and the closing summary (an engine's progress line stays)");
    app.add_flag("-v,--verbose", verbose, "Debug output, with each frame's stage timings");

    std::string stats_job;
    std::vector<std::string> stats_sets;
    auto* stats = app.add_subcommand("stats", "Compute (or check) the sequence statistics sidecar of a job with "
                                               "depth.normalize: sequence, once, before farm chunks run");
    stats->add_option("job", stats_job, "Job file")->required();
    stats->add_option("--set", stats_sets, "Override any job key (repeatable)")->allow_extra_args(false);

    SubmitFlags submit_flags;
    auto* submit = app.add_subcommand("submit", "Put a job on a render farm: write the engine's job files and, for "
                                                 "Slurm, submit them (docs/farm.md \"On the farm\")");
    submit->add_option("job", submit_flags.job, "Job file")->required();
    submit->add_option("--engine", submit_flags.engine, "slurm (the default: writes the scripts and submits them with sbatch), openjd, deadline, opencue or tractor (write files only)")
        ->check(CLI::IsMember({"slurm", "openjd", "deadline", "opencue", "tractor"}));
    submit->add_option("--out", submit_flags.out, "Folder for the engine's files and Slurm's logs (default: JOB.farm "
                                                   "beside the job file)");
    submit->add_option("--chunk-size", submit_flags.chunk_size, "Frames per task (default 10; a video model's shot: the smallest multiple of its window stride within 1.3x the whole render's windows)");
    submit->add_option("--partition", submit_flags.partition, "Slurm partition");
    submit->add_option("--gpus-per-task", submit_flags.gpus, "GPUs each task asks the engine for (default: 1 when "
                                                             "model.device is cuda or cuda:N, else 0); the task runs on "
                                                             "the first GPU the engine gives it");
    submit->add_option("--target-runtime", submit_flags.target_runtime, "OpenJD targetRuntimeSeconds for adaptive chunks "
                                                                         "(default 0: fixed chunks)");
    submit->add_option("--set", submit_flags.sets, "Override any job key, on every task (repeatable)")->allow_extra_args(false);
    submit->add_flag("--dry-run", submit_flags.dry_run, "Print the files; write and submit nothing");

    std::string review_job, review_out;
    std::vector<std::string> review_summaries, review_sets;
    auto* review = app.add_subcommand("review", "Make a job's review sheet from its EXRs: a contact sheet and per-frame "
                                                 "depth statistics, PNG + HTML (docs/review.md \"Review a render\")");
    review->add_option("job", review_job, "Job file")->required();
    review->add_option("--out", review_out, "The PNG, or its .html: either names the pair (S.png and S.html); default: the job's pipeline.review, "
                                            "else OUTPUT_FOLDER/JOB.review.png");
    review->add_option("--summary", review_summaries, "JSON summaries of the job's runs: their failed and skipped frames "
                                                       "are marked (repeatable)")->allow_extra_args(false);
    review->add_option("--set", review_sets, "Override any job key (repeatable)")->allow_extra_args(false);

    std::string validate_job_path;
    RenderFlags validate_flags;
    auto* validate = app.add_subcommand("validate", "Check a job without rendering: the job, the model (one forward at the "
                                                     "processing size), every plate, output folders and every path it writes; "
                                                     "prints the plan and exits with the code the render would give");
    validate->add_option("job", validate_job_path, "Job file")->required();
    validate->add_option("--frames", validate_flags.frames, "Only these frames (as for a render)");
    validate->add_option("--range", validate_flags.range, "Only the job's frames from FIRST to LAST");
    validate->add_option("--chunk", validate_flags.chunk, "The I-th of N chunks");
    validate->add_option("--set", validate_flags.sets, "Override any job key (repeatable)")->allow_extra_args(false);
    validate->add_option("--output", validate_flags.output_path, "Output path pattern (output.path)");
    validate->add_option("--summary", validate_flags.summary, "The JSON summary path (pipeline.summary)");
    validate->add_option("--device", validate_flags.device, "auto, cpu, cuda or cuda:N");
    auto* vow = validate->add_flag("--overwrite", validate_flags.overwrite, "As a render with --overwrite");
    validate->add_flag("--skip-existing", validate_flags.skip_existing, "As a render with --skip-existing")->excludes(vow);
    bool validate_deep = false;
    validate->add_flag("--deep", validate_deep, "Also decode every plate of the run in full (slower; finds damaged pixel data)");
    render->add_flag("--dry-run", flags.dry_run, "Check the job as `depthbatch validate` does; render nothing");

    std::string info_model;
    auto* info = app.add_subcommand("info", "Print a model's contract, parameter count and kind of module");
    info->add_option("model", info_model, "TorchScript model file")->required();

    // -q / -v anywhere: `depthbatch submit JOB -q` as well as `depthbatch -q submit JOB`.
    for (CLI::App* sub : app.get_subcommands({})) {
        sub->add_flag("-q,--quiet", quiet, "Only warnings and errors");
        sub->add_flag("-v,--verbose", verbose, "Debug output");
    }
    try {
        // `--summary=` with nothing after the '=' (an unset variable) makes CLI11 take the next argument as the
        // value (`--summary= --skip-existing` wrote a summary named --skip-existing): refused before parsing.
        for (int i = 1; i < argc; ++i)
            if (const std::string a = argv[i]; a.size() > 3 && a.compare(0, 2, "--") == 0 && a.back() == '=' &&
                                               a.find('=') == a.size() - 1) {
                std::cerr << "depthbatch: error: " << empty_value_error(a.substr(0, a.size() - 1)) << "\n";
                return code(ExitCode::Config);
            }
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : code(ExitCode::Config);
    }
    set_log_level(quiet ? LogLevel::Warning : verbose ? LogLevel::Debug : LogLevel::Info);
    ProgressChoice progress_choice;
    if (progress_style == "auto") progress_choice = choose_progress_style(std::getenv, ::isatty(STDOUT_FILENO) != 0);
    else progress_choice = {progress_style_from_name(progress_style), "--progress " + progress_style};
    // -q on a terminal: no bar either (only warnings, errors and the closing summary).
    const ProgressStyle style = quiet && progress_choice.style == ProgressStyle::Bar ? ProgressStyle::None
                                                                                    : progress_choice.style;
    log_debug("progress: ", progress_style_name(style), " (", progress_choice.reason, ")");
    if (!progress_choice.warning.empty()) log_warning(progress_choice.warning);

    std::optional<JobConfig> job;
    try {
        refuse_empty_values(app);
        if (*info) return print_info(info_model);
        if (*stats) return run_stats(stats_job, stats_sets);
        if (*submit) return run_submit(submit_flags);
        if (*validate) {
            validate_flags.frames_given = validate->count("--frames") > 0;
            return run_validate(job_from_flags(validate_job_path, validate_flags), validate_deep);
        }
        if (*review) {
            const JobConfig j = load_job(review_job, review_sets);
            // --out, else the job's pipeline.review, else OUTPUT_FOLDER/JOB.review.png.
            const std::string out = !review_out.empty() ? resolve_user_path(std::filesystem::current_path(), review_out)
                                  : !j.pipeline.review.empty() ? j.pipeline.review
                                                               : default_review_path(j);
            const char* key = !review_out.empty() ? "review --out" : !j.pipeline.review.empty() ? "pipeline.review"
                                                                                                 : "review (default path)";
            const ReviewPaths sheet = review_paths(out, key);   // .png or .html, refused before anything is read
            std::vector<std::string> summaries;
            for (const auto& s : review_summaries) summaries.push_back(resolve_user_path(std::filesystem::current_path(), s));
            const std::string held = write_review(j, out, summaries, key);
            std::cout << "wrote " << sheet.png << " and " << sheet.html << " (" << held << ")\n";
            return 0;
        }
        if (job_path.empty()) {
            std::cerr << app.help() << "\ndepthbatch: error: give a job file (depthbatch shot.yaml)\n";
            return code(ExitCode::Config);
        }
        flags.frames_given = app.count("--frames") > 0;
        job = job_from_flags(job_path, flags);
        if (flags.dry_run) return run_validate(*job);
        const int rc = render_job(*job, style, verbose, quiet);
        // Every output is closed and published, the summary written: skip the process teardown (LibTorch's and
        // TBB's static destructors and thread pools, ~0.1 s of every render; farm chunks are often 1-10 frames).
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);
        std::_Exit(rc);
    } catch (const Error& e) {
        log_error(e.what());
        if (job && !flags.dry_run) write_failure_summary(*job, e.code(), e.what());   // a dry run writes nothing
        report_task_failure(std::cout, style, e.what());
        return code(e.code());
    } catch (const std::exception& e) {
        log_error("unexpected: ", e.what());
        if (job && !flags.dry_run) write_failure_summary(*job, ExitCode::Render, std::string("unexpected: ") + e.what());
        report_task_failure(std::cout, style, std::string("unexpected: ") + e.what());
        return code(ExitCode::Render);
    }
}
