// The job key table (job_keys.h) and what its fingerprint half gives: the settings fingerprint
// (output_settings_text), the statistics settings, job_settings_text. The schema half's: job_schema.cpp.
#include "depthbatch/job_keys.h"

#include "depthbatch/frame_sequence.h"
#include "depthbatch/model_contract.h"

#include <algorithm>
#include <iomanip>
#include <set>
#include <sstream>

namespace depthbatch {
namespace {

using Value = std::string (*)(const JobConfig&);

// A number as the fingerprint has always written it (17 significant digits), an unset one as "-".
/// A job value in the settings fingerprint: 17 significant digits, a double's exact round trip (DBL_DECIMAL_DIG),
/// so that two values that differ never share a fingerprint (not metadata_number: the fingerprint must not change).
std::string num(double v) {
    std::ostringstream s;
    s.precision(17);
    s << v;
    return s.str();
}
std::string opt(const std::optional<double>& v) { return v ? num(*v) : "-"; }

JobKey px(const char* key, const char* def, const char* doc, const char* example, const char* line, Value value) {
    JobKey k;
    k.key = key, k.default_text = def, k.doc = doc, k.example = example, k.fingerprint = line, k.value = value;
    return k;
}
JobKey np(const char* key, const char* def, const char* doc, const char* example, const char* why, Value value) {
    JobKey k;
    k.key = key, k.default_text = def, k.doc = doc, k.example = example, k.not_pixels = why, k.value = value;
    return k;
}
JobKey stats(JobKey k) { return k.affects_stats = true, k; }
JobKey scalar(const char* nested, JobKey k) { return k.scalar_form = nested, k; }
JobKey old_name_of(const char* key, bool deprecated, JobKey k) {
    return k.old_name_of = key, k.deprecated = deprecated, k;
}
JobKey when(bool (*condition)(const JobConfig&), JobKey k) { return k.fingerprint_if = condition, k; }

#define V(expr) [](const JobConfig& j) -> std::string { return expr; }

// Shared fingerprint lines: one value for all of their keys (the text of depthbatch 0.3, unchanged).
std::string size_line(const JobConfig& j) {
    const ProcessingSize& s = j.model.size;
    return std::to_string(static_cast<int>(s.mode)) + "," + std::to_string(s.short_side_px) + "," +
           std::to_string(s.width_px) + "," + std::to_string(s.height_px);
}
std::string contract_line(const JobConfig& j) {
    const ContractOverrides& c = j.model.contract;
    return c.colorspace.value_or("-") + "," + std::to_string(c.multiple.value_or(0)) + "," +
           (c.kind ? depth_kind_name(*c.kind) : "-") + "," + c.units.value_or("-") + "," +
           std::to_string(c.width_px.value_or(0)) + "," + std::to_string(c.height_px.value_or(0)) + "," +
           (c.fixed_size ? (*c.fixed_size ? "fixed" : "any") : "-");
}
std::string tiles_line(const JobConfig& j) {
    return std::to_string(j.model.tiles.size) + "," + std::to_string(j.model.tiles.overlap);
}
bool passthrough_converts(const JobConfig& j) {
    return j.output.passthrough_colorspace == PassthroughColorspace::SceneLinear;
}
std::string upsample_line(const JobConfig& j) {
    const UpsampleSettings& u = j.depth.upsample;
    return std::string(option_name(u.method)) + "," + num(u.radius_px) + "," + num(u.epsilon) + "," +
           num(u.edge_threshold);
}
// The shot's frames change the sequence statistics and the frames stabilization sees; otherwise a frame is
// made from its own plate alone.
bool frames_matter(const JobConfig& j) { return j.depth.normalize == Normalization::Sequence || j.depth.stabilize; }

// The camera and passes (issue 25) add fingerprint lines only when a job uses them: outputs made before keep
// their fingerprint.
bool has_camera_focal(const JobConfig& j) { return j.camera.focal_mm.has_value(); }
bool has_camera_fov(const JobConfig& j) { return j.camera.fov_deg.has_value(); }
bool has_chan(const JobConfig& j) { return !j.camera.chan.empty(); }
bool has_passes(const JobConfig& j) { return !j.output.passes.empty(); }
bool has_haperture(const JobConfig& j) { return has_camera_focal(j) || j.camera.haperture_mm != kNukeHaperture_mm; }
bool has_vaperture(const JobConfig& j) { return has_chan(j) || j.camera.vaperture_mm != kNukeVaperture_mm; }
bool has_solve(const JobConfig& j) { return j.camera_solve.enabled(); }
std::string solve_line(const JobConfig& j) {
    const CameraSolveSettings& c = j.camera_solve;
    return c.model + "," + std::to_string(c.window) + "," + std::to_string(c.overlap) + "," +
           (c.zoom ? "zoom" : "prime") + "," + opt(c.distance_m) + "," +
           (c.distance_frame ? std::to_string(*c.distance_frame) : "-") + "," + c.metric_model;
}
bool has_passes_type(const JobConfig& j) { return has_passes(j) || j.output.passes_type != PassPixelType::Float; }
std::string passes_text(const std::vector<std::string>& passes) {
    std::string s;
    for (const auto& p : passes) s += (s.empty() ? "" : ",") + p;
    return s;
}

const char* const kWhere = "where or how files are written, not what a frame holds";
const char* const kHow = "how (threads, batches, memory) frames are made, not their values";
const char* const kPreview = "previews are files of their own; the EXR does not change";

std::vector<JobKey> make_table() {
    return {
        // ---- input: the plate
        stats(px("input.path", "(required)", "plate path pattern: ####, %04d, $F4 or @@@@", "other/plate.####.exr",
                 "input.path", V(j.input.path))),
        stats(px("input.colorspace", "auto",
                 "OCIO colorspace of the plate; auto: a float file the colorspace it declares (oiio:ColorSpace, "
                 "colorInteropID, chromaticities), else scene_linear; 8/16-bit -> sRGB; DPX -> compositing_log",
                 "ACEScg", "input.colorspace", V(j.input.colorspace))),
        stats(px("input.part", "0", "EXR part (subimage) index or name", "1", "input.part", V(j.input.part))),
        stats(px("input.view", "the part's", "multi-view EXR view name (e.g. left)", "left", "input.view",
                 V(j.input.view))),
        stats(px("input.layer", "bare R,G,B, else the only layer holding them",
                 "the layer whose R,G,B the model sees (e.g. ViewLayer.DiffCol)", "ViewLayer.DiffCol", "input.layer",
                 V(j.input.layer))),
        stats(
            px("input.pixel_aspect", "auto",
               "auto (the file's PixelAspectRatio: anamorphic plates are desqueezed for the model) | ignore (square) | "
               "a number > 0",
               "2", "input.pixel_aspect", V(opt(j.input.pixel_aspect)))),
        stats(
            when(frames_matter,
                 px("input.frames", "the sequence on disk (first to last plate found; a hole in it is a missing plate)",
                    "frame spec of the shot: 1001-1100, 1001-1100x2, 1001,1005,1010-1020 (in the "
                    "fingerprint where it changes values: normalize sequence, stabilize; a stabilized or video model "
                    "frame also records the frames its windows read, depthbatch/context_plates)",
                    "1001-1010", "input.frames", V(format_frame_spec(j.input.frames))))),
        np("input.scene", "unknown",
           "indoor | outdoor | unknown: what the plate shows, checked against the model's training domain (its "
           "contract's domain): outdoor with an indoor-only model warns once per job, unknown says it once (an info "
           "line); indoor says nothing",
           "outdoor", "a check of the model against the shot: it says, the depth does not change",
           V(option_name(j.input.scene))),
        // ---- output: the EXR
        np("output.path", "(required)", "output path pattern (.exr)", "elsewhere/d.####.exr", kWhere, V(j.output.path)),
        np("output.overwrite", "error", "error | skip (render only missing or stale frames) | overwrite", "skip",
           kWhere, V(option_name(j.output.overwrite))),
        px("output.compression", "zip", "zip | zips | piz | dwaa | none", "piz", "output.compression",
           V(option_name(j.output.compression))),
        px("output.zip_level", "4", "zip/zips: zlib level 1 (fastest to write) .. 9 (smallest); 4 is OpenEXR's", "9",
           "output.zip_level", V(std::to_string(j.output.zip_level))),
        px("output.channels", "rgba", "rgba (RGBA passthrough + depth.Z) | depth | all (every input channel + depth.Z)",
           "depth", "output.channels", V(option_name(j.output.channels))),
        px("output.existing_depth", "replace",
           "replace (drop the plate's Z/depth.Z) | rename (keep it as depth.Z_plate/Z_plate)", "rename",
           "output.existing_depth", V(option_name(j.output.existing_depth))),
        px("output.pixel_type", "auto",
           "passthrough type: auto (half for 8/10-bit and half plates, float for float and 12/16-bit) | keep (half "
           "stays half; integer -> float) | half | float",
           "float", "output.pixel_type", V(option_name(j.output.pixel_type))),
        when(has_passes, px("output.passes", "none",
                            "passes beside depth.Z: P (position), N (normals), or a model's extra output (sky, "
                            "confidence); needs depth in metres",
                            "[\"P\", \"N\"]", "output.passes", V(passes_text(j.output.passes)))),
        when(has_passes_type, px("output.passes_type", "float", "pixel type of the passes: float | half", "half",
                                 "output.passes_type", V(option_name(j.output.passes_type)))),
        // In the fingerprint only for scene_linear (the default since issue 25): outputs written before it hold
        // the plate's values, which is `plate`, and their fingerprint text has no such line. So a job asking for
        // plate (and the pixel type of then) still finds them current, and any scene_linear job renders them again.
        when(passthrough_converts,
             px("output.passthrough_colorspace", "scene_linear",
                "the RGB passthrough: scene_linear (converted from the plate's colorspace to the config's scene_linear "
                "role, as Nuke reads EXR) | plate (the plate's values)",
                "plate", "output.passthrough_colorspace", V(option_name(j.output.passthrough_colorspace)))),
        scalar("path", np("output.preview", "none",
                          "8-bit colour-mapped previews: a path pattern (its path), or {path, colormap, size}",
                          "previews/p.####.jpg", kPreview, V(j.output.preview.path))),
        np("output.preview.path", "none", "preview path pattern (.jpg, .png, .tif)", "previews/p.####.jpg", kPreview,
           V(j.output.preview.path)),
        np("output.preview.colormap", "turbo", "turbo | viridis | inferno", "viridis", kPreview,
           V(option_name(j.output.preview.colormap))),
        np("output.preview.size", "960", "long side in px (never enlarged)", "480", kPreview,
           V(std::to_string(j.output.preview.size))),
        // ---- model
        stats(px("model.path", "default", "TorchScript file, or default (the prepared FastDepth)", "models/other.pt",
                 "model.path", V(j.model.path))),
        np("model.device", "auto", "auto | cpu | cuda | cuda:N", "cpu",
           "which device computes; the precision in force (model.precision) is fingerprinted",
           V(j.model.device.name())),
        stats(px("model.size", "model",
                 "processing size: model (the contract's short side, aspect kept) | plate (no resize, pad only) | "
                 "N (short side in px, aspect kept) | [width, height] in px; model and N cap the long side at 4\u00d7 "
                 "the short side's target",
                 "518", "model.size", V(size_line(j)))),
        stats(px("model.colorspace", "the contract's",
                 "contract field (a model without depthbatch.json, or overriding "
                 "it): the colorspace the model takes",
                 "ACEScg", "model.contract", V(contract_line(j)))),
        stats(px("model.multiple", "the contract's", "contract field: input sides are a multiple of this (px)", "32",
                 "model.contract", V(contract_line(j)))),
        stats(px("model.kind", "the contract's",
                 "contract field: metric_depth | relative_inverse_depth | relative_depth", "relative_depth",
                 "model.contract", V(contract_line(j)))),
        stats(px("model.units", "the contract's", "contract field: the output's units (m for metric_depth)", "mm",
                 "model.contract", V(contract_line(j)))),
        stats(px("model.input_size", "the contract's", "contract field: [width, height] in px", "[640, 480]",
                 "model.contract", V(contract_line(j)))),
        stats(px("model.fixed_size", "the contract's", "contract field: the model takes input_size only", "true",
                 "model.contract", V(contract_line(j)))),
        stats(scalar("size", px("model.tiles", "no tiles",
                                "tiled detail for large plates: a tile size in plate px (its size), or {size, overlap}",
                                "1024", "model.tiles", V(tiles_line(j))))),
        stats(px("model.tiles.size", "0 (no tiles)", "tile edge in plate px (at least 32)", "1024", "model.tiles",
                 V(tiles_line(j)))),
        stats(px("model.tiles.overlap", "size / 4", "overlap of neighbouring tiles in plate px (under half the size)",
                 "64", "model.tiles", V(tiles_line(j)))),
        np("model.batch", "1", "frames per forward pass", "4", kHow, V(std::to_string(j.model.batch))),
        np("model.warmup", "3 on CUDA, 0 on CPU",
           "forward passes at each shape the job feeds, before the first frame "
           "(on CUDA the TorchScript executor profiles the first and optimizes the second)",
           "2", "passes before the first frame, whose results are dropped", V(std::to_string(j.model.warmup))),
        np("model.freeze", "false", "torch.jit.freeze + optimize_for_inference at load time (never saved)", "true",
           "the same module, optimised at load time", V(std::string(j.model.freeze ? "true" : "false"))),
        np("model.channels_last", "false", "NHWC memory format for the input and module", "true",
           "a memory layout, not a computation", V(std::string(j.model.channels_last ? "true" : "false"))),
        np("model.threads", "0 (the pipeline decides)", "LibTorch intra-op threads", "2", kHow,
           V(std::to_string(j.model.threads))),
        np("model.accept_license", "none",
           "the licence of a non-commercial model (its contract's license, e.g. CC-BY-NC-4.0) this job accepts; "
           "without it such a model is refused (exit 2)",
           "CC-BY-NC-4.0", "permission to run the model, not a computation", V(j.model.accept_license)),
        // ---- color
        stats(px("color.config", "$OCIO, else the shipped one", "OCIO config path", "ocio/other.ocio", "color.config",
                 V(j.color.config))),
        stats(px("color.hdr", "clamp",
                 "clamp (values outside 0-1 clamp at the model input) | view (color.display/view)", "view", "color.hdr",
                 V(option_name(j.color.hdr)))),
        stats(px("color.display", "", "OCIO display for color.hdr: view", "ACES", "color.display", V(j.color.display))),
        stats(px("color.view", "", "OCIO view for color.hdr: view", "Raw", "color.view", V(j.color.view))),
        stats(px("color.look", "", "OCIO look for color.hdr: view", "Neutral", "color.look", V(j.color.look))),
        // ---- depth: what depth.Z holds
        px("depth.convention", "raw (normalized when only depth.normalize is set)",
           "what depth.Z holds: raw (the model's output) | metric (m) | inverse (1/z) | normalized (0-1)", "metric",
           "depth.kind", V(option_name(j.depth.convention))),
        old_name_of("depth.convention", true,
                    px("depth.kind", "raw", "older name of depth.convention", "metric", "depth.kind",
                       V(option_name(j.depth.convention)))),
        px("depth.normalize", "raw", "where the range comes from: raw | frame | sequence | fixed", "frame",
           "depth.normalize", V(option_name(j.depth.normalize))),
        px("depth.near_is", "0", "normalized: 0 (near = 0, far = 1) or 1", "1", "depth.near_is",
           V(std::to_string(j.depth.near_is))),
        px("depth.near", "none", "fixed range or clip values, with depth.far (metres for metric models)", "0.5",
           "depth.near", V(opt(j.depth.near))),
        px("depth.far", "none", "see depth.near", "50", "depth.far", V(opt(j.depth.far))),
        stats(px("depth.percentiles", "[2, 98]", "[low, high] for frame/sequence ranges", "[5, 95]",
                 "depth.percentiles", V(num(j.depth.percentile_low) + "," + num(j.depth.percentile_high)))),
        stats(px("depth.stats_frames", "16", "frames sampled for sequence statistics", "32", "depth.stats_frames",
                 V(std::to_string(j.depth.stats_frames)))),
        np("depth.stats_file", "next to the output", "sequence statistics sidecar path", "stats/shot.json", kWhere,
           V(j.depth.stats_file)),
        px("depth.stabilize", "false", "temporal stabilization, centred in time (flicker out, no lag)", "true",
           "depth.stabilize", V(std::string(j.depth.stabilize ? "centred" : "0"))),
        px("depth.stabilize_radius", "4", "stabilization: R frames on each side of each frame, a window of 2R+1", "2",
           "depth.stabilize_window", V(std::to_string(j.depth.stabilize_window()))),
        old_name_of("depth.stabilize_radius", true,
                    px("depth.stabilize_window", "8", "older name: W means depth.stabilize_radius W/2", "4",
                       "depth.stabilize_window", V(std::to_string(j.depth.stabilize_window())))),
        // camera.focal_px stands where depth.focal_px stood: its older name, the same fingerprint line.
        px("camera.focal_px", "none",
           "the plate's focal length in plate columns (focal_mm / haperture_mm x display width); or camera.focal / "
           "camera.fov",
           "1200", "depth.focal_px", V(opt(j.camera.focal_px))),
        old_name_of("camera.focal_px", false,
                    px("depth.focal_px", "none", "older name of camera.focal_px", "1200", "depth.focal_px",
                       V(opt(j.camera.focal_px)))),
        px("depth.upsample", "bilinear", "how depth reaches the plate's size: bilinear | guided | edge_hard", "guided",
           "depth.upsample", V(upsample_line(j))),
        px("depth.guided_radius", "0 (two model pixels)", "guided: window radius in plate px (0 .. 1024)", "8",
           "depth.upsample", V(upsample_line(j))),
        px("depth.guided_epsilon", "1e-4", "guided: epsilon in squared luma (> 0, <= 1)", "0.01", "depth.upsample",
           V(upsample_line(j))),
        px("depth.edge_threshold", "0.05", "edge_hard: the depth jump that is an edge, a fraction of the range", "0.2",
           "depth.upsample", V(upsample_line(j))),
        // ---- camera (the shot's camera, camera.h): on their fingerprint lines only when set
        when(has_camera_focal,
             px("camera.focal", "none", "lens focal length in mm (Nuke Camera focal), with camera.haperture", "35",
                "camera.focal", V(opt(j.camera.focal_mm)))),
        when(has_haperture, px("camera.haperture", "24.576", "film back width in mm (Nuke's default)", "36",
                               "camera.haperture", V(num(j.camera.haperture_mm)))),
        when(has_vaperture,
             px("camera.vaperture", "18.672",
                "film back height in mm (Nuke's default): turns a .chan file's vertical fov into a focal "
                "length",
                "24", "camera.vaperture", V(num(j.camera.vaperture_mm)))),
        when(has_camera_fov, px("camera.fov", "none", "horizontal field of view in degrees (0 .. 180)", "40",
                                "camera.fov", V(opt(j.camera.fov_deg)))),
        when(has_chan, px("camera.chan", "none",
                          "Nuke .chan file (frame tx ty tz rx ry rz [vfov]): per-frame camera, world-space passes",
                          "cam/shot.chan", "camera.chan", V(j.camera.chan))),
        // ---- camera.solve (camera_solve.h, docs/camera-solve.md): one fingerprint line, only when set
        scalar("model",
               when(has_solve, px("camera.solve", "none",
                                  "the camera solved from the plate: an any-view model's path (its model), or "
                                  "{model, window, overlap, zoom, distance, distance_frame, metric_model, chan}",
                                  "models/da3-small-views.pt", "camera.solve", V(solve_line(j))))),
        when(has_solve,
             px("camera.solve.model", "none",
                "an any-view model (Depth Anything 3 any-view) that solves the shot's camera from its plate; "
                "renders use it where camera.* states no focal length and no .chan",
                "models/da3-small-views.pt", "camera.solve", V(solve_line(j)))),
        when(has_solve, px("camera.solve.window", "the model's views.window", "frames a forward of the solve sees",
                           "16", "camera.solve", V(solve_line(j)))),
        when(has_solve, px("camera.solve.overlap", "the model's views.overlap",
                           "frames consecutive windows share (their depth chains the windows)", "4", "camera.solve",
                           V(solve_line(j)))),
        when(has_solve, px("camera.solve.zoom", "false",
                           "true: a focal length per frame (the lens zooms); false: one for the shot, the median",
                           "true", "camera.solve", V(solve_line(j)))),
        when(has_solve, px("camera.solve.distance", "none",
                           "metres: the median scene depth at camera.solve.distance_frame (sets the scale)", "4.5",
                           "camera.solve", V(solve_line(j)))),
        when(has_solve, px("camera.solve.distance_frame", "the shot's first frame",
                           "the frame camera.solve.distance is measured at", "1001", "camera.solve", V(solve_line(j)))),
        when(has_solve, px("camera.solve.metric_model", "none",
                           "a metric model (DA3METRIC-LARGE) run at the solved focal length: sets the scale",
                           "models/da3-metric-large.pt", "camera.solve", V(solve_line(j)))),
        np("camera.solve.chan", "beside the output (NAME.camera.chan)",
           "the solved camera's .chan; its .usda and .json report are written beside it", "cam/solved.chan", kWhere,
           V(j.camera_solve.chan)),
        // ---- pipeline
        np("pipeline.frames_in_flight", "2 x threads", "frames held at once (bounds memory)", "4", kHow,
           V(std::to_string(j.pipeline.frames_in_flight))),
        np("pipeline.threads", "0 (all cores)", "worker threads for read/colour/write and LibTorch", "2", kHow,
           V(std::to_string(j.pipeline.threads))),
        np("pipeline.summary", "none", "write the JSON summary (docs/farm.md \"Summary JSON\") to this path",
           "reports/shot.json", kWhere, V(j.pipeline.summary)),
        old_name_of("pipeline.summary", false,
                    np("pipeline.report", "none", "older name of pipeline.summary", "reports/shot.json", kWhere,
                       V(j.pipeline.summary))),
        np("pipeline.on_error", "stop", "stop (no new frames after a failure) | continue (render the rest; exit 7)",
           "continue", "which frames are made after a failure, not what they hold",
           V(option_name(j.pipeline.on_error))),
        np("pipeline.review", "none", "after the job, its review sheet (PNG + HTML) at this path", "review/shot.png",
           kWhere, V(j.pipeline.review)),
        np("pipeline.grace_s", "20", "seconds a stop request (SIGTERM) may take before frames in flight are abandoned",
           "45", "how long a stop may take", V(num(j.pipeline.grace_s))),
        // ---- last, as run_job has always written it: the precision the model runs at
        stats(px(
            "model.precision", "fp32",
            "fp32 | tf32 | fp16 | bf16 (CUDA only; fp32 is IEEE fp32, tf32 allows TF32 convolutions and matmuls; "
            "fp16/bf16 are checked against fp32 on the first frame and give way to fp32 beyond 1% of the depth span; "
            "the fingerprint has the precision asked, fp32 on a CPU)",
            "fp16", "model.precision", V(option_name(j.model.precision)))),
    };
}
#undef V

std::string lines_of(const JobConfig& job, bool (*include)(const JobKey&)) {
    std::string out;
    std::set<std::string> written;
    for (const JobKey& k : job_keys()) {
        if (!include(k) || !written.insert(k.fingerprint).second) continue;
        if (k.fingerprint_if && !k.fingerprint_if(job)) continue;
        out += std::string(k.fingerprint) + "=" + k.value(job) + "\n";
    }
    return out;
}

}  // namespace

const std::vector<JobKey>& job_keys() {
    static const std::vector<JobKey> table = make_table();
    return table;
}

std::string output_settings_text(const JobConfig& job) {
    return lines_of(job, [](const JobKey& k) { return k.affects_pixels(); });
}

std::string output_settings_text(const JobConfig& job, Precision in_force) {
    JobConfig j = job;
    j.model.precision = in_force;
    return output_settings_text(j);
}

std::string stats_settings_text(const JobConfig& job) {
    return lines_of(job, [](const JobKey& k) { return k.affects_stats; });
}

std::string job_settings_text(const JobConfig& job) {
    std::string out;
    for (const JobKey& k : job_keys()) out += std::string(k.key) + "=" + k.value(job) + "\n";
    return out;
}

}  // namespace depthbatch
