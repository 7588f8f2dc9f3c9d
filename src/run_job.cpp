#include "depthbatch/run_job.h"

#include "atomic_file.h"
#include "output_guard.h"

#include "depthbatch/color_transform.h"
#include "depthbatch/depth_model.h"
#include "depthbatch/depth_normalizer.h"
#include "depthbatch/depth_preview.h"
#include "depthbatch/exr_depth_writer.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/log.h"
#include "depthbatch/plate.h"
#include "depthbatch/reformat.h"
#include "depthbatch/sha256.h"
#include "depthbatch/temporal_stabilizer.h"
#include "depthbatch/tiling.h"

#include <OpenImageIO/imagebufalgo.h>
#include <OpenImageIO/imageio.h>
#include <nlohmann/json.hpp>
#include <tbb/global_control.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace depthbatch {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::string list_some(const std::vector<std::string>& items, size_t most = 5) {
    std::ostringstream s;
    for (size_t i = 0; i < items.size() && i < most; ++i) s << "\n  " << items[i];
    if (items.size() > most) s << "\n  ... and " << items.size() - most << " more";
    return s.str();
}

/// One tile of a tiled frame (model.tiles, tiling.h): a plate of its own to the model.
struct TileWork {
    TileRect rect;                ///< in the plate's data window, origin at its top-left pixel
    ReformatPlan plan;
    ModelInput input;
    DepthImage raw;
    std::optional<UpsampleGuide> guide;
};

/// One frame travelling through the pipeline.
struct FrameWork {
    FrameResult result;
    bool write = true;            ///< false for stabilization warm-up frames (inferred, not written)
    int plan_index = 0;           ///< position in the job's plan (the stabilizer's handle for the frame)
    int shot_pos = 0;             ///< position in the shot's frames (the stabilizer's window is counted there)
    std::string plate_identity;   ///< plate_identity() of the plate as read (EXR depthbatch/plate_identity)
    std::string temporal_cut;     ///< frames missing from its stabilizer window ("" = the full window); the EXR
                                  ///< says so (depthbatch/temporal_context) and --skip-existing re-renders it
    Clock::time_point started;
    std::optional<Plate> plate;
    ReformatPlan plan;
    ModelInput input;
    DepthImage raw;
    std::optional<UpsampleGuide> guide;   ///< the plate's luma, for depth.upsample guided / edge_hard
    std::vector<TileWork> tiles;          ///< model.tiles: the frame's tiles (empty = untiled)
    bool failed() const { return result.status != ExitCode::Ok; }
    void fail(const Error& e) {
        result.status = e.code();
        result.message = e.what();
    }
};

/// Everything a job shares across frames; built once, read-only while the pipeline runs.
struct JobContext {
    const JobConfig& job;
    FrameSequence input, output;
    std::vector<int> shot;                      ///< the shot's frames (input.frames or on disk)
    int workers = 1;
    int torch_threads = 1;
    std::unique_ptr<DepthModel> model;
    std::shared_ptr<const ColorTransform> color;
    std::optional<DepthNormalizer> normalizer;
    ReformatPlan first_plan;
    int first_frame = 0;                        ///< the frame the plate kind and colour were decided from
    std::string first_kind;                     ///< plate_kind() of that frame: every frame must match it
    std::string settings_sha256;                ///< of output_settings_text(job): what --skip-existing checks
    std::optional<FrameSequence> preview;       ///< output.preview's path pattern, when previews are written
    std::optional<Colormap> colormap;
    OutputGuard guard;                          ///< every path the job writes (output_guard.h)

    explicit JobContext(const JobConfig& j) : job(j), input(j.input.path), output(j.output.path) {}
    const ModelContract& contract() const { return model->contract(); }
};

/// Frames, model, colour and a dry run: everything that can fail before a frame is read.
std::unique_ptr<JobContext> open_job(const JobConfig& job) {
    auto ctx = std::make_unique<JobContext>(job);
    ctx->shot = job.input.frames;
    if (ctx->shot.empty()) {
        ctx->shot = ctx->input.frames_on_disk();
        if (ctx->shot.empty()) throw InputError("no frames on disk match input.path '" + job.input.path + "'");
        // A hole in a sequence taken from disk is worth a warning (a failed copy, a missing frame):
        // frames missing from the shot's most common step.
        const std::vector<int>& s = ctx->shot;
        if (s.size() > 2) {
            std::map<int, int> steps;
            for (size_t i = 1; i < s.size(); ++i) ++steps[s[i] - s[i - 1]];
            const int step = std::max_element(steps.begin(), steps.end(),
                                              [](const auto& a, const auto& b) { return a.second < b.second; })->first;
            std::vector<int> holes;
            for (size_t i = 1; i < s.size() && holes.size() < 1000; ++i)
                for (int f = s[i - 1] + step; f < s[i] && holes.size() < 1000; f += step) holes.push_back(f);
            if (!holes.empty())
                log_warning("input.frames not set: rendering the ", s.size(), " frames on disk (", format_frame_spec(s),
                            "); frames ", format_frame_spec(holes), " are missing from that sequence");
        }
    }
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    ctx->workers = job.pipeline.threads > 0 ? job.pipeline.threads : static_cast<int>(cores);
    ctx->torch_threads = set_torch_threads(job.model.threads > 0 ? job.model.threads : ctx->workers);

    ctx->model = DepthModel::load(job.model);
    ctx->settings_sha256 = sha256_text(output_settings_text(job, ctx->model->precision()));
    const ModelContract& contract = ctx->contract();
    log_info("model ", ctx->model->path(), " (", contract.name, ", ", depth_kind_name(contract.kind),
             contract.units.empty() ? "" : " in " + contract.units, ", sha256 ", ctx->model->sha256().substr(0, 12), ")");
    log_info("device ", ctx->model->device_name(), " (", ctx->model->device_reason(), ")");
    ctx->normalizer.emplace(job.depth, contract.kind);
    ctx->guard = OutputGuard::for_job(job, ctx->shot, ctx->model->path());
    if (!job.output.preview.path.empty()) {
        ctx->preview.emplace(job.output.preview.path);   // a pattern without a frame token: ConfigError here
        try {
            ctx->colormap = load_colormap(job.output.preview.colormap);
        } catch (const Error& e) {   // previews are a convenience: the depth pass renders without them
            log_warning("output.preview: no previews: ", e.what());
            ctx->preview.reset();
        }
    }
    if (contract.reference_focal_px > 0 && !job.depth.focal_px)
        throw ConfigError("depth.focal_px: " + ctx->model->path() + " outputs metric depth for a " +
                          std::to_string(static_cast<int>(contract.reference_focal_px)) +
                          " px focal length; set depth.focal_px to the plate's focal length in plate pixels "
                          "(focal_mm / sensor_width_mm x plate width)");
    return ctx;
}

/// The pixel aspect the model's sizes are computed for: input.pixel_aspect, else the file's PixelAspectRatio
/// (EXR pixelAspectRatio, DPX pixel aspect), 1 when it has none or a nonsensical one.
double pixel_aspect(const JobConfig& job, const OIIO::ImageSpec& spec) {
    if (job.input.pixel_aspect) return *job.input.pixel_aspect;
    const float a = spec.get_float_attribute("PixelAspectRatio", 1.0f);
    return std::isfinite(a) && a > 0.01f && a < 100.0f ? a : 1.0;
}

/// model.tiles' grid for a plate (empty when tiles are off or one tile would cover the whole plate).
std::vector<TileRect> tiles_for(const JobConfig& job, int width, int height) {
    const auto& t = job.model.tiles;
    if (t.size <= 0 || (width <= t.size && height <= t.size)) return {};
    return tile_grid(width, height, t.size, t.overlap);
}

