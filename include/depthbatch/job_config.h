// depthbatch — the job: one schema, read from YAML (.yaml/.yml) or TOML (.toml).
//
// The keys: one table, include/depthbatch/job_keys.h (src/job_keys.cpp): each key's default, doc, whether it
// is in the settings fingerprint (and why not), older spellings. `depthbatch --help-job` prints it; docs/jobs.md
// "Job file" lists it. The defaults themselves live in one place, the member initialisers of JobConfig below;
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
// camera.chan, pipeline.summary/report, pipeline.review), in the file and through --set alike, expand first: a leading `~`
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
#include "depthbatch/depth_upsample.h"
#include "depthbatch/model_contract.h"

#include <optional>
#include <string>
#include <vector>

namespace depthbatch {

// Closed option sets: parsed once at the job boundary (parse_job), compared as enums everywhere after.
// option_name() gives each value's job-file spelling (for logs, metadata and messages).
enum class OverwritePolicy { Error, Skip, Overwrite };             ///< output.overwrite
enum class Compression { Zip, Zips, Piz, Dwaa, None };            ///< output.compression (OpenEXR codecs)
enum class OutputChannels { Rgba, Depth, All };                   ///< output.channels
enum class ExistingDepth { Replace, Rename };                     ///< output.existing_depth
enum class PassthroughType { Auto, Keep, Half, Float };           ///< output.pixel_type
enum class PassthroughColorspace { SceneLinear, Plate };          ///< output.passthrough_colorspace
enum class Precision { Fp32, Fp16, Bf16, Tf32 };                  ///< model.precision
enum class HdrMode { Clamp, View };                               ///< color.hdr
enum class DepthConvention { Raw, Metric, Inverse, Normalized };  ///< depth.convention: what depth.Z holds
enum class Normalization { Raw, Frame, Sequence, Fixed };         ///< depth.normalize: where the range comes from
enum class OnError { Stop, Continue };                            ///< pipeline.on_error
enum class PassPixelType { Float, Half };                         ///< output.passes_type (P, N, mattes)

const char* option_name(OverwritePolicy v);
const char* option_name(Compression v);
const char* option_name(OutputChannels v);
const char* option_name(ExistingDepth v);
const char* option_name(PassthroughType v);
const char* option_name(PassthroughColorspace v);
const char* option_name(Precision v);
const char* option_name(HdrMode v);
const char* option_name(DepthConvention v);
const char* option_name(Normalization v);
const char* option_name(OnError v);
const char* option_name(DepthUpsample v);
const char* option_name(PassPixelType v);

/// How the plate is brought to the size the model sees.
struct ProcessingSize {
    enum class Mode { Model, ShortSide, Plate, Explicit };
    Mode mode = Mode::Model;
    int short_side_px = 0;             ///< Mode::ShortSide: the plate's short side becomes this (px)
    int width_px = 0, height_px = 0;   ///< Mode::Explicit: the job's [width, height] (the contract JSON is [H, W])
};

/// Contract fields a job may state for a model (all optional; set ones override the model's own).
struct ContractOverrides {
    std::optional<std::string> colorspace;
    std::optional<int> multiple;
    std::optional<DepthKind> kind;
    std::optional<std::string> units;
    std::optional<int> width_px, height_px;  ///< model.input_size, written [width, height] in the job
    std::optional<bool> fixed_size;
    bool any() const { return colorspace || multiple || kind || units || width_px || fixed_size; }
};

struct JobConfig {
    std::string job_file;               ///< the file the job came from ("" when built in code)

    struct Input {
        std::string path;               ///< absolute path pattern
        std::vector<int> frames;        ///< the shot's frames (sorted); empty = take what is on disk
        std::string colorspace = "auto";
        std::string part = "0";         ///< subimage index ("0", "2") or part name
        std::string view;               ///< multi-view EXR view name; "" = the part as it is
        std::string layer;              ///< the layer whose R,G,B the model sees ("ViewLayer.DiffCol"); "" = auto
        std::optional<double> pixel_aspect;  ///< the plate's pixel aspect; unset = the file's (1 without one);
                                             ///< "ignore" in the job = 1
        /// input.scene: "indoor", "outdoor" or "unknown" (what the plate shows; checked against the model contract's
        /// training domain, e.g. FastDepth's "indoor": outdoor with an indoor-only model warns once per job)
        std::string scene = "unknown";
    } input;

