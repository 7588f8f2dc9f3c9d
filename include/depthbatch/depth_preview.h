// depthbatch — 8-bit previews of the depth pass: depth colour-mapped over the job's range, with a legend, so an
// artist sees in seconds whether near is near (output.preview; docs/review.md "Review a render").
//
// Colour maps are matplotlib's (turbo, viridis, inferno: tools/colormaps.py writes their 256-entry tables into
// share/depthbatch/models/colormaps/ at set-up), never hand-tuned. The near end of the range takes the bright end
// of the map (turbo: red, viridis: yellow, inferno: light yellow), the far end the dark one. Text is drawn with
// OIIO's ImageBufAlgo::render_text (FreeType, a font OIIO finds: DejaVu Sans on Debian) and the file is written
// by OIIO (JPEG, PNG, TIFF by extension).
#pragma once

#include "depthbatch/option_names.h"

#include <OpenImageIO/imagebuf.h>

#include <array>
#include <string>
#include <vector>

namespace depthbatch {

enum class ColormapName { Turbo, Viridis, Inferno };  ///< output.preview.colormap
/// ColormapName's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<ColormapName, 3> option_names(ColormapName) {
    return {{{ColormapName::Turbo, "turbo"}, {ColormapName::Viridis, "viridis"}, {ColormapName::Inferno, "inferno"}}};
}

/// The job's output.preview (JobConfig::Output::Preview).
struct PreviewSettings {
    std::string path;  ///< 8-bit preview path pattern (.jpg/.png/.tif), "" = none
    ColormapName colormap = ColormapName::Turbo;
    int size = 960;           ///< long side in px (never enlarged)
    bool size_given = false;  ///< the job set size (a plate smaller than the default says nothing)
};

/// A colour map: 256 sRGB entries in 0-1, entry 0 for the low end.
struct Colormap {
    std::string name;
    std::vector<std::array<float, 3>> table;
    /// The colour at t in [0, 1] (clamped; nearest of the 256 entries).
    std::array<float, 3> at(double t) const;
};

/// Load `name` ("turbo", "viridis", "inferno") from share/depthbatch/models/colormaps/<name>.txt (install_layout.h).
/// Throws ConfigError naming the file for an unknown name or a missing/broken table (scripts/setup writes them).
Colormap load_colormap(const std::string& name);

/// What the preview shows.
struct PreviewRange {
    double near_value = 0, far_value = 1;  ///< depth.Z values at the near and far ends (either may be larger)
    std::string units;                     ///< "m", "1/m", "" (normalized, relative)
};

/// Where the legend's labels go: "far ..." starts at the colour bar's left end `bar_x0`, "near ..." ends at its
/// right end `bar_x1`, the caption is centred on `centre`; widths in px. Any label that would come closer than
/// `gap` px to one before it on its line moves to a line of its own below, so no two ever overlap, at any width.
/// Line 0 is the first line under the bar; `lines` counts them (1 when everything fits side by side).
struct LegendLayout {
    int lines = 1;
    int near_line = 0, caption_line = 0;
};
LegendLayout legend_layout(int bar_x0, int bar_x1, int centre, int far_width, int near_width, int caption_width,
                           int gap);

}  // namespace depthbatch
