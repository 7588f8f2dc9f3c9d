// depthbatch — the job: one schema, read from YAML (.yaml/.yml) or TOML (.toml).
//
// The keys: one table, include/depthbatch/job_keys.h (src/job_keys.cpp): each key's default, doc, whether it
// is in the settings fingerprint (and why not), older spellings. `depthbatch --help-job` prints it; docs/jobs.md
// "Job file" lists it. The defaults themselves live in one place, the member initialisers of the settings structs;
// the parser only overrides what a job states. Sections: input (the plate), output (the EXR and previews),
// model (file, device, processing size, contract overrides, tiles, backend options), color (OCIO), depth (the
// written convention, its range, stabilization, upsampling), camera (the shot's camera, camera.h: focal,
// apertures, fov, focal_px, a .chan file), pipeline (threads, memory, summary, errors).
// Older names: depth.kind is depth.convention, depth.stabilize_window W is depth.stabilize_radius W/2 (both
// warn, once), pipeline.report is pipeline.summary, depth.focal_px is camera.focal_px; a job giving both
// spellings is a ConfigError. camera: one of focal, fov, focal_px (two of them: a ConfigError).
// Relative paths resolve against the job file's folder; paths given on the command line (--output,
// --set) resolve against the current folder.
// Path keys (input.path, output.path, output.preview(.path), model.path, color.config, depth.stats_file,
// camera.chan, camera.solve.model/metric_model/chan, pipeline.summary/report, pipeline.review), in the file and through --set alike, expand first: a leading `~`
// (alone or before '/') is $HOME, and `$NAME` / `${NAME}` (NAME = [A-Za-z_][A-Za-z0-9_]*) is that environment
// variable (SHOW, SEQ, SHOT...), in one pass. The frame token is never a variable: `$F` followed by digits or
// by a character that cannot continue a name stays (`$F4`, `$F.exr`; `$FOO` is FOO, `${F}` is F). `$$` is a
// literal `$`; `~user` and a `$` before anything else stay as written. An unset variable is a ConfigError
// naming it, the key and file:line (or the --set). Other keys take `$` and `~` literally, and so do the flags
// that stand for a path key (--output, --summary: JobOverride::literal): their value is taken as written, the
// shell that ran the command having expanded what it meant to (a folder named `a $b` stays that folder).
// The file: UTF-8 text (a leading byte order mark is dropped), one YAML document, indented with spaces, a
// regular file of at most 4 MiB; extensions in any case (.YAML, .Yml, .TOML).
#pragma once

#include "depthbatch/camera.h"
#include "depthbatch/camera_solve.h"
#include "depthbatch/color_transform.h"
#include "depthbatch/depth_model.h"
#include "depthbatch/depth_normalizer.h"
#include "depthbatch/depth_upsample.h"
#include "depthbatch/exr_depth_writer.h"
#include "depthbatch/gpu_device.h"
#include "depthbatch/model_contract.h"
#include "depthbatch/option_names.h"
#include "depthbatch/plate.h"
#include "depthbatch/reformat.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace depthbatch {

// Closed option sets: parsed once at the job boundary (parse_job), compared as enums everywhere after; each is
// declared with the settings of its concept (below), with option_name(): the value's job-file spelling (for logs,
// metadata and messages). The job's own: pipeline.on_error.
enum class OnError { Stop, Continue };  ///< pipeline.on_error
/// OnError's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<OnError, 2> option_names(OnError) {
    return {{{OnError::Stop, "stop"}, {OnError::Continue, "continue"}}};
}

/// The job: one settings struct per concept, each declared in the header of the concept that reads it, so a
/// lower header never needs the whole job: input (plate.h InputSettings), output (exr_depth_writer.h
/// OutputSettings, its preview depth_preview.h PreviewSettings), model (depth_model.h ModelSettings), color
/// (color_transform.h ColorSettings), depth (depth_normalizer.h DepthSettings), camera (camera.h
/// CameraSettings); the pipeline and the render selection are the job run's own.
struct JobConfig {
    std::string job_file;  ///< the file the job came from ("" when built in code)

    using Input = InputSettings;
    using Output = OutputSettings;
    using Model = ModelSettings;
    using Color = ColorSettings;
    using Depth = DepthSettings;

