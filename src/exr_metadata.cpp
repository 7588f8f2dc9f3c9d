// The depthbatch/* metadata table (exr_metadata.h).
#include "depthbatch/exr_metadata.h"

#include <sstream>

namespace depthbatch {

const std::vector<MetadataKey>& metadata_keys() {
    static const std::vector<MetadataKey> keys = {
        {exr_meta::kVersion, "the depthbatch version that wrote the file (`--version`, CMake's project version)"},
        {exr_meta::kModel, "the model's name (its contract's `name`, else the file's stem)"},
        {exr_meta::kModelSha256, "sha256 of the model file (`.pt`) as loaded"},
        {exr_meta::kModelLicense, "the contract's `license` (e.g. `MIT`, `CC-BY-NC-4.0`), when it states one"},
        {exr_meta::kLicenseAccepted,
         "the job's `model.accept_license`, when the model's licence forbids commercial use and the job accepted it "
         "(the frame is for non-commercial use only)"},
        {exr_meta::kModelSource, "the contract's `source`: where the weights came from (package, checkpoint file)"},
        {exr_meta::kModelSourceSha256, "the contract's `source_sha256`: the checkpoint's sha256"},
        {exr_meta::kModelVariant, "the contract's `variant` (e.g. `vits`), when it states one"},
        {exr_meta::kModelDomain, "the contract's training `domain` (e.g. `indoor`), when it states one"},
        {exr_meta::kModelOutputKind,
         "what the raw model output means: `metric_depth`, `relative_inverse_depth`, `relative_depth`"},
        {exr_meta::kSettingsSha256,
         "fingerprint of the job settings that change the pixels, and of the contents of the files they name: a "
         "`camera.chan`, an OCIO config in force (`color.config` or `$OCIO`) other than the shipped one "
         "(`--skip-existing` compares it: an edited config renders again)"},
        {exr_meta::kDevice, "the device that ran the model (`cpu`, `cuda:0`)"},
        {exr_meta::kPrecision,
         "CUDA jobs that do not run plain fp32 only: `tf32`, `fp16`, `bf16`, or `fp32 (fp16 asked: beyond the "
         "tolerance on the first frame)` when the precision check gave way to fp32"},
        {exr_meta::kColorspaceIn, "the plate's colorspace as read (`input.colorspace`, or what `auto` chose)"},
        {exr_meta::kColorspaceModel, "the model's colorspace (for `color.hdr: view`: the display / view)"},
        {exr_meta::kDepthConvention, "`depth.convention`: `raw`, `metric`, `inverse`, `normalized`"},
        {exr_meta::kNormalize, "`depth.normalize`: `raw`, `frame`, `sequence`, `fixed`"},
        {exr_meta::kDepthUnits, "units of depth.Z: `m`, `1/m` or empty (relative, normalized)"},
        {exr_meta::kLargerIsNearer,
         "`1` when larger depth.Z values are nearer (inverse, disparity, normalized with near = 1), else `0`"},
        {exr_meta::kNearIs, "normalized only: `1 (near = 1, far = 0)` or `0 (near = 0, far = 1)`"},
        {exr_meta::kInverseZeroMeans, "inverse only: what 0 means (`infinitely far (no depth)`)"},
        {exr_meta::kRangeNearValue,
         "normalized or metric with a range: the model value mapped to near (the sequence's or `fixed` range)"},
        {exr_meta::kRangeFarValue, "the same for far"},
        {exr_meta::kNear, "`depth.near` as the job gave it (metres), when it did"},
        {exr_meta::kFar, "`depth.far` as the job gave it (metres), when it did"},
        {exr_meta::kStatsSampleFrames, "`normalize: sequence`: the frames the sequence statistics were taken over"},
        {exr_meta::kStatsPercentiles, "`normalize: sequence`: the low and high percentiles used (`2,98`)"},
        {exr_meta::kStabilize, "`depth.stabilize`: the window (`centred: 4 frames on each side`)"},
        {exr_meta::kStabilizeWindow,
         "the window W: `depth.stabilize_window` as the job gave it, else 2 × `depth.stabilize_radius`"},
        {exr_meta::kTemporalContext,
         "a stabilized frame whose window lacked frames: `cut: 1010` (rendered again once they exist)"},
        {exr_meta::kFocalPx,
         "the shot's camera (`camera:`) or a focal-dependent model: the horizontal focal length used, in stored plate "
         "columns"},
        {exr_meta::kProcessingFocalPx,
         "focal-dependent metric models (DA3 metric): the focal at the processing size, fx and fy each scaled and "
         "averaged"},
        {exr_meta::kCameraSolve,
         "`camera.solve` in force: `estimated: solved from the plate by MODEL (sha256 ...): focal F px, motion M, "
         "metres from SOURCE; CHAN` (the focal and the camera are the solve's estimate, not a track)"},
        {exr_meta::kCameraConsistency,
         "`camera.solve` in force: the solve's consistency figure, the median relative error of each frame's depth "
         "reprojected into the next frame against that frame's depth (0.01 = 1%; docs/camera-solve.md)"},
        {exr_meta::kCamera, "the `camera:` section as used (focal, apertures or fov, `.chan` file)"},
        {exr_meta::kColorspaceRgb,
         "what the written R, G, B are in: the config's scene_linear colorspace, or the plate's "
         "(`output.passthrough_colorspace: plate`)"},
        {exr_meta::kOiioColorSpace,
         "the same, under OIIO's name (OIIO-based tools read it); absent when only depth.Z is written"},
        {exr_meta::kTemporal,
         "video models: the windows the shot was rendered with (`video windows: 32 frames, overlap 10, crossfade 8, "
         "align scale_shift`)"},
        {exr_meta::kSource, "the plate file this frame was made from"},
        {exr_meta::kFrame, "the frame number"},
        {exr_meta::kPlateIdentity,
         "the plate's size and modification time when read (`--skip-existing` re-renders a re-delivered plate)"},
        {exr_meta::kContextPlates,
         "stabilized frames and video models: the other plates the frame's depth was made from (`frames 1002-1010, "
         "sha256 ...`: their frame numbers and a sha256 over their identities as read); `--skip-existing` re-renders "
         "the frame when any of them was re-delivered ([Re-delivered "
         "plates](depth.md#re-delivered-plates-and-what-a-frame-records))"},
        {exr_meta::kStatsSha256,
         "`depth.normalize: sequence`: the sha256 of the sequence statistics the frame was normalized with (inputs, "
         "sample plates' identities and range); `--skip-existing` re-renders the frame once the sidecar in force is "
         "another"},
        {exr_meta::kDepthClampedValues, "how many depth values the convention clamped (normalized, clip), when any"},
        {exr_meta::kPlatePart, "a multi-part plate: the part read (index and name)"},
        {exr_meta::kPlateView, "a multi-view plate: the view read"},
        {exr_meta::kPlateDepth,
         "a plate that already held depth: what was done with it (kept under another name, replaced)"},
        {exr_meta::kAlpha, "a plate with unassociated alpha: the colour is as stored, not premultiplied"},
    };
    return keys;
}

std::string metadata_keys_markdown() {
    std::string out = "| key | what it holds |\n|---|---|\n";
    for (const MetadataKey& k : metadata_keys()) out += "| `" + std::string(k.name) + "` | " + k.holds + " |\n";
    return out;
}

std::string metadata_number(double value) {
    std::ostringstream s;
    s.precision(9);
    s << value;
    return s.str();
}

}  // namespace depthbatch
