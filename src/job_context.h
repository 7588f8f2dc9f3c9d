// depthbatch (internal) — what the parts of a job run share: the job's context (model, normalizer, passes, output
// guard: opened once, const), the plan made from the first frame to render (colour, passthrough, processing size:
// returned const by plan_from_first_frame) and the phases' results (a frame travels in its own record:
// frame_record.h). The parts (one source file each), in the order a job runs them:
//   job_plan.cpp      open the job, select and plan the frames, sequence statistics, job metadata; validate_job
//   frame_stages.cpp  one frame's stages: prepare (read, colour, reformat), finish (restore, convention, write,
//                     preview), each on the frame's record (frame_record.h)
//   frame_inference.cpp  infer (and tiles); the job's stage chain (sequence_stage.h)
//   run_job.cpp       the tbb::parallel_pipeline that drives them, and run_job's list of phases
//   job_report.cpp    each frame's line and place in the report, the closing figures, the JSON summary
#pragma once

#include "frames/context_plates.h"
#include "output/output_guard.h"
#include "pass_plan.h"

#include "depthbatch/color_transform.h"
#include "depthbatch/depth_model.h"
#include "depthbatch/depth_normalizer.h"
#include "depthbatch/depth_preview.h"
#include "depthbatch/exr_depth_writer.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/passthrough_color.h"
#include "depthbatch/plate.h"
#include "depthbatch/reformat.h"
#include "depthbatch/run_job.h"
#include "depthbatch/sequence_stage.h"
#include "depthbatch/sequence_stats.h"
#include "depthbatch/tiling.h"

#include "depthbatch/camera.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace depthbatch::detail {

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

inline std::string list_some(const std::vector<std::string>& items, size_t most = 5) {
    std::ostringstream s;
    for (size_t i = 0; i < items.size() && i < most; ++i) s << "\n  " << items[i];
    if (items.size() > most) s << "\n  ... and " << items.size() - most << " more";
    return s.str();
}

/// What a job opens once, before any plate is read, and never changes (open_job): the frames, the model, the
/// normalizer, the passes, the camera, the output guard. Const from open_job on (the model itself runs forwards:
/// DepthModel's own thread rule, depth_model.h).
struct JobContext {
    const JobConfig& job;
    FrameSequence input, output;
    std::vector<int> shot;  ///< the shot's frames (input.frames or on disk)
    int workers = 1;
    int torch_threads = 1;
    std::unique_ptr<DepthModel> model;
    std::optional<DepthNormalizer> normalizer;
    std::string settings_sha256;           ///< of output_settings_text(job): what --skip-existing checks
    std::optional<FrameSequence> preview;  ///< output.preview's path pattern, when previews are written
    std::optional<Colormap> colormap;
    OutputGuard guard;             ///< every path the job writes (output/output_guard.h)
    std::optional<ChanFile> chan;  ///< camera.chan, read once
    PassPlan passes;               ///< output.passes, planned once (pass_plan.h)
    /// camera.solve in force for this render (the solved .chan is `chan`): what the metadata and the summary say of
    /// it (camera_solve_run.cpp); empty when the render does not use a solved camera.
    std::string camera_solve_note;
    std::optional<double> camera_consistency;  ///< the solve's consistency figure at k = 1 (median relative error)
    Clock::time_point loaded;                  ///< when the model was loaded (JobReport::first_frame_s)

    explicit JobContext(const JobConfig& j) : job(j), input(j.input.path), output(j.output.path) {}
    const ModelContract& contract() const { return model->contract(); }
};

/// What input.colorspace auto reads of a plate: its kind (plate_kind(): encoding, channels) and the colorspace the
/// colour transform resolves it to. Two plates of one shot must read alike.
struct AutoColorspaceKind {
    std::string plate;       ///< plate_kind(), e.g. "float colour, channels R,G,B"
    std::string colorspace;  ///< ColorTransform::auto_for(), e.g. "ACEScg"
    bool operator==(const AutoColorspaceKind& o) const { return plate == o.plate && colorspace == o.colorspace; }
    bool operator!=(const AutoColorspaceKind& o) const { return !(*this == o); }
    /// "float colour, channels R,G,B; auto 'ACEScg'" (the log and messages).
    std::string text() const { return plate + "; auto '" + colorspace + "'"; }
};

