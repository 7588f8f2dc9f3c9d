// depthbatch — `depthbatch info MODEL`: see model_description.h.
#include "depthbatch/model_description.h"

#include "depthbatch/error.h"
#include "depthbatch/model_contract.h"

#include <memory>

namespace depthbatch {

void describe_model(std::ostream& out, const DepthModel& model) {
    const ModelContract& c = model.contract();
    out << "model        " << model.path() << "\n"
        << "sha256       " << model.sha256() << "\n"
        << "name         " << c.name << "\n"
        << "contract     " << (c.embedded ? "embedded depthbatch.json" : "none (from job keys)") << "\n"
        << "input        RGB [0,1] in '" << c.colorspace << "', multiple of " << c.multiple << " px";
    if (c.height) out << ", size " << c.width << "x" << c.height << " (w x h)";
    out << (c.fixed_size ? ", fixed size" : ", any size") << "\n";
    if (c.multi_frame()) {  // a video model: its clips and the windowing it is run with (video_window_stage.h)
        const TemporalWindowing& t = c.temporal;
        std::string keys;
        for (int k : t.keyframes) keys += (keys.empty() ? "" : ",") + std::to_string(k);
        out << "frames       " << c.frames << " (multi-frame: [B,T,3,H,W] -> [B,T,H,W], T 1.." << c.frames << ")\n"
            << "temporal     window " << t.window << ", overlap " << t.overlap << " (stride " << t.stride()
            << "), keyframes [" << keys << "], crossfade " << t.crossfade << ", align " << align_name(t.align) << "\n";
    }
    if (c.any_view())  // an any-view model: the camera solve's windows (camera_solve.h)
        out << "frames       " << c.frames << " (any-view: [B,S,3,H,W] -> depth, camera per view, S 1.." << c.frames
            << ")\n"
            << "views        window " << c.views.window << ", overlap " << c.views.overlap << ", pose "
            << (c.views.pose.empty() ? std::string("not stated") : c.views.pose)
            << " (it solves a shot's camera: camera.solve.model; it does not render)\n";
    out << "output       "
        << (c.embedded ? std::string(depth_kind_name(c.kind)) + (c.units.empty() ? "" : " (" + c.units + ")")
                       : std::string("unknown: the job must state model.kind"))
        << ", at most " << c.max_scale << "x the input's height and width"
        << (c.max_scale != 4.0 ? " (output.max_scale)" : "") << "\n";
    if (c.reference_focal_px > 0)
        out << "focal        metric for a " << c.reference_focal_px
            << " px focal length at the processing size (output.reference_focal_px): metres = raw x "
               "focal_px / "
            << c.reference_focal_px
            << ", focal_px = (fx + fy) / 2; the job states the "
               "camera (camera.focal, camera.fov or camera.focal_px)\n";
    for (const auto& e : c.extra_outputs)
        out << "extra output " << e.name << " -> EXR channel " << e.channel << " (output.passes: [" << e.name << "])\n";
    out << "parameters   " << model.parameter_count() << "\n"
        << "module       "
        << (model.traced() ? "traced (torch.jit.trace: fixed input size)" : "scripted (torch.jit.script)") << "\n";
    if (c.embedded)  // the contract's exported_by.torch (docs/models.md "Which LibTorch loads a model")
        out << "exported by  "
            << (c.exported_torch.empty() ? std::string("not recorded (exported before depthbatch recorded it)")
                                         : "torch " + c.exported_torch)
            << "; running on LibTorch " << libtorch_version() << "\n";
    for (const auto& [k, v] : c.provenance)
        out << k << std::string(k.size() < 13 ? 13 - k.size() : 1, ' ') << v
            << (k == "license" && is_non_commercial_license(v)
                    ? " (forbids commercial use: a job renders it only with model.accept_license: " + v + ")"
                    : std::string())
            << "\n";
}

void describe_model(std::ostream& out, const std::string& model_path) {
    ModelSettings options;
    options.path = model_path;
    options.device = ModelDevice::cpu();
    std::unique_ptr<DepthModel> model;
    try {
        model = DepthModel::load(options);
    } catch (const MissingContractError&) {
        // No depthbatch.json: load anyway to show what the file itself tells (size if traced, parameters).
        options.contract.kind = DepthKind::RelativeInverseDepth;
        model = DepthModel::load(options);
    }
    describe_model(out, *model);
}

}  // namespace depthbatch