/// Colour transform and reformat plan from the first frame's header, then a dry run of the model: a
/// model that cannot run fails here with the model exit code, before any frame is read.
void plan_from_first_frame(JobContext& ctx, int frame) {
    const JobConfig& job = ctx.job;
    const std::string first = ctx.input.path(frame);
    const PlateInfo plate = probe_plate(first, frame, job.input);   // part/view, deep, channels: fails here
    const OIIO::ImageSpec& spec = plate.file_spec;
    ctx.first_frame = frame;
    ctx.first_kind = plate_kind(plate);
    log_info("plate ", plate.describe());
    ctx.color = ColorTransform::create(job.color, job.input.colorspace, ctx.contract().colorspace, &plate);
    log_info(describe_output(plate, job.output));
    // OpenEXR's DWA codecs quantize half colour channels (R, G, B, Y, RY, BY); float channels, depth.Z among
    // them, stay lossless.
    if (job.output.compression == Compression::Dwaa && job.output.channels != OutputChannels::Depth)
        log_warning("output.compression dwaa is lossy on the half R, G, B passthrough channels (OpenEXR's DWA "
                    "quantizes half colour channels); depth.Z is float and stays lossless. Use zip, zips or piz "
                    "for a bit-exact passthrough");
    ctx.first_plan = ReformatPlan::make(spec.width, spec.height, job.model.size, ctx.contract(), pixel_aspect(job, spec));
    // A fixed-size (traced) model is tried at its one size; any other at a small size (64 px rounded up to
    // its multiple), which catches a file that is not a depth model without paying for a full-size forward
    // (a full Depth Anything forward is seconds on a CPU).
    ModelInput probe;
    const int m = std::max(1, ctx.contract().multiple);
    const int small = (64 + m - 1) / m * m;
    probe.width = ctx.contract().fixed_size ? ctx.first_plan.input_width : std::min(small, ctx.first_plan.input_width);
    probe.height = ctx.contract().fixed_size ? ctx.first_plan.input_height : std::min(small, ctx.first_plan.input_height);
    probe.chw.assign(static_cast<size_t>(3) * probe.width * probe.height, 0.5f);
    try {
        ctx.model->infer({&probe});
    } catch (const RenderError& e) {
        throw ModelError(e.what());
    }
    const ReformatPlan& fp = ctx.first_plan;
    std::ostringstream aspect;
    if (fp.pixel_aspect != 1.0)
        aspect << " (pixel aspect " << fp.pixel_aspect << ": desqueezed for the model, written on the stored grid)";
    log_info("reformat ", spec.width, "x", spec.height, aspect.str(), " -> ", fp.scaled_width, "x", fp.scaled_height,
             " -> model input ", fp.input_width, "x", fp.input_height, ", depth ", option_name(job.depth.upsample.method),
             fp.guided(job.depth.upsample) || job.depth.upsample.method == DepthUpsample::Bilinear ? "" : " (bilinear here: no enlargement)");
    if (const auto tiles = tiles_for(job, spec.width, spec.height); !tiles.empty()) {
        const ReformatPlan tp = ReformatPlan::make(tiles[0].width, tiles[0].height, job.model.size, ctx.contract(), fp.pixel_aspect);
        const int per_batch = std::max(1, job.model.batch);
        log_info("tiles: ", tiles.size(), " of ", tiles[0].width, "x", tiles[0].height, " px (overlap >= ",
                 job.model.tiles.overlap, " px), each at model input ", tp.input_width, "x", tp.input_height, ": ",
                 1 + tiles.size(), " forwards a frame (", 1 + (tiles.size() + per_batch - 1) / per_batch, " passes at batch ",
                 per_batch, ")");
    }
}

// ---- per-frame stages ---------------------------------------------------------------------------

/// read + colour + reformat. Never throws: failures are recorded in the FrameWork.
void prepare(const JobContext& ctx, FrameWork& w) {
    try {
        auto t0 = Clock::now();
        w.plate_identity = plate_identity(w.result.input_path);
        w.plate = read_plate(w.result.input_path, w.result.frame, ctx.job.input);
        w.result.times.read_ms = ms_since(t0);
        // input.colorspace auto (and the reformat plan) were decided from one frame: a frame of another kind (a
        // float TIFF among 16-bit ones, a PNG named .exr) would be encoded by the wrong rule. Stop it here.
        if (ctx.job.input.colorspace == "auto" && !ctx.first_kind.empty())
            if (const std::string kind = plate_kind(*w.plate); kind != ctx.first_kind)
                throw InputError("frame " + std::to_string(w.result.frame) + " (" + w.result.input_path + ") is " +
                                 w.plate->format + " with " + kind + ", but frame " + std::to_string(ctx.first_frame) +
                                 " was " + ctx.first_kind +
                                 ": input.colorspace auto was decided from frame " + std::to_string(ctx.first_frame) +
                                 " ('" + ctx.color->from() + "') and would be wrong here. Re-export the frame like the "
                                 "others, or set input.colorspace");
        t0 = Clock::now();
        OIIO::ImageBuf rgb = plate_rgb(*w.plate);
        const PixelStats px = ctx.color->apply(rgb);   // NaN/Inf -> 0, OCIO, into 0-1; counted
        w.result.nonfinite_pixels = px.nonfinite, w.result.out_of_range_pixels = px.out_of_range;
        w.result.times.color_ms = ms_since(t0);
        t0 = Clock::now();
        const JobConfig& job = ctx.job;
        const double aspect = pixel_aspect(job, w.plate->file_spec);
        w.plan = ReformatPlan::make(w.plate->width(), w.plate->height(), job.model.size, ctx.contract(), aspect);
        w.input = w.plan.to_model_input(rgb);   // already finite and in 0-1: the colour stage clamped and counted
        if (w.write && w.plan.guided(job.depth.upsample)) w.guide = w.plan.make_guide(w.input, rgb);
        if (w.write)   // warm-up and statistics frames need the global prediction only
            for (const TileRect& r : tiles_for(job, w.plate->width(), w.plate->height())) {
                TileWork t;
                t.rect = r;
                const OIIO::ROI& window = rgb.roi();
                OIIO::ImageBuf crop;
                if (!OIIO::ImageBufAlgo::cut(crop, rgb, OIIO::ROI(window.xbegin + r.x, window.xbegin + r.x + r.width,
                                                                 window.ybegin + r.y, window.ybegin + r.y + r.height)))
                    throw RenderError("tile " + std::to_string(r.x) + "," + std::to_string(r.y) + ": " + crop.geterror());
                t.plan = ReformatPlan::make(r.width, r.height, job.model.size, ctx.contract(), aspect);
                t.input = t.plan.to_model_input(crop);
                if (t.plan.guided(job.depth.upsample)) t.guide = t.plan.make_guide(t.input, crop);
                w.tiles.push_back(std::move(t));
            }
        w.result.times.reformat_ms = ms_since(t0);
        if (!w.write) w.plate.reset();  // warm-up frames only need the model input
    } catch (const Error& e) {
        w.fail(e);
    } catch (const std::exception& e) {
        w.fail(InputError("frame " + std::to_string(w.result.frame) + " (" + w.result.input_path + "): " + e.what()));
    }
}

/// Focal-dependent metric models (contract output.reference_focal_px): metres = raw * focal /
/// reference focal, with the plate's focal (depth.focal_px) scaled to the pixels the model saw.
/// The model saw `plan.plate_width` plate pixels as `plan.scaled_width` (a tile: its own width; the pixel aspect
/// widens both alike, so the focal in the model's square pixels is focal_px * scaled / plate width).
void apply_focal(const JobContext& ctx, const ReformatPlan& plan, DepthImage& raw) {
    if (ctx.contract().reference_focal_px <= 0) return;
    const double focal = *ctx.job.depth.focal_px * plan.scaled_width / plan.plate_width;
    const float k = static_cast<float>(focal / ctx.contract().reference_focal_px);
    for (float& v : raw.data) v *= k;
}