/// The plan made from the run's first frame to render (plan_from_first_frame): the colour, the passthrough, the
/// processing size, the kind every plate must match and the precision check. Returned const; every stage that reads
/// plates, the sequence statistics and the metadata take it beside the JobContext, so none can run without it.
struct FirstFramePlan {
    int frame = 0;                                        ///< the frame it was made from
    std::shared_ptr<const ColorTransform> color;          ///< plate colorspace -> the model's
    std::shared_ptr<const PassthroughColor> passthrough;  ///< the RGB passthrough's colour and pixel type
    ReformatPlan reformat;                                ///< that frame's processing size
    AutoColorspaceKind kind;                              ///< auto_kind() of that frame
    std::optional<PrecisionCheck> precision_check;        ///< fp16/bf16: that frame against fp32 (check_precision)
};

/// Which of the requested frames to render: every plate frame exists, no output is the plate itself, and
/// outputs that exist follow output.overwrite (error: listed and thrown; skip: kept when they can stand for
/// this render, else rendered again and replaced). Under on_error: continue, missing plates become failed
/// frames instead of stopping the job.
struct FrameSelection {
    std::vector<int> todo;                ///< sorted
    std::map<int, std::string> rerender;  ///< frames of todo whose existing output is replaced, and why
    std::vector<SkippedFrame> skipped;
    std::vector<FrameResult> missing;  ///< on_error: continue only
};

/// The frames the pipeline computes, in order. With a stage chain that needs context (the stabilizer, a video
/// model's windows), the shot's frames from `context` before the first frame to render (the shot's first frame for a
/// video model) to `context` after the last (inferred, not written), so that a chunk gets what a whole render gets;
/// throws ConfigError for a frame outside the shot.
struct PlannedFrame {
    int frame;
    bool write;
    std::string replace_reason;  ///< why its existing output is replaced (FrameSelection::rerender); "" = none
};

/// The range depth.normalize: sequence uses, from the job's sequence statistics (nullopt otherwise).
struct SequenceRange {
    std::optional<DepthRange> range;
    SequenceStats stats;
};

// ---- job_plan.cpp ---------------------------------------------------------------------------------------------

/// What a job is opened for: a render, its validation (nothing is computed: a camera solve that is due is said, not
/// run), or the camera solve itself (the model is camera.solve.model, an any-view model).
enum class JobUse { Render, Validate, CameraSolve };
/// Frames, model, colour and the output guard: everything that can fail before a frame is read. For a render that
/// uses a camera (passes, a focal-dependent model) and states none, the camera solved from the plate
/// (camera.solve: solved first when missing or out of date, job_camera_solve). Throws ConfigError for an any-view
/// model named as model.path (it solves cameras; it does not render), or a camera.solve.model that is not one.
std::unique_ptr<const JobContext> open_job(const JobConfig& job, JobUse use = JobUse::Render);

// ---- camera_solve_run.cpp -----------------------------------------------------------------------------------

/// The files of a job's camera solve: the .chan (camera.solve.chan, else default_camera_solve_path), its .usda and
/// its report (.json) beside it; all empty without camera.solve.
struct CameraSolveFiles {
    std::string chan, usda, report;
};
CameraSolveFiles camera_solve_files(const JobConfig& job);
/// For open_job: the solved camera a render uses (camera.solve set, the camera used, none stated by camera.*): up to
/// date or solved now (JobUse::Render), or only said to be due (JobUse::Validate: nullopt then, and
/// ctx.camera_solve_note says so). Returns the .chan path; sets ctx.camera_solve_note and ctx.camera_consistency from
/// its report. Throws what the solve throws.
std::optional<std::string> solved_camera_for_render(JobContext& ctx, JobUse use);
/// After a render that used the solved camera and wrote depth in metres: the rendered depth against the camera, as
/// the solve's consistency figure but on what this render wrote (depth.Z of up to 16 pairs of consecutive written
/// frames, evenly spread, read back): each sample of frame f placed in the world by f's camera and projected into the
/// next frame, |z - depth there| / depth there, the median. nullopt when the render did not use a solved camera,
/// did not write metres, or wrote fewer than two consecutive frames. Never throws (a frame it cannot read is left
/// out).
std::optional<double> rendered_camera_consistency(const JobContext& ctx, const FirstFramePlan& first,
                                                  const std::vector<int>& written);
