// depthbatch — the RGB passthrough as written: its colorspace and its pixel type (docs/output.md "What is written").
//
// A Nuke Read node takes an EXR as scene-linear. So by default (output.passthrough_colorspace: scene_linear) the
// R, G, B passed through from the plate are converted with OpenColorIO from the plate's colorspace (the job's
// input.colorspace, or the one "auto" chose: color_transform.h) to the config's scene_linear role, and the
// header says so (oiio:ColorSpace and depthbatch/colorspace_rgb). An 8-bit sRGB JPEG's code 128 is written as
// 0.2158605 (the sRGB decoding), not 0.50196. A plate already in scene_linear (auto's choice for half/float EXR)
// converts nothing: its values are written bit for bit. output.passthrough_colorspace: plate writes the plate's
// values as read (code / (2^bits - 1) for integer plates), with the plate's colorspace in the header. Only the
// R, G, B the model sees are converted; alpha and every other channel never are.
//
// output.pixel_type: auto (the default) writes half for 8- and 10-bit integer plates and for half plates, float
// for float and 12/16-bit plates (Nuke's Write defaults to 16-bit half). For 8/10-bit plates half is chosen only
// when it is proven lossless for the job's conversion: every code of that bit depth, converted, stored as half
// and converted back, must round to the same code (half_keeps_codes below, checked once per job); where one
// would not, auto writes float instead and the log says how many codes half would have changed. depth.Z is
// always float32 (exr_depth_writer.h), and so are passes computed from it (they are data, not plate colour).
//
// Threads: the rule of depthbatch.h; built once per job, then used through const members only, by every worker
// at once (frame_stages.cpp: finish).
#pragma once

#include "depthbatch/option_names.h"
#include "depthbatch/plate.h"

#include <cstddef>
#include <memory>
#include <string>

namespace depthbatch {

enum class PassthroughType { Auto, Keep, Half, Float };   ///< output.pixel_type
enum class PassthroughColorspace { SceneLinear, Plate };  ///< output.passthrough_colorspace
/// PassthroughType's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<PassthroughType, 4> option_names(PassthroughType) {
    return {{{PassthroughType::Auto, "auto"},
             {PassthroughType::Keep, "keep"},
             {PassthroughType::Half, "half"},
             {PassthroughType::Float, "float"}}};
}
/// PassthroughColorspace's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<PassthroughColorspace, 2> option_names(PassthroughColorspace) {
    return {{{PassthroughColorspace::SceneLinear, "scene_linear"}, {PassthroughColorspace::Plate, "plate"}}};
}

class PassthroughColor {
public:
    /// The passthrough's conversion: `plate_colorspace` (a name, alias or role of the config at `config_path`:
    /// the colour stage's ColorTransform::from()) to the config's scene_linear role, or none for
    /// PassthroughColorspace::Plate or when OCIO finds the conversion a no-op. Throws ConfigError naming the
    /// config when it cannot be read, has no scene_linear role (scene_linear mode only; the message says to set
    /// output.passthrough_colorspace: plate), or OCIO cannot build the conversion.
    static std::shared_ptr<const PassthroughColor> create(const std::string& config_path,
                                                          const std::string& plate_colorspace,
                                                          PassthroughColorspace mode);

    /// Whether apply() changes values (false: plate mode, or the plate is in scene_linear already).
    bool converts() const { return converts_; }
    /// The colorspace the written R, G, B are in (the config's name for it), for the header.
    const std::string& written() const { return written_; }
    /// The plate's colorspace (as given to create()).
    const std::string& plate() const { return plate_; }

    /// Convert `pixels` packed float R, G, B triples in place, plate colorspace -> scene_linear (nothing when
    /// !converts()). NaN and Inf go through OCIO as they are (no clamping: values above 1 stay above 1).
    void apply(float* rgb, size_t pixels) const;
    /// The inverse, scene_linear -> plate colorspace (what a Nuke Write back to the plate's encoding does).
    void inverse(float* rgb, size_t pixels) const;

    /// Convert the R, G, B channels of `plate` (channels plate.r, plate.g, plate.b of its packed float pixels) in
    /// place, in blocks of rows (no full-frame copy). A grey plate, whose R, G and B are one channel, gets the
    /// mean of the three converted values. Alpha and other channels are not touched.
    void apply(Plate& plate) const;

    /// How many of the 2^bits codes of one channel do NOT survive: code / (2^bits - 1) -> apply() -> half ->
    /// inverse() -> round(x (2^bits - 1)) != code, for some sample holding that code. Samples: each code as a
    /// grey (k, k, k) and in each channel with the other two at every pair of 0, 2^(bits-1) and 2^bits - 1
    /// (saturated colours are where a gamut matrix spreads one channel's rounding into the others). 0 = half
    /// loses no code. bits 1..16.
    long half_losses(int bits) const;

    /// The stored type of the passthrough for a plate: output.pixel_type, with auto resolved as the header above
    /// says (Half for an 8/10-bit integer plate whose codes half keeps, Keep otherwise: half stays half, float
    /// and other integers become float). Keep, Half and Float are returned as they are. `why`, when given,
    /// receives the reason in words for the log.
    PassthroughType pixel_type(PassthroughType asked, const PlateInfo& plate, std::string* why = nullptr) const;

    ~PassthroughColor();

private:
    PassthroughColor() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    bool converts_ = false;
    std::string plate_, written_;
    long losses_[17] = {};  ///< half_losses(bits) for bits 8 and 10, computed once in create()
    bool known_[17] = {};
};

/// The bit depth of an integer plate's colour channels (oiio:BitsPerSample, else the stored type's size), 0 for
/// half, float and double plates.
int integer_bits(const PlateInfo& plate);

}  // namespace depthbatch
