// depthbatch — command line. Builds a JobConfig from a job file and flags, calls the library, maps the
// outcome to an exit code (docs/errors.md "Exit codes"). Nothing else lives here.
#include "depthbatch/error.h"
#include "depthbatch/farm_command.h"
#include "depthbatch/job_flags.h"
#include "depthbatch/job_keys.h"
#include "depthbatch/log.h"
#include "depthbatch/model_description.h"
#include "depthbatch/progress.h"
#include "depthbatch/review.h"
#include "depthbatch/run_job.h"
#include "depthbatch/run_report.h"
#include "library_lines.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>
#include <unistd.h>

using namespace depthbatch;

namespace {

std::atomic<bool> g_cancel{false};
// First SIGINT/SIGTERM (Ctrl-C, scancel, pre-emption, a Deadline task stop): stop starting frames; frames in
// flight finish if they can within pipeline.grace_s, else the watchdog abandons them (stop_watchdog).
// Second: leave at once (a hidden temporary file may remain in the output folder, never a partial EXR).
extern "C" void on_signal(int signo) {
    if (!g_cancel.load()) note_stop_signal(signo);  // the summary's error names it
    if (g_cancel.exchange(true)) cli::finish_library_lines(), std::_Exit(static_cast<int>(ExitCode::Interrupted));
}

int code(ExitCode c) { return static_cast<int>(c); }

/// A flag given an empty value (`--chunk "$CHUNK"` with CHUNK unset) is an error naming it, never the flag left out:
/// an empty --chunk or --range would render every frame of the shot in every farm task, an empty --output the
/// job's own path. Walks `app`, its option groups and subcommands. --frames has its own message (load_job_with_flags).
void refuse_empty_values(CLI::App& app) {
    for (CLI::Option* o : app.get_options()) {
        if (o->count() == 0 || o->get_type_size() == 0 || o->check_name("--frames")) continue;
        for (const std::string& v : o->results())
            if (v.find_first_not_of(" \t") == std::string::npos) {
                if (!o->nonpositional())  // the job file or model argument
                    throw ConfigError("the " + o->get_name() +
                                      " argument is empty (an unset variable in "
                                      "the command?)");
                throw ConfigError(empty_value_error(o->get_name()));
            }
    }
    for (CLI::App* sub : app.get_subcommands(std::function<bool(CLI::App*)>{})) refuse_empty_values(*sub);
}

/// After the first stop request: if the render is still running when pipeline.grace_s has passed, remove the
/// temporaries of frames in flight, say what was done, write the summary and exit 130 (a forward pass cannot
/// be interrupted, so it is abandoned rather than waited for). `finished` is set when run_job returns.
void stop_watchdog(const JobConfig& job, const ProgressReporter& progress, const std::atomic<bool>& finished) {
    using Clock = std::chrono::steady_clock;
    const auto wait_until = [&](const auto& done) {  // false when run_job returned first
        for (; !done(); std::this_thread::sleep_for(std::chrono::milliseconds(20)))
            if (finished.load()) return false;
        return true;
    };
    if (!wait_until([] { return g_cancel.load(); })) return;
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(job.pipeline.grace_s));
    log_warning("stop requested: no new frames; frames in flight have ", job.pipeline.grace_s,
                " s (pipeline.grace_s) to finish");
    if (!wait_until([&] { return Clock::now() >= deadline; }) || finished.load()) return;
    const int removed = abandon_frames_in_flight();
    log_error("grace period of ", job.pipeline.grace_s, " s over: abandoned the frames in flight (", removed,
              " temporary files removed)");
    log_run_summary(job, write_stop_summary(job, progress.finished(), progress.todo(), progress.skipped()));
    std::cout.flush();
    cli::finish_library_lines();
    std::_Exit(static_cast<int>(ExitCode::Interrupted));
}

