// depthbatch — putting a job on a render farm: job files for the engines studios run, and submission to
// Slurm. depthbatch never schedules anything itself; every farm task runs
//   depthbatch JOB --chunk I/N --skip-existing          (engines that index tasks: Slurm arrays, Tractor)
//   depthbatch JOB --range START-END --skip-existing    (engines that hand out frame ranges: Deadline,
//                                                         OpenCue; START/END are the engine's tokens)
//   depthbatch JOB --frames RANGE --skip-existing       (Open Job Description: RANGE is a chunk's range
//                                                         expression, e.g. 1001-1008 or 1001-1015:2)
// after one `depthbatch stats JOB` task when the job uses sequence statistics (depth.normalize: sequence),
// on which the frame tasks depend. docs/farm.md "On the farm" has each engine's files and commands.
//
// Engines and what is written in the output folder:
//   slurm     render.sbatch (an array job, one task per chunk, indices 1..N: never frame numbers, since
//             Slurm refuses indices >= MaxArraySize, 1001 by default), stats.sbatch; logs/ (relative to
//             sbatch --chdir, appended to by a requeued task), summaries/
//   openjd    job.template.yaml (jobtemplate-2023-09 + TASK_CHUNKING: a CHUNK[INT] frame parameter, contiguous
//             chunks — non-contiguous for a job of every Nth frame, whose contiguous chunks would be one frame
//             each — and optional targetRuntimeSeconds for adaptive chunking)
//   deadline  job_info.job + plugin_info.job (CommandLine plugin, <STARTFRAME>/<ENDFRAME>), the same pair
//             for the stats job, submit.sh (deadlinecommand, chaining JobDependencies) and JobPreLoad.py
//             (CUDA_VISIBLE_DEVICES from the Worker's GPU affinity, installed once by the studio)
//   opencue   opencue_submit.py (opencue-pyoutline: a Shell layer with #FRAME_START#/#FRAME_END#, chunked, after
//             a one-frame stats layer; serialized with raw commands, use_pycuerun=False)
//   tractor   job.alf (alfscript: a stats Task, then one Task per chunk)
// Each engine is one file in src/farm/ (slurm.cpp, openjd.cpp, deadline.cpp, opencue.cpp, tractor.cpp) behind
// farm_job_files; paths are quoted for each format by depthbatch/farm_quoting.h, so any path a file system
// allows reaches the task as it is and nothing in a name is executed.
//
// GPUs: a job whose model.device is cuda (or cuda:N) asks each task for FarmPlan::gpus GPUs in the engine's own
// terms (Slurm --gpus-per-task, OpenJD amount.worker.gpu, OpenCue gpus, Deadline through the JobPreLoad.py
// written beside its files) and the task runs on `cuda`, the first GPU the engine made visible to it
// (CUDA_VISIBLE_DEVICES), never on a fixed index of the machine.
#pragma once

#include "depthbatch/farm_quoting.h"
#include "depthbatch/job_config.h"

#include <string>
#include <utility>
#include <vector>

