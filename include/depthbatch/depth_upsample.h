// depthbatch — bringing model-resolution depth up to the plate so that depth edges sit on the plate's edges.
//
// A depth network sees the plate at a few hundred pixels; the comp needs depth at the plate's size. Enlarged
// with a plain filter, every object edge becomes a ramp of in-between depths that belong to neither side, which
// ZDefocus turns into halos. The methods (job key depth.upsample; docs/depth.md "Edges and detail"):
//   bilinear   interpolation at pixel centres (bilinear_upsample below): smooth, with edges
//              as soft as the model's resolution (a transition about one model pixel, i.e. the scale factor,
//              wide in plate pixels)
//   guided     the fast guided filter (K. He and J. Sun, "Fast Guided Filter", arXiv:1505.00996, 2015,
//              Algorithm 2) on the guided filter of K. He, J. Sun and X. Tang, "Guided Image Filtering", IEEE
//              TPAMI 35(6):1397-1409, 2013, eqs. (5)-(8). At model resolution, in every (2r+1) x (2r+1) window
//              depth is fitted as a linear function of the guide, p ~= a * I + b (eq. 5, with the ridge term
//              epsilon * a^2 of eq. 3); a and b are averaged over the windows covering each pixel (eq. 8),
//              enlarged bilinearly to the plate and applied to the plate's own guide: q = A * I + B. The
//              guide I is the plate's luma (Rec. 709 weights on the colour-converted R, G, B the model sees,
//              0-1). Depth edges move onto the plate's edges and are as sharp as they are; where the plate has
//              no edge of its own, depth is smoothed over the window instead.
//   edge_hard  guided, then every pixel at a depth edge takes the depth of one side. A plate pixel is at an edge
//              when, in the 5 x 5 model pixels around it, two neighbouring model pixels differ by more than
//              edge_threshold x the frame's depth range (2nd-98th percentile of the model's output) and the
//              plate's luma there spans more than 0.05 (the plate shows the edge too: without one the guide
//              cannot place it). It then takes the minimum or the maximum of the model's depth in that 5 x 5,
//              whichever its guided depth is nearer. 5 x 5 because the plate's shrink (the triangle filter,
//              resample.h) mixes the two sides in up to two model pixels in a row wherever the edge falls: the
//              window reaches past both to a pure pixel of each side, so no pixel at an edge holds a depth between
//              the two sides, at any phase of the edge against the model's grid and any scale (tested at every
//              quarter-pixel phase, 1.5x to 5x, x and y apart); what ZDefocus and a depth-keyed matte want.
//              Other pixels keep their guided value clamped to the minimum and maximum of the 3 x 3 model pixels
//              around them (no overshoot; a flat area is exactly the model's value), so slopes, whose change is
//              spread over many pixels, stay smooth.
// Guided and edge_hard enlarge only: a plate smaller than the model input, or model.size: plate, uses bilinear.
#pragma once

#include "depthbatch/option_names.h"

#include <cstddef>
#include <vector>

namespace depthbatch {

/// depth.upsample
enum class DepthUpsample { Bilinear, Guided, EdgeHard };
/// DepthUpsample's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<DepthUpsample, 3> option_names(DepthUpsample) {
    return {{{DepthUpsample::Bilinear, "bilinear"},
             {DepthUpsample::Guided, "guided"},
             {DepthUpsample::EdgeHard, "edge_hard"}}};
}

/// The method and its parameters (job keys depth.upsample, depth.guided_radius, depth.guided_epsilon,
/// depth.edge_threshold).
struct UpsampleSettings {
    DepthUpsample method = DepthUpsample::Bilinear;
    /// Window radius r in plate pixels; 0 = two model pixels (the default). At model resolution the
    /// filter uses max(1, round(radius_px x model/plate scale)).
    double radius_px = 0;
    /// The guided filter's epsilon (eq. 3), in squared luma units (luma 0-1): edges whose luma variance in
    /// a window is well above epsilon steer the depth; below it, depth is smoothed. Default 1e-4 (a luma
    /// step of about 0.02).
    double epsilon = 1e-4;
    /// edge_hard: the smallest depth jump between neighbouring model pixels, as a fraction of the frame's 2-98%
    /// depth range, treated as an edge.
    double edge_threshold = 0.05;
};

/// A single-channel float image, rows top to bottom, `width` x `height` values (row-major, no padding).
struct Plane {
    int width = 0, height = 0;
    std::vector<float> data;
    float at(int x, int y) const { return data[static_cast<size_t>(y) * width + x]; }
};

/// Bilinear enlargement at pixel centres: out(x, y) samples src at ((x + 0.5) w / W - 0.5, (y + 0.5) h / H - 0.5),
/// coordinates clamped to the image (edge pixels extend), the same sampling as OIIO's
/// ImageBufAlgo::resample(interpolate = true) with a clamp wrap, in one separable pass: vertical at source
/// width, then horizontal (a constant image stays exactly constant). `src` w x h floats, `out` W x H floats,
/// both row-major; W >= w, H >= h, else std::invalid_argument. The bilinear method of depth.upsample, and the
/// last step of the guided filter; 15-40x faster than resample's per-pixel interppixel (bench/edges).
void bilinear_upsample(const float* src, int w, int h, int W, int H, float* out);

/// Rec. 709 luma of one pixel: 0.2126 R + 0.7152 G + 0.0722 B (ITU-R BT.709-6, item 3.2), values 0-1.
inline float rec709(float r, float g, float b) { return 0.2126f * r + 0.7152f * g + 0.0722f * b; }

/// Luma of `pixels` packed RGB float triples (R, G, B per pixel, values 0-1): 0.2126 R + 0.7152 G + 0.0722 B
/// (ITU-R BT.709). Returns `pixels` values.
std::vector<float> rec709_luma(const float* rgb, size_t pixels);

/// Mean over the (2r+1) x (2r+1) window around each pixel, the window cut at the image borders (divided by
/// the pixels inside, as He et al.'s reference code does with boxfilter(ones)). Separable running sums:
/// O(1) per pixel whatever r. r >= 0; r = 0 returns the input.
Plane box_mean(const Plane& in, int r);

/// Enlarge `depth` (model resolution, w x h) to `guide_high`'s size (plate, W x H >= w x h) with the guided
/// filter steered by `guide_low` (the guide at depth's size, w x h) and `guide_high` (the same guide at plate
/// resolution), as `settings.method` says (Guided or EdgeHard; Bilinear is not handled here). Throws
/// std::invalid_argument when sizes disagree. Values are in depth's units; no NaN/Inf in, none out.
Plane guided_upsample(const Plane& depth, const Plane& guide_low, const Plane& guide_high,
                      const UpsampleSettings& settings);
/// The same, written to `out` (W x H floats, row-major), e.g. an ImageBuf's own pixels.
void guided_upsample(const Plane& depth, const Plane& guide_low, const Plane& guide_high,
                     const UpsampleSettings& settings, float* out);

}  // namespace depthbatch