/// A frame's tiles through the model, model.batch at a time (all tiles of a frame have one size).
void infer_tiles(const JobContext& ctx, FrameWork& w) {
    const size_t per_batch = static_cast<size_t>(std::max(1, ctx.job.model.batch));
    const auto t0 = Clock::now();
    for (size_t i = 0; i < w.tiles.size(); i += per_batch) {
        std::vector<const ModelInput*> inputs;
        for (size_t k = i; k < std::min(w.tiles.size(), i + per_batch); ++k) inputs.push_back(&w.tiles[k].input);
        std::vector<DepthImage> out = ctx.model->infer(inputs);
        for (size_t k = 0; k < out.size(); ++k) {
            TileWork& t = w.tiles[i + k];
            t.raw = std::move(out[k]);
            t.input = ModelInput();
            apply_focal(ctx, t.plan, t.raw);
        }
    }
    w.result.times.infer_ms += ms_since(t0);
}

/// Inference for a batch of prepared frames, in frame order; frames of one size share a forward pass.
void infer(const JobContext& ctx, std::vector<FrameWork*>& frames) {
    size_t i = 0;
    while (i < frames.size()) {
        if (frames[i]->failed()) {
            ++i;
            continue;
        }
        std::vector<FrameWork*> group{frames[i]};
        size_t j = i + 1;
        for (; j < frames.size() && !frames[j]->failed() && frames[j]->input.width == frames[i]->input.width &&
               frames[j]->input.height == frames[i]->input.height;
             ++j)
            group.push_back(frames[j]);
        std::vector<const ModelInput*> inputs;
        for (FrameWork* w : group) inputs.push_back(&w->input);
        const auto t0 = Clock::now();
        try {
            std::vector<DepthImage> out = ctx.model->infer(inputs);
            const double each = ms_since(t0) / static_cast<double>(group.size());
            for (size_t k = 0; k < group.size(); ++k) {
                group[k]->raw = std::move(out[k]);
                group[k]->result.times.infer_ms = each;
                apply_focal(ctx, group[k]->plan, group[k]->raw);
            }
            for (FrameWork* w : group) infer_tiles(ctx, *w);
        } catch (const Error& e) {   // keeps its class: a model that cannot run on this input exits 4
            for (FrameWork* w : group) w->fail(Error(e.code(), "frame " + std::to_string(w->result.frame) + ": " + e.what()));
        }
        i = j;
    }
}

/// The range a preview's colours span, in written depth.Z values: the job's range (sequence, fixed or the frame's
/// own) through the same convention as the EXR, else this frame's 2nd/98th percentiles of what was written.
PreviewRange preview_range(const JobContext& ctx, const float* written, size_t count, const std::optional<DepthRange>& range) {
    PreviewRange p;
    p.units = ctx.normalizer->units();
    if (range) {
        float ends[2] = {static_cast<float>(range->near_value), static_cast<float>(range->far_value)};
        ctx.normalizer->apply(ends, 2, &*range);
        p.near_value = ends[0], p.far_value = ends[1];
        return p;
    }
    const auto [lo, hi] = percentile_pair(std::vector<float>(written, written + count), 2.0, 98.0);
    const DepthConvention kind = ctx.normalizer->kind();
    const bool larger_is_nearer = kind == DepthConvention::Inverse ||
                                  (kind == DepthConvention::Raw && ctx.contract().kind == DepthKind::RelativeInverseDepth) ||
                                  (kind == DepthConvention::Normalized && ctx.job.depth.near_is == 1);
    p.near_value = larger_is_nearer ? hi : lo;
    p.far_value = larger_is_nearer ? lo : hi;
    return p;
}

/// model.tiles: each tile's depth at its rectangle of the plate, aligned to the global `depth` there (relative
/// models) and blended into it (tiling.h). `depth`: plate-size float, replaced by the blend.
void blend_tiles(const JobContext& ctx, FrameWork& w, OIIO::ImageBuf& depth) {
    const int W = depth.spec().width, H = depth.spec().height;
    const float* global = static_cast<const float*>(depth.localpixels());
    const bool align = ctx.contract().kind != DepthKind::MetricDepth;
    TileBlender blender(W, H, ctx.job.model.tiles.overlap);
    for (TileWork& t : w.tiles) {
        OIIO::ImageBuf tile = t.plan.restore(t.raw, ctx.job.depth.upsample, t.guide ? &*t.guide : nullptr);
        std::vector<float> values(static_cast<size_t>(t.rect.width) * t.rect.height);
        std::memcpy(values.data(), tile.localpixels(), values.size() * sizeof(float));
        if (align) {
            std::vector<float> under(values.size());
            for (int y = 0; y < t.rect.height; ++y)
                std::memcpy(&under[static_cast<size_t>(y) * t.rect.width], global + static_cast<size_t>(t.rect.y + y) * W + t.rect.x,
                            static_cast<size_t>(t.rect.width) * sizeof(float));
            const auto [scale, shift] = align_to_global(values, under, std::max<size_t>(1, values.size() / 20000));
            for (float& v : values) v = static_cast<float>(scale * v + shift);
        }
        blender.add(t.rect, values);
        t = TileWork();
    }
    const Plane blended = blender.result();
    std::memcpy(depth.localpixels(), blended.data.data(), blended.data.size() * sizeof(float));
    w.tiles.clear();
}

/// restore + depth convention + write.
void finish(const JobContext& ctx, FrameWork& w, const std::optional<DepthRange>& sequence_range,
            const Metadata& job_meta) {
    if (w.failed() || !w.write) return;
    try {
        auto t0 = Clock::now();
        std::optional<DepthRange> range = sequence_range;
        if (ctx.normalizer->needs_frame_range()) {
            const auto [lo, hi] = percentile_pair(w.raw.data, ctx.job.depth.percentile_low, ctx.job.depth.percentile_high);
            range = ctx.normalizer->range_from_percentiles(lo, hi);
        }
        if (w.raw.negative)
            log_warning("frame ", w.result.frame, ": the model returned ", w.raw.negative, " negative metric depth values (min ",
                        w.raw.negative_min, " m); kept as they are, not clamped to 0 (depth.kind ", option_name(ctx.normalizer->kind()), ")");
        OIIO::ImageBuf depth = w.plan.restore(w.raw, ctx.job.depth.upsample, w.guide ? &*w.guide : nullptr);
        w.raw = DepthImage();
        w.guide.reset();
        if (!w.tiles.empty()) blend_tiles(ctx, w, depth);
        float* values = static_cast<float*>(depth.localpixels());
        w.result.depth_clamped =
            ctx.normalizer->apply(values, static_cast<size_t>(depth.spec().width) * depth.spec().height, range ? &*range : nullptr);
        w.result.times.restore_ms = ms_since(t0);

        t0 = Clock::now();
        Metadata meta = job_meta;
        for (auto& kv : ctx.normalizer->metadata(range ? &*range : nullptr)) meta.push_back(kv);
        meta.push_back({"depthbatch/source", w.result.input_path});
        meta.push_back({"depthbatch/frame", std::to_string(w.result.frame)});
        if (!w.plate_identity.empty()) meta.push_back({"depthbatch/plate_identity", w.plate_identity});
        if (!w.temporal_cut.empty()) meta.push_back({"depthbatch/temporal_context", "cut: " + w.temporal_cut});
        if (w.result.depth_clamped) meta.push_back({"depthbatch/depth_clamped_values", std::to_string(w.result.depth_clamped)});
        ExrWriteOptions options = ctx.job.output;
        if (!w.result.rerender_reason.empty()) options.overwrite = OverwritePolicy::Overwrite;   // a stale output
        write_depth_exr(w.result.output_path, *w.plate, depth, meta, options);
        w.result.times.write_ms = ms_since(t0);
        if (ctx.preview) {
            const std::string path = ctx.preview->path(w.result.frame);
            try {
                const size_t n = static_cast<size_t>(depth.spec().width) * depth.spec().height;
                write_depth_preview(path, depth, preview_range(ctx, values, n, range), *ctx.colormap,
                                    ctx.job.output.preview.size, "frame " + std::to_string(w.result.frame));
            } catch (const std::exception& e) {   // a preview never fails a frame
                log_warning("frame ", w.result.frame, ": preview ", path, " not written: ", e.what());
            }
        }
    } catch (const Error& e) {
        w.fail(e);
    }
    w.plate.reset();
}

