// depthbatch — the job: one schema, read from YAML (.yaml/.yml) or TOML (.toml).
//
// Schema (README.md "Job file" is the user-facing copy; configs/ holds commented examples):
//   input.path         plate path pattern (####, %04d, $F4, @@@@)                       required
//   input.frames       frame spec of the shot ("1001-1100", "1001-1100x2", "1001,1005")  default: on disk
//   input.colorspace   OCIO colorspace of the plate, or "auto" (from the file type)      default auto
//   output.path        output path pattern (.exr)                                        required
//   output.overwrite   "error" | "skip" | "overwrite"                                    default error
//   output.compression "zip" | "zips" | "piz" | "dwaa" | "none"                          default zip
//   model.path         TorchScript file, or "default" (the prepared FastDepth)           default default
//   model.device       "auto" | "cpu" | "cuda" | "cuda:N"                               default auto
//   model.size         processing size: "model" (the contract's), "plate" (no resize, pad only),
//                      N (short side in px), or [width, height] in px                     default model
//   model.colorspace / multiple / kind / units / input_size [w,h] / fixed_size
//                      contract fields for a model file without depthbatch.json (or overriding it)
//   color.config       OCIO config path; default $OCIO, else configs/ocio/config.ocio
//   pipeline.frames_in_flight  frames held at once (bounds memory)                      default 2*cores
//   pipeline.threads   worker threads for read/colour/write and LibTorch (0 = all cores)
// Relative paths resolve against the job file's folder; paths given on the command line (--output,
// --set) resolve against the current folder.
#pragma once

#include "depthbatch/model_contract.h"

#include <optional>
#include <string>
#include <vector>

namespace depthbatch {

enum class OverwritePolicy { Error, Skip, Overwrite };

/// How the plate is brought to the size the model sees.
struct ProcessingSize {
    enum class Mode { Model, ShortSide, Plate, Explicit };
    Mode mode = Mode::Model;
    int short_side_px = 0;             ///< Mode::ShortSide: the plate's short side becomes this (px)
    int width_px = 0, height_px = 0;   ///< Mode::Explicit
};

/// Contract fields a job may state for a model (all optional; set ones override the model's own).
struct ContractOverrides {
    std::optional<std::string> colorspace;
    std::optional<int> multiple;
    std::optional<DepthKind> kind;
    std::optional<std::string> units;
    std::optional<int> width_px, height_px;  ///< model.input_size
    std::optional<bool> fixed_size;
    bool any() const { return colorspace || multiple || kind || units || width_px || fixed_size; }
};

struct JobConfig {
    std::string job_file;               ///< the file the job came from ("" when built in code)

    struct Input {
        std::string path;               ///< absolute path pattern
        std::vector<int> frames;        ///< the shot's frames (sorted); empty = take what is on disk
        std::string colorspace = "auto";
    } input;

    struct Output {
        std::string path;               ///< absolute path pattern
        OverwritePolicy overwrite = OverwritePolicy::Error;
        std::string compression = "zip";
    } output;

    struct Model {
        std::string path = "default";   ///< absolute path, or "default"
        std::string device = "auto";
        ProcessingSize size;
        ContractOverrides contract;
    } model;

    struct Color {
        std::string config;             ///< absolute path, or "" = $OCIO / shipped config
    } color;

    struct Pipeline {
        int frames_in_flight = 0;       ///< 0 = 2 x worker threads
        int threads = 0;                ///< 0 = all cores
    } pipeline;

    /// Frames to render in this run (a farm chunk, from --frames). Empty = all of input.frames.
    std::vector<int> render_frames;
};

/// Read and validate a job file, then apply `overrides` ("key.path=value", the CLI's --set; values
/// are read as YAML scalars or flow sequences). Throws ConfigError naming file, line and key for: an
/// unreadable or unparsable file, an unknown key (with the keys allowed there), a wrong type, a bad value.
JobConfig load_job(const std::string& job_path, const std::vector<std::string>& overrides = {});

/// Same, from text (for tests). `origin` stands in for the file name in messages and `base_dir`
/// resolves relative paths. `format` is "yaml" or "toml".
JobConfig parse_job(const std::string& text, const std::string& format, const std::string& origin,
                    const std::string& base_dir, const std::vector<std::string>& overrides = {});

}  // namespace depthbatch