/// Render with progress in `style` (docs/farm.md "On the farm"), stop requests honoured within the grace.
int render_job(const JobConfig& job, ProgressStyle style, bool verbose, bool quiet) {
    ProgressReporter progress(std::cout, style, quiet);
    JobReport report;
    {  // while the job runs: the log above the progress, the stop watchdog; one teardown when it returns or throws
        const ProgressLogScope log_scope(progress, style, std::cerr, verbose, quiet);
        std::atomic<bool> finished{false};
        std::thread watchdog(stop_watchdog, std::cref(job), std::cref(progress), std::cref(finished));
        struct Join {
            std::atomic<bool>& done;
            std::thread& thread;
            ~Join() { done = true, thread.join(); }
        } join{finished, watchdog};
        std::signal(SIGINT, on_signal), std::signal(SIGTERM, on_signal);
        report = run_job(job, &progress, &g_cancel);
    }
    log_run_summary(job, report);
    if (report.exit_code != ExitCode::Ok) report_task_failure(std::cout, style, failure_reason(report));
    if (report.exit_code != ExitCode::Interrupted) review_after_render(job);
    return code(report.exit_code);
}

/// The command line as parsed: each command's flags, and which command was given (a subcommand's CLI::App).
struct Cli {
    std::string job_path, progress_style = "auto", stats_job, review_job, review_out, validate_job_path, info_model;
    JobFlags flags, validate_flags;
    SubmitFlags submit_flags;
    std::vector<std::string> stats_sets, review_summaries, review_sets;
    bool quiet = false, verbose = false, validate_deep = false, stats_overwrite = false, solve_overwrite = false;
    std::string solve_job;
    std::vector<std::string> solve_sets;
    CLI::App *solve = nullptr, *stats = nullptr, *submit = nullptr, *review = nullptr, *validate = nullptr,
             *info = nullptr;
};

/// The flags that pick and override what a run of a job does, bound to `f`: the render's (an option group of the
/// main app) and `validate`'s are made by this one function, so no combination is valid for one and not the other
/// (issue 41 §4; test: Trust.ValidateAndTheDryRunAcceptExactlyTheRendersFlags).
void add_run_flags(CLI::App& to, JobFlags& f) {
    auto* frames = to.add_option("--frames", f.frames,
                                 "Frames to render in this run, e.g. 1001-1050 or 1001-1100x2 (a farm chunk)");
    to.add_option("--device", f.device, "auto, cpu, cuda or cuda:N (model.device)");
    to.add_option("--output", f.output_path, "Output path pattern (output.path), relative to the current folder");
    to.add_option("--set", f.sets, "Override any job key: --set model.size=518 (repeatable)")->allow_extra_args(false);
    auto* ow = to.add_flag("--overwrite", f.overwrite, "Replace existing output frames (output.overwrite=overwrite)");
    to.add_flag("--skip-existing", f.skip_existing,
                "Render only frames whose output is missing (output.overwrite=skip)")
        ->excludes(ow);
    to.add_option("--threads", f.threads, "Worker threads for the pipeline and LibTorch (0 = all cores, up to 1024)");
    to.add_option("--range", f.range,
                  "Only the job's frames from FIRST to LAST, e.g. 1001-1010 (an engine's "
                  "<STARTFRAME>-<ENDFRAME>)")
        ->excludes(frames);
    to.add_option("--chunk", f.chunk,
                  "The I-th of N contiguous chunks of the frames, I/N counted from 1 "
                  "(a farm task: --chunk $SLURM_ARRAY_TASK_ID/8)");
    to.add_option("--summary", f.summary, "Write the JSON summary here (pipeline.summary)");
    to.add_option("--grace", f.grace,
                  "Seconds a stop request (SIGTERM) may take before frames in flight "
                  "are abandoned (pipeline.grace_s, default 20)");
}