// ---- sequence statistics ------------------------------------------------------------------------

std::string processing_key(const JobContext& ctx) {
    std::ostringstream s;
    s << ctx.first_plan.input_width << "x" << ctx.first_plan.input_height << " " << ctx.color->from() << "->"
      << ctx.color->to() << " " << option_name(ctx.job.model.precision);
    return s.str();
}

SequenceStats sequence_stats(const JobContext& ctx) {
    const JobConfig& job = ctx.job;
    SequenceStats want;
    want.model_sha256 = ctx.model->sha256();
    want.input_pattern = job.input.path;
    want.shot_frames = format_frame_spec(ctx.shot);
    want.processing = processing_key(ctx);
    want.percentile_low = job.depth.percentile_low;
    want.percentile_high = job.depth.percentile_high;
    // Under on_error: continue a missing plate fails its frame, not the job: sample the frames whose plates exist
    // (and say which were left out). Under stop the sample is the shot's, and a missing one stops the job.
    std::vector<int> sampled_from = ctx.shot;
    if (job.pipeline.on_error == OnError::Continue) {
        std::vector<int> present, absent;
        for (int f : ctx.shot) (fs::is_regular_file(ctx.input.path(f)) ? present : absent).push_back(f);
        if (!absent.empty() && !present.empty()) {
            log_warning("sequence statistics: plates ", format_frame_spec(absent), " are missing; sampling the ",
                        present.size(), " frames that exist (pipeline.on_error: continue)");
            sampled_from = present;
        }
    }
    want.sample_frames = sample_frames(sampled_from, job.depth.stats_frames);
    const std::string path = job.depth.stats_file.empty() ? default_stats_path(job.output.path) : job.depth.stats_file;
    log_debug("sequence statistics sidecar ", path, " (", ctx.shot.size(), " frames in the shot)");
    // The raw model output of one sampled frame: read, colour, reformat and infer, as the pipeline does.
    const auto frame_values = [&ctx](int frame) {
        FrameWork w;
        w.write = false;
        w.result.frame = frame;
        w.result.input_path = ctx.input.path(frame);
        prepare(ctx, w);
        std::vector<FrameWork*> one{&w};
        if (!w.failed()) infer(ctx, one);
        if (w.failed()) throw Error(w.result.status, "sequence statistics: " + w.result.message);
        return std::move(w.raw.data);
    };
    return reuse_or_compute_sequence_stats(path, want, job.output.overwrite == OverwritePolicy::Overwrite, frame_values);
}

// ---- the phases of run_job, in order --------------------------------------------------------------

/// Which of the requested frames to render: every plate frame exists, no output is the plate itself, and
/// outputs that exist follow output.overwrite (error: listed and thrown; skip: kept when they can stand for
/// this render, else rendered again and replaced). Under on_error: continue, missing plates become failed
/// frames instead of stopping the job.
struct FrameSelection {
    std::vector<int> todo;                    ///< sorted
    std::map<int, std::string> rerender;      ///< frames of todo whose existing output is replaced, and why
    std::vector<SkippedFrame> skipped;
    std::vector<FrameResult> missing;         ///< on_error: continue only
};
/// Beyond settings and model: the plate the output was made from was re-delivered since (size or modification
/// time differ from depthbatch/plate_identity), or its stabilizer window was cut by frames that failed or were
/// missing and whose plates exist now (depthbatch/temporal_context). "" when neither.
std::string why_plate_or_context_changed(const JobContext& ctx, const std::string& out, const std::string& plate) {
    const std::string was = exr_text_attribute(out, "depthbatch/plate_identity");
    if (!was.empty()) {   // outputs of depthbatch 0.2 recorded none: nothing to compare
        const std::string now = plate_identity(plate);
        if (now != was) return "made from a plate that has changed since (" + was + "; now " + now + ")";
    }
    const std::string context = exr_text_attribute(out, "depthbatch/temporal_context");
    if (context.rfind("cut: ", 0) == 0) {
        std::vector<int> lacked;
        try {
            lacked = parse_frame_spec(context.substr(5));
        } catch (const ConfigError&) {
            return "stabilized with a cut window (" + context + ")";
        }
        std::vector<int> back;
        for (int f : lacked)
            if (fs::is_regular_file(ctx.input.path(f))) back.push_back(f);
        if (!back.empty())
            return "stabilized without frames " + format_frame_spec(back) + ", whose plates exist now";
    }
    return "";
}

FrameSelection select_frames(const JobContext& ctx, const std::vector<int>& frames) {
    const JobConfig& job = ctx.job;
    std::vector<std::string> missing, existing, foreign;
    FrameSelection sel;
    for (int f : frames) {
        const std::string in = ctx.input.path(f), out = ctx.output.path(f);
        if (!fs::is_regular_file(in)) {
            missing.push_back("frame " + std::to_string(f) + ": " + in);
            FrameResult r;
            r.frame = f, r.status = ExitCode::Input, r.input_path = in, r.output_path = out;
            r.message = "frame " + std::to_string(f) + ": plate missing: " + in;
            sel.missing.push_back(r);
            continue;
        }
        std::error_code same_ec;
        if (fs::exists(out) && fs::equivalent(in, out, same_ec))
            throw ConfigError("output.path: frame " + std::to_string(f) + "'s output " + out +
                              " is the plate itself (through a link or another name); refusing to overwrite the plate");
        if (fs::exists(out)) {
            if (job.output.overwrite == OverwritePolicy::Error) existing.push_back(out);
            // A file that is no depth frame is never replaced, whatever the policy: not an OpenEXR file at all,
            // or (to be re-rendered under skip) an EXR that depthbatch did not write.
            if (job.output.overwrite != OverwritePolicy::Error && !kind_marker_holds(out, OutputRole::DepthFrame)) {
                foreign.push_back(out + " (not an OpenEXR file)");
                continue;
            }
            if (job.output.overwrite == OverwritePolicy::Skip) {
                std::string why = why_output_is_stale(out, ctx.settings_sha256, ctx.model->sha256());
                if (why.rfind("not written by depthbatch", 0) == 0) {
                    foreign.push_back(out + " (an OpenEXR file depthbatch did not write)");
                    continue;
                }
                if (why.empty()) why = why_plate_or_context_changed(ctx, out, in);
                if (why.empty()) {
                    sel.skipped.push_back({f, out, "complete, same settings and model"});
                    continue;
                }
                log_info("frame ", f, ": rendering again, the existing ", out, " is ", why);
                sel.rerender[f] = why;
            }
        }
        sel.todo.push_back(f);
    }
    if (!missing.empty() && (job.pipeline.on_error == OnError::Stop || sel.todo.empty()))
        throw InputError(std::to_string(missing.size()) + " of " + std::to_string(frames.size()) +
                         " plate frames are missing:" + list_some(missing));
    if (!missing.empty())
        log_error(missing.size(), " of ", frames.size(), " plate frames are missing (pipeline.on_error: continue "
                  "renders the rest):", list_some(missing));
    if (!foreign.empty())
        throw OutputExistsError(std::to_string(foreign.size()) + " file(s) at output.path are not depthbatch depth "
                                "frames and are never replaced (move them away or choose another output.path):" +
                                list_some(foreign));
    if (!existing.empty())
        throw OutputExistsError(std::to_string(existing.size()) + " output frames already exist (set "
                                "output.overwrite to skip or overwrite, or pass --skip-existing / --overwrite):" +
                                list_some(existing));
    return sel;
}

