// depthbatch — rendering a job: one tbb::parallel_pipeline over the frames.
//
//   source (serial, in order)       next frame(s), skipping outputs that exist under "skip"
//   read + colour + reformat (parallel)
//   inference (serial, in order)    one device, one module; `batch` frames per forward
//   restore + write (parallel)
// At most `frames_in_flight` frames exist at once, so memory does not grow with sequence length.
// Setup problems (job, model, colour, missing frames, existing outputs) throw before any frame is read
// or written; a frame that fails later is reported in the JobReport, no new frames are started, frames
// already in flight finish, and nothing partial is left on disk. With pipeline.on_error: continue, failed
// frames (missing plates among them) are reported and the rest is rendered; the exit code is then Partial.
//
// Usage (what apps/depthbatch does, less the flags, the progress dialects and the signals):
//
//     JobConfig job = load_job("shot.yaml", {"output.overwrite=skip"});   // ConfigError: file, line, key
//     ValidationResult plan = validate_job(job);      // optional: every check, nothing written
//     ProgressReporter progress(std::cout, ProgressStyle::Lines);   // progress.h; or nullptr for none
//     JobReport report = run_job(job, &progress);     // InputError, ModelError, OutputExistsError before
//                                                     // frame 1; per-frame failures land in report.frames,
//                                                     // and pipeline.summary (if set) is written by run_job
//     return static_cast<int>(report.exit_code);      // Ok, Partial, Render, Interrupted ...
//
// The conventions (errors, threads, units) are stated once, in depthbatch.h.
#pragma once

#include "depthbatch/error.h"
#include "depthbatch/frame_result.h"
#include "depthbatch/gpu_device.h"
#include "depthbatch/job_config.h"
#include "depthbatch/sequence_stats.h"

#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace depthbatch {

/// A frame left out because its output exists (output.overwrite: skip) and can stand for this render.
struct SkippedFrame {
    int frame = 0;
    std::string output_path;
    std::string reason;  ///< "complete, same settings and model"
};

struct JobReport {
    std::string job_file;             ///< the job's file ("" when built in code)
    std::vector<int> requested;       ///< the frames this run was asked for (after --frames/--range/--chunk)
    std::vector<FrameResult> frames;  ///< every frame started (or found missing under on_error: continue), in order
    std::vector<SkippedFrame> skipped_frames;
    int rendered = 0, skipped = 0, failed = 0;
    /// Frames this run read only as context (a chunk's warm-up: its stabilizer window, its video windows), not its
    /// own, whose plate was missing or failed: never counted as its frames (progress, rendered/failed), said in the
    /// log; the frames whose windows read them are marked or not written, and the run exits Partial.
    std::vector<int> context_failed;
    std::string model_name, model_path, model_sha256, settings_sha256;
    std::string model_license;     ///< the contract's licence ("" when it records none)
    std::string license_accepted;  ///< model.accept_license, when the licence forbids commercial use ("" otherwise)
    std::string camera_solve;      ///< the solved camera in force (exr depthbatch/camera_solve; "" = none)
    std::optional<double> camera_consistency;  ///< its consistency figure (depthbatch/camera_consistency)
    /// The same figure on this render's depth (detail::rendered_camera_consistency): does the depth written agree
    /// with the solved camera (a scale that disagrees with the render model's metres makes it large)
    std::optional<double> camera_render_consistency;
    std::string error;    ///< the message of a failure that stopped the job before it rendered
    double wall_s = 0;    ///< the whole job: model load, planning, statistics and rendering
    double render_s = 0;  ///< the rendering pipeline alone (first frame read to last frame written)
    /// Seconds from the model loaded (on its device) to the first frame written: planning, the precision check, the
    /// warm-up, statistics and the first frame's own way through the pipeline. -1 when no frame was written.
    double first_frame_s = -1;
    std::string device;  ///< "cpu" or "cuda:N"
    GpuDevice gpu;       ///< the GPU behind it (index -1 on the CPU), CUDA_VISIBLE_DEVICES
    int torch_threads = 0, worker_threads = 0, frames_in_flight = 0;
    StageTimes totals;         ///< summed over rendered frames
    double infer_wait_ms = 0;  ///< time the inference stage sat waiting for its next input
    double infer_busy_ms = 0;  ///< time the model's inference thread spent in forward passes (this job's frames)
    /// Threads that ran a forward pass of the job's model: 1, the model's own (depth_model.h: Threads); 0 when the
    /// job ran none (nothing to do).
    int inference_threads = 0;
    std::vector<std::string> warmup_shapes;  ///< the shapes warmed up before the first frame ("2x3x224x384")
    int warmup_passes = 0;                   ///< forward passes at each warm-up shape (model.warmup)
    double warmup_ms = 0;
    std::string precision_asked;  ///< model.precision as the job asks ("fp32" ...)
    std::string precision;        ///< the precision the frames were rendered at
    /// fp16/bf16: PrecisionCheck::error on the job's first frame (-1 when no check ran), and how it ran.
    double precision_error = -1;
    int precision_frame = 0;
    std::string precision_how;
    ExitCode exit_code = ExitCode::Ok;  ///< first failure's class, Interrupted if cancelled
};

/// The summary of a run that failed before it rendered (`code`, `message`), when the job asks for one
/// (pipeline.summary): written through the job's output guard, so never over a plate, the job, the model or
/// another output (a refused path writes nothing: the error that stopped the job says why). Nothing either for
/// ExitCode::OutputExists (exit 6: outputs exist, nothing attempted): the summary there records the render that made
/// them and is kept. Never throws.
void write_failure_summary(const JobConfig& job, ExitCode code, const std::string& message);