/// For CLI11's "The following arguments were not expected: --precision fp16": the job keys the flags it names are
/// the last part of, as " (--precision is a job key: --set model.precision=VALUE)"; "" when it names none.
std::string job_key_hint(const std::string& message) {
    std::string hints;
    for (size_t at = message.find("--"); at != std::string::npos; at = message.find("--", at + 2)) {
        size_t end = at + 2;
        while (end < message.size() &&
               (std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '_' || message[end] == '-'))
            ++end;
        std::string name = message.substr(at + 2, end - at - 2);
        std::replace(name.begin(), name.end(), '-', '_');
        if (name.empty()) continue;
        for (const JobKey& k : job_keys()) {
            const std::string key = k.key;
            if (key.size() > name.size() && key.compare(key.size() - name.size(), name.size(), name) == 0 &&
                key[key.size() - name.size() - 1] == '.' && hints.find(key) == std::string::npos) {
                hints += std::string(hints.empty() ? " (" : "; ") + "--" + message.substr(at + 2, end - at - 2) +
                         " is a job key: --set " + key + "=VALUE";
                break;
            }
        }
    }
    return hints.empty() ? hints : hints + ")";
}

/// Every flag and subcommand of `app`, bound to `c`.
void add_flags(CLI::App& app, Cli& c) {
    app.set_version_flag("--version", DEPTHBATCH_VERSION_STRING);
    app.add_flag_callback(
        "--help-job",
        [] {
            std::cout << job_keys_help();
            throw CLI::Success();
        },
        "Print every job file key with its default and what it does, and exit");
    app.require_subcommand(0, 1);
    app.add_option("job", c.job_path, "Job file (.yaml, .yml or .toml)");
    auto* render = app.add_option_group("Render", "Override the job");
    add_run_flags(*render, c.flags);
    app.add_option("--progress", c.progress_style,
                   "auto (default: the farm engine's dialect from its environment, else a bar on a terminal, else "
                   "lines), lines, deadline, tractor, openjd, bar or none (docs/farm.md \"On the farm\")")
        ->check(CLI::IsMember({"auto", "lines", "deadline", "tractor", "openjd", "bar", "none"}));
    app.add_flag("-q,--quiet", c.quiet,
                 "Only warnings, errors and the closing summary (an engine's progress line stays)");
    app.add_flag("-v,--verbose", c.verbose, "Debug output, with each frame's stage timings");
    c.stats = app.add_subcommand("stats",
                                 "Compute (or check) the sequence statistics sidecar of a job with "
                                 "depth.normalize: sequence, once, before farm chunks run");
    c.stats->add_option("job", c.stats_job, "Job file")->required();
    c.stats->add_option("--set", c.stats_sets, "Override any job key (repeatable)")->allow_extra_args(false);
    c.stats->add_flag("--overwrite", c.stats_overwrite,
                      "Recompute the sidecar and replace it, whatever it holds (a "
                      "sample plate re-delivered); then render with --skip-existing");
    c.solve = app.add_subcommand("solve",
                                 "Solve the shot's camera from its plate (camera.solve: an any-view model) and write "
                                 "the .chan, .usda and report; once, before farm chunks run (docs/camera-solve.md)");
    c.solve->add_option("job", c.solve_job, "Job file")->required();
    c.solve->add_option("--set", c.solve_sets, "Override any job key (repeatable)")->allow_extra_args(false);
    c.solve->add_flag("--overwrite", c.solve_overwrite,
                      "Solve again and replace the files, whatever they hold; then render with --skip-existing");
    c.submit = app.add_subcommand("submit",
                                  "Put a job on a render farm: write the engine's job files and, for "
                                  "Slurm, submit them (docs/farm.md \"On the farm\")");
    c.submit->add_option("job", c.submit_flags.job, "Job file")->required();
    c.submit
        ->add_option("--engine", c.submit_flags.engine,
                     "slurm (the default: writes the scripts and submits them with sbatch), openjd, deadline, opencue "
                     "or tractor (write files only)")
        ->check(CLI::IsMember({"slurm", "openjd", "deadline", "opencue", "tractor"}));
    c.submit->add_option("--out", c.submit_flags.out,
                         "Folder for the engine's files and Slurm's logs (default: JOB.farm "
                         "beside the job file)");
    c.submit->add_option("--chunk-size", c.submit_flags.chunk_size,
                         "Frames per task (default 10; a video model's shot: the smallest multiple of its window "
                         "stride within 1.3x the whole render's windows)");
    c.submit->add_option("--partition", c.submit_flags.partition, "Slurm partition");
    c.submit->add_option("--gpus-per-task", c.submit_flags.gpus,
                         "GPUs each task asks the engine for (default: 1 when "
                         "model.device is cuda or cuda:N, else 0); the task runs on "
                         "the first GPU the engine gives it");
    c.submit->add_option("--target-runtime", c.submit_flags.target_runtime,
                         "OpenJD targetRuntimeSeconds for adaptive chunks "
                         "(default 0: fixed chunks)");
    c.submit->add_option("--set", c.submit_flags.sets, "Override any job key, on every task (repeatable)")
        ->allow_extra_args(false);
    c.submit->add_flag("--dry-run", c.submit_flags.dry_run, "Print the files; write and submit nothing");
    c.review = app.add_subcommand("review",
                                  "Make a job's review sheet from its EXRs: a contact sheet and per-frame "
                                  "depth statistics, PNG + HTML (docs/review.md \"Review a render\")");
    c.review->add_option("job", c.review_job, "Job file")->required();
    c.review->add_option(
        "--out", c.review_out,
        "The PNG, or its .html: either names the pair (S.png and S.html); default: the job's pipeline.review, "
        "else OUTPUT_FOLDER/JOB.review.png");
    c.review
        ->add_option("--summary", c.review_summaries,
                     "JSON summaries of the job's runs: their failed and skipped frames "
                     "are marked (repeatable)")
        ->allow_extra_args(false);
    c.review->add_option("--set", c.review_sets, "Override any job key (repeatable)")->allow_extra_args(false);
    c.validate = app.add_subcommand("validate",
                                    "Check a job without rendering: the job, the model (one forward at the "
                                    "processing size), every plate, output folders and every path it writes; "
                                    "prints the plan and exits with the code the render would give");
    c.validate->add_option("job", c.validate_job_path, "Job file")->required();
    add_run_flags(*c.validate, c.validate_flags);  // the render's flags, exactly (checked as the render checks them)
    c.validate->add_flag("--deep", c.validate_deep,
                         "Also decode every plate of the run in full (slower; finds damaged pixel data)");
    render->add_flag("--dry-run", c.flags.dry_run, "Check the job as `depthbatch validate` does; render nothing");
    c.info = app.add_subcommand("info", "Print a model's contract, parameter count and kind of module");
    c.info->add_option("model", c.info_model, "TorchScript model file")->required();
    // -q / -v anywhere: `depthbatch submit JOB -q` as well as `depthbatch -q submit JOB`.
    for (CLI::App* sub : app.get_subcommands({})) {
        sub->add_flag("-q,--quiet", c.quiet, "Only warnings and errors");
        sub->add_flag("-v,--verbose", c.verbose, "Debug output");
    }
}

}  // namespace

