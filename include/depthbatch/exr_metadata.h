// depthbatch — the depthbatch/* metadata an output EXR carries: every name in one table, with what it holds.
//
// Text attributes of the EXR header (OpenEXR string attributes), written beside the plate's own metadata. The
// table is the one place the names are spelled: the writers use the constants, `--skip-existing` reads them back
// (exr_depth_writer.h: why_output_is_stale), and docs/output.md's table is generated from it
// (metadata_keys_markdown; tests/unit/docs_test.cpp holds the page to it).
#pragma once

#include <string>
#include <vector>

namespace depthbatch {

/// The names, one constant each (the table below says what each holds).
namespace exr_meta {
inline constexpr const char* kPrefix = "depthbatch/";             ///< every name starts so
inline constexpr const char* kModelPrefix = "depthbatch/model_";  ///< + a contract provenance key (license, ...)
inline constexpr const char* kVersion = "depthbatch/version";
inline constexpr const char* kModel = "depthbatch/model";
inline constexpr const char* kModelSha256 = "depthbatch/model_sha256";
inline constexpr const char* kModelLicense = "depthbatch/model_license";
inline constexpr const char* kLicenseAccepted = "depthbatch/license_accepted";
inline constexpr const char* kModelSource = "depthbatch/model_source";
inline constexpr const char* kModelSourceSha256 = "depthbatch/model_source_sha256";
inline constexpr const char* kModelVariant = "depthbatch/model_variant";
inline constexpr const char* kModelDomain = "depthbatch/model_domain";
inline constexpr const char* kModelOutputKind = "depthbatch/model_output_kind";
inline constexpr const char* kSettingsSha256 = "depthbatch/settings_sha256";
inline constexpr const char* kDevice = "depthbatch/device";
inline constexpr const char* kPrecision = "depthbatch/precision";
inline constexpr const char* kColorspaceIn = "depthbatch/colorspace_in";
inline constexpr const char* kColorspaceModel = "depthbatch/colorspace_model";
inline constexpr const char* kDepthConvention = "depthbatch/depth_convention";
inline constexpr const char* kNormalize = "depthbatch/normalize";
inline constexpr const char* kDepthUnits = "depthbatch/depth_units";
inline constexpr const char* kLargerIsNearer = "depthbatch/larger_is_nearer";
inline constexpr const char* kNearIs = "depthbatch/near_is";
inline constexpr const char* kInverseZeroMeans = "depthbatch/inverse_zero_means";
inline constexpr const char* kRangeNearValue = "depthbatch/range_near_value";
inline constexpr const char* kRangeFarValue = "depthbatch/range_far_value";
inline constexpr const char* kNear = "depthbatch/near";
inline constexpr const char* kFar = "depthbatch/far";
inline constexpr const char* kStatsSampleFrames = "depthbatch/stats_sample_frames";
inline constexpr const char* kStatsPercentiles = "depthbatch/stats_percentiles";
inline constexpr const char* kStabilize = "depthbatch/stabilize";
inline constexpr const char* kStabilizeWindow = "depthbatch/stabilize_window";
inline constexpr const char* kTemporalContext = "depthbatch/temporal_context";
inline constexpr const char* kFocalPx = "depthbatch/focal_px";
inline constexpr const char* kProcessingFocalPx = "depthbatch/processing_focal_px";
inline constexpr const char* kCamera = "depthbatch/camera";
inline constexpr const char* kCameraSolve = "depthbatch/camera_solve";
inline constexpr const char* kCameraConsistency = "depthbatch/camera_consistency";
inline constexpr const char* kColorspaceRgb = "depthbatch/colorspace_rgb";
inline constexpr const char* kOiioColorSpace =
    "oiio:ColorSpace";  ///< OIIO's name for the RGB's colorspace (written by OpenEXR: exr_depth_writer.h)
inline constexpr const char* kTemporal = "depthbatch/temporal";
inline constexpr const char* kSource = "depthbatch/source";
inline constexpr const char* kFrame = "depthbatch/frame";
inline constexpr const char* kPlateIdentity = "depthbatch/plate_identity";
inline constexpr const char* kContextPlates = "depthbatch/context_plates";
inline constexpr const char* kStatsSha256 = "depthbatch/stats_sha256";
inline constexpr const char* kDepthClampedValues = "depthbatch/depth_clamped_values";
inline constexpr const char* kPlatePart = "depthbatch/plate_part";
inline constexpr const char* kPlateView = "depthbatch/plate_view";
inline constexpr const char* kPlateDepth = "depthbatch/plate_depth";
inline constexpr const char* kAlpha = "depthbatch/alpha";
}  // namespace exr_meta

/// One row of the table: a name and what it holds (Markdown, as docs/output.md shows it).
struct MetadataKey {
    const char* name;
    const char* holds;
};

/// Every depthbatch/* name an EXR can carry (and oiio:ColorSpace, which depthbatch sets), in docs/output.md's order.
const std::vector<MetadataKey>& metadata_keys();

/// docs/output.md's table: the header row and one row per metadata_keys() entry, "| `name` | holds |", each line
/// ending in '\n'.
std::string metadata_keys_markdown();

/// A number as the metadata writes it: 9 significant digits, the round trip of a float32 (FLT_DECIMAL_DIG, C11
/// 5.2.4.2.2): depth values are float32, and the focal lengths and distances a job states need no more.
std::string metadata_number(double value);

}  // namespace depthbatch
