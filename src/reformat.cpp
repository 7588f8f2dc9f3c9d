#include "depthbatch/reformat.h"

#include "depthbatch/error.h"
#include "depthbatch/resample.h"

#include <OpenImageIO/imagebufalgo.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace depthbatch {
namespace {

int round_to_multiple(double v, int multiple) {
    return std::max(multiple, static_cast<int>(std::lround(v / multiple)) * multiple);
}
int ceil_to_multiple(int v, int multiple) { return (v + multiple - 1) / multiple * multiple; }

/// The plate's origin-0 copy: resize/resample map full windows onto each other, so both sides use
/// windows that start at 0,0 and equal the data window.
OIIO::ImageBuf at_origin(const OIIO::ImageBuf& src) {
    OIIO::ImageBuf origin0 = src;
    OIIO::ImageSpec& s = origin0.specmod();
    s.x = s.y = s.full_x = s.full_y = 0;
    s.full_width = s.width;
    s.full_height = s.height;
    return origin0;
}

/// Depth -> plate size: bilinear interpolation at pixel centres (depth_upsample.h bilinear_upsample: no
/// overshoot, so depth never rings below zero; a depth map is smooth at model resolution, so no prefilter is
/// needed when it is enlarged). A shrink is rare (a plate smaller than the model input, or an anamorphic plate
/// at model.size: plate) and takes ImageBufAlgo::resize with the "triangle" filter, as the plate's own resize.
OIIO::ImageBuf interpolated(const OIIO::ImageBuf& src, int w, int h) {
    // An empty source (or target) has nothing to interpolate from: the uninitialised buffer below would be
    // written as depth.
    if (src.spec().width < 1 || src.spec().height < 1 || w < 1 || h < 1)
        throw RenderError("depth resize from " + std::to_string(src.spec().width) + "x" +
                          std::to_string(src.spec().height) + " to " + std::to_string(w) + "x" + std::to_string(h) +
                          ": an empty image has no depth to resize");
    // Every pixel is written below: no zero fill (OIIO's ImageBufAlgo::zero took ~15 ms for a 1080p float plane).
    OIIO::ImageBuf dst(OIIO::ImageSpec(w, h, src.nchannels(), OIIO::TypeDesc::FLOAT), OIIO::InitializePixels::No);
    const OIIO::ImageSpec& s = src.spec();
    if (w >= s.width && h >= s.height && s.nchannels == 1 && s.format == OIIO::TypeDesc::FLOAT && src.localpixels()) {
        bilinear_upsample(static_cast<const float*>(src.localpixels()), s.width, s.height, w, h,
                          static_cast<float*>(dst.localpixels()));
        return dst;
    }
    if (!OIIO::ImageBufAlgo::resize(dst, at_origin(src), "triangle", 0.0f, {}, 1))
        throw RenderError("resize to " + std::to_string(w) + "x" + std::to_string(h) +
                          " failed: " + library_error_line(dst.geterror()));
    return dst;
}

}  // namespace