/// Record the signal (SIGINT, SIGTERM) that asked the job to stop, for the summary's `error` ("interrupted by signal
/// 15 (SIGTERM): ..."). Async-signal-safe (one lock-free atomic store): call it from the handler that sets `cancel`.
void note_stop_signal(int signo) noexcept;

/// The report of a run whose stop request outlived pipeline.grace_s (the frames in flight abandoned): the frames
/// that finished (`finished`), those it was to render (`todo`) and kept (`skipped`), exit Interrupted; written as
/// the job's summary when it asks for one (through the output guard, like every summary). Never throws.
JobReport write_stop_summary(const JobConfig& job, const std::vector<FrameResult>& finished,
                             const std::vector<int>& todo, int skipped);

/// Receives progress from run_job: on_phase and on_start from the calling thread, on_frame_done from
/// worker threads, one call at a time.
class JobObserver {
public:
    virtual ~JobObserver() = default;
    /// What the job is doing before frames flow: "loading model", "checking outputs", "sequence statistics".
    virtual void on_phase(const std::string& /*phase*/) {}
    /// The frames about to be rendered (sorted) and how many were skipped because their output exists.
    virtual void on_start(const std::vector<int>& /*todo*/, int /*skipped*/) {}
    virtual void on_frame_done(const FrameResult& /*result*/) {}
};

/// Remove the temporary files of frames still being written, for a stop request whose grace period ran
/// out: the caller exits right after (no frame in flight is published then). Safe from any thread but
/// not from a signal handler. Returns how many were removed.
int abandon_frames_in_flight();

/// The sequence statistics of `job` (depth.normalize: sequence): the sidecar's if it exists and matches
/// the job, else computed over sample_frames() and written (see sequence_stats.h). `depthbatch stats`
/// calls this alone. Throws like run_job; OutputExistsError for a sidecar made for another job. `recompute`
/// (`depthbatch stats --overwrite`): computed and written whatever sidecar exists.
SequenceStats job_sequence_stats(const JobConfig& job, bool recompute = false);

/// What job_camera_solve did.
struct CameraSolveRun {
    std::string chan, usda, report;  ///< the solve's files (camera.solve.chan and beside it)
    bool reused = false;             ///< they were up to date: nothing was solved
    std::string summary;             ///< "focal 1234 px (35.1 mm, spread 0.4%), moving, metres, consistency 1.2%"
};

/// The camera of `job`'s plate (camera.solve, camera_solve.h; docs/camera-solve.md): its files when they are up to
/// date (their report records every input: the models' sha256, the solve settings, the colour rule, the apertures,
/// every plate's identity), else solved over the whole shot and written through the job's output guard (the .chan,
/// then the .usda, then the report). `depthbatch solve` calls this alone; a render whose camera is the solved one
/// calls it first. `recompute` (`depthbatch solve --overwrite`): solved whatever exists. Throws ConfigError (exit 2)
/// without camera.solve.model or for a model that is not an any-view model, InputError (exit 3) for missing plates
/// (the whole shot is solved), ModelError (exit 4) for a forward that fails, and what run_job throws otherwise.
CameraSolveRun job_camera_solve(const JobConfig& job, bool recompute = false);

/// Whether a render of `job` uses the camera solved from its plate: camera.solve is set, camera.* states neither a
/// .chan nor a focal length (a stated camera always wins), and something uses a camera: output.passes, or a model
/// whose metres depend on the focal length (`focal_dependent`: its contract's output.reference_focal_px > 0).
bool camera_solve_in_force(const JobConfig& job, bool focal_dependent);

/// What `depthbatch validate JOB` (or a render with --dry-run) found without rendering anything.
struct ValidationResult {
    std::vector<std::string> plan;      ///< "key   value" lines: frames, plates, model, device, sizes, outputs
    std::vector<std::string> warnings;  ///< what the render would warn about (missing plates under on_error: continue)
    ExitCode exit_code = ExitCode::Ok;  ///< what the render would exit with when nothing throws (Ok or Partial)
};

/// Check `job` as run_job would, stopping before the first frame is rendered: the job's frames and this run's
/// share, the model (loads, its contract, one forward at the processing size), every plate of the run (exists,
/// its header opens and is not cut short, of the same kind as the first: plate_kind), an existing sequence
/// statistics sidecar (the render's identity check: OutputExistsError for another job's), the output folders, and every path the job
/// writes through the output guard (src/output/output_guard.h). Writes nothing (no statistics sidecar, no temporaries).
/// Throws the errors run_job would throw before rendering, with the same classes (so the same exit codes); a
/// plate that cannot be opened is an InputError naming it (exit 3).
/// `deep` (`validate --deep`): every plate of the run is also decoded in full (read_plate), so damage inside the
/// pixel data is an InputError naming the frame, as in the render.
ValidationResult validate_job(const JobConfig& job, bool deep = false);

/// Render `job`. Throws ConfigError, InputError, ModelError or OutputExistsError for problems found
/// before rendering starts (nothing is written then). `cancel`, when set to true from another thread (a
/// signal handler), stops starting new frames; the report's exit_code is then Interrupted.
/// Under output.overwrite: skip, an existing output is kept only when why_output_is_stale() finds nothing
/// (complete, written by depthbatch with the same settings and model); any other is rendered again and
/// replaced, and the log says why.
JobReport run_job(const JobConfig& job, JobObserver* observer = nullptr, const std::atomic<bool>* cancel = nullptr);

}  // namespace depthbatch