    struct Output {
        std::string path;               ///< absolute path pattern
        OverwritePolicy overwrite = OverwritePolicy::Error;
        Compression compression = Compression::Zip;
        int zip_level = 4;              ///< zlib level of zip/zips, 1 (fastest) to 9 (smallest); 4 = OpenEXR's
        OutputChannels channels = OutputChannels::Rgba;
        ExistingDepth existing_depth = ExistingDepth::Replace;
        PassthroughType pixel_type = PassthroughType::Auto;   ///< passthrough_color.h resolves auto per plate
        /// scene_linear: the RGB passthrough converted to the config's scene_linear role; plate: as stored
        PassthroughColorspace passthrough_colorspace = PassthroughColorspace::SceneLinear;
        /// output.passes: passes written beside depth.Z (passes.h), in the job's order: "P" (P.X P.Y P.Z),
        /// "N" (N.X N.Y N.Z), or a model's extra output by its contract name ("sky"); empty = none.
        std::vector<std::string> passes;
        PassPixelType passes_type = PassPixelType::Float;   ///< output.passes_type: float (default) | half
        struct Preview {
            std::string path;           ///< 8-bit preview path pattern (.jpg/.png/.tif), "" = none
            std::string colormap = "turbo";
            int size = 960;             ///< long side in px (never enlarged)
        } preview;
    } output;

    struct Model {
        std::string path = "default";   ///< absolute path, or "default"
        std::string device = "auto";
        ProcessingSize size;
        ContractOverrides contract;
        Precision precision = Precision::Fp32;
        int batch = 1;                   ///< frames per forward
        int warmup = -1;                 ///< -1 = 3 on CUDA, 0 on CPU
        bool freeze = false;
        bool channels_last = false;
        int threads = 0;                 ///< LibTorch intra-op threads, 0 = pipeline decides
        struct Tiles {
            int size = 0;                ///< tile edge in plate px; 0 = no tiles
            int overlap = 0;             ///< overlap between neighbouring tiles in plate px
        } tiles;
    } model;

    struct Color {
        std::string config;             ///< absolute path, or "" = $OCIO / shipped config
        HdrMode hdr = HdrMode::Clamp;
        std::string display, view, look;
    } color;

    struct Depth {
        DepthConvention kind = DepthConvention::Raw;  ///< depth.convention (older name depth.kind); a job
                                                      ///< that sets only depth.normalize (not raw)
                                                      ///< gets Normalized (parse_job)
        Normalization normalize = Normalization::Raw;
        int near_is = 0;                 ///< normalized: value written at the near end (0 or 1)
        std::optional<double> near, far; ///< fixed range / clip values (model units; metres if metric)
        double percentile_low = 2.0, percentile_high = 98.0;
        int stats_frames = 16;
        std::string stats_file;          ///< absolute path, "" = next to the output
        bool stabilize = false;
        int stabilize_window = 8;        ///< W: R = W / 2 frames on each side; depth.stabilize_radius R
                                         ///< is stored as W = 2R (depth.stabilize_window is its older name)
        UpsampleSettings upsample;       ///< depth.upsample, guided_radius, guided_epsilon, edge_threshold
    } depth;

    /// camera.*: the shot's camera (camera.h); camera.focal_px's older name is depth.focal_px.
    CameraSettings camera;

    struct Pipeline {
        int frames_in_flight = 0;       ///< 0 = 2 x worker threads
        int threads = 0;                ///< 0 = all cores
        std::string summary;            ///< JSON summary path, "" = none
        OnError on_error = OnError::Stop;
        double grace_s = 20;            ///< under Slurm's default KillWait (30 s) with room to spare
        std::string review;             ///< the job's review sheet (PNG; an .html beside it), "" = none
    } pipeline;

    /// This run's share of the job (a farm task), applied in this order to the shot's frames:
    struct RenderSelection {
        std::vector<int> frames;        ///< --frames: these frames; empty = the shot (input.frames or on disk)
        std::optional<std::pair<int, int>> range;  ///< --range A-B: only frames from A to B inclusive
        int chunk_index = 0;            ///< --chunk I/N: the I-th (from 1) of N contiguous chunks; 0 = all
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
    std::string assignment;   ///< "key.path=value"
    std::string typed;        ///< as the user typed it, e.g. "--threads 8"; "" means "--set <assignment>"
    bool literal = false;     ///< the value is the text itself (a flag's path), not read as YAML as --set's are
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
