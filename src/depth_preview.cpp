#include "depthbatch/depth_preview.h"
#include "depth_preview_pvt.h"

#include "output/output_guard.h"

#include "depthbatch/error.h"
#include "depthbatch/install_layout.h"

#include <OpenImageIO/imagebufalgo.h>
#include <OpenImageIO/imageio.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace fs = std::filesystem;

namespace depthbatch {
namespace {

// OIIO's default face (DroidSans) is not on Debian; DejaVu Sans is (fonts-dejavu-core), found by name under
// /usr/share/fonts.
constexpr const char* kFont = "DejaVuSans";

std::string value_text(double v, const std::string& units) {
    std::ostringstream s;
    s << std::setprecision(std::abs(v) >= 100 ? 4 : 3) << v;
    if (!units.empty()) s << " " << units;
    return s.str();
}

}  // namespace

std::array<float, 3> Colormap::at(double t) const {
    if (!(t >= 0)) t = 0;  // NaN and below: the low end
    t = std::min(t, 1.0);
    return table[static_cast<size_t>(std::lround(t * static_cast<double>(table.size() - 1)))];
}

Colormap load_colormap(const std::string& name) {
    if (name != "turbo" && name != "viridis" && name != "inferno")
        throw ConfigError("output.preview.colormap '" + name + "' is not one of: turbo, viridis, inferno");
    const fs::path path = find_data_file("models/colormaps/" + name + ".txt");
    std::ifstream in(path);
    if (!in)
        throw ConfigError(path.string() +
                          ": colour map table not found (scripts/setup writes it with tools/colormaps.py)");
    Colormap map;
    map.name = name;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream s(line);
        std::array<float, 3> rgb{};
        if (!(s >> rgb[0] >> rgb[1] >> rgb[2]))
            throw ConfigError(path.string() + ": not a colour map table (line '" + line + "')");
        map.table.push_back(rgb);
    }
    if (map.table.size() != 256)
        throw ConfigError(path.string() + ": expected 256 colours, found " + std::to_string(map.table.size()));
    return map;
}

LegendLayout legend_layout(int bar_x0, int bar_x1, int centre, int far_width, int near_width, int caption_width,
                           int gap) {
    LegendLayout l;
    const int far_end = bar_x0 + far_width, near_start = bar_x1 - near_width;
    if (near_start < far_end + gap) l.near_line = l.lines++;
    const int cap0 = centre - caption_width / 2, cap1 = cap0 + caption_width;
    if (caption_width > 0) {
        const bool hits_far = cap0 < far_end + gap;
        const bool hits_near = l.near_line == 0 && cap1 + gap > near_start;
        if (hits_far || hits_near) {
            // Alone on the near label's own line when it fits there, else on a new one.
            const bool fits_with_near = l.near_line > 0 && cap1 + gap <= near_start && cap0 >= 0;
            l.caption_line = fits_with_near ? l.near_line : l.lines++;
        }
    }
    return l;
}

void write_depth_preview(Publication& pub, const OIIO::ImageBuf& depth, const PreviewRange& range, const Colormap& map,
                         int size, const std::string& caption) {
    const std::string& path = pub.final_path();
    const OIIO::ImageSpec& ds = depth.spec();
    const double scale = std::min(1.0, static_cast<double>(size) / std::max(ds.width, ds.height));
    const int w = std::max(1, static_cast<int>(std::lround(ds.width * scale)));
    const int h = std::max(1, static_cast<int>(std::lround(ds.height * scale)));
    OIIO::ImageBuf small = depth;
    if (w != ds.width || h != ds.height) {
        OIIO::ImageSpec s(w, h, 1, OIIO::TypeDesc::FLOAT);
        small.reset(s);
        OIIO::ImageBufAlgo::resize(small, depth, "triangle");
    }
    // Image on top, legend strip below: a colour bar and its labels, on more lines when they do not fit side by side.
    const int legend0 = std::max(44, h / 8);
    const int font = std::max(10, legend0 / 3);
    const int bar_x0 = w / 20, bar_x1 = w - w / 20;
    const std::string far_text = "far " + value_text(range.far_value, range.units),
                      near_text = "near " + value_text(range.near_value, range.units);
    const auto text_width = [&](const std::string& t) {
        return t.empty() ? 0 : OIIO::ImageBufAlgo::text_size(t, font, kFont).width();
    };
    const LegendLayout layout = legend_layout(bar_x0, bar_x1, w / 2, text_width(far_text), text_width(near_text),
                                              text_width(caption), font / 2);
    const int line_height = font + font / 3;
    const int legend = legend0 + (layout.lines - 1) * line_height;
    OIIO::ImageBuf out(OIIO::ImageSpec(w, h + legend, 3, OIIO::TypeDesc::FLOAT));
    OIIO::ImageBufAlgo::zero(out);
    const double span = range.near_value - range.far_value;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            float v = 0;
            small.getpixel(x, y, &v, 1);
            std::array<float, 3> c{0, 0, 0};
            if (std::isfinite(v)) c = map.at(span != 0 ? (v - range.far_value) / span : 0.5);
            out.setpixel(x, y, c.data(), 3);
        }
    const int bar_y0 = h + legend0 / 8, bar_y1 = h + legend0 / 2;
    for (int x = bar_x0; x < bar_x1; ++x) {
        const auto c = map.at(static_cast<double>(x - bar_x0) / std::max(1, bar_x1 - bar_x0 - 1));  // far -> near
        OIIO::ImageBufAlgo::fill(out, {c[0], c[1], c[2]}, OIIO::ROI(x, x + 1, bar_y0, bar_y1, 0, 1, 0, 3));
    }
    const float white_rgb[3] = {1, 1, 1};
    const OIIO::cspan<float> white(white_rgb, 3);
    const auto text_y = [&](int line) { return h + legend0 - legend0 / 8 + line * line_height; };
    using Align = OIIO::ImageBufAlgo::TextAlignX;
    const bool drawn = OIIO::ImageBufAlgo::render_text(out, bar_x0, text_y(0), far_text, font, kFont, white) &&
                       OIIO::ImageBufAlgo::render_text(out, bar_x1, text_y(layout.near_line), near_text, font, kFont,
                                                       white, Align::Right) &&
                       (caption.empty() || OIIO::ImageBufAlgo::render_text(out, w / 2, text_y(layout.caption_line),
                                                                           caption, font, kFont, white, Align::Center));
    if (!drawn)
        throw RenderError(path + ": cannot draw the legend: " + library_error_line(out.geterror()) +
                          " (the DejaVu Sans font: Debian's "
                          "fonts-dejavu-core; OIIO looks under /usr/share/fonts and $OPENIMAGEIO_FONTS)");
    const std::string ext = fs::path(path).extension().string();
    OIIO::ImageSpec spec = out.spec();
    spec.set_format(OIIO::TypeDesc::UINT8);
    if (ext == ".jpg" || ext == ".jpeg") spec.attribute("Compression", "jpeg:92");
    spec.attribute("ImageDescription", output_marker::preview);  // the guard replaces only files marked so
    spec.attribute("Software", std::string("depthbatch ") + DEPTHBATCH_VERSION);
    auto file = OIIO::ImageOutput::create(path);
    if (!file)
        throw RenderError(path + ": cannot write a preview in this format (" + library_error_line(OIIO::geterror()) +
                          ")");
    if (!file->open(pub.temp_path(), spec) || !out.write(file.get()) || !file->close())
        throw RenderError(path + ": cannot write the preview: " + library_error_line(file->geterror()));
    pub.publish(true);
}

}  // namespace depthbatch