static int run_command(int argc, char** argv) {
    // A progress reader that goes away (`depthbatch JOB | head -1`) must not kill the render: writes to the
    // closed pipe fail with EPIPE instead, and ProgressReporter says so once on stderr.
    std::signal(SIGPIPE, SIG_IGN);
    CLI::App app{
        "depthbatch: render depth passes (OpenEXR depth.Z) for image sequences with a depth model.\n"
        "Exit codes: 0 ok, 2 bad job or flags, 3 missing/unreadable plate, 4 model error,\n"
        "5 render failure, 6 outputs exist, 7 partial (pipeline.on_error: continue), 130 interrupted."};
    Cli c;
    add_flags(app, c);
    try {
        // `--summary=` (an unset variable): CLI11 would take the next argument as its value (job_flags.h).
        if (const std::string bare = flag_with_empty_equals(argc, argv); !bare.empty())
            return std::cerr << "depthbatch: error: " << empty_value_error(bare) << "\n", code(ExitCode::Config);
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version, --help-job
        // Every error line carries the one prefix (farm log scrapers match it), and a flag that is a job key's name
        // says how a job key is set.
        std::cerr << "depthbatch: error: " << e.what() << job_key_hint(e.what()) << "\n"
                  << "Run with --help for more information.\n";
        return code(ExitCode::Config);
    }
    set_log_level(c.quiet ? LogLevel::Warning : c.verbose ? LogLevel::Debug : LogLevel::Info);
    const ProgressChoice progress_choice =
        progress_from_flag(c.progress_style, c.quiet, std::getenv, ::isatty(STDOUT_FILENO) != 0);
    const ProgressStyle style = progress_choice.style;
    log_debug("progress: ", progress_style_name(style), " (", progress_choice.reason, ")");
    if (!progress_choice.warning.empty()) log_warning(progress_choice.warning);

    std::optional<JobConfig> job;
    try {
        refuse_empty_values(app);
        if (*c.info) return describe_model(std::cout, c.info_model), 0;
        if (*c.solve) {
            const CameraSolveRun r = job_camera_solve(load_job(c.solve_job, c.solve_sets), c.solve_overwrite);
            std::cout << "camera " << r.chan << " (" << r.summary << ")\nusd    " << r.usda << "\nreport " << r.report
                      << "\n";
            return 0;
        }
        if (*c.stats) return run_stats(c.stats_job, c.stats_sets, std::cout, c.stats_overwrite), 0;
        if (*c.submit) return run_submit(c.submit_flags, std::cout);
        if (*c.validate) {
            c.validate_flags.frames_given = c.validate->count("--frames") > 0;
            return run_validate(load_job_with_flags(c.validate_job_path, c.validate_flags), c.validate_deep, std::cout);
        }
        if (*c.review)
            return run_review(load_job(c.review_job, c.review_sets), c.review_out, c.review_summaries, std::cout), 0;
        if (c.job_path.empty())
            return std::cerr << app.help() << "\ndepthbatch: error: give a job file (depthbatch shot.yaml)\n",
                   code(ExitCode::Config);
        c.flags.frames_given = app.count("--frames") > 0;
        job = load_job_with_flags(c.job_path, c.flags);
        if (c.flags.dry_run) return run_validate(*job, false, std::cout);
        const int rc = render_job(*job, style, c.verbose, c.quiet);
        // Every output is closed and published, the summary written: skip the process teardown (LibTorch's and
        // TBB's static destructors and thread pools, ~0.1 s of every render; farm chunks are often 1-10 frames).
        std::cout.flush(), std::cerr.flush(), std::fflush(nullptr);
        cli::finish_library_lines();
        std::_Exit(rc);
    } catch (const std::exception& e) {  // an Error has its exit code; anything else is a render failure
        const auto* error = dynamic_cast<const Error*>(&e);
        const std::string what = error ? e.what() : std::string("unexpected: ") + e.what();
        log_error(what);
        if (job && !c.flags.dry_run) write_failure_summary(*job, error ? error->code() : ExitCode::Render, what);
        report_task_failure(std::cout, style, what);  // a dry run writes no summary (above) either
        return code(error ? error->code() : ExitCode::Render);
    }
}

int main(int argc, char** argv) {
    cli::route_library_lines();  // libpng's own stderr lines get the prefix (library_lines.h)
    const int rc = run_command(argc, argv);
    std::cout.flush(), std::cerr.flush(), std::fflush(nullptr);
    cli::finish_library_lines();
    return rc;
}
