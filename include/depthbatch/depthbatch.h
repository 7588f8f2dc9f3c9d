// depthbatch — the public API in one include, and the conventions every header of it follows.
//
// Conventions (as OpenImageIO's imagebufalgo.h and whisper.cpp's whisper.h state theirs once, at the top):
//
// Errors.  Setup code (parsing a job, loading a model, building an OCIO processor, checking outputs) throws one
//   of the classes of error.h; each maps to one process exit code (ExitCode: 2 config, 3 plate, 4 model,
//   5 render, 6 outputs exist, 7 partial, 130 interrupted; docs/errors.md). Messages are whole sentences that
//   name the file, frame or key, and never hold raw control characters (log.h: printable). Work on one frame
//   inside the pipeline does not throw across it: it becomes a FrameResult (frame_result.h) with the same classes.
//   A function that fails leaves nothing behind: every file is written to a temporary beside its final path
//   and published atomically (src/output/output_guard.h), or removed.
//
// Threads.  One rule, OpenImageIO's: a const member function may be called from any number of threads at once; a
//   non-const one needs the caller to make sure no other thread uses the object meanwhile; free functions that
//   take their inputs by value or const reference are safe to call concurrently. A header states its exceptions,
//   and these are all of them: DepthModel may be used from any thread through every member (it serves calls on
//   its own inference thread, one at a time: depth_model.h, Threads), and logging (log.h) may be called from any
//   thread (lines never interleave). So the job's ColorTransform, PassthroughColor and DepthNormalizer, built
//   once and then used through const members only, serve every worker at once; a StageChain and its stages
//   (pushed and popped) and a FrameRecord belong to one thread at a time. run_job runs one
//   tbb::parallel_pipeline; `pipeline.threads` sizes TBB's arena and LibTorch's intra-op pool.
//
// Units and layouts.  Images are OIIO ImageBufs or float buffers, interleaved, rows top to bottom, in the
//   plate's data window (pixels; OpenEXR's windows: inclusive integer bounds, origin may be negative).
//   Colour values are floats in the colorspace named beside them (scene-linear unless said: 1.0 is diffuse
//   white, not a clamp). Model tensors are NCHW float32 [N,3,H,W] in [0,1] in the model's colorspace; video
//   models take [B,T,3,H,W]; depth outputs are [N,1,H,W] or [N,H,W] (model_contract.h). Depth is metres for
//   metric models (distance from the camera: ZDefocus's `depth` math), 1/metres for inverse depth (ZDefocus's
//   `1/z`, ScanlineRender's), unitless for relative models; `near` is the small distance (docs/depth.md). Frame numbers are the plate's own (1001...,
//   never renumbered, any sign); sizes are [width, height]; angles in degrees; focal lengths in pixels unless a
//   key says mm. Times in reports are seconds (`_s`) or milliseconds (`_ms`).
//
// Where a header states a formula or constant, it names its source (a paper, a file format's specification,
// Nuke's or OpenEXR's documentation, or the measurement that chose it).
//
// A first program (run_job.h has the same, with what each step throws). Against an installed prefix P:
// find_package(depthbatch CONFIG) with P and LibTorch on CMAKE_PREFIX_PATH, then link depthbatch::depthbatch
// (README.md "Install for a studio"; tests/integration/install_test.cpp compiles exactly this):
//
//     #include "depthbatch/depthbatch.h"
//     int main(int argc, char** argv) {
//         try {
//             const depthbatch::JobConfig job = depthbatch::load_job(argv[1], {"model.device=cpu"});
//             const depthbatch::JobReport report = depthbatch::run_job(job);
//             return static_cast<int>(report.exit_code);
//         } catch (const depthbatch::Error& e) {
//             depthbatch::log_error(e.what());
//             return static_cast<int>(e.code());
//         }
//     }
//
// What the depthbatch command does for itself and such a program does not get: its data is found beside the
// running program (install_layout.h: the default model, the shipped OCIO config, review.py), so a program elsewhere
// names them (model.path, color.config; or DEPTHBATCH_DEFAULT_MODEL, $OCIO); a path set in code (JobConfig) must be
// absolute, as load_job makes a job file's; OMP_WAIT_POLICY=PASSIVE is the command's own (apps/depthbatch/preinit.cpp),
// set in the environment where wanted. Its settings fingerprint (--skip-existing) is the command's.
//
// The headers, one concept each, in the order a frame meets them (docs/code-map.md has the whole map):
#pragma once

#include "depthbatch/error.h"
#include "depthbatch/log.h"
#include "depthbatch/option_names.h"
#include "depthbatch/job_keys.h"
#include "depthbatch/job_config.h"
#include "depthbatch/job_flags.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/plate.h"
#include "depthbatch/color_transform.h"
#include "depthbatch/passthrough_color.h"
#include "depthbatch/reformat.h"
#include "depthbatch/resample.h"
#include "depthbatch/tiling.h"
#include "depthbatch/model_contract.h"
#include "depthbatch/model_data.h"
#include "depthbatch/gpu_device.h"
#include "depthbatch/depth_model.h"
#include "depthbatch/frame_result.h"
#include "depthbatch/frame_record.h"
#include "depthbatch/scale_shift.h"
#include "depthbatch/model_description.h"
#include "depthbatch/sequence_stage.h"
#include "depthbatch/video_window_stage.h"
#include "depthbatch/temporal_stabilizer.h"
#include "depthbatch/depth_upsample.h"
#include "depthbatch/depth_normalizer.h"
#include "depthbatch/sequence_stats.h"
#include "depthbatch/camera.h"
#include "depthbatch/camera_solve.h"
#include "depthbatch/passes.h"
#include "depthbatch/exr_metadata.h"
#include "depthbatch/exr_depth_writer.h"
#include "depthbatch/depth_preview.h"
#include "depthbatch/progress.h"
#include "depthbatch/run_job.h"
#include "depthbatch/run_report.h"
#include "depthbatch/review.h"
#include "depthbatch/farm_quoting.h"
#include "depthbatch/farm_submit.h"
#include "depthbatch/farm_command.h"
#include "depthbatch/install_layout.h"
#include "depthbatch/sha256.h"
