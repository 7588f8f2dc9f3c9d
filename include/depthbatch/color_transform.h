// depthbatch — the colour stage: plate pixels -> the model's colorspace in [0,1], through OpenColorIO only.
//
// The config is, in order: the job's color.config, $OCIO, the config this project ships
// (configs/ocio/config.ocio, written for OCIO 2.1). One OCIO CPU processor is built per job. Threads: the
// rule of depthbatch.h; every member used after construction is const, so all workers apply it at once (OCIO's
// CPU processors are thread-safe for apply()).
//
// The input colorspace is the job's input.colorspace, or with "auto" decided from the first frame
// (auto_colorspace; the choice is logged). The model's colorspace comes from its contract.
// Values outside the model's 0-1 range (scene-linear highlights, negative values) are handled as the
// job says (color.hdr): "clamp" converts input -> model colorspace and clamps, "view" runs the input
// through an OCIO display/view (e.g. the ACES 1.0 SDR Video output transform, which tone-maps HDR into
// 0-1) and feeds its display-encoded result to the model. Either way the pixels outside 0-1 are counted.
// NaN and Inf in the plate are replaced by 0 before the conversion, and counted.
// docs/colour.md "Plates and color" is the user-facing description.
#pragma once

#include "depthbatch/option_names.h"
#include "depthbatch/plate.h"

#include <OpenImageIO/imagebuf.h>

#include <memory>
#include <string>

namespace depthbatch {

enum class HdrMode { Clamp, View };  ///< color.hdr
/// HdrMode's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<HdrMode, 2> option_names(HdrMode) {
    return {{{HdrMode::Clamp, "clamp"}, {HdrMode::View, "view"}}};
}

/// The job's color section (JobConfig::Color).
struct ColorSettings {
    std::string config;  ///< absolute path, or "" = $OCIO / shipped config
    HdrMode hdr = HdrMode::Clamp;
    std::string display, view, look;
};

/// What the colour stage found in one frame, in pixels of the plate's data window.
struct PixelStats {
    long nonfinite = 0;     ///< pixels with NaN or +-Inf in R, G or B (replaced by 0 before the conversion)
    long out_of_range = 0;  ///< pixels with a channel outside [0,1] (by more than 1e-5) after the conversion
                            ///< (including conversion overflow to Inf/NaN); clamped into [0,1]
};

class ColorTransform {
public:
    /// The job's colour stage: config from color.config / $OCIO / the shipped one; `input_colorspace` a
    /// name, alias or role in that config, or "auto" (decided from `plate`, which must then be given);
    /// color.hdr "clamp" (colorspace conversion) or "view" (color.display / color.view [/ color.look]).
    /// Logs the choices. Throws ConfigError naming the config and what it lacks (listing what it has).
    static std::shared_ptr<const ColorTransform> create(const ColorSettings& color, const std::string& input_colorspace,
                                                        const std::string& model_colorspace,
                                                        const PlateInfo* plate = nullptr);

    /// A plain colorspace conversion `from` -> `to` (names, aliases or roles), hdr "clamp".
    /// Throws ConfigError naming the config file and the colorspace that does not exist, or OCIO's
    /// message when the config cannot be read.
    static std::shared_ptr<const ColorTransform> create(const std::string& config_path, const std::string& from,
                                                        const std::string& to);

    /// The whole stage on a packed 3-channel float32 RGB buffer (any ROI), in place: NaN/Inf -> 0, the
    /// OCIO processor, then everything clamped into [0,1]. Returns the counts for the frame's log line.
    PixelStats apply(OIIO::ImageBuf& rgb) const;

    /// The OCIO processor alone, in place (no NaN handling, no clamping).
    void convert(OIIO::ImageBuf& rgb) const;

    bool is_noop() const { return noop_; }
    const std::string& config_path() const { return config_path_; }
    /// The input colorspace (as named in the job, or the one "auto" chose).
    const std::string& from() const { return from_; }
    /// What the model is fed: the model's colorspace (hdr clamp), or "<display> / <view>[ / <look>]"
    /// (hdr view), so that a change of colour handling shows in anything keyed on it.
    const std::string& to() const { return to_; }
    /// color.hdr: Clamp or View.
    HdrMode hdr() const { return hdr_; }
    /// One line for the log: from -> to, how, which config.
    std::string description() const;

    /// Resolve which config a job uses: `job_config` if set, else $OCIO, else the shipped one
    /// (share/depthbatch/ocio/config.ocio next to the executable, install_layout.h).
    static std::string resolve_config_path(const std::string& job_config);

    /// The "auto" input colorspace for a plate, as a colorspace name of the config at `config_path`:
    ///   DPX                    -> the config's compositing_log role (integer rule below if it has none)
    ///   half / float / double  -> what the file declares, when the config has a colorspace for it: its
    ///                             oiio:ColorSpace (other than OIIO's generic "Linear"), its colorInteropID
    ///                             (e.g. lin_ap1_scene), or its EXR chromaticities matched within 1e-3 to
    ///                             Rec.709, ACES AP1 (ACEScg), AP0 (ACES2065-1), Rec.2020 or P3-D65;
    ///                             otherwise the scene_linear role (with a warning when the file declared
    ///                             something the config has no colorspace for, or unknown chromaticities)
    ///   8/16-bit integer       -> sRGB encoded ("sRGB", or a common alias of it: srgb_tx, sRGB - Texture)
    /// `why`, when given, receives the reason in words for the log.
    static std::string auto_colorspace(const PlateInfo& plate, const std::string& config_path,
                                       std::string* why = nullptr);

    /// What auto_colorspace would choose for `plate` with this transform's config, logging nothing: every frame
    /// of a shot under "auto" must come to the same name as the frame that decided (plate_kind and this).
    std::string auto_for(const PlateInfo& plate) const;

    ~ColorTransform();

private:
    ColorTransform() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    bool noop_ = false;
    std::string config_path_, from_, to_;
    HdrMode hdr_ = HdrMode::Clamp;
};

}  // namespace depthbatch
