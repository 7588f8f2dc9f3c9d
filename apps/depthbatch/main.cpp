// depthbatch — command line. Builds a JobConfig from a job file and flags, calls the library, maps the
// outcome to an exit code (README.md "Exit codes"). Nothing else lives here.
#include "depthbatch/depth_model.h"
#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/job_config.h"
#include "depthbatch/log.h"
#include "depthbatch/run_job.h"

#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <unistd.h>
#include <cstdlib>
#include <iostream>

namespace {

std::atomic<bool> g_cancel{false};
// First SIGINT/SIGTERM: stop starting frames, let frames in flight finish (no partial file is left).
// Second: leave at once (a hidden temporary file may remain in the output folder, never a partial EXR).
extern "C" void on_signal(int) {
    if (g_cancel.exchange(true)) std::_Exit(static_cast<int>(depthbatch::ExitCode::Interrupted));
}

int code(depthbatch::ExitCode c) { return static_cast<int>(c); }

int print_info(const std::string& model_path) {
    depthbatch::JobConfig::Model options;
    options.path = model_path;
    options.device = "cpu";
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
    std::cout << (c.fixed_size ? ", fixed size" : ", any size") << "\n"
              << "output       "
              << (c.embedded ? std::string(depthbatch::depth_kind_name(c.kind)) + (c.units.empty() ? "" : " (" + c.units + ")")
                             : std::string("unknown: the job must state model.kind"))
              << "\n"
              << "parameters   " << model->parameter_count() << "\n"
              << "module       " << (model->traced() ? "traced (torch.jit.trace: fixed input size)" : "scripted (torch.jit.script)")
              << "\n";
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

/// The render flags that override job keys.
struct RenderFlags {
    std::string frames, device, output_path;
    std::vector<std::string> sets;
    bool overwrite = false, skip_existing = false;
    std::string threads;   ///< kept as written and checked by the job reader: "010" is 10, never octal 8
    bool frames_given = false;
};

/// Job + flags -> the JobConfig to render. Flags become --set overrides, so they are checked like job keys.
depthbatch::JobConfig job_from_flags(const std::string& job_path, const RenderFlags& f) {
    using namespace depthbatch;
    std::vector<std::string> overrides = f.sets;
    if (!f.device.empty()) overrides.push_back("model.device=" + f.device);
    if (!f.output_path.empty()) overrides.push_back("output.path=" + f.output_path);
    if (f.overwrite) overrides.push_back("output.overwrite=overwrite");
    if (f.skip_existing) overrides.push_back("output.overwrite=skip");
    if (!f.threads.empty()) overrides.push_back("pipeline.threads=" + f.threads);
    JobConfig job = load_job(job_path, overrides);
    if (f.frames_given && f.frames.find_first_not_of(" \t") == std::string::npos)
        throw ConfigError("--frames is empty (an unset $CHUNK?): give a frame spec such as 1001-1050");
    if (!f.frames.empty()) {
        try {
            job.render_frames = parse_frame_spec(f.frames);
        } catch (const ConfigError& e) {
            throw ConfigError(std::string("--frames: ") + e.what());
        }
    }
    return job;
}

/// The closing log lines: counts, speed, per-stage milliseconds per frame.
void log_summary(const depthbatch::JobReport& report) {
    using namespace depthbatch;
    const double fps = report.wall_s > 0 ? report.rendered / report.wall_s : 0.0;
    log_info("done: ", report.rendered, " rendered, ", report.skipped, " skipped, ", report.failed, " failed in ",
             report.wall_s, " s (", fps, " frames/s) on ", report.device);
    if (report.rendered > 0) {
        const StageTimes& t = report.totals;
        const double n = report.rendered;
        log_info("per frame: read ", t.read_ms / n, " ms, colour ", t.color_ms / n, ", reformat ", t.reformat_ms / n,
                 ", infer ", t.infer_ms / n, ", restore ", t.restore_ms / n, ", write ", t.write_ms / n,
                 "; inference busy ", report.infer_busy_ms / 1000.0, " s, waited for input ",
                 report.infer_wait_ms / 1000.0, " s");
    }
    if (report.exit_code == ExitCode::Interrupted) log_error("interrupted: no partial files were left");
}

}  // namespace

int main(int argc, char** argv) {
    using namespace depthbatch;
    // LibTorch's CPU intra-op pool is OpenMP (libgomp). By default its threads spin after every parallel
    // region, stealing the cores the TBB workers need for decoding and writing: measured on 2 cores,
    // OMP_WAIT_POLICY=PASSIVE made a 24-frame FastDepth render 1.45x faster (bench/README.md). libgomp
    // reads the variable when it is loaded, before main(), so set it and re-execute once. A user's own
    // OMP_WAIT_POLICY is respected.
    // oneDNN (LibTorch's CPU convolutions) caches 1024 primitives by default, one set per input shape: plates
    // whose data window changes every frame (renderers' autocrop) grew peak memory 2.4x over 60 frames
    // (bench/shapes). 128 holds the primitives of a network or two at one shape, so a fixed-size job keeps its
    // speed and memory stays bounded. Read when the first primitive is made; a user's own value is respected.
    if (!std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY")) ::setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "128", 1);
    if (!std::getenv("OMP_WAIT_POLICY")) {
        ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
        ::execv("/proc/self/exe", argv);  // returns only on failure: then carry on with the default policy
    }
    CLI::App app{"depthbatch: render depth passes (OpenEXR depth.Z) for image sequences with a depth model.\n"
                 "Exit codes: 0 ok, 2 bad job or flags, 3 missing/unreadable plate, 4 model error,\n"
                 "5 render failure, 6 outputs exist, 130 interrupted."};
    app.set_version_flag("--version", DEPTHBATCH_VERSION_STRING);
    app.require_subcommand(0, 1);

    std::string job_path;
    RenderFlags flags;
    bool quiet = false, verbose = false;
    app.add_option("job", job_path, "Job file (.yaml, .yml or .toml)");
    auto* render = app.add_option_group("Render", "Override the job");
    render->add_option("--frames", flags.frames, "Frames to render in this run, e.g. 1001-1050 or 1001-1100x2 (a farm chunk)");
    render->add_option("--device", flags.device, "auto, cpu, cuda or cuda:N (model.device)");
    render->add_option("--output", flags.output_path, "Output path pattern (output.path), relative to the current folder");
    render->add_option("--set", flags.sets, "Override any job key: --set model.size=518 (repeatable)");
    auto* ow = render->add_flag("--overwrite", flags.overwrite, "Replace existing output frames (output.overwrite=overwrite)");
    render->add_flag("--skip-existing", flags.skip_existing, "Render only frames whose output is missing (output.overwrite=skip)")
        ->excludes(ow);
    render->add_option("--threads", flags.threads, "Worker threads for the pipeline and LibTorch (0 = all cores, up to 1024)");
    app.add_flag("-q,--quiet", quiet, "Only warnings and errors");
    app.add_flag("-v,--verbose", verbose, "Debug output");

    std::string stats_job;
    std::vector<std::string> stats_sets;
    auto* stats = app.add_subcommand("stats", "Compute (or check) the sequence statistics sidecar of a job with "
                                               "depth.normalize: sequence, once, before farm chunks run");
    stats->add_option("job", stats_job, "Job file")->required();
    stats->add_option("--set", stats_sets, "Override any job key (repeatable)");

    std::string info_model;
    auto* info = app.add_subcommand("info", "Print a model's contract, parameter count and kind of module");
    info->add_option("model", info_model, "TorchScript model file")->required();

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : code(ExitCode::Config);
    }
    set_log_level(quiet ? LogLevel::Warning : verbose ? LogLevel::Debug : LogLevel::Info);

    try {
        if (*info) return print_info(info_model);
        if (*stats) return run_stats(stats_job, stats_sets);
        if (job_path.empty()) {
            std::cerr << app.help() << "\ndepthbatch: error: give a job file (depthbatch shot.yaml)\n";
            return code(ExitCode::Config);
        }
        flags.frames_given = app.count("--frames") > 0;
        const JobConfig job = job_from_flags(job_path, flags);

        std::signal(SIGINT, on_signal);
        std::signal(SIGTERM, on_signal);
        const JobReport report = run_job(job, nullptr, &g_cancel);
        log_summary(report);
        return code(report.exit_code);
    } catch (const Error& e) {
        log_error(e.what());
        return code(e.code());
    } catch (const std::exception& e) {
        log_error("unexpected: ", e.what());
        return code(ExitCode::Render);
    }
}