namespace depthbatch {

enum class FarmEngine { Slurm, OpenJD, Deadline, OpenCue, Tractor };

/// The engine named `name` ("slurm", "openjd", "deadline", "opencue", "tractor"). Throws ConfigError.
FarmEngine farm_engine_from_name(const std::string& name);
const char* farm_engine_name(FarmEngine engine);

struct SubmitOptions {
    FarmEngine engine = FarmEngine::Slurm;
    std::string job_path;             ///< the job file, absolute (tasks on other hosts read it there)
    std::vector<std::string> sets;    ///< --set overrides, passed on to every task
    int chunk_size = 10;              ///< frames per task asked for (what tasks render: task_frame_counts)
    bool chunk_size_default = false;  ///< --chunk-size not given: a video model's shot gets video_chunk_size
                                      ///< (video_window_stage.h), a single-frame model's chunk_size
    std::string out_dir;              ///< where the engine's files (and Slurm's logs) go, absolute
    std::string executable;           ///< the depthbatch the nodes run, absolute
    std::string partition;            ///< Slurm partition(s), e.g. "gpu" or "gpu,cpu" ("" = the cluster's
                                      ///< default); one token of [A-Za-z0-9._,-], else ConfigError
    int gpus_per_task = -1;           ///< GPUs each task asks for; -1 = 1 when model.device is cuda or
                                      ///< cuda:N, else 0
    int max_array_size = 0;           ///< Slurm MaxArraySize (0 = unknown: no limit applied)
    double target_runtime_s = 0;      ///< OpenJD chunks.targetRuntimeSeconds (0 = fixed chunks)
};

/// How a job is cut for the farm.
struct FarmPlan {
    std::string name;          ///< the job file's stem, as it is (for messages)
    std::string safe_name;     ///< farm_safe_name(name): the job's name on the farm, its log files
    std::vector<int> frames;   ///< the shot's frames (input.frames, else what is on disk)
    std::string output_path;   ///< the job's output.path pattern (Deadline's output folder)
    int chunk_size = 0;        ///< frames per chunk after any Slurm limit (what each task renders on
                               ///< an engine: task_frame_counts)
    int chunks = 0;            ///< N in --chunk I/N: ceil(frames / chunk_size)
    bool needs_stats = false;  ///< depth.normalize: sequence
    bool needs_solve = false;  ///< the render's camera is solved from the plate (camera.solve in force)
    /// A task runs before the chunks: the statistics (whose run solves the camera first when it is due: open_job)
    /// or, without statistics, the camera solve (`depthbatch solve`). The chunks depend on it.
    bool needs_first_task() const { return needs_stats || needs_solve; }
    int gpus = 0;                        ///< GPUs each task asks the engine for (0 = a CPU job)
    std::vector<std::string> task_sets;  ///< --set overrides the plan adds to every task after the user's:
                                         ///< model.device=cuda for a cuda:N job given GPUs (the engine's GPUs
                                         ///< are renumbered from 0 in the task)
    std::string note;                    ///< changes the plan made to the options (chunk size raised to fit
                                         ///< MaxArraySize) and doubts about them (GPUs for a CPU job), "; "
                                         ///< between them, "" if none
};

/// Cut `job` into chunks of `options.chunk_size` frames. With options.max_array_size set (Slurm), when
/// the chunks would need indices at or above it, the chunk size is raised to the smallest that fits and
/// `note` says so with the numbers. GPUs: gpus = options.gpus_per_task, or with -1 one for a job whose
/// model.device is cuda or cuda:N (none otherwise); a cuda:N job given GPUs runs on `cuda` (task_sets). A video
/// model's shot (contract input.frames > 1) with options.chunk_size_default gets video_chunk_size; `note` then says
/// the windows its chunks run in all against the whole render's.
/// Throws ConfigError for a chunk size < 1 and InputError when the shot has no frames.
FarmPlan plan_farm_job(const JobConfig& job, const SubmitOptions& options);

/// How many of the shot's frames each task of `plan` renders on `engine`, in task order (plan.chunks counts). Slurm
/// and Tractor tasks run `--chunk I/N`, chunk_frames' equal shares: 100 frames in 4 chunks are 25 each, though
/// chunk_size is 30. Deadline, OpenJD and OpenCue cut the frame list themselves into chunks of chunk_size frames,
/// the last one shorter: 30, 30, 30, 10.
std::vector<int> task_frame_counts(const FarmPlan& plan, FarmEngine engine);

/// What task_frame_counts says, in words, for the submit log and the engines' file comments: "4 chunks of 25
/// frames", "3 chunks of 33-34 frames", "4 chunks of 30 frames (the last 10)", "1 chunk of 7 frames".
std::string describe_chunks(const FarmPlan& plan, FarmEngine engine);

/// The files to write for `plan` on options.engine: (file name inside options.out_dir, content), in the
/// order they should be written. Every path is carried as it is (docs/farm.md "On the farm": quoting); throws
/// ConfigError only for what a format cannot hold at all (a path that is not UTF-8 for the engines whose files
/// are Unicode text, a newline in Deadline's key=value lines, an XML-forbidden control byte for OpenCue) and
/// for a --partition that is not one token.
std::vector<std::pair<std::string, std::string>> farm_job_files(const FarmPlan& plan, const SubmitOptions& options);

/// Write `files` (farm_job_files) into options.out_dir through the output guard of `job` (src/output/output_guard.h):
/// no file may be a plate frame, the job file, the model or an output of the job, and an existing file is replaced
/// only when this folder's manifest (.depthbatch-submit, written here) says an earlier submit wrote it. Scripts
/// (.sbatch, .sh) are made executable; Slurm's logs/ folder is created. Returns the paths written, in order.
/// Throws ConfigError (exit 2) for a refused path, before anything is written; RenderError when writing fails.
std::vector<std::string> write_farm_files(const JobConfig& job,
                                          const std::vector<std::pair<std::string, std::string>>& files,
                                          const SubmitOptions& options);

/// OpenJD's range expression for `frames` ("1001-1100:2,1200"): format_frame_spec with ':' for the step.
std::string openjd_range_expression(const std::vector<int>& frames);

/// Slurm: MaxArraySize from `scontrol show config` (0 when scontrol cannot tell). Never throws.
int slurm_max_array_size();

/// Slurm: submit the written scripts with sbatch --chdir=options.out_dir (the scripts' log paths are relative
/// to it: logs/NAME.%A_%a.log), stats first, the array job depending on it with --dependency=afterok, and
/// return the job ids (stats id, or "", then the array job's id). Throws RenderError with sbatch's own message
/// when a submission fails.
std::pair<std::string, std::string> slurm_submit(const FarmPlan& plan, const SubmitOptions& options);

}  // namespace depthbatch