/// The output folders can be written before any frame is read (not after the first frames ran); hidden
/// temporaries that killed earlier runs on this host left there are removed. Nothing is created yet: the
/// nearest existing folder must let us create the rest. Throws RenderError.
void check_output_folders(const JobContext& ctx, const std::vector<int>& todo, bool sweep = true) {
    const fs::path first_dir = fs::path(ctx.output.path(todo.front())).parent_path();
    if (sweep && fs::is_directory(first_dir.empty() ? "." : first_dir))
        if (const int n = detail::remove_stale_temporaries(first_dir.string()); n > 0)
            log_info("removed ", n, " temporary file(s) left in ", first_dir.string(), " by an interrupted earlier run");
    for (int f : todo) {
        const fs::path dir = fs::path(ctx.output.path(f)).parent_path();
        fs::path existing = dir.empty() ? fs::path(".") : dir;
        std::error_code ec;
        while (!fs::exists(existing, ec) && existing.has_parent_path() && existing != existing.parent_path())
            existing = existing.parent_path();
        if (!fs::is_directory(existing, ec))
            throw RenderError("output folder " + dir.string() + ": " + existing.string() + " is not a folder");
        if (::access(existing.c_str(), W_OK) != 0)   // what the OS says: Permission denied, Read-only file system
            throw RenderError("output folder " + dir.string() + ": cannot write in " + existing.string() + " (" +
                              std::strerror(errno) + ")");
        if (f != todo.front() && dir == first_dir) break;   // one pattern: one folder, checked once
    }
}

/// The frames the pipeline computes, in order. With stabilization, the shot's frames from
/// warmup_frames() before the first frame to render (inferred, not written), so that a chunk starts in the
/// same state as a whole render; throws ConfigError for a frame outside the shot.
struct PlannedFrame {
    int frame;
    bool write;
    std::string replace_reason;   ///< why its existing output is replaced (FrameSelection::rerender); "" = none
};
/// depth.stabilize_window W: R = W / 2 frames on each side (at least 1), a centred window of 2R + 1 frames.
TemporalStabilizer stabilizer_for(const JobConfig& job) { return TemporalStabilizer(std::max(1, job.depth.stabilize_window / 2)); }

std::string rerender_reason(const FrameSelection& sel, int frame) {
    const auto it = sel.rerender.find(frame);
    return it == sel.rerender.end() ? std::string() : it->second;
}
std::vector<PlannedFrame> plan_frames(const JobContext& ctx, const FrameSelection& sel) {
    const std::vector<int>& todo = sel.todo;
    std::vector<PlannedFrame> plan;
    if (!ctx.job.depth.stabilize) {
        for (int f : todo) plan.push_back({f, true, rerender_reason(sel, f)});
        return plan;
    }
    for (int f : todo)
        if (!std::binary_search(ctx.shot.begin(), ctx.shot.end(), f))
            throw ConfigError("depth.stabilize: frame " + std::to_string(f) + " is not in input.frames (" +
                              format_frame_spec(ctx.shot) + "); stabilization follows the shot's frame order");
    // Warm-up on both sides: the stabilizer is centred, frame i depends on the shot's frames i-R..i+R.
    const auto first = std::lower_bound(ctx.shot.begin(), ctx.shot.end(), todo.front());
    const auto last = std::lower_bound(ctx.shot.begin(), ctx.shot.end(), todo.back());
    const int warmup = stabilizer_for(ctx.job).warmup_frames();
    const auto start = first - std::min<std::ptrdiff_t>(warmup, first - ctx.shot.begin());
    const auto end = last + std::min<std::ptrdiff_t>(warmup, ctx.shot.end() - 1 - last);
    for (auto it = start; it <= end; ++it)
        plan.push_back({*it, std::binary_search(todo.begin(), todo.end(), *it), rerender_reason(sel, *it)});
    log_info("temporal stabilization: centred window of ", 2 * warmup + 1, " frames (", warmup, " on each side), ",
             plan.size() - todo.size(), " warm-up frames");
    return plan;
}

/// The range depth.normalize: sequence uses, from the job's sequence statistics (nullopt otherwise).
struct SequenceRange {
    std::optional<DepthRange> range;
    SequenceStats stats;
};
SequenceRange sequence_range(const JobContext& ctx) {
    SequenceRange r;
    if (!ctx.normalizer->needs_sequence_range()) return r;
    r.stats = sequence_stats(ctx);
    r.range = ctx.normalizer->range_from_percentiles(r.stats.low, r.stats.high);
    return r;
}

/// What every EXR of the job carries in its metadata (per-frame entries are added by finish()).
Metadata job_metadata(const JobContext& ctx, const SequenceRange& seq) {
    const JobConfig& job = ctx.job;
    Metadata meta = {
        {"depthbatch/version", DEPTHBATCH_VERSION},
        {"depthbatch/model", ctx.contract().name},
        {"depthbatch/model_sha256", ctx.model->sha256()},
        {"depthbatch/settings_sha256", ctx.settings_sha256},
        {"depthbatch/model_output_kind", depth_kind_name(ctx.contract().kind)},
        {"depthbatch/device", ctx.model->device_name()},
        {"depthbatch/colorspace_in", ctx.color->from()},
        {"depthbatch/colorspace_model", ctx.color->to()},
    };
    if (seq.range) {
        meta.push_back({"depthbatch/stats_sample_frames", format_frame_spec(seq.stats.sample_frames)});
        meta.push_back({"depthbatch/stats_percentiles",
                        std::to_string(seq.stats.percentile_low) + "," + std::to_string(seq.stats.percentile_high)});
    }
    if (job.depth.stabilize) {
        meta.push_back({"depthbatch/stabilize_window", std::to_string(job.depth.stabilize_window)});
        meta.push_back({"depthbatch/stabilize", "centred: " + std::to_string(stabilizer_for(job).radius()) +
                                                    " frames on each side"});
    }
    if (ctx.contract().reference_focal_px > 0) meta.push_back({"depthbatch/focal_px", std::to_string(*job.depth.focal_px)});
    return meta;
}

/// One frame's log line and its place in the report (called once per finished frame, under a lock).
void record_frame(const JobContext& ctx, const FrameWork& w, JobReport& report) {
    if (w.failed()) {
        ++report.failed;
        if (report.exit_code == ExitCode::Ok) report.exit_code = w.result.status;
        log_error(w.result.message);
    } else {
        ++report.rendered;
        const StageTimes& t = w.result.times;
        StageTimes& sum = report.totals;
        sum.read_ms += t.read_ms, sum.color_ms += t.color_ms, sum.reformat_ms += t.reformat_ms;
        sum.infer_ms += t.infer_ms, sum.restore_ms += t.restore_ms, sum.write_ms += t.write_ms;
        log_info("frame ", w.result.frame, " -> ", w.result.output_path, "  read ", std::lround(t.read_ms),
                 " ms, colour ", std::lround(t.color_ms), ", reformat ", std::lround(t.reformat_ms), ", infer ",
                 std::lround(t.infer_ms), ", restore ", std::lround(t.restore_ms), ", write ", std::lround(t.write_ms),
                 w.result.nonfinite_pixels ? ", " + std::to_string(w.result.nonfinite_pixels) + " NaN/Inf plate pixels replaced by 0" : "",
                 w.result.out_of_range_pixels ? ", " + std::to_string(w.result.out_of_range_pixels) + " pixels outside 0-1 after colour (" + option_name(ctx.color->hdr()) + ")" : "",
                 w.result.depth_clamped ? ", " + std::to_string(w.result.depth_clamped) + " depth values clamped" : "");
    }
    report.frames.push_back(w.result);
}