ReformatPlan ReformatPlan::make(int width, int height, const ProcessingSize& size, const ModelContract& c,
                                double pixel_aspect) {
    ReformatPlan p;
    p.plate_width = width;
    p.plate_height = height;
    p.pixel_aspect = pixel_aspect > 0 && std::isfinite(pixel_aspect) ? pixel_aspect : 1.0;
    const double square_width = width * p.pixel_aspect;  // the desqueezed plate's width (square pixels)
    const int m = std::max(1, c.multiple);
    auto short_side = [&](int target) {
        const double scale = static_cast<double>(target) / std::min(square_width, static_cast<double>(height));
        const double cap = 4.0 * target / std::max(square_width, static_cast<double>(height));
        const double s = std::min(scale, std::max(cap, 0.0));
        p.scaled_width = p.input_width = round_to_multiple(square_width * s, m);
        p.scaled_height = p.input_height = round_to_multiple(height * s, m);
    };
    using Mode = ProcessingSize::Mode;
    if (c.fixed_size) {
        if (size.mode == Mode::Explicit && (size.width_px != c.width || size.height_px != c.height))
            throw ConfigError("model.size " + std::to_string(size.width_px) + "x" + std::to_string(size.height_px) +
                              ": this model only accepts its fixed input size " + std::to_string(c.width) + "x" +
                              std::to_string(c.height) + " (width x height)");
        if (size.mode == Mode::ShortSide || size.mode == Mode::Plate)
            throw ConfigError("model.size: this model only accepts its fixed input size " + std::to_string(c.width) +
                              "x" + std::to_string(c.height) + " (width x height); leave model.size unset");
        p.scaled_width = p.input_width = c.width;
        p.scaled_height = p.input_height = c.height;
        return p;
    }
    switch (size.mode) {
    case Mode::Plate:
        p.scaled_width = std::max(1, static_cast<int>(std::lround(square_width)));
        p.scaled_height = height;
        p.input_width = ceil_to_multiple(p.scaled_width, m);
        p.input_height = ceil_to_multiple(height, m);
        break;
    case Mode::Explicit:
        p.scaled_width = size.width_px;
        p.scaled_height = size.height_px;
        p.input_width = ceil_to_multiple(size.width_px, m);
        p.input_height = ceil_to_multiple(size.height_px, m);
        break;
    case Mode::ShortSide: short_side(size.short_side_px); break;
    case Mode::Model: short_side(c.height > 0 ? std::min(c.height, c.width) : 518); break;
    }
    return p;
}

ModelInput ReformatPlan::to_model_input(const OIIO::ImageBuf& rgb, long* out_of_range) const {
    // The plate's pixels as packed float RGB (what plate_rgb gives; anything else is converted once).
    std::vector<float> converted;
    const float* src = static_cast<const float*>(rgb.localpixels());
    if (!src || rgb.spec().format != OIIO::TypeDesc::FLOAT || rgb.nchannels() != 3 || rgb.spec().width != plate_width ||
        rgb.spec().height != plate_height) {
        converted.resize(static_cast<size_t>(plate_width) * plate_height * 3);
        OIIO::ROI roi = rgb.roi();
        roi.chbegin = 0, roi.chend = 3;
        if (!rgb.get_pixels(roi, OIIO::TypeDesc::FLOAT, converted.data()))
            throw RenderError("reformat: reading the plate's RGB failed: " + library_error_line(rgb.geterror()));
        src = converted.data();
    }
    // Resized with the triangle filter (resample.h), planar; or the plate's own pixels.
    std::vector<float> scaled;
    if (resizes()) {
        scaled.resize(static_cast<size_t>(3) * scaled_width * scaled_height);
        resize_triangle_to_planar(src, plate_width, plate_height, 3, scaled_width, scaled_height, scaled.data());
    }
    // Channel c of the scaled image at (x, y) is base[c] + y * row + x * step: planar after a resize, the plate's
    // packed pixels otherwise.
    const size_t plane = static_cast<size_t>(scaled_width) * scaled_height;
    const size_t step = resizes() ? 1 : 3, row = resizes() ? scaled_width : static_cast<size_t>(plate_width) * 3;
    const float* base[3];
    for (int c = 0; c < 3; ++c) base[c] = resizes() ? scaled.data() + c * plane : src + c;
    ModelInput in;
    in.width = input_width;
    in.height = input_height;
    in.chw.resize(static_cast<size_t>(3) * input_width * input_height);
    long clamped = 0;
    for (int c = 0; c < 3; ++c)
        for (int y = 0; y < input_height; ++y) {
            const int sy = std::min(y, scaled_height - 1);  // edge-replicate padding
            float* out = in.chw.data() + (static_cast<size_t>(c) * input_height + y) * input_width;
            const float* line = base[c] + sy * row;
            for (int x = 0; x < input_width; ++x) {
                const int sx = std::min(x, scaled_width - 1);
                float v = line[sx * step];
                const bool inside = x < scaled_width && y < scaled_height;
                if (!std::isfinite(v)) v = 0.0f;
                else if (v < 0.0f || v > 1.0f) {
                    // Filter rounding (1.0000001) is not worth a report; real out-of-range values are.
                    if (inside && (v < -1e-5f || v > 1.0f + 1e-5f)) ++clamped;
                    v = std::clamp(v, 0.0f, 1.0f);
                }
                out[x] = v;
            }
        }
    if (out_of_range) *out_of_range = clamped;
    return in;
}

