// One frame's stages either side of the stage chain (job_context.h): prepare (read, colour, reformat, tiles) in
// parallel, finish (restore, tiles blended, convention, write, preview) in parallel; each on the frame's record.
#include "job_context.h"
#include "exr_depth_writer_pvt.h"
#include "depth_preview_pvt.h"

#include "depthbatch/log.h"

#include "depthbatch/error.h"
#include "depthbatch/passes.h"
#include "depthbatch/exr_metadata.h"

#include <OpenImageIO/imagebufalgo.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace depthbatch::detail {

// ---- per-frame stages ---------------------------------------------------------------------------

/// read + colour + reformat. Never throws: failures are recorded in the FrameRecord.
void prepare(const JobContext& ctx, const FirstFramePlan& first, FrameRecord& w) {
    try {
        auto t0 = Clock::now();
        w.plate_identity = plate_identity(w.result.input_path);
        w.plate = read_plate(w.result.input_path, w.result.frame, ctx.job.input);
        w.result.times.read_ms = ms_since(t0);
        // input.colorspace auto (and the reformat plan) were decided from one frame: a frame of another kind (a
        // float TIFF among 16-bit ones, a PNG named .exr) would be encoded by the wrong rule. Stop it here.
        check_auto_kind(ctx, first, *w.plate);
        t0 = Clock::now();
        OIIO::ImageBuf rgb = plate_rgb(*w.plate);
        const PixelStats px = first.color->apply(rgb);  // NaN/Inf -> 0, OCIO, into 0-1; counted
        w.result.nonfinite_pixels = px.nonfinite, w.result.out_of_range_pixels = px.out_of_range;
        w.result.times.color_ms = ms_since(t0);
        t0 = Clock::now();
        const JobConfig& job = ctx.job;
        const double aspect = pixel_aspect(job, w.plate->file_spec);
        w.plan = ReformatPlan::make(w.plate->width(), w.plate->height(), job.model.size, ctx.contract(), aspect);
        // The frame's camera (camera.h), where the model's metres or the passes need it.
        if (ctx.contract().reference_focal_px > 0 || !job.output.passes.empty()) {
            const ChanSample* sample = nullptr;
            if (ctx.chan) {
                const auto it = ctx.chan->find(w.result.frame);
                if (it == ctx.chan->end())
                    throw ConfigError("frame " + std::to_string(w.result.frame) + ": camera.chan " + job.camera.chan +
                                      " has no line for this frame");
                sample = &it->second;
            }
            const OIIO::ImageSpec& s = w.plate->file_spec;
            w.camera = make_plate_camera(
                job.camera, PlateWindows{s.x, s.y, s.width, s.height, s.full_x, s.full_y, s.full_width, s.full_height},
                aspect, sample);
        }
        w.input = w.plan.to_model_input(rgb);  // already finite and in 0-1: the colour stage clamped and counted
        if (w.write && w.plan.guided(job.depth.upsample)) w.guide = w.plan.make_guide(w.input, rgb);
        if (w.write)  // warm-up and statistics frames need the global prediction only
            for (const TileRect& r : tiles_for(job, w.plate->width(), w.plate->height())) {
                FrameTile t;
                t.rect = r;
                const OIIO::ROI& window = rgb.roi();
                OIIO::ImageBuf crop;
                if (!OIIO::ImageBufAlgo::cut(crop, rgb,
                                             OIIO::ROI(window.xbegin + r.x, window.xbegin + r.x + r.width,
                                                       window.ybegin + r.y, window.ybegin + r.y + r.height)))
                    throw RenderError("tile " + std::to_string(r.x) + "," + std::to_string(r.y) + ": " +
                                      library_error_line(crop.geterror()));
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

/// The range a preview's colours span, in written depth.Z values: the job's range (sequence, fixed or the frame's
/// own) through the same convention as the EXR, else this frame's 2nd/98th percentiles of what was written.
PreviewRange preview_range(const JobContext& ctx, const float* written, size_t count,
                           const std::optional<DepthRange>& range) {
    PreviewRange p;
    p.units = ctx.normalizer->units();
    if (range) {
        float ends[2] = {static_cast<float>(range->near_value), static_cast<float>(range->far_value)};
        ctx.normalizer->apply(ends, 2, &*range);
        p.near_value = ends[0], p.far_value = ends[1];
        return p;
    }
    const auto [lo, hi] = percentile_pair(std::vector<float>(written, written + count), 2.0, 98.0);
    const bool larger_is_nearer = ctx.normalizer->larger_is_nearer();
    p.near_value = larger_is_nearer ? hi : lo;
    p.far_value = larger_is_nearer ? lo : hi;
    return p;
}

/// model.tiles: each tile's depth at its rectangle of the plate, aligned to the global `depth` there (relative
/// models) and blended into it (tiling.h). `depth`: plate-size float, replaced by the blend.
void blend_tiles(const JobContext& ctx, FrameRecord& w, OIIO::ImageBuf& depth) {
    const int W = depth.spec().width, H = depth.spec().height;
    const float* global = static_cast<const float*>(depth.localpixels());
    const bool align = ctx.contract().kind != DepthKind::MetricDepth;
    TileBlender blender(W, H, ctx.job.model.tiles.overlap);
    for (FrameTile& t : w.tiles) {
        OIIO::ImageBuf tile = t.plan.restore(t.raw, ctx.job.depth.upsample, t.guide ? &*t.guide : nullptr);
        std::vector<float> values(static_cast<size_t>(t.rect.width) * t.rect.height);
        std::memcpy(values.data(), tile.localpixels(), values.size() * sizeof(float));
        if (align) {
            std::vector<float> under(values.size());
            for (int y = 0; y < t.rect.height; ++y)
                std::memcpy(&under[static_cast<size_t>(y) * t.rect.width],
                            global + static_cast<size_t>(t.rect.y + y) * W + t.rect.x,
                            static_cast<size_t>(t.rect.width) * sizeof(float));
            const auto [scale, shift] = align_to_global(values, under, std::max<size_t>(1, values.size() / 20000));
            for (float& v : values) v = static_cast<float>(scale * v + shift);
        }
        blender.add(t.rect, values);
        t = FrameTile();
    }
    const Plane blended = blender.result();
    std::memcpy(depth.localpixels(), blended.data.data(), blended.data.size() * sizeof(float));
    w.tiles.clear();
}

namespace {

/// output.passes of one frame (passes.h), at the plate's data window, from the converted depth (metres: the
/// PassPlan made sure).
struct PassPlanes {
    std::vector<std::vector<float>> planes;
    std::vector<ExtraChannel> channels;
};
/// The model's extra outputs that output.passes asks for, restored to the plate's data window bilinearly (from
/// the global prediction; tiles do not refine them): one plate-size plane per pass (empty for P and N), in the
/// plan's order. Call before w.depth is dropped.
std::vector<std::vector<float>> restore_extras(const JobContext& ctx, const FrameRecord& w) {
    std::vector<std::vector<float>> out;
    for (const PlannedPass& p : ctx.passes.passes()) {
        out.emplace_back();
        if (p.geometric()) continue;
        if (p.model_output >= w.depth.extra.size())
            throw RenderError("frame " + std::to_string(w.result.frame) + ": the model gave no extra output '" +
                              p.name + "'");
        DepthImage plane;  // the extra output on the depth's grid, nothing else
        plane.width = w.depth.width, plane.height = w.depth.height, plane.data = w.depth.extra[p.model_output];
        const OIIO::ImageBuf b = w.plan.restore(plane, UpsampleSettings{});
        const float* v = static_cast<const float*>(b.localpixels());
        out.back().assign(v, v + static_cast<size_t>(b.spec().width) * b.spec().height);
    }
    return out;
}

PassPlanes compute_passes(const JobContext& ctx, const FrameRecord& w, const float* depth,
                          std::vector<std::vector<float>>& extras) {
    PassPlanes out;
    const JobConfig& job = ctx.job;
    if (ctx.passes.empty()) return out;
    if (ctx.passes.geometric() && !w.camera)
        throw RenderError("frame " + std::to_string(w.result.frame) + ": passes without a camera");
    const int W = w.plate->width(), H = w.plate->height();
    const OIIO::TypeDesc type =
        job.output.passes_type == PassPixelType::Half ? OIIO::TypeDesc::HALF : OIIO::TypeDesc::FLOAT;
    out.planes.reserve(3 * ctx.passes.passes().size());  // no reallocation: channels point into the planes
    for (size_t k = 0; k < ctx.passes.passes().size(); ++k) {
        const PlannedPass& p = ctx.passes.passes()[k];
        if (!p.geometric()) {  // a model's extra output: one channel
            out.planes.push_back(std::move(extras[k]));
            out.channels.push_back({p.channels.front(), out.planes.back().data(), type});
            continue;
        }
        float* plane[3];
        for (int c = 0; c < 3; ++c) {
            out.planes.emplace_back(static_cast<size_t>(W) * H);
            plane[c] = out.planes.back().data();
            out.channels.push_back({p.channels[c], plane[c], type});
        }
        if (p.kind == PlannedPass::Kind::Position) position_pass(depth, W, H, *w.camera, plane);
        else normal_pass(depth, W, H, *w.camera, plane);
    }
    return out;
}

}  // namespace

/// restore + depth convention + write.
void finish(const JobContext& ctx, const FirstFramePlan& first, FrameRecord& w,
            const std::optional<DepthRange>& sequence_range, const Metadata& job_meta) {
    if (w.failed() || !w.write) return;
    try {
        auto t0 = Clock::now();
        std::optional<DepthRange> range = sequence_range;
        bool flat_frame = false;
        if (ctx.normalizer->needs_frame_range()) {
            const auto [lo, hi] =
                percentile_pair(w.depth.data, ctx.job.depth.percentile_low, ctx.job.depth.percentile_high);
            range = ctx.normalizer->range_from_percentiles(lo, hi);
            flat_frame = range->near_value == range->far_value;  // a blank or slate frame: no range to spread
        }
        if (w.depth.negative)
            log_warning("frame ", w.result.frame, ": the model returned ", w.depth.negative,
                        " negative metric depth values (min ", w.depth.negative_min,
                        " m); kept as they are, not clamped to 0 (depth.convention ",
                        option_name(ctx.normalizer->kind()), ")");
        OIIO::ImageBuf depth = w.plan.restore(w.depth, ctx.job.depth.upsample, w.guide ? &*w.guide : nullptr);
        std::vector<std::vector<float>> extras = restore_extras(ctx, w);
        w.depth = DepthImage();
        w.guide.reset();
        if (!w.tiles.empty()) blend_tiles(ctx, w, depth);
        float* values = static_cast<float*>(depth.localpixels());
        w.result.depth_clamped = ctx.normalizer->apply(
            values, static_cast<size_t>(depth.spec().width) * depth.spec().height, range ? &*range : nullptr);
        w.result.times.restore_ms = ms_since(t0);
        if (flat_frame && depth.spec().width > 0 && depth.spec().height > 0)
            log_warning("frame ", w.result.frame, ": the model's depth is one value (", range->near_value,
                        ") between the ",
                        "frame's percentiles, so depth.normalize frame has nothing to map: depth.Z is ", values[0],
                        " everywhere (a blank or slate frame? depth.normalize sequence maps it by the shot's range)");

        t0 = Clock::now();
        Metadata meta = job_meta;
        for (auto& kv : ctx.normalizer->metadata(range ? &*range : nullptr)) meta.push_back(kv);
        meta.push_back({exr_meta::kSource, w.result.input_path});
        meta.push_back({exr_meta::kFrame, std::to_string(w.result.frame)});
        if (!w.plate_identity.empty()) meta.push_back({exr_meta::kPlateIdentity, w.plate_identity});
        if (!w.context_plates.empty()) meta.push_back({exr_meta::kContextPlates, w.context_plates});
        if (!w.lacked.empty()) meta.push_back({exr_meta::kTemporalContext, "cut: " + w.temporal_cut()});
        if (w.result.depth_clamped)
            meta.push_back({exr_meta::kDepthClampedValues, std::to_string(w.result.depth_clamped)});
        if (w.camera) {
            meta.push_back({exr_meta::kFocalPx, metadata_number(w.camera->fx)});
            if (ctx.contract().reference_focal_px > 0)
                meta.push_back({exr_meta::kProcessingFocalPx,
                                metadata_number(processing_focal_px(w.camera->fx, w.plan.pixel_aspect,
                                                                    w.plan.plate_width, w.plan.plate_height,
                                                                    w.plan.scaled_width, w.plan.scaled_height))});
        }
        // The output keeps the plate's stored (squeezed) grid: its pixel aspect is the plate's, also where the
        // job states it for a file that lacks it (the file would otherwise say 1).
        // input.pixel_aspect: ignore (1) writes 1 too, as the passes were computed with square pixels.
        if (ctx.job.input.pixel_aspect)
            w.plate->file_spec.attribute("PixelAspectRatio", static_cast<float>(*ctx.job.input.pixel_aspect));
        // The plate's own colour tags describe its RGB as read: wrong once the RGB is converted to scene_linear,
        // and claims without RGB at all (oiio:ColorSpace and depthbatch/colorspace_rgb say what is written).
        if (ctx.job.output.channels == OutputChannels::Depth || first.passthrough->converts())
            for (const char* tag : {"chromaticities", "colorInteropID", "oiio:ColorSpace"})
                w.plate->file_spec.erase_attribute(tag);
        const PassPlanes passes = compute_passes(ctx, w, values, extras);
        ExrWriteOptions options = ctx.job.output;
        options.pixel_type = first.passthrough->pixel_type(options.pixel_type, *w.plate);  // auto, for this plate
        if (options.channels != OutputChannels::Depth)
            first.passthrough->apply(*w.plate);  // to scene_linear (or nothing)
        if (!w.result.rerender_reason.empty()) options.overwrite = OverwritePolicy::Overwrite;  // a stale output
        Publication out = ctx.guard.open(w.result.output_path, OutputRole::DepthFrame);
        write_depth_exr(out, *w.plate, depth, meta, options, passes.channels);
        w.result.times.write_ms = ms_since(t0);
        if (ctx.preview) {
            const std::string path = ctx.preview->path(w.result.frame);
            try {
                const size_t n = static_cast<size_t>(depth.spec().width) * depth.spec().height;
                Publication out = ctx.guard.open(path, OutputRole::Preview);
                write_depth_preview(out, depth, preview_range(ctx, values, n, range), *ctx.colormap,
                                    ctx.job.output.preview.size, "frame " + std::to_string(w.result.frame));
            } catch (const std::exception& e) {  // a preview never fails a frame
                log_warning("frame ", w.result.frame, ": preview ", path, " not written: ", e.what());
            }
        }
    } catch (const Error& e) {
        w.fail(e);
    }
    w.plate.reset();
}

}  // namespace depthbatch::detail
