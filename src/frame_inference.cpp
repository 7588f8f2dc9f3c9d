// The job's inference (job_context.h): the model's forward for a frame's records (the global prediction, then its
// tiles), and the job's stage chain (sequence_stage.h) around it. Runs in the pipeline's one serial step.
#include "job_context.h"

#include "depthbatch/log.h"

#include "depthbatch/error.h"
#include "depthbatch/video_window_stage.h"

#include <algorithm>
#include <cmath>

namespace depthbatch::detail {

/// Focal-dependent metric models (contract output.reference_focal_px): metres = raw * focal /
/// reference focal, with the frame's focal (camera.h: fx columns, fy = fx * pixel aspect rows) scaled to the
/// pixels the model saw and averaged, (fx' + fy') / 2, as DA3's own code does (processing_focal_px). The model
/// saw `plan.plate_width` x `plan.plate_height` plate pixels as `plan.scaled_width` x `plan.scaled_height`
/// (a tile: its own size).
void apply_focal(const JobContext& ctx, const ReformatPlan& plan, DepthImage& raw,
                 const std::optional<PlateCamera>& camera) {
    if (ctx.contract().reference_focal_px <= 0) return;
    if (!camera) throw RenderError("no camera for a focal-dependent model");  // prepare() made it or failed
    const double focal = processing_focal_px(camera->fx, plan.pixel_aspect, plan.plate_width, plan.plate_height,
                                             plan.scaled_width, plan.scaled_height);
    const float k = static_cast<float>(focal / ctx.contract().reference_focal_px);
    for (float& v : raw.data) v *= k;
}

namespace {

/// A frame's tiles through the model, model.batch at a time (all tiles of a frame have one size).
void infer_tiles(const JobContext& ctx, FrameRecord& f) {
    const size_t per_batch = static_cast<size_t>(std::max(1, ctx.job.model.batch));
    const auto t0 = Clock::now();
    for (size_t i = 0; i < f.tiles.size(); i += per_batch) {
        std::vector<const ModelInput*> inputs;
        for (size_t k = i; k < std::min(f.tiles.size(), i + per_batch); ++k) inputs.push_back(&f.tiles[k].input);
        std::vector<DepthImage> out = ctx.model->infer(inputs);
        for (size_t k = 0; k < out.size(); ++k) {
            FrameTile& t = f.tiles[i + k];
            t.raw = std::move(out[k]);
            t.input = ModelInput();
            apply_focal(ctx, t.plan, t.raw, f.camera);
        }
    }
    f.result.times.infer_ms += ms_since(t0);
}

/// A group's forward pass done (or failed: `out` unused): each record gets its depth, focal-corrected, and its
/// share of the forward time, then its tiles; a failure fails every record of the group, keeping its class (a model
/// that cannot run on this input exits 4).
void take_depth(const JobContext& ctx, const std::vector<FrameRecord*>& group,
                const std::function<std::vector<DepthImage>()>& wait, const std::function<double()>& forward_ms) {
    try {
        std::vector<DepthImage> out = wait();
        const double each = forward_ms() / static_cast<double>(group.size());
        for (size_t k = 0; k < group.size(); ++k) {
            group[k]->depth = std::move(out[k]);
            group[k]->result.times.infer_ms = each;
            apply_focal(ctx, group[k]->plan, group[k]->depth, group[k]->camera);
        }
        for (FrameRecord* f : group) infer_tiles(ctx, *f);
    } catch (const Error& e) {
        for (FrameRecord* f : group) f->fail(Error(e.code(), "frame " + std::to_string(f->frame) + ": " + e.what()));
    }
}

}  // namespace

void infer(const JobContext& ctx, std::vector<FrameRecord*>& frames) {
    size_t i = 0;
    while (i < frames.size()) {
        if (frames[i]->failed()) {
            ++i;
            continue;
        }
        std::vector<FrameRecord*> group{frames[i]};
        size_t j = i + 1;
        for (; j < frames.size() && !frames[j]->failed() && frames[j]->input.width == frames[i]->input.width &&
               frames[j]->input.height == frames[i]->input.height;
             ++j)
            group.push_back(frames[j]);
        std::vector<const ModelInput*> inputs;
        for (FrameRecord* f : group) inputs.push_back(&f->input);
        const auto t0 = Clock::now();
        double ms = 0;
        take_depth(
            ctx, group,
            [&] {
                std::vector<DepthImage> out = ctx.model->infer(inputs);
                ms = ms_since(t0);
                return out;
            },
            [&] { return ms; });
        i = j;
    }
}

StageChain make_stage_chain(const JobContext& ctx) {
    StageChain chain;
    const JobContext* c = &ctx;
    if (ctx.contract().multi_frame()) {
        // A failed forward fails the frames it takes down (the stage records the error in them).
        chain.add(std::make_unique<VideoWindowStage>(
            ctx.contract().temporal, ctx.job.model.batch,
            [c](const std::vector<std::vector<const ModelInput*>>& windows) {
                const auto t0 = Clock::now();
                std::vector<std::vector<DepthImage>> out = c->model->infer_clips(windows);
                const double ms = ms_since(t0);
                const ModelInput& in = *windows.front().front();
                log_info("video windows: ", windows.size(), " window(s) of ", windows.front().size(), " frames at ",
                         in.width, "x", in.height, " in ", std::lround(ms), " ms (",
                         std::lround(ms / static_cast<double>(windows.size())), " ms a window)");
                return out;
            }));
    } else {
        // One batch ahead: the model's thread is handed batch k+1 before batch k is waited for (depth_model.h:
        // submit), so on a GPU its upload and launch overlap batch k's forward and download.
        chain.add(std::make_unique<BatchInferenceStage>(
            ctx.job.model.batch, kInferenceLookahead, [c](std::vector<FrameRecord*>& frames) -> std::function<void()> {
                // The chain passes failed frames around its stages and ends a segment where the input size changes:
                // a batch holds frames of one size that were prepared.
                std::vector<const ModelInput*> inputs;
                for (FrameRecord* f : frames) inputs.push_back(&f->input);
                auto ticket = std::make_shared<InferenceTicket>();
                std::shared_ptr<Error> refused;
                try {
                    *ticket = c->model->submit(inputs);  // the inputs are staged here: the frames keep theirs
                } catch (const Error& e) {
                    refused = std::make_shared<Error>(e);
                }
                return [c, frames, ticket, refused] {
                    take_depth(
                        *c, frames,
                        [&] {
                            if (refused) throw *refused;
                            return ticket->wait();
                        },
                        [&] { return ticket->ms(); });
                };
            }));
    }
    if (ctx.job.depth.stabilize)
        chain.add(std::make_unique<StabilizerStage>(stabilize_radius(ctx.job), static_cast<int>(ctx.shot.size())));
    return chain;
}

}  // namespace depthbatch::detail