    Input input;
    Output output;
    Model model;
    Color color;
    Depth depth;

    /// camera.*: the shot's camera (camera.h); camera.focal_px's older name is depth.focal_px.
    CameraSettings camera;
    /// camera.solve.*: the camera solved from the plate (camera_solve.h), used where camera.* states none.
    CameraSolveSettings camera_solve;

    struct Pipeline {
        int frames_in_flight = 0;  ///< 0 = 2 x worker threads
        int threads = 0;           ///< 0 = all cores
        std::string summary;       ///< JSON summary path, "" = none
        OnError on_error = OnError::Stop;
        double grace_s = 20;  ///< under Slurm's default KillWait (30 s) with room to spare
        std::string review;   ///< the job's review sheet (PNG; an .html beside it), "" = none
    } pipeline;

    /// This run's share of the job (a farm task), applied in this order to the shot's frames:
    struct RenderSelection {
        std::vector<int> frames;  ///< --frames: these frames; empty = the shot (input.frames or on disk)
        std::optional<std::pair<int, int>> range;  ///< --range A-B: only frames from A to B inclusive
        int chunk_index = 0;                       ///< --chunk I/N: the I-th (from 1) of N contiguous chunks; 0 = all
        int chunk_count = 0;
        bool any() const { return !frames.empty() || range || chunk_count > 0; }
    } render;
};

/// The frames this run renders: `render` applied to `shot` (see RenderSelection). Throws ConfigError for a
/// bad chunk index.
std::vector<int> select_render_frames(const JobConfig::RenderSelection& render, const std::vector<int>& shot);

/// Every job setting that changes what an output EXR holds, one "key=value" per line in the key table's order
/// (job_keys.h: every key marked there as changing the pixels; the others say why not), for the settings
/// fingerprint that `--skip-existing` checks (exr metadata depthbatch/settings_sha256). Left out: paths of
/// where things go (output.path, stats and summary files), threads, batch, device, warm-up and the render
/// selection, which change how and where frames are made, not their values. Its last line is model.precision
/// as the job asks; the fingerprint has the precision in force (fp16 asked of a CPU runs fp32): the overload.
std::string output_settings_text(const JobConfig& job);
std::string output_settings_text(const JobConfig& job, Precision in_force);

/// Read and validate a job file, then apply `overrides` ("key.path=value", the CLI's --set; values
/// are read as YAML scalars or flow sequences). Throws ConfigError naming file, line and key for: an
/// unreadable or unparsable file, an unknown key (with the keys allowed there), a wrong type, a bad value,
/// an unset environment variable in a path key. Throws ConfigError "JOB: not a job file (...)" for a FIFO, a
/// device or other non-regular file (checked before it is opened, so never a hang), a file over 4 MiB
/// (never read whole) and text holding NUL bytes. An error caused by an override names it ("--set key=value:
/// ...") instead of the file.
JobConfig load_job(const std::string& job_path, const std::vector<std::string>& overrides = {});

/// One override and how the user typed it: a CLI flag that stands for a key (`--threads 8` is
/// pipeline.threads=8) names itself in errors, not the --set it becomes.
struct JobOverride {
    std::string assignment;  ///< "key.path=value"
    std::string typed;       ///< as the user typed it, e.g. "--threads 8"; "" means "--set <assignment>"
    bool literal = false;    ///< the value is the text itself (a flag's path), not read as YAML as --set's are
};
/// load_job with overrides that know how they were typed: an error caused by one names `typed`.
JobConfig load_job(const std::string& job_path, const std::vector<JobOverride>& overrides);

/// Same, from text (for tests). `origin` stands in for the file name in messages and `base_dir`
/// resolves relative paths. `format` is "yaml" or "toml". Throws ConfigError as load_job does (not the
/// file-kind and size checks, which are about the file).
JobConfig parse_job(const std::string& text, const std::string& format, const std::string& origin,
                    const std::string& base_dir, const std::vector<std::string>& overrides = {});
/// parse_job with overrides that know how they were typed (JobOverride).
JobConfig parse_job(const std::string& text, const std::string& format, const std::string& origin,
                    const std::string& base_dir, const std::vector<JobOverride>& overrides);

}  // namespace depthbatch