/// The pipeline itself: source (serial, in order) -> read + colour + reformat (parallel) -> inference and
/// stabilization (serial, in order) -> restore + convention + write (parallel), at most
/// report.frames_in_flight frames at once. Fills report's counts, frames and timings.
void render_frames(const JobContext& ctx, const std::vector<PlannedFrame>& plan, const SequenceRange& seq,
                   const Metadata& job_meta, JobObserver* observer, const std::atomic<bool>* cancel,
                   JobReport& report) {
    const JobConfig& job = ctx.job;
    const int batch = std::max(1, job.model.batch);
    const int in_flight = job.pipeline.frames_in_flight > 0 ? job.pipeline.frames_in_flight : 2 * ctx.workers;
    const size_t tokens = static_cast<size_t>(std::max(1, (in_flight + batch - 1) / batch));
    // What really runs: an arena asked for more threads than TBB allows (its default: the cores) gets no more,
    // though its max_concurrency() still says what was asked; LibTorch's count is what it reports back.
    const int workers = std::min(ctx.workers, static_cast<int>(tbb::global_control::active_value(
                                                  tbb::global_control::max_allowed_parallelism)));
    const int torch_asked = job.model.threads > 0 ? job.model.threads : ctx.workers;
    const auto asked = [](int used, int n) { return used < n ? " (asked " + std::to_string(n) + ")" : std::string(); };
    report.worker_threads = workers;
    report.frames_in_flight = static_cast<int>(tokens) * batch;
    const long written = std::count_if(plan.begin(), plan.end(), [](const PlannedFrame& p) { return p.write; });
    std::vector<int> todo;
    for (const PlannedFrame& p : plan)
        if (p.write) todo.push_back(p.frame);
    const char* omp_wait = std::getenv("OMP_WAIT_POLICY");
    log_info(written, " frames (", format_frame_spec(todo), "), ", workers, " worker threads", asked(workers, ctx.workers),
             ", LibTorch ", ctx.torch_threads, " intra-op threads", asked(ctx.torch_threads, torch_asked),
             " (OMP_WAIT_POLICY ", omp_wait ? omp_wait : "unset", "), ", report.frames_in_flight,
             " frames in flight, batch ", batch);

    // The centred stabilizer holds frames until the frames after them are inferred (at most R frames more than
    // the tokens allow), and gives them back in order; the source's last token makes it give back the rest.
    std::optional<TemporalStabilizer> stabilizer;
    if (job.depth.stabilize) stabilizer.emplace(stabilizer_for(job));
    std::map<int, std::unique_ptr<FrameWork>> held;   // frames inside the stabilizer, by plan index
    bool sent_last = false;
    std::mutex report_mutex;
    std::atomic<bool> stop{false};
    const bool stop_on_error = job.pipeline.on_error == OnError::Stop;
    size_t next = 0;
    struct Batch {
        std::vector<std::unique_ptr<FrameWork>> frames;
        bool last = false;   ///< the source's final token: no frames, the end of the stream
        bool cut = false;    ///< last, and a stop ended the stream before the plan's end
    };
    // The stabilizer's segments (temporal_stabilizer.h): a frame's window is centred and shrinks at its segment's
    // ends. A frame whose window is shorter than an uninterrupted whole render gives it was cut: by a gap (a frame
    // that failed or is missing: published, marked depthbatch/temporal_context, re-rendered by --skip-existing once
    // that frame exists) or by a stop (abandoned, never published: a retry renders it whole). A size change ends
    // a segment in every render alike, so it cuts nothing.
    enum class Edge { Plan, Size, Gap, Stop };
    struct Segment {
        bool open = false;
        int start_pos = 0, last_pos = 0;   ///< shot positions of its first and last frames
        Edge start = Edge::Plan;
        std::vector<int> start_gap;        ///< Edge::Gap: the frames that failed just before it
        int width = 0, height = 0;         ///< model input size
    } seg;
    std::vector<int> gap;                  ///< frames that failed since the last segment ended
    Edge next_start = Edge::Plan;
    std::vector<int> abandoned, size_change_frames;
    const int radius = stabilizer ? stabilizer->radius() : 0;
    const int shot_size = static_cast<int>(ctx.shot.size());
    std::optional<Clock::time_point> infer_idle_since;  // touched only by the serial inference stage

    tbb::task_arena arena(workers);   // not ctx.workers: asking TBB for more prints a "TBB Warning"
    arena.execute([&] {
        tbb::parallel_pipeline(
            tokens,
            tbb::make_filter<void, Batch*>(tbb::filter_mode::serial_in_order,
                [&](tbb::flow_control& fc) -> Batch* {
                    if (next >= plan.size() || stop.load() || (cancel && cancel->load())) {
                        if (!sent_last) {
                            sent_last = true;
                            return new Batch{{}, true, next < plan.size()};
                        }
                        fc.stop();
                        return nullptr;
                    }
                    auto* b = new Batch();
                    while (next < plan.size() && static_cast<int>(b->frames.size()) < batch) {
                        auto w = std::make_unique<FrameWork>();
                        w->result.frame = plan[next].frame;
                        w->write = plan[next].write;
                        w->result.rerender_reason = plan[next].replace_reason;
                        w->started = Clock::now();
                        w->result.input_path = ctx.input.path(w->result.frame);
                        w->result.output_path = ctx.output.path(w->result.frame);
                        w->plan_index = static_cast<int>(next);
                        if (stabilizer)
                            w->shot_pos = static_cast<int>(std::lower_bound(ctx.shot.begin(), ctx.shot.end(), w->result.frame) -
                                                           ctx.shot.begin());
                        b->frames.push_back(std::move(w));
                        ++next;
                    }
                    return b;
                }) &
            tbb::make_filter<Batch*, Batch*>(tbb::filter_mode::parallel,
                [&](Batch* b) -> Batch* {
                    for (auto& w : b->frames) {
                        prepare(ctx, *w);
                        if (w->failed() && stop_on_error) stop = true;
                    }
                    return b;
                }) &
            tbb::make_filter<Batch*, Batch*>(tbb::filter_mode::serial_in_order,
                [&](Batch* b) -> Batch* {
                    const auto t_in = Clock::now();
                    if (infer_idle_since) report.infer_wait_ms += std::chrono::duration<double, std::milli>(t_in - *infer_idle_since).count();
                    std::vector<FrameWork*> frames;
                    for (auto& w : b->frames) frames.push_back(w.get());
                    infer(ctx, frames);
                    report.infer_busy_ms += ms_since(t_in);
                    std::vector<std::unique_ptr<FrameWork>> out;
                    // Frames the stabilizer has finished; `flushing`: the segment ends here, at `end`.
                    const auto take_ready = [&](bool flushing, Edge end) {
                        for (auto& [index, depth] : stabilizer->pop_ready()) {
                            auto it = held.find(index);
                            FrameWork& f = *it->second;
                            f.raw = std::move(depth);
                            const int p = f.shot_pos;
                            const bool short_before = p - seg.start_pos < std::min(radius, p);
                            const bool short_after = flushing && seg.last_pos - p < std::min(radius, shot_size - 1 - p);
                            std::vector<int> lacked;
                            if (short_before && seg.start == Edge::Gap) lacked = seg.start_gap;
                            if (short_after && end == Edge::Gap) lacked.insert(lacked.end(), gap.begin(), gap.end());
                            if (short_after && end == Edge::Stop && f.write) {
                                f.write = false;   // abandoned: its window lacks frames the stop never read
                                abandoned.push_back(f.result.frame);
                            } else if (!lacked.empty()) {
                                std::sort(lacked.begin(), lacked.end());
                                lacked.erase(std::unique(lacked.begin(), lacked.end()), lacked.end());
                                f.temporal_cut = format_frame_spec(lacked);
                            }
                            out.push_back(std::move(it->second));
                            held.erase(it);
                        }
                    };
                    const auto end_segment = [&](Edge end) {
                        if (!seg.open) return;
                        stabilizer->flush();
                        take_ready(true, end);
                        seg.open = false;
                    };
                    for (auto& w : b->frames) {
                        if (w->failed() && stop_on_error) stop = true;
                        if (stabilizer && w->failed()) {   // a gap: the frames before it end their segment
                            gap.push_back(w->result.frame);
                            end_segment(Edge::Gap);
                        } else if (stabilizer) {
                            if (seg.open && (w->input.width != seg.width || w->input.height != seg.height)) {
                                size_change_frames.push_back(w->result.frame);
                                end_segment(Edge::Size);
                                next_start = Edge::Size;
                            }
                            if (!seg.open) {
                                seg.open = true;
                                seg.start_pos = w->shot_pos;
                                seg.start = gap.empty() ? next_start : Edge::Gap;
                                seg.start_gap = gap;
                                seg.width = w->input.width, seg.height = w->input.height;
                                gap.clear();
                                next_start = Edge::Plan;
                            }
                            seg.last_pos = w->shot_pos;
                            stabilizer->push(w->plan_index, std::move(w->raw), w->input);
                            held.emplace(w->plan_index, std::move(w));
                            take_ready(false, Edge::Plan);
                            continue;
                        }
                        w->input = ModelInput();
                        out.push_back(std::move(w));
                    }
                    if (stabilizer && b->last) end_segment(b->cut ? Edge::Stop : Edge::Plan);
                    for (auto& w : out) w->input = ModelInput();
                    b->frames.swap(out);
                    infer_idle_since = Clock::now();
                    return b;
                }) &
            tbb::make_filter<Batch*, void>(tbb::filter_mode::parallel,
                [&](Batch* b) {
                    std::unique_ptr<Batch> own(b);
                    for (auto& w : b->frames) {
                        finish(ctx, *w, seq.range, job_meta);
                        if (w->failed() && stop_on_error) stop = true;
                        w->result.seconds = std::chrono::duration<double>(Clock::now() - w->started).count();
                        if (!w->write && !w->failed()) continue;   // warm-up frames are not reported
                        std::lock_guard<std::mutex> lock(report_mutex);
                        // A warm-up frame whose plate was found missing before the render is counted there already.
                        if (!w->write && std::any_of(report.frames.begin(), report.frames.end(), [&](const FrameResult& r) {
                                return r.frame == w->result.frame; }))
                            continue;
                        record_frame(ctx, *w, report);
                        if (observer) observer->on_frame_done(w->result);
                    }
                }));
    });
    if (!size_change_frames.empty())
        log_warning("depth.stabilize: the model input size changed at ", size_change_frames.size(), " frame(s) (",
                    format_frame_spec(size_change_frames), "; the plate's data window changes size): the stabilizer "
                    "cannot fit across a size change and starts afresh there",
                    size_change_frames.size() * 2 >= plan.size() ? ", so stabilization had almost no effect on this shot"
                                                                 : "");
    if (!abandoned.empty())
        log_warning("stop: frames ", format_frame_spec(abandoned), " were not published: the stop cut their stabilizer "
                    "window short (a re-run with --skip-existing renders them whole)");
}