/// The solve itself, written to `files` (job_camera_solve when it is due).
CameraSolveRun solve_now(const JobConfig& job, const CameraSolveFiles& files);
/// The pixel aspect the model's sizes are computed for (input.pixel_aspect, else the file's, else 1).
double pixel_aspect(const JobConfig& job, const OIIO::ImageSpec& spec);
/// model.tiles' grid for a plate (empty when tiles are off or one tile covers the plate).
std::vector<TileRect> tiles_for(const JobConfig& job, int width, int height);
/// The plan from frame `frame`'s header: colour transform, plate kind, passthrough, reformat plan, the precision
/// check; then the warm-up at the job's shapes (or, without one, a dry run of the model at a small size). Throws
/// what those throw (InputError for a plate of another kind than the shot's first, ModelError for a model that
/// cannot run).
FirstFramePlan plan_from_first_frame(const JobContext& ctx, int frame);
/// The shapes the job feeds its model (DepthModel::warm_up): model.batch inputs at the first frame's processing
/// size; model.batch tiles (at most the tiles of a frame) at the tile size; a video model's model.batch windows.
std::vector<ForwardShape> warmup_shapes(const JobContext& ctx, const FirstFramePlan& first);
/// With fp16/bf16 in force, frame `first.frame` prepared as the pipeline does and run at both precisions
/// (DepthModel::check_precision): logged and returned for the report; nullopt for fp32 or a frame that could not
/// be prepared. Throws ModelError for a forward that fails at fp32.
std::optional<PrecisionCheck> check_precision(const JobContext& ctx, const FirstFramePlan& first);

/// What input.colorspace auto reads of `plate` through `color` (see AutoColorspaceKind).
AutoColorspaceKind auto_kind(const ColorTransform& color, const PlateInfo& plate);
/// Under input.colorspace auto, throws InputError (exit 3) naming the frame when `plate` is not of first.kind
/// (a float TIFF among 16-bit ones, an EXR declaring ACEScg among untagged ones). Nothing otherwise.
void check_auto_kind(const JobContext& ctx, const FirstFramePlan& first, const PlateInfo& plate);
/// The job's sequence statistics (sidecar reused or computed), its frames prepared by `first`'s plan.
SequenceStats sequence_stats(const JobContext& ctx, const FirstFramePlan& first, bool recompute = false);
/// Which of `frames` to render (see FrameSelection); throws for missing plates, existing or foreign outputs.
FrameSelection select_frames(const JobContext& ctx, const std::vector<int>& frames);
/// The output folders can be written (checked before any frame is read); `sweep`: remove stale temporaries.
void check_output_folders(const JobContext& ctx, const std::vector<int>& todo, bool sweep = true);
/// Remove the hidden temporaries that killed runs of this host left for this job's own depth frames (the shot's and
/// `frames`' output names, in their folders; detail::remove_stale_temporaries), saying how many in the log.
void sweep_stale_temporaries(const JobContext& ctx, const std::vector<int>& frames);
/// depth.stabilize_radius R: R frames on each side (at least 1).
int stabilize_radius(const JobConfig& job);
/// What makes the job's frames depend on other frames' plates: the video model's windows, the stabilizer's radius.
TemporalReach temporal_reach(const JobContext& ctx);
/// A run of a job, opened through the phases every run goes through before its frames flow, for the render and
/// for validate (and --dry-run) alike (open_run).
struct OpenedRun {
    enum class Stage {
        Empty,        ///< this run's share of the job is empty (--chunk 5/8 of 4 frames, a --range outside the shot)
        NothingToDo,  ///< every frame of the share is kept (or its plate is missing under on_error: continue)
        Planned,      ///< frames to render: the output folders checked, the first frame's plan made
    };
    std::unique_ptr<const JobContext> ctx;
    std::optional<FirstFramePlan> first;  ///< Stage::Planned only
    std::vector<int> requested;           ///< this run's share of the job's frames (--frames/--range/--chunk)
    FrameSelection selected;              ///< what to render, keep and report missing (empty for Stage::Empty)
    Stage stage = Stage::Empty;
};

