// depthbatch — writing one output frame as OpenEXR, atomically.
//
// Channel layouts (output.channels; docs/colour.md "Plates and color" is the user-facing copy):
//   rgba   R,G,B (and A when the plate has alpha) passed through from the plate, then depth.Z (default).
//          Always unprefixed R,G,B,A whatever the plate's layer was called, so Nuke shows them as rgba;
//          grey plates pass their single channel through as R, G and B.
//   depth  depth.Z only.
//   all    a copy of every channel of the plate's part, under its own name, then depth.Z.
// The plate's own depth (a channel named Z or depth.Z; in a multi-view file also <view>.Z,
// depth.<view>.Z) never appears under those names next to ours: there is exactly one depth.Z, ours.
// output.existing_depth: "replace" (default) leaves the plate's own depth out; "rename" keeps it as
// Z_plate / depth.Z_plate (in `all`: its full name + "_plate", e.g. left.Z_plate), in the rgba and all
// layouts. Channel names are unique (a clash gets a numeric suffix).
// Pixel types (output.pixel_type): "auto" (the default) is resolved per plate before writing (passthrough_color.h:
// half for 8/10-bit plates whose codes survive it, else as "keep"; here, unresolved, it acts as "keep"). The
// R, G, B passed through are converted to scene_linear before they reach write_depth_exr (passthrough_color.h;
// output.passthrough_colorspace). pixel_type applies to the plate's channels only: channels depthbatch computes
// (source -1 in OutputChannel: depth.Z, and any pass derived from depth such as P/N) are always float32 — the
// hook for new passes is to add them with source -1 and TypeDesc::FLOAT. "keep" — half stays half, float stays float, integer plates
// (8/10/16-bit PNG/JPEG/TIFF/DPX) become float so code/255, code/1023 and code/65535 survive exactly (docs/cases.md
// 10: RGB = code/255 exactly); "half" / "float" — every passthrough channel in that type. depth.Z is always
// float32. For 8- and 10-bit plates "half" loses no code either: half's 11 significant bits put k/255 and
// k/1023 within half a code of k, so round(half(k / (2^b - 1)) * (2^b - 1)) = k for every code (tested for
// all of them; not for 12 bits), and it is 6 bytes a pixel less to compress (what Nuke writes by default).
// The data window and display window are the plate's; the plate's metadata is copied (minus attributes
// that describe the source file's encoding and would lie about the new file, and minus multiView: the
// output is single-view, its "view" attribute names the view the depth belongs to) and ours added
// under "depthbatch/".
// The file is written to a hidden temporary in the output folder and renamed into place: an interrupted
// or failed write never leaves a partial EXR under the final name.
#pragma once

#include "depthbatch/depth_preview.h"
#include "depthbatch/option_names.h"
#include "depthbatch/passthrough_color.h"
#include "depthbatch/plate.h"

#include <OpenImageIO/imagebuf.h>

#include <string>
#include <utility>
#include <vector>

namespace depthbatch {

using Metadata = std::vector<std::pair<std::string, std::string>>;

enum class OverwritePolicy { Error, Skip, Overwrite };  ///< output.overwrite
enum class Compression { Zip, Zips, Piz, Dwaa, None };  ///< output.compression (OpenEXR codecs)
enum class OutputChannels { Rgba, Depth, All };         ///< output.channels
enum class ExistingDepth { Replace, Rename };           ///< output.existing_depth
enum class PassPixelType { Float, Half };               ///< output.passes_type (P, N, mattes)
/// OverwritePolicy's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<OverwritePolicy, 3> option_names(OverwritePolicy) {
    return {{{OverwritePolicy::Error, "error"},
             {OverwritePolicy::Skip, "skip"},
             {OverwritePolicy::Overwrite, "overwrite"}}};
}
/// Compression's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<Compression, 5> option_names(Compression) {
    return {{{Compression::Zip, "zip"},
             {Compression::Zips, "zips"},
             {Compression::Piz, "piz"},
             {Compression::Dwaa, "dwaa"},
             {Compression::None, "none"}}};
}
/// OutputChannels's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<OutputChannels, 3> option_names(OutputChannels) {
    return {{{OutputChannels::Rgba, "rgba"}, {OutputChannels::Depth, "depth"}, {OutputChannels::All, "all"}}};
}
/// ExistingDepth's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<ExistingDepth, 2> option_names(ExistingDepth) {
    return {{{ExistingDepth::Replace, "replace"}, {ExistingDepth::Rename, "rename"}}};
}
/// PassPixelType's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<PassPixelType, 2> option_names(PassPixelType) {
    return {{{PassPixelType::Float, "float"}, {PassPixelType::Half, "half"}}};
}