/// The report's closing figures: frames in order, Interrupted when a cancel left frames undone, Partial when
/// on_error: continue let frames fail, wall time, and the JSON summary when pipeline.summary asks for one.
void close_report(JobReport& report, const JobConfig& job, const std::atomic<bool>* cancel, Clock::time_point t_start) {
    std::sort(report.frames.begin(), report.frames.end(),
              [](const FrameResult& a, const FrameResult& b) { return a.frame < b.frame; });
    const bool undone = report.rendered + report.skipped + report.failed < static_cast<int>(report.requested.size());
    if (cancel && cancel->load() && undone) report.exit_code = ExitCode::Interrupted;
    else if (job.pipeline.on_error == OnError::Continue && report.failed > 0) report.exit_code = ExitCode::Partial;
    report.wall_s = std::chrono::duration<double>(Clock::now() - t_start).count();
    if (job.pipeline.summary.empty()) return;
    try {   // the frames are published: a summary that cannot be written never turns the render into a failure
        write_summary_json(report, job.pipeline.summary);
    } catch (const Error& e) {
        log_error("pipeline.summary not written: ", e.what());
    }
}

}  // namespace

SequenceStats job_sequence_stats(const JobConfig& job) {
    auto ctx = open_job(job);
    plan_from_first_frame(*ctx, ctx->shot.front());
    return sequence_stats(*ctx);
}

JobReport run_job(const JobConfig& job, JobObserver* observer, const std::atomic<bool>* cancel) {
    const auto t_start = Clock::now();
    JobObserver quiet;
    JobObserver& watch = observer ? *observer : quiet;
    watch.on_phase("loading model");
    const std::unique_ptr<JobContext> ctx = open_job(job);      // model, device, normalizer: can fail early
    JobReport report;
    report.job_file = job.job_file;
    report.device = ctx->model->device_name();
    report.torch_threads = ctx->torch_threads;
    report.model_name = ctx->contract().name;
    report.model_path = ctx->model->path();
    report.model_sha256 = ctx->model->sha256();
    report.settings_sha256 = ctx->settings_sha256;
    report.requested = select_render_frames(job.render, ctx->shot);
    // Every path the job will write, before anything is read or rendered: exit 2 for one that would destroy a
    // plate, the job, the model or another output, or replace a file of another kind.
    ctx->guard.preflight(report.requested);
    if (report.requested.empty()) {   // --chunk 5/8 of 4 frames, a --range outside the shot
        log_info("nothing to do: this run's share of the job (", format_frame_spec(ctx->shot), ") is empty");
        close_report(report, job, cancel, t_start);
        return report;
    }

    watch.on_phase("checking outputs");
    FrameSelection selected = select_frames(*ctx, report.requested);
    report.skipped = static_cast<int>(selected.skipped.size());
    report.skipped_frames = selected.skipped;
    for (FrameResult& r : selected.missing) {
        ++report.failed;
        report.frames.push_back(r);
        watch.on_frame_done(r);
    }
    if (selected.todo.empty()) {  // a retried farm chunk whose frames all exist: nothing to read, write or check
        log_info("nothing to do: ", report.skipped, " frames exist");
        watch.on_start({}, report.skipped);
        close_report(report, job, cancel, t_start);
        return report;
    }
    if (report.skipped) log_info("skipping ", report.skipped, " frames whose output exists (complete, same settings and model)");
    check_output_folders(*ctx, selected.todo);
    plan_from_first_frame(*ctx, selected.todo.front());         // colour, reformat, dry run of the model
    if (ctx->normalizer->needs_sequence_range()) watch.on_phase("sequence statistics");
    const SequenceRange seq = sequence_range(*ctx);
    const std::vector<PlannedFrame> plan = plan_frames(*ctx, selected);
    watch.on_phase("rendering");
    watch.on_start(selected.todo, report.skipped);
    const auto t_render = Clock::now();
    render_frames(*ctx, plan, seq, job_metadata(*ctx, seq), &watch, cancel, report);
    report.render_s = std::chrono::duration<double>(Clock::now() - t_render).count();
    close_report(report, job, cancel, t_start);
    return report;
}