UpsampleGuide ReformatPlan::make_guide(const ModelInput& input, const OIIO::ImageBuf& rgb) const {
    UpsampleGuide g;
    g.low = {scaled_width, scaled_height, std::vector<float>(static_cast<size_t>(scaled_width) * scaled_height)};
    const size_t plane = static_cast<size_t>(input.width) * input.height;
    for (int y = 0; y < scaled_height; ++y)
        for (int x = 0; x < scaled_width; ++x) {
            const size_t i = static_cast<size_t>(y) * input.width + x;
            g.low.data[static_cast<size_t>(y) * scaled_width + x] =
                rec709(input.chw[i], input.chw[plane + i], input.chw[2 * plane + i]);
        }
    const OIIO::ImageBuf& packed = rgb;
    if (!packed.localpixels() || packed.spec().format != OIIO::TypeDesc::FLOAT || packed.nchannels() != 3 ||
        packed.spec().width != plate_width || packed.spec().height != plate_height)
        throw std::invalid_argument("make_guide: the plate's RGB must be packed float, 3 channels, " +
                                    std::to_string(plate_width) + "x" + std::to_string(plate_height));
    // Rec. 709 luma of the colour stage's output (0-1 after it clamps; NaN/Inf already 0).
    g.high = {
        plate_width, plate_height,
        rec709_luma(static_cast<const float*>(packed.localpixels()), static_cast<size_t>(plate_width) * plate_height)};
    return g;
}

OIIO::ImageBuf ReformatPlan::restore(const DepthImage& depth, const UpsampleSettings& upsample,
                                     const UpsampleGuide* guide) const {
    if (depth.width < 1 || depth.height < 1 || depth.data.size() != static_cast<size_t>(depth.width) * depth.height)
        throw RenderError("ReformatPlan::restore: the depth to restore is " + std::to_string(depth.width) + "x" +
                          std::to_string(depth.height) + " with " + std::to_string(depth.data.size()) +
                          " values: an empty (or inconsistent) depth image cannot be resized to the plate");
    OIIO::ImageBuf out(OIIO::ImageSpec(depth.width, depth.height, 1, OIIO::TypeDesc::FLOAT),
                       OIIO::InitializePixels::No);
    std::memcpy(out.localpixels(), depth.data.data(), depth.data.size() * sizeof(float));
    if (depth.width != input_width || depth.height != input_height) out = interpolated(out, input_width, input_height);
    if (scaled_width != input_width || scaled_height != input_height) {
        OIIO::ImageBuf crop;
        OIIO::ImageBufAlgo::cut(crop, out, OIIO::ROI(0, scaled_width, 0, scaled_height), 1);
        out = std::move(crop);
    }
    if (guided(upsample)) {
        if (!guide)
            throw std::invalid_argument("ReformatPlan::restore: depth.upsample " +
                                        std::string(option_name(upsample.method)) + " needs the plate's guide");
        Plane low{scaled_width, scaled_height, std::vector<float>(static_cast<size_t>(scaled_width) * scaled_height)};
        if (!out.get_pixels(OIIO::ROI(0, scaled_width, 0, scaled_height, 0, 1, 0, 1), OIIO::TypeDesc::FLOAT,
                            low.data.data()))
            throw RenderError("restore: reading the model's depth failed: " + library_error_line(out.geterror()));
        OIIO::ImageBuf result(OIIO::ImageSpec(plate_width, plate_height, 1, OIIO::TypeDesc::FLOAT),
                              OIIO::InitializePixels::No);
        guided_upsample(low, guide->low, guide->high, upsample, static_cast<float*>(result.localpixels()));
        return result;
    }
    if (resizes()) out = interpolated(out, plate_width, plate_height);
    return out;
}

}  // namespace depthbatch