/// The job's output section (JobConfig::Output).
struct OutputSettings {
    std::string path;  ///< absolute path pattern
    OverwritePolicy overwrite = OverwritePolicy::Error;
    Compression compression = Compression::Zip;
    int zip_level = 4;  ///< zlib level of zip/zips, 1 (fastest) to 9 (smallest); 4 = OpenEXR's
    OutputChannels channels = OutputChannels::Rgba;
    ExistingDepth existing_depth = ExistingDepth::Replace;
    PassthroughType pixel_type = PassthroughType::Auto;  ///< passthrough_color.h resolves auto per plate
    /// scene_linear: the RGB passthrough converted to the config's scene_linear role; plate: as stored
    PassthroughColorspace passthrough_colorspace = PassthroughColorspace::SceneLinear;
    /// output.passes: passes written beside depth.Z (passes.h), in the job's order: "P" (P.X P.Y P.Z),
    /// "N" (N.X N.Y N.Z), or a model's extra output by its contract name ("sky"); empty = none.
    std::vector<std::string> passes;
    PassPixelType passes_type = PassPixelType::Float;  ///< output.passes_type: float (default) | half
    using Preview = PreviewSettings;
    Preview preview;  ///< output.preview (depth_preview.h)
};

/// How frames are written: the job's output section itself (channels, pixel type, compression, overwrite
/// policy; its defaults are OutputSettings'). `path` is not used by the functions below, which take the path.
using ExrWriteOptions = OutputSettings;

/// One channel of the output file.
struct OutputChannel {
    std::string name;
    int source = -1;      ///< plate channel index, -1 for our depth (inside write_depth_exr: -2 - k for extra[k])
    OIIO::TypeDesc type;  ///< stored pixel type
};

/// The stored type of a passthrough channel: `stored` is the plate channel's type in the file, `pixel_type`
/// the job's output.pixel_type (see above).
OIIO::TypeDesc passthrough_type(OIIO::TypeDesc stored, PassthroughType pixel_type);

/// The channels write_depth_exr writes for this plate, in order (e.g. R,G,B,A,depth.Z).
std::vector<OutputChannel> output_channels(const PlateInfo& plate, const ExrWriteOptions& options = ExrWriteOptions());
std::vector<std::string> output_channel_names(const PlateInfo& plate,
                                              const ExrWriteOptions& options = ExrWriteOptions());

/// One line for the log: the channels and types written and what happens to the plate's own depth.
std::string describe_output(const PlateInfo& plate, const ExrWriteOptions& options);

/// A channel written after depth.Z (output.passes, passes.h): `data` holds plate.width() x plate.height() floats
/// over the data window, row-major; stored as `type` (FLOAT or HALF).
struct ExtraChannel {
    std::string name;  ///< "P.X", "N.Z", "sky.A", ...
    const float* data = nullptr;
    OIIO::TypeDesc type = OIIO::TypeDesc::FLOAT;
};

/// Whether the file at `path` can stand for this job's render of its frame (`--skip-existing`): a complete
/// OpenEXR file (every chunk of pixels present, OpenEXR's InputFile::isComplete) whose metadata says
/// depthbatch wrote it with these settings and this model (depthbatch/settings_sha256, the sha256 of
/// output_settings_text(); depthbatch/model_sha256). Returns "" when it can, else why not, for the log:
/// "not an OpenEXR file ...", "incomplete ...", "not written by depthbatch ...", "written with other
/// settings", "written by another model (sha256 ...)". Never throws.
/// The string attribute `name` of the OpenEXR file at `path` ("" when it has none or cannot be read). Never
/// throws.
std::string exr_text_attribute(const std::string& path, const std::string& name);

std::string why_output_is_stale(const std::string& path, const std::string& settings_sha256,
                                const std::string& model_sha256);

}  // namespace depthbatch
