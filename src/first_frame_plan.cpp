// The plan made from the job's first frame to render (job_context.h): its colour transform and plate kind, the
// reformat plan (and tiles), the passthrough colour, the channel checks, the precision check and the warm-up at the
// shapes the job will feed its model. Everything here runs once, before the frames flow, for render and validate.
#include "job_context.h"

#include "depthbatch/error.h"
#include "depthbatch/log.h"

#include <OpenImageIO/strutil.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace fs = std::filesystem;

namespace depthbatch {
namespace detail {

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

AutoColorspaceKind auto_kind(const ColorTransform& color, const PlateInfo& plate) {
    return {plate_kind(plate), color.auto_for(plate)};
}

void check_auto_kind(const JobContext& ctx, const FirstFramePlan& first, const PlateInfo& plate) {
    if (ctx.job.input.colorspace != "auto") return;
    if (const AutoColorspaceKind kind = auto_kind(*first.color, plate); kind != first.kind)
        throw InputError("frame " + std::to_string(plate.frame) + " (" + plate.path + ") is " + plate.format +
                         " with " + kind.text() + ", but frame " + std::to_string(first.frame) + " was " +
                         first.kind.text() + ": input.colorspace auto was decided from frame " +
                         std::to_string(first.frame) + " ('" + first.color->from() +
                         "') and would be wrong here. Re-export the frame like the others, or set "
                         "input.colorspace");
}

std::vector<ForwardShape> warmup_shapes(const JobContext& ctx, const FirstFramePlan& first) {
    const JobConfig& job = ctx.job;
    const ReformatPlan& fp = first.reformat;
    const int batch = std::max(1, job.model.batch);
    if (ctx.contract().multi_frame())  // the video windows: model.batch windows of W frames a forward
        return {ForwardShape{batch, ctx.contract().temporal.window, fp.input_width, fp.input_height}};
    std::vector<ForwardShape> shapes{ForwardShape{batch, 0, fp.input_width, fp.input_height}};
    if (const auto tiles = tiles_for(job, fp.plate_width, fp.plate_height); !tiles.empty()) {
        const ReformatPlan tp =
            ReformatPlan::make(tiles[0].width, tiles[0].height, job.model.size, ctx.contract(), fp.pixel_aspect);
        const ForwardShape t{std::min(batch, static_cast<int>(tiles.size())), 0, tp.input_width, tp.input_height};
        if (t.width != fp.input_width || t.height != fp.input_height) shapes.push_back(t);
        else shapes[0].batch = std::max(shapes[0].batch, t.batch);
    }
    return shapes;
}

std::optional<PrecisionCheck> check_precision(const JobContext& ctx, const FirstFramePlan& first) {
    const Precision asked = ctx.model->precision();
    if (asked != Precision::Fp16 && asked != Precision::Bf16) return std::nullopt;
    const int frame = first.frame;
    FrameRecord w(0, frame, 0);
    w.write = false;  // the global prediction's input only
    w.result.input_path = ctx.input.path(frame);
    prepare(ctx, first, w);
    if (w.failed()) {  // the render fails this frame itself and says why
        log_warning("model.precision ", option_name(asked), ": not checked against fp32 (frame ", frame,
                    " could not be "
                    "prepared: ",
                    w.result.message, ")");
        return std::nullopt;
    }
    PrecisionCheck check;
    try {
        check = ctx.model->check_precision(w.input);
    } catch (const RenderError& e) {
        throw ModelError(e.what());
    }
    check.frame = frame;
    const double pct = check.error * 100, tol = check.tolerance * 100;
    if (check.in_force == Precision::Fp32 && !std::isfinite(pct))
        log_warning("model.precision ", option_name(asked), " (", check.how, "): on frame ", frame,
                    " it gives non-finite "
                    "depth or does not run: rendering in fp32 (the summary says so)");
    else if (check.in_force == Precision::Fp32)
        log_warning("model.precision ", option_name(asked), " (", check.how, "): on frame ", frame, " its depth is ",
                    pct, "% of the depth span from fp32's (99th percentile of the difference; tolerance ", tol,
                    "%): rendering in fp32 (the summary says so)");
    else
        log_info("model.precision ", option_name(asked), " (", check.how, "): frame ", frame, " within ", pct,
                 "% of the depth span of fp32 (99th percentile of the difference; tolerance ", tol, "%)");
    return check;
}

/// Colour transform and reformat plan from the first frame's header, then a dry run of the model: a
/// model that cannot run fails here with the model exit code, before any frame is read.
namespace {

/// A farm chunk or a --skip-existing run decides input.colorspace auto from its own first frame `frame`: it must
/// decide as a render of the whole shot would, from the shot's first frame (when that is on disk and readable; else
/// its own run says why). Throws InputError when the two frames are of different kinds.
void check_auto_colorspace_matches_shot(const JobContext& ctx, const FirstFramePlan& first) {
    const int frame = first.frame;
    const JobConfig& job = ctx.job;
    if (job.input.colorspace == "auto" && !ctx.shot.empty() && ctx.shot.front() != frame) {
        const int s = ctx.shot.front();
        std::optional<PlateInfo> shot_first;
        if (fs::is_regular_file(ctx.input.path(s))) try {
                shot_first = probe_plate(ctx.input.path(s), s, job.input);
            } catch (const Error&) {}
        if (const std::optional<AutoColorspaceKind> kind =
                shot_first ? std::optional<AutoColorspaceKind>(auto_kind(*first.color, *shot_first)) : std::nullopt;
            kind && *kind != first.kind)
            throw InputError("frame " + std::to_string(s) + " (" + shot_first->path + "), the shot's first, is " +
                             shot_first->format + " with " + kind->text() + ", but frame " + std::to_string(frame) +
                             ", this run's first, is " + first.kind.text() +
                             ": input.colorspace auto is decided from one frame, so the chunks of this shot would "
                             "decide differently. Re-export the frames like the others, or set input.colorspace");
    }
}

/// The RGB passthrough (passthrough_color.h: the plate's colorspace -> scene_linear; nothing for depth only), the
/// output's channels and pixel types said, and the checks of what the file will hold: a pass named like a plate
/// channel passed through (ConfigError naming `first`, the first frame's path), DWA's loss on half colour.
std::shared_ptr<const PassthroughColor> plan_passthrough_and_channels(const JobContext& ctx,
                                                                      const ColorTransform& color,
                                                                      const PlateInfo& plate,
                                                                      const std::string& first) {
    const JobConfig& job = ctx.job;
    const bool rgb_out = job.output.channels != OutputChannels::Depth;
    std::shared_ptr<const PassthroughColor> passthrough = PassthroughColor::create(
        color.config_path(), color.from(), rgb_out ? job.output.passthrough_colorspace : PassthroughColorspace::Plate);
    ExrWriteOptions options = job.output;
    std::string why;
    options.pixel_type = passthrough->pixel_type(job.output.pixel_type, plate, &why);
    if (rgb_out) {
        log_info("passthrough R, G, B: ",
                 passthrough->converts() ? "converted '" + passthrough->plate() + "' -> '" + passthrough->written() +
                                               "' (the config's scene_linear role)"
                                         : "as the plate has them ('" + passthrough->written() + "')",
                 "; ", why);
    }
    log_info(describe_output(plate, options));
    // output.passes beside a plate channel of the same name (a CG plate's own P under output.channels: all): a job
    // error now, not a write failure on every frame.
    const std::vector<std::string> pass_names = ctx.passes.channels();
    for (const std::string& name : output_channel_names(plate, options))
        if (std::find(pass_names.begin(), pass_names.end(), name) != pass_names.end())
            throw ConfigError("output.passes: " + first + " already has a channel " + name +
                              ", which output.channels " + option_name(job.output.channels) +
                              " passes through, and the passes write their own " + name +
                              ": set output.channels: rgba (the plate's colour and alpha only) or leave that pass out");
    if (const std::string passes = ctx.passes.describe(describe_camera(job.camera), job.output.passes_type);
        !passes.empty())
        log_info("passes ", passes);
    // OpenEXR's DWA codecs quantize half colour channels (R, G, B, Y, RY, BY); float channels, depth.Z among
    // them, stay lossless.
    if (job.output.compression == Compression::Dwaa && job.output.channels != OutputChannels::Depth)
        log_warning(
            "output.compression dwaa is lossy on the half R, G, B passthrough channels (OpenEXR's DWA "
            "quantizes half colour channels); depth.Z is float and stays lossless. Use zip, zips or piz "
            "for a bit-exact passthrough");
    return passthrough;
}

/// A PixelAspectRatio outside 0.01-100 is treated as square pixels: said, naming `first`.
void warn_unbelievable_pixel_aspect(const JobConfig& job, const std::string& first, const OIIO::ImageSpec& spec) {
    if (const float a = spec.get_float_attribute("PixelAspectRatio", 1.0f);
        !job.input.pixel_aspect && pixel_aspect(job, spec) != a)
        log_warning(first, ": PixelAspectRatio ", a,
                    " is not a believable pixel aspect (0.01 to 100): treated as square "
                    "pixels (1) and written as the file has it; set input.pixel_aspect if the plate is anamorphic");
}

/// The forward passes before frame 1: the warm-up (model.warmup) at the shapes the job feeds, or one small probe; it is
/// the dry run too. A RenderError of either is the model's: thrown as ModelError (exit 4).
void dry_run_forward(const JobContext& ctx, const FirstFramePlan& first) {
    const JobConfig& job = ctx.job;
    // The warm-up at the shapes the job feeds (model.warmup passes; on CUDA 3 by default: TorchScript's profiling
    // executor records the first forward of a shape and optimizes, fusers included, on the second, and cuDNN's
    // autotuning runs on the first; on the CPU 0, a farm chunk of a few frames gains nothing) is the dry run
    // too. Without one, a fixed-size (traced) model is tried at its one size and any other at a small size (64 px
    // rounded up to its multiple), which catches a file that is not a depth model without paying for a full-size
    // forward (a full Depth Anything forward is seconds on a CPU).
    const int warmup = job.model.warmup >= 0 ? job.model.warmup : (ctx.model->on_cuda() ? 3 : 0);
    try {
        if (ctx.contract().any_view()) {  // a camera solve: two small views, once (infer_views)
            ModelInput probe;
            const int m = std::max(1, ctx.contract().multiple);
            probe.width = probe.height = (64 + m - 1) / m * m;
            probe.chw.assign(static_cast<size_t>(3) * probe.width * probe.height, 0.5f);
            ctx.model->infer_views({&probe, &probe});
            return;
        }
        if (warmup > 0) {
            const std::vector<ForwardShape> shapes = warmup_shapes(ctx, first);
            ctx.model->warm_up(shapes, warmup);
            std::string list;
            for (const ForwardShape& shape : shapes) list += (list.empty() ? "" : ", ") + shape.text();
            log_info("model.warmup: ", warmup, " forward pass(es) at each shape the job feeds (", list, ") in ",
                     std::lround(ctx.model->stats().warmup_ms), " ms");
        } else {
            ModelInput probe;
            const int m = std::max(1, ctx.contract().multiple);
            const int small = (64 + m - 1) / m * m;
            const ReformatPlan& fp = first.reformat;
            probe.width = ctx.contract().fixed_size ? fp.input_width : std::min(small, fp.input_width);
            probe.height = ctx.contract().fixed_size ? fp.input_height : std::min(small, fp.input_height);
            probe.chw.assign(static_cast<size_t>(3) * probe.width * probe.height, 0.5f);
            ctx.model->infer({&probe});
        }
    } catch (const RenderError& e) {
        throw ModelError(e.what());
    }
}

/// The log lines of the reformat (plate -> model input -> depth back) and of the tiles, when the job has them.
void log_reformat(const JobContext& ctx, const FirstFramePlan& first, const OIIO::ImageSpec& spec) {
    const JobConfig& job = ctx.job;
    const ReformatPlan& fp = first.reformat;
    std::ostringstream aspect;
    if (fp.pixel_aspect != 1.0)
        aspect << " (pixel aspect " << fp.pixel_aspect << ": desqueezed for the model, written on the stored grid)";
    log_info("reformat ", spec.width, "x", spec.height, aspect.str(), " -> ", fp.scaled_width, "x", fp.scaled_height,
             " -> model input ", fp.input_width, "x", fp.input_height, ", depth ",
             option_name(job.depth.upsample.method),
             fp.guided(job.depth.upsample) || job.depth.upsample.method == DepthUpsample::Bilinear
                 ? ""
                 : " (bilinear here: no enlargement)");
    if (const auto tiles = tiles_for(job, spec.width, spec.height); !tiles.empty()) {
        const ReformatPlan tp =
            ReformatPlan::make(tiles[0].width, tiles[0].height, job.model.size, ctx.contract(), fp.pixel_aspect);
        const int per_batch = std::max(1, job.model.batch);
        log_info("tiles: ", tiles.size(), " of ", tiles[0].width, "x", tiles[0].height,
                 " px (overlap >= ", job.model.tiles.overlap, " px), each at model input ", tp.input_width, "x",
                 tp.input_height, ": ", 1 + tiles.size(), " forwards a frame (",
                 1 + (tiles.size() + per_batch - 1) / per_batch, " passes at batch ", per_batch, ")");
    }
}

}  // namespace

FirstFramePlan plan_from_first_frame(const JobContext& ctx, int frame) {
    const JobConfig& job = ctx.job;
    const std::string path = ctx.input.path(frame);
    const PlateInfo plate = probe_plate(path, frame, job.input);  // part/view, deep, channels: fails here
    const OIIO::ImageSpec& spec = plate.file_spec;
    FirstFramePlan first;
    first.frame = frame;
    log_info("plate ", plate.describe());
    // Never enlarged: said, not hidden, when the job asked for the size (the default on a small plate says nothing).
    if (ctx.preview && job.output.preview.size_given && job.output.preview.size > std::max(spec.width, spec.height))
        log_warning("output.preview.size ", job.output.preview.size, " is larger than the plate (", spec.width, "x",
                    spec.height, "): previews are written at the plate's size, ", std::max(spec.width, spec.height),
                    " px on the long side (they are never enlarged)");
    first.color = ColorTransform::create(job.color, job.input.colorspace, ctx.contract().colorspace, &plate);
    first.kind = auto_kind(*first.color, plate);
    check_auto_colorspace_matches_shot(ctx, first);
    first.passthrough = plan_passthrough_and_channels(ctx, *first.color, plate, path);
    warn_unbelievable_pixel_aspect(job, path, spec);
    first.reformat =
        ReformatPlan::make(spec.width, spec.height, job.model.size, ctx.contract(), pixel_aspect(job, spec));
    first.precision_check = check_precision(ctx, first);
    dry_run_forward(ctx, first);
    log_reformat(ctx, first, spec);
    return first;
}

}  // namespace detail
}  // namespace depthbatch
