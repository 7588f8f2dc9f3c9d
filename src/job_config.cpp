// Reading a job: the located tree (job_text.h) checked against the key table's schema (job_schema.h) and read
// through job_reader.h, key by key with the rules between keys, into a JobConfig; load_job and parse_job.
#include "depthbatch/job_config.h"

#include "job_reader.h"
#include "job_schema.h"
#include "job_text.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/install_layout.h"
#include "depthbatch/job_keys.h"
#include "depthbatch/log.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>

namespace fs = std::filesystem;

namespace depthbatch {
namespace {

using job_text::Reader;

void check_keys(const job_text::Tree& tree) {
    for (const auto& section : tree.root) {
        const std::string name = section.first.Scalar();
        auto it = job_sections().find(name);
        if (it == job_sections().end()) {
            std::set<std::string> sections;
            for (const auto& kv : job_sections()) sections.insert(kv.first);
            throw ConfigError(tree.at(name) + ": unknown section '" + name + "' (allowed: " + job_text::join(sections) +
                              ")");
        }
        if (!section.second.IsMap())
            throw ConfigError(tree.at(name) + ": section '" + name + "' must be a mapping of keys");
        for (const auto& kv : section.second) {
            const std::string key = name + "." + kv.first.Scalar();
            if (!it->second.count(kv.first.Scalar()))
                throw ConfigError(tree.at(key) + ": unknown key '" + key + "' (allowed in '" + name +
                                  "': " + job_text::join(it->second) + ")");
            const auto nested = job_nested_keys().find(key);
            if (nested != job_nested_keys().end() && kv.second.IsMap())
                for (const auto& inner : kv.second)
                    if (!nested->second.count(inner.first.Scalar()))
                        throw ConfigError(tree.at(key + "." + inner.first.Scalar()) + ": unknown key '" + key + "." +
                                          inner.first.Scalar() + "' (allowed in '" + key +
                                          "': " + job_text::join(nested->second) + ")");
        }
    }
}

ProcessingSize read_size(const Reader& r) {
    ProcessingSize size;
    if (!r.has("model.size")) return size;
    YAML::Node n = r.node("model.size");
    if (n.IsSequence()) {
        auto wh = r.pair("model.size");
        size.mode = ProcessingSize::Mode::Explicit;
        size.width_px = wh[0];
        size.height_px = wh[1];
        return size;
    }
    const std::string s = r.str("model.size");
    if (s == "model") return size;
    if (s == "plate") {
        size.mode = ProcessingSize::Mode::Plate;
        return size;
    }
    size.mode = ProcessingSize::Mode::ShortSide;
    size.short_side_px = r.integer("model.size", 1, 65536);
    return size;
}

/// input.*: the plate: path pattern, frames, colorspace, part/view.
void read_input(const Reader& r, JobConfig& job) {
    if (!r.has("input.path")) r.fail("input.path", "is required (the plate's path pattern, e.g. plate.####.exr)");
    job.input.path = r.path("input.path");
    try {
        FrameSequence check(job.input.path);
    } catch (const ConfigError& e) {
        r.fail("input.path", e.what());
    }
    if (r.has("input.frames")) {
        const std::string spec = r.str("input.frames");
        try {
            job.input.frames = parse_frame_spec(spec);
        } catch (const ConfigError& e) {
            r.fail("input.frames", e.what());
        }
    }
    job.input.colorspace = r.str("input.colorspace", job.input.colorspace);
    job.input.part = r.str("input.part", job.input.part);
    job.input.view = r.str("input.view", job.input.view);
    job.input.layer = r.str("input.layer", job.input.layer);
    if (r.has("input.scene")) {
        const std::string scene = r.str("input.scene");
        bool known = false;
        for (const auto& [value, name] : option_names(Scene{}))
            if (scene == name) job.input.scene = value, known = true;
        if (!known) r.fail("input.scene", "expected indoor, outdoor or unknown, not '" + printable(scene) + "'");
    }
    if (r.has("input.pixel_aspect")) {
        const std::string s = r.str("input.pixel_aspect");
        if (s == "ignore") job.input.pixel_aspect = 1.0;
        else if (s != "auto") {
            char* end = nullptr;
            std::strtod(s.c_str(), &end);
            if (s.empty() || end != s.c_str() + s.size())  // a word: say every accepted form, not "expected a number"
                r.fail("input.pixel_aspect",
                       "expected auto, ignore or a pixel aspect > 0 (2 for a 2:1 anamorphic plate), "
                       "not '" +
                           printable(s) + "'");
            job.input.pixel_aspect = r.number("input.pixel_aspect");
            if (!(*job.input.pixel_aspect > 0))
                r.fail("input.pixel_aspect",
                       "expected auto, ignore or a pixel aspect > 0 (2 for a 2:1 anamorphic plate)");
        }
    }
}

/// output.*: where and how frames are written (needs input.path, to refuse writing over the plate).
void read_output(const Reader& r, JobConfig& job) {
    if (!r.has("output.path")) r.fail("output.path", "is required (e.g. depth/shot_depth.####.exr)");
    job.output.path = r.path("output.path");
    try {
        FrameSequence check(job.output.path);
    } catch (const ConfigError& e) {
        r.fail("output.path", e.what());
    }
    if (fs::path(job.output.path).extension() != ".exr")
        r.fail("output.path", "depthbatch writes OpenEXR: the pattern must end in .exr");
    if (FrameSequence(job.output.path).path(1) == FrameSequence(job.input.path).path(1))
        r.fail("output.path", "is the same as input.path: refusing to overwrite the plate");
    r.option("output.overwrite", job.output.overwrite);
    r.option("output.compression", job.output.compression);
    if (r.has("output.zip_level")) {
        job.output.zip_level = r.integer("output.zip_level", 1, 9);
        if (job.output.compression != Compression::Zip && job.output.compression != Compression::Zips)
            r.fail("output.zip_level",
                   std::string("applies to zip and zips compression, not ") + option_name(job.output.compression));
    }
    r.option("output.channels", job.output.channels);
    r.option("output.existing_depth", job.output.existing_depth);
    r.option("output.pixel_type", job.output.pixel_type);
    // output.passes: [P, N, ...] (a bare name is a list of one); the names a model declares are checked when
    // the model is loaded.
    if (r.has("output.passes")) {
        const YAML::Node n = r.node("output.passes");
        std::vector<std::string> names;
        if (n.IsScalar()) names.push_back(n.Scalar());
        else if (n.IsSequence())
            for (const auto& v : n) {
                if (!v.IsScalar()) r.fail("output.passes", "expected a list of pass names, e.g. [P, N]");
                names.push_back(v.Scalar());
            }
        else r.fail("output.passes", "expected a list of pass names, e.g. [P, N]");
        for (size_t i = 0; i < names.size(); ++i) {
            const std::string& p = names[i];
            const bool name_ok = !p.empty() && std::all_of(p.begin(), p.end(),
                                                           [](unsigned char c) { return std::isalnum(c) || c == '_'; });
            if (!name_ok)
                r.fail("output.passes",
                       "'" + printable(p) + "' is not a pass name (P, N, or a model's extra output such as sky)");
            if (std::find(names.begin(), names.begin() + i, p) != names.begin() + i)
                r.fail("output.passes", "'" + p + "' is listed twice");
        }
        job.output.passes = names;
    }
    r.option("output.passes_type", job.output.passes_type);
    r.option("output.passthrough_colorspace", job.output.passthrough_colorspace);
    // output.preview: a path, or {path, colormap, size}.
    if (r.has("output.preview")) {
        const std::string path = r.sub("output.preview", "path"), colormap = r.sub("output.preview", "colormap"),
                          size = r.sub("output.preview", "size");
        job.output.preview.path = r.path(path);
        r.option(colormap, job.output.preview.colormap);
        if (r.has(size)) job.output.preview.size = r.integer(size, 64, 16384), job.output.preview.size_given = true;
    }
}

/// model.*: the model file, device, processing size, contract overrides and backend options.
void read_model(const Reader& r, JobConfig& job) {
    if (r.has("model.path")) job.model.path = r.str("model.path") == "default" ? "default" : r.path("model.path");
    if (r.has("model.device")) {
        const std::string d = r.str("model.device");
        const std::optional<ModelDevice> device = parse_model_device(d);
        if (!device) r.fail("model.device", "'" + d + "' is not auto, cpu, cuda or cuda:N");
        job.model.device = *device;
    }
    job.model.size = read_size(r);
    ContractOverrides& c = job.model.contract;
    if (r.has("model.colorspace")) c.colorspace = r.str("model.colorspace");
    if (r.has("model.multiple")) c.multiple = r.integer("model.multiple", 1, 1024);
    if (r.has("model.kind")) {
        DepthKind kind{};
        r.option("model.kind", kind);
        c.kind = kind;
    }
    if (r.has("model.units")) c.units = r.str("model.units");
    if (r.has("model.input_size")) {
        auto wh = r.pair("model.input_size");
        c.width_px = wh[0];
        c.height_px = wh[1];
    }
    if (r.has("model.fixed_size")) c.fixed_size = r.boolean("model.fixed_size");
    r.option("model.precision", job.model.precision);
    if (r.has("model.accept_license")) job.model.accept_license = r.str("model.accept_license");
    if (r.has("model.batch")) job.model.batch = r.integer("model.batch", 1, 256);
    if (r.has("model.warmup")) job.model.warmup = r.integer("model.warmup", 0, 100);
    if (r.has("model.freeze")) job.model.freeze = r.boolean("model.freeze");
    if (r.has("model.channels_last")) job.model.channels_last = r.boolean("model.channels_last");
    if (r.has("model.threads")) job.model.threads = r.integer("model.threads", 0, 1024);
    // model.tiles: a tile size, or {size, overlap}.
    if (r.has("model.tiles")) {
        auto& t = job.model.tiles;
        const std::string size_key = r.sub("model.tiles", "size"), overlap_key = r.sub("model.tiles", "overlap");
        if (!r.has(size_key)) r.fail("model.tiles", "needs size (the tile edge in plate pixels)");
        t.size = r.integer(size_key, 0, 65536);
        t.overlap = t.size / 4;
        if (r.has(overlap_key)) t.overlap = r.integer(overlap_key, 0, 65536);
        if (t.size > 0 && t.size < 32) r.fail(size_key, "a tile is at least 32 plate pixels (0 = no tiles)");
        if (t.size > 0 && 2 * t.overlap >= t.size)
            r.fail(r.has(overlap_key) ? overlap_key : size_key, "the overlap (" + std::to_string(t.overlap) +
                                                                    " px) must be under half the tile size (" +
                                                                    std::to_string(t.size) + " px)");
    }
}

/// color.*: OCIO config and the HDR rule.
void read_color(const Reader& r, JobConfig& job) {
    if (r.has("color.config")) job.color.config = r.path("color.config");
    r.option("color.hdr", job.color.hdr);
    job.color.display = r.str("color.display", job.color.display);
    job.color.view = r.str("color.view", job.color.view);
    job.color.look = r.str("color.look", job.color.look);
    if (job.color.hdr == HdrMode::View && (job.color.display.empty() || job.color.view.empty()))
        r.fail("color.hdr",
               "'view' needs color.display and color.view (e.g. 'sRGB - Display' / 'ACES 1.0 - SDR Video')");
}

/// depth.*: the written convention, its range and stabilization (checked against each other).
void read_depth(const Reader& r, JobConfig& job) {
    JobConfig::Depth& d = job.depth;
    r.option("depth.normalize", d.normalize);
    // A normalization without a kind means a normalized pass.
    if (d.normalize != Normalization::Raw) d.convention = DepthConvention::Normalized;
    // depth.kind is the older name of depth.convention (build() refuses both at once and warns).
    const std::string convention = r.has("depth.kind") ? "depth.kind" : "depth.convention";
    r.option(convention, d.convention);
    if (r.has("depth.near_is")) {
        d.near_is = r.integer("depth.near_is", 0, 1);
    }
    if (r.has("depth.near")) d.near = r.number("depth.near");
    if (r.has("depth.far")) d.far = r.number("depth.far");
    if (d.near.has_value() != d.far.has_value())
        r.fail(d.near ? "depth.near" : "depth.far", "depth.near and depth.far go together");
    if (d.near && *d.near == *d.far) r.fail("depth.near", "must differ from depth.far");
    if (r.has("depth.percentiles")) {
        YAML::Node n = r.node("depth.percentiles");
        bool ok = n.IsSequence() && n.size() == 2;
        try {
            if (ok) {
                d.percentile_low = n[0].as<double>();
                d.percentile_high = n[1].as<double>();
            }
        } catch (const YAML::Exception&) {
            ok = false;
        }
        if (!ok || !(0 <= d.percentile_low && d.percentile_low < d.percentile_high && d.percentile_high <= 100))
            r.fail("depth.percentiles", "expected [low, high] with 0 <= low < high <= 100");
    }
    if (r.has("depth.stats_frames")) d.stats_frames = r.integer("depth.stats_frames", 1, 100000);
    if (r.has("depth.stats_file")) d.stats_file = r.path("depth.stats_file");
    if (r.has("depth.stabilize")) d.stabilize = r.boolean("depth.stabilize");
    // The older depth.stabilize_window W is R = W / 2 (at least 1); W itself is kept for the fingerprint text.
    if (r.has("depth.stabilize_window")) {
        d.stabilize_window_written = r.integer("depth.stabilize_window", 1, 256);
        d.stabilize_radius = std::max(1, *d.stabilize_window_written / 2);
    }
    if (r.has("depth.stabilize_radius")) d.stabilize_radius = r.integer("depth.stabilize_radius", 1, 128);
    r.option("depth.upsample", d.upsample.method);
    if (r.has("depth.guided_radius")) {
        d.upsample.radius_px = r.number("depth.guided_radius");
        if (!(d.upsample.radius_px >= 0 && d.upsample.radius_px <= 1024))
            r.fail("depth.guided_radius", "expected a radius in plate pixels from 0 (two model pixels) to 1024");
    }
    if (r.has("depth.guided_epsilon")) {
        d.upsample.epsilon = r.number("depth.guided_epsilon");
        if (!(d.upsample.epsilon > 0 && d.upsample.epsilon <= 1))
            r.fail("depth.guided_epsilon", "expected a value > 0 and <= 1 (squared luma, e.g. 1e-4)");
    }
    if (r.has("depth.edge_threshold")) {
        d.upsample.edge_threshold = r.number("depth.edge_threshold");
        if (!(d.upsample.edge_threshold > 0 && d.upsample.edge_threshold <= 1))
            r.fail("depth.edge_threshold", "expected a fraction of the depth range, > 0 and <= 1 (e.g. 0.05)");
    }
    if (d.normalize == Normalization::Fixed && !d.near)
        r.fail("depth.normalize", "'fixed' needs depth.near and depth.far");
    if (d.convention == DepthConvention::Normalized && d.normalize == Normalization::Raw)
        r.fail(convention, "'normalized' needs depth.normalize: frame, sequence or fixed");
    if ((d.convention == DepthConvention::Raw || d.convention == DepthConvention::Inverse) &&
        d.normalize != Normalization::Raw)
        r.fail("depth.normalize", std::string("'") + option_name(d.normalize) + "' applies to " + convention +
                                      " normalized (or metric from a relative model); " + convention + " is '" +
                                      option_name(d.convention) + "'");
}

/// camera.*: the shot's camera (camera.h). One way of stating the focal length: focal (mm, with haperture),
/// fov (horizontal degrees) or focal_px (plate columns; depth.focal_px is its older name).
void read_camera(const Reader& r, JobConfig& job) {
    CameraSettings& c = job.camera;
    const auto positive = [&](const std::string& key, const char* what) {
        const double v = r.number(key);
        if (!(v > 0)) r.fail(key, std::string("must be > 0 (") + what + ")");
        return v;
    };
    if (r.has("camera.focal")) c.focal_mm = positive("camera.focal", "mm");
    if (r.has("camera.haperture")) c.haperture_mm = positive("camera.haperture", "mm");
    if (r.has("camera.vaperture")) c.vaperture_mm = positive("camera.vaperture", "mm");
    if (r.has("camera.fov")) {
        c.fov_deg = r.number("camera.fov");
        if (!(*c.fov_deg > 0 && *c.fov_deg < 180))
            r.fail("camera.fov", "expected a horizontal field of view in degrees, between 0 and 180");
    }
    const std::string focal_px = r.has("depth.focal_px") ? "depth.focal_px" : "camera.focal_px";
    if (r.has(focal_px)) c.focal_px = positive(focal_px, "pixels");
    std::vector<std::string> stated;
    for (const char* k : {"camera.focal", "camera.fov", "camera.focal_px", "depth.focal_px"})
        if (r.has(k)) stated.push_back(k);
    if (stated.size() > 1)
        r.fail(stated[1], "the focal length is stated twice (" + stated[0] + " and " + stated[1] +
                              "): set one of "
                              "camera.focal (mm), camera.fov (degrees) or camera.focal_px (plate pixels)");
    if (r.has("camera.chan")) c.chan = r.path("camera.chan");
    // camera.solve: an any-view model's path, or {model, window, overlap, zoom, distance, distance_frame, ...}.
    if (!r.has("camera.solve")) return;
    CameraSolveSettings& solve = job.camera_solve;
    const auto key = [&r](const char* nested) { return r.sub("camera.solve", nested); };
    if (r.has(key("model"))) solve.model = r.path(key("model"));
    if (r.has(key("window"))) solve.window = r.integer(key("window"), 2, kMaxContractFrames);
    if (r.has(key("overlap"))) solve.overlap = r.integer(key("overlap"), 1, kMaxContractFrames - 1);
    if (r.has(key("zoom"))) solve.zoom = r.boolean(key("zoom"));
    if (r.has(key("distance"))) solve.distance_m = positive(key("distance"), "metres");
    if (r.has(key("distance_frame"))) solve.distance_frame = r.integer(key("distance_frame"), -999999999, 999999999);
    if (r.has(key("metric_model"))) solve.metric_model = r.path(key("metric_model"));
    if (r.has(key("chan"))) solve.chan = r.path(key("chan"));
    if (solve.model.empty())
        r.fail("camera.solve", "has no model: name the any-view model that solves the camera (camera.solve.model)");
    if (solve.window > 0 && solve.overlap >= solve.window)
        r.fail(key("overlap"), "must be less than camera.solve.window (" + std::to_string(solve.window) + ")");
    if (solve.distance_frame && !solve.distance_m)
        r.fail(key("distance_frame"), "needs camera.solve.distance (the median depth at that frame, metres)");
    if (solve.distance_m && !solve.metric_model.empty())
        r.fail(key("distance"), "and camera.solve.metric_model both give the scale: set one of them");
}

/// pipeline.*: threads, frames in flight, the JSON report.
void read_pipeline(const Reader& r, JobConfig& job) {
    if (r.has("pipeline.frames_in_flight"))
        job.pipeline.frames_in_flight = r.integer("pipeline.frames_in_flight", 1, 4096);
    if (r.has("pipeline.threads")) job.pipeline.threads = r.integer("pipeline.threads", 0, 1024);
    if (r.has("pipeline.report")) job.pipeline.summary = r.path("pipeline.report");
    if (r.has("pipeline.summary")) job.pipeline.summary = r.path("pipeline.summary");
    r.option("pipeline.on_error", job.pipeline.on_error);
    if (r.has("pipeline.review")) {  // the sheet's PNG; a .html path names the same pair (review.h review_paths)
        job.pipeline.review = r.path("pipeline.review");
        std::string ext = fs::path(job.pipeline.review).extension().string();
        std::transform(ext.begin(), ext.end(), ext.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (ext == ".html") job.pipeline.review = fs::path(job.pipeline.review).replace_extension(".png").string();
        else if (ext != ".png")
            r.fail("pipeline.review",
                   "the review sheet is a PNG and its page an HTML file beside it; give a path ending "
                   "in .png or .html (either names the pair), not " +
                       (ext.empty() ? std::string("one without an extension") : "'" + ext + "'"));
    }
    if (r.has("pipeline.grace_s")) {
        job.pipeline.grace_s = r.number("pipeline.grace_s");
        if (!(job.pipeline.grace_s >= 0 && job.pipeline.grace_s <= 3600))
            r.fail("pipeline.grace_s", "must be between 0 and 3600 seconds");
    }
}

/// Older spellings (job_keys.h old_name_of): both at once is a mistake named as such; a deprecated one warns,
/// once a process, naming the new key.
void check_old_names(const Reader& r) {
    static std::mutex mutex;
    static std::set<std::string> warned;
    for (const JobKey& k : job_keys()) {
        if (!*k.old_name_of || !r.has(k.key)) continue;
        if (r.has(k.old_name_of))
            r.fail(k.key, std::string("is the older name of ") + k.old_name_of + ": set one of them");
        if (!k.deprecated) continue;
        const std::lock_guard<std::mutex> lock(mutex);
        if (warned.insert(k.key).second)
            log_warning(r.where(k.key), ": key '", k.key, "' is deprecated: use ", k.old_name_of,
                        std::string(k.key) == "depth.stabilize_window"
                            ? " (R frames on each side; stabilize_window W is stabilize_radius W/2)"
                            : " (same values)");
    }
}

JobConfig build(const job_text::Tree& tree) {
    check_keys(tree);
    Reader r(tree);
    check_old_names(r);
    JobConfig job;  // the defaults: JobConfig's member initialisers; each section overrides what the job states
    job.job_file = tree.origin;
    read_input(r, job);
    read_output(r, job);
    read_model(r, job);
    read_color(r, job);
    read_depth(r, job);
    read_camera(r, job);
    read_pipeline(r, job);
    return job;
}

}  // namespace

std::vector<int> select_render_frames(const JobConfig::RenderSelection& render, const std::vector<int>& shot) {
    std::vector<int> frames = render.frames.empty() ? shot : render.frames;
    if (render.range) frames = frames_in_range(frames, render.range->first, render.range->second);
    if (render.chunk_count > 0) frames = chunk_frames(frames, render.chunk_index, render.chunk_count);
    return frames;
}

namespace {
std::vector<JobOverride> typed_as_set(const std::vector<std::string>& overrides) {
    std::vector<JobOverride> v;
    for (const auto& o : overrides) v.push_back({o, "", false});
    return v;
}
}  // namespace

JobConfig parse_job(const std::string& text, const std::string& format, const std::string& origin,
                    const std::string& base_dir, const std::vector<JobOverride>& overrides) {
    job_text::Tree tree = job_text::parse_tree(text, format, origin, base_dir);
    for (const auto& o : overrides) job_text::apply_override(tree, o.assignment, o.typed, o.literal);
    return build(tree);
}

JobConfig parse_job(const std::string& text, const std::string& format, const std::string& origin,
                    const std::string& base_dir, const std::vector<std::string>& overrides) {
    return parse_job(text, format, origin, base_dir, typed_as_set(overrides));
}

JobConfig load_job(const std::string& job_path, const std::vector<JobOverride>& overrides) {
    std::string format;
    const std::string text = job_text::read_job_file(job_path, format);
    const fs::path base = fs::absolute(fs::path(job_path)).parent_path();
    return parse_job(text, format, job_path, base.string(), overrides);
}

JobConfig load_job(const std::string& job_path, const std::vector<std::string>& overrides) {
    return load_job(job_path, typed_as_set(overrides));
}

}  // namespace depthbatch