/// The phases, once: open the job (open_job: model, device, normalizer, passes, output guard) -> this run's
/// frames -> every path the run writes through the output guard (preflight: exit 2 for one that would destroy a
/// plate, the job, the model or another output) -> the frames to render (select_frames: existing outputs checked)
/// -> the output folders (check_output_folders; `render`: stale temporaries swept) -> the plan from the first frame
/// to render (plan_from_first_frame: colour, reformat, precision check, warm-up; OpenedRun::first). Stops early at Stage::Empty or
/// Stage::NothingToDo. `phase` hears "loading model" and "checking outputs" as they start. Throws what those throw.
OpenedRun open_run(const JobConfig& job, const std::function<void(const std::string&)>& phase, bool render);

/// A run that renders part of a video model's shot (a chunk, --frames, a resume) runs only its own windows, planned
/// at one model input size. Throws RenderError (exit 5; validate the same) when the plates of `plan` change size
/// (their data window, hence the model input: ReformatPlan::make), naming the frame where it changes, the sizes and
/// the way out (render the shot whole). Headers only; missing plates are check_context_plates'. Nothing for a whole
/// render (each size starts its own windows) or a single-frame model.
void check_chunk_sizes(const JobContext& ctx, const std::vector<PlannedFrame>& plan);
/// The frames the pipeline computes, with the chain's warm-up: context_frames() on each side, and from the shot's
/// first frame when it needs_segment_start() (see PlannedFrame).
std::vector<PlannedFrame> plan_frames(const JobContext& ctx, const FrameSelection& sel, StageChain& chain);
/// The plates of `plan`'s context frames (write false: warm-up a chunk reads, not its own frames) that are missing,
/// with what reads them, as messages ("frame 1070: plate missing: PATH (context of frames 1081-1120: the video
/// windows)"). Under pipeline.on_error: stop throws InputError (exit 3) listing them, as select_frames does for the
/// run's own plates; under continue returns the frames (the render goes on, marking or failing what they cut, and
/// exits Partial). The render and validate call it alike.
/// `own`: the run's own frames (OpenedRun::requested): a missing one among them is select_frames' to report, never
/// context, though the plan reads it only as the warm-up of its neighbours.
std::vector<int> check_context_plates(const JobContext& ctx, const std::vector<PlannedFrame>& plan,
                                      const std::vector<int>& own, std::vector<std::string>* messages = nullptr);
/// The range depth.normalize: sequence uses.
SequenceRange sequence_range(const JobContext& ctx, const FirstFramePlan& first);
/// What every EXR of the job carries in its metadata; `stages`: the stage chain's entries.
Metadata job_metadata(const JobContext& ctx, const FirstFramePlan& first, const SequenceRange& seq, Metadata stages);

// ---- frame_stages.cpp -----------------------------------------------------------------------------------------

/// read + colour + reformat (+ tiles). Never throws: failures are recorded in the record.
void prepare(const JobContext& ctx, const FirstFramePlan& first, FrameRecord& w);
/// restore + depth convention + write (+ preview). Never throws.
void finish(const JobContext& ctx, const FirstFramePlan& first, FrameRecord& w,
            const std::optional<DepthRange>& sequence_range, const Metadata& job_meta);

// ---- frame_inference.cpp ---------------------------------------------------------------------------------------

/// Inference for prepared frames, in frame order; frames of one size share a forward pass. Never throws.
void infer(const JobContext& ctx, std::vector<FrameRecord*>& frames);
/// Batches the single-frame inference stage keeps in flight while it collects the next (BatchInferenceStage).
inline constexpr int kInferenceLookahead = 1;
/// The job's stage chain: per-batch inference, kInferenceLookahead batches ahead (a multi-frame model: its windows,
/// video_window_stage.h), then the centred stabilizer when depth.stabilize asks for it.
StageChain make_stage_chain(const JobContext& ctx);

// ---- job_report.cpp -------------------------------------------------------------------------------------------

/// One frame's log line and its place in the report (called once per finished frame, under a lock).
void record_frame(const JobContext& ctx, const FrameRecord& w, JobReport& report);
/// The report's closing figures and the JSON summary when the job asks for one.
void close_report(JobReport& report, const JobContext& ctx, const std::atomic<bool>* cancel, Clock::time_point t_start);

}  // namespace depthbatch::detail