ValidationResult validate_job(const JobConfig& job) {
    ValidationResult v;
    const auto line = [&v](const std::string& key, const std::string& value) {
        v.plan.push_back(key + std::string(key.size() < 11 ? 11 - key.size() : 1, ' ') + value);
    };
    const std::unique_ptr<JobContext> ctx = open_job(job);
    const ModelContract& c = ctx->contract();
    line("job", job.job_file.empty() ? "(built in code)" : job.job_file);
    line("model", ctx->model->path() + " (" + c.name + ", " + depth_kind_name(c.kind) + ", sha256 " +
                      ctx->model->sha256().substr(0, 12) + ")");
    line("device", ctx->model->device_name() + " (" + ctx->model->device_reason() + ")");
    const std::vector<int> requested = select_render_frames(job.render, ctx->shot);
    ctx->guard.preflight(requested);
    line("shot", std::to_string(ctx->shot.size()) + " frames (" + format_frame_spec(ctx->shot) + ")");
    if (requested.empty()) {
        line("frames", "none: this run's share of the job is empty (nothing to do)");
        return v;
    }
    const FrameSelection sel = select_frames(*ctx, requested);
    for (const FrameResult& r : sel.missing) v.warnings.push_back(r.message);
    if (!sel.missing.empty()) v.exit_code = ExitCode::Partial;
    line("frames", std::to_string(sel.todo.size()) + " to render (" + (sel.todo.empty() ? "none" : format_frame_spec(sel.todo)) +
                       ")" + (sel.skipped.empty() ? "" : ", " + std::to_string(sel.skipped.size()) + " kept (complete, same settings)") +
                       (sel.rerender.empty() ? "" : ", " + std::to_string(sel.rerender.size()) + " to render again"));
    if (sel.todo.empty()) return v;
    check_output_folders(*ctx, sel.todo, false);
    plan_from_first_frame(*ctx, sel.todo.front());
    // Every plate of the run: there, its header readable, of the kind the first frame decided.
    std::vector<int> plates = sel.todo;
    if (job.depth.stabilize) {
        plates.clear();
        for (const PlannedFrame& p : plan_frames(*ctx, sel)) plates.push_back(p.frame);
    }
    for (int f : plates) {
        const std::string path = ctx->input.path(f);
        if (!fs::is_regular_file(path)) continue;   // missing plates: reported by select_frames above
        const PlateInfo info = probe_plate(path, f, job.input);
        if (job.input.colorspace == "auto" && plate_kind(info) != ctx->first_kind)
            throw InputError("frame " + std::to_string(f) + " (" + path + ") is " + info.format + " with " + plate_kind(info) + ", but frame " +
                             std::to_string(ctx->first_frame) + " was " + ctx->first_kind + ": input.colorspace auto "
                             "is decided from one frame; re-export the frame like the others, or set input.colorspace");
    }
    line("plates", std::to_string(plates.size()) + " checked: " + ctx->first_kind);
    // One forward at the processing size (the dry run above used a small one).
    const ReformatPlan& fp = ctx->first_plan;
    ModelInput probe;
    probe.width = fp.input_width, probe.height = fp.input_height;
    probe.chw.assign(static_cast<size_t>(3) * probe.width * probe.height, 0.5f);
    const auto t0 = Clock::now();
    try {
        ctx->model->infer({&probe});
    } catch (const RenderError& e) {
        throw ModelError(e.what());
    }
    line("forward", "one pass at the processing size " + std::to_string(fp.input_width) + "x" + std::to_string(fp.input_height) +
                        ": " + std::to_string(std::lround(ms_since(t0))) + " ms");
    line("reformat", std::to_string(fp.plate_width) + "x" + std::to_string(fp.plate_height) + " -> model input " +
                         std::to_string(fp.input_width) + "x" + std::to_string(fp.input_height) + ", depth back at plate size (" +
                         option_name(job.depth.upsample.method) + ")");
    line("depth", std::string("depth.Z ") + option_name(job.depth.kind) + ", normalize " + option_name(job.depth.normalize) +
                      (job.depth.stabilize ? ", stabilized" : ""));
    line("output", job.output.path + " (" + option_name(job.output.channels) + ", " + option_name(job.output.compression) +
                       ", overwrite " + option_name(job.output.overwrite) + ")");
    if (!job.output.preview.path.empty()) line("previews", job.output.preview.path);
    if (!job.pipeline.summary.empty()) line("summary", job.pipeline.summary);
    if (job.depth.normalize == Normalization::Sequence)
        line("stats", job.depth.stats_file.empty() ? default_stats_path(job.output.path) : job.depth.stats_file);
    if (!job.pipeline.review.empty()) line("review", job.pipeline.review);
    return v;
}

void write_failure_summary(const JobConfig& job, ExitCode code, const std::string& message) {
    if (job.pipeline.summary.empty()) return;
    try {
        const FrameSequence plates(job.input.path);
        const std::vector<int> shot = job.input.frames.empty() ? plates.frames_on_disk() : job.input.frames;
        OutputGuard::for_job(job, shot, job.model.path).check(job.pipeline.summary, OutputRole::Summary, "pipeline.summary");
        JobReport report;
        report.job_file = job.job_file;
        report.exit_code = code;
        report.error = message;
        write_summary_json(report, job.pipeline.summary);
    } catch (const std::exception& e) {   // e.g. the guard refused the summary path itself: the error says why
        log_debug("no failure summary: ", e.what());
    }
}

int abandon_frames_in_flight() { return detail::remove_live_temporaries(); }

void write_summary_json(const JobReport& r, const std::string& path) {
    using json = nlohmann::ordered_json;
    auto stages = [](const StageTimes& t) {
        return json{{"read_ms", t.read_ms}, {"color_ms", t.color_ms}, {"reformat_ms", t.reformat_ms},
                    {"infer_ms", t.infer_ms}, {"restore_ms", t.restore_ms}, {"write_ms", t.write_ms}};
    };
    std::string job_sha256;
    if (!r.job_file.empty()) {
        try {
            job_sha256 = sha256_file(r.job_file);
        } catch (const Error&) {   // the job file went away since it was read: say so in the summary
        }
    }
    json frames = json::array(), failed = json::array(), skipped = json::array();
    for (const FrameResult& f : r.frames) {
        json frame = {{"frame", f.frame}, {"status", f.status == ExitCode::Ok ? "rendered" : "failed"},
                      {"exit_class", exit_code_name(f.status)}, {"message", f.message},
                      {"input", f.input_path}, {"output", f.output_path}, {"seconds", f.seconds},
                      {"times", stages(f.times)}, {"nonfinite_plate_pixels", f.nonfinite_pixels},
                      {"out_of_range_pixels", f.out_of_range_pixels}, {"depth_values_clamped", f.depth_clamped}};
        if (!f.rerender_reason.empty()) frame["replaced_existing_because"] = f.rerender_reason;
        frames.push_back(frame);
        if (f.status != ExitCode::Ok) failed.push_back({{"frame", f.frame}, {"reason", f.message}});
    }
    for (const SkippedFrame& f : r.skipped_frames)
        skipped.push_back({{"frame", f.frame}, {"output", f.output_path}, {"reason", f.reason}});
    const json j = {
        {"schema", "depthbatch-summary/1"},
        {"depthbatch_version", DEPTHBATCH_VERSION},
        {"job", {{"file", r.job_file}, {"sha256", job_sha256}, {"settings_sha256", r.settings_sha256}}},
        {"model", {{"name", r.model_name}, {"path", r.model_path}, {"sha256", r.model_sha256}}},
        {"device", r.device},
        {"exit_code", static_cast<int>(r.exit_code)},
        {"exit_name", exit_code_name(r.exit_code)},
        {"error", r.error},
        {"frames_requested", {{"count", r.requested.size()}, {"spec", r.requested.empty() ? "" : format_frame_spec(r.requested)}}},
        {"rendered", r.rendered}, {"skipped", r.skipped}, {"failed", r.failed},
        {"failed_frames", failed}, {"skipped_frames", skipped},
        {"wall_s", r.wall_s}, {"render_s", r.render_s}, {"frames_per_s", r.wall_s > 0 ? r.rendered / r.wall_s : 0.0},
        {"worker_threads", r.worker_threads}, {"torch_threads", r.torch_threads},
        {"frames_in_flight", r.frames_in_flight}, {"stage_totals", stages(r.totals)},
        {"infer_busy_ms", r.infer_busy_ms}, {"infer_wait_ms", r.infer_wait_ms}, {"frames", frames}};
    // Paths are bytes: one that is not UTF-8 (a Latin-1 plate name) is written with U+FFFD in its place rather
    // than failing the summary (nlohmann's type_error 316).
    const std::string text = j.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    Publication pub = Publication::open(path, OutputRole::Summary, "pipeline.summary");
    {
        std::ofstream out(pub.temp_path());
        out << text << "\n";
        out.close();
        if (!out) throw RenderError(path + ": cannot write the JSON summary (" + std::strerror(errno) + ")");
    }
    pub.publish(true);
}

}  // namespace depthbatch
