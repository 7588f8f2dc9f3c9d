// depthbatch — output.passes planned once for a job: which passes, their EXR channels, what each needs (internal).
//
// A job's passes are its `output.passes` list, in its order: "P" (position, P.X P.Y P.Z), "N" (normals, N.X N.Y
// N.Z), both computed from the depth and the shot's camera (passes.h), or the name of an extra output the model's
// contract declares ("sky" -> its channel, e.g. "sky.A"). The plan is made once, by open_job (job_plan.cpp), and
// every later step (the log, validate, the channel clash check, each frame's finish) reads it: no other code
// compares pass names.
#pragma once

#include "depthbatch/depth_normalizer.h"
#include "depthbatch/exr_depth_writer.h"
#include "depthbatch/model_contract.h"
#include "depthbatch/passes.h"

#include <string>
#include <vector>

namespace depthbatch {

/// One pass of the job.
struct PlannedPass {
    enum class Kind { Position, Normals, ModelOutput };
    Kind kind = Kind::Position;
    std::string name;                   ///< as the job names it: "P", "N", or the contract's extra output ("sky")
    std::vector<std::string> channels;  ///< its EXR channels: P.X P.Y P.Z, N.X N.Y N.Z, or the contract's channel
    size_t model_output = 0;            ///< ModelOutput: its index in the contract's extra_outputs (DepthImage::extra)
    /// Position and normals: computed from metric depth and the camera; a model output is the model's own.
    bool geometric() const { return kind != Kind::ModelOutput; }
};

class PassPlan {
public:
    PassPlan() = default;  ///< no passes
    /// Plans `passes` (output.passes) for a model with `contract` (at `model_path`, named in errors). `depth` is
    /// what depth.Z holds (P and N need DepthNormalizer::metres()); `has_focal`: the job states the camera's focal
    /// length (camera.focal/fov/focal_px, or a .chan track with a field of view on every line).
    /// Throws ConfigError naming output.passes: P or N when depth.Z is not in metres (with the model kind and the
    /// depth convention in the message) or without a focal length; a name that is neither P, N nor an extra output
    /// of the contract (listing the ones it declares).
    PassPlan(const std::vector<std::string>& passes, const ModelContract& contract, const std::string& model_path,
             const DepthNormalizer& depth, bool has_focal);

    const std::vector<PlannedPass>& passes() const { return passes_; }
    bool empty() const { return passes_.empty(); }
    /// Any P or N: every frame needs the camera.
    bool geometric() const;
    /// Every EXR channel the passes write, in order.
    std::vector<std::string> channels() const;
    /// The passes in words for the log and validate: "P.X, P.Y, P.Z float; camera ..." ("" when there are none);
    /// `camera` is describe_camera()'s text, `type` output.passes_type.
    std::string describe(const std::string& camera, PassPixelType type) const;

private:
    std::vector<PlannedPass> passes_;
};

}  // namespace depthbatch
