// depthbatch — output.passes planned once for a job (pass_plan.h).
#include "pass_plan.h"

#include "depthbatch/error.h"

#include <OpenImageIO/strutil.h>

#include <algorithm>

namespace depthbatch {

PassPlan::PassPlan(const std::vector<std::string>& passes, const ModelContract& contract, const std::string& model_path,
                   const DepthNormalizer& depth, bool has_focal) {
    for (const std::string& p : passes) {
        PlannedPass planned;
        planned.name = p;
        if (is_geometric_pass(p)) {
            if (!depth.metres()) {
                const std::string depth_units = depth.units();
                throw ConfigError("output.passes: " + p + " needs depth in metres, and depth.Z here holds " +
                                  (depth_units.empty() ? std::string("values without units") : depth_units) +
                                  " (model kind " + depth_kind_name(contract.kind) + ", depth.convention " +
                                  option_name(depth.kind()) +
                                  "). A metric model with depth.convention raw "
                                  "or metric gives metres; a relative model needs depth.convention: metric with "
                                  "depth.near and depth.far in metres and depth.normalize: frame or sequence");
            }
            if (!has_focal)
                throw ConfigError(
                    "output.passes: " + p +
                    " needs the shot's camera: set camera.focal (mm, with "
                    "camera.haperture), camera.fov (horizontal degrees) or camera.focal_px (plate pixels)");
            planned.kind = p == "P" ? PlannedPass::Kind::Position : PlannedPass::Kind::Normals;
            for (const char* axis : {".X", ".Y", ".Z"}) planned.channels.push_back(p + axis);
            passes_.push_back(std::move(planned));
            continue;
        }
        const auto& extras = contract.extra_outputs;
        const auto e = std::find_if(extras.begin(), extras.end(), [&](const ExtraOutput& x) { return x.name == p; });
        if (e == extras.end()) {
            std::string declared;
            for (const ExtraOutput& x : extras)
                declared += (declared.empty() ? "" : ", ") + x.name + " (" + x.channel + ")";
            throw ConfigError("output.passes: '" + p + "' is not P or N, and " + model_path +
                              " declares no extra output of that name (its contract's output.extra_outputs: " +
                              (declared.empty() ? std::string("none") : declared) + ")");
        }
        planned.kind = PlannedPass::Kind::ModelOutput;
        planned.channels = {e->channel};
        planned.model_output = static_cast<size_t>(e - extras.begin());
        passes_.push_back(std::move(planned));
    }
}

bool PassPlan::geometric() const {
    return std::any_of(passes_.begin(), passes_.end(), [](const PlannedPass& p) { return p.geometric(); });
}

std::vector<std::string> PassPlan::channels() const {
    std::vector<std::string> names;
    for (const PlannedPass& p : passes_) names.insert(names.end(), p.channels.begin(), p.channels.end());
    return names;
}

std::string PassPlan::describe(const std::string& camera, PassPixelType type) const {
    const std::vector<std::string> names = channels();
    if (names.empty()) return {};
    return OIIO::Strutil::join(names, ", ") + (type == PassPixelType::Half ? " half" : " float") +
           (camera.empty() ? "" : "; camera " + camera);
}

}  // namespace depthbatch
