// depthbatch — the reformat plan: plate data window -> model input -> back to the data window.
//
//   plate (W x H) --resize--> scaled (sw x sh) --pad right/bottom (edge replicate)--> input (iw x ih)
//   model output (ow x oh) --resize to iw x ih if it differs--> crop sw x sh --resize--> W x H
//
// Processing size modes (JobConfig's model.size):
//   plate      no resize; pad only up to the multiple (per-pixel exact for pixel-wise models)
//   N          the short side becomes N px, aspect kept, each side rounded to the nearest multiple
//              (as Depth Anything's own preprocessing does; no padding); the long side is capped at
//              4*N so that a 4097x3 plate does not become a 300,000 px strip
//   [w, h]     resized to exactly w x h, then padded up to the multiple
//   model      the contract's size: exactly it for fixed-size (traced) models, else its short side
// Anamorphic plates (pixel aspect != 1, EXR pixelAspectRatio / OIIO "PixelAspectRatio"): the model sees square
// pixels. With pixel aspect a, sizes are computed for the desqueezed plate (W * a) x H: "plate" resizes to
// round(W * a) x H, N takes the short side of the desqueezed plate; [w, h] and fixed sizes are taken as
// written. restore() always returns the stored (squeezed) W x H grid.
// Resizing: the triangle filter (antialiased bilinear, resample.h: LibTorch's, OIIO's "triangle") for the plate; depth is
// enlarged bilinearly at pixel centres (depth_upsample.h bilinear_upsample: no overshoot, so depth never rings
// below zero) or by the guided filter steered by the plate (depth.upsample); shrunk with the triangle filter.
#pragma once

#include "depthbatch/depth_upsample.h"
#include "depthbatch/model_contract.h"
#include "depthbatch/model_data.h"

#include <OpenImageIO/imagebuf.h>

#include <vector>

namespace depthbatch {

/// How the plate is brought to the size the model sees (model.size).
struct ProcessingSize {
    enum class Mode { Model, ShortSide, Plate, Explicit };
    Mode mode = Mode::Model;
    int short_side_px = 0;            ///< Mode::ShortSide: the plate's short side becomes this (px)
    int width_px = 0, height_px = 0;  ///< Mode::Explicit: the job's [width, height] (the contract JSON is [H, W])
};

/// The plate's luma (depth_upsample.h rec709_luma) at the model's scaled size and at the plate's, for the
/// guided methods of restore().
struct UpsampleGuide {
    Plane low;   ///< scaled_width x scaled_height: from the model input, before padding
    Plane high;  ///< plate_width x plate_height: from the colour-converted plate
};

struct ReformatPlan {
    int plate_width = 0, plate_height = 0;    ///< data window (px)
    int scaled_width = 0, scaled_height = 0;  ///< after resize, before padding (px)
    int input_width = 0, input_height = 0;    ///< what the model sees: multiples of the contract's
    double pixel_aspect = 1.0;                ///< the plate's pixel aspect the sizes were computed for

    /// Plan for a plate of `width` x `height` whose pixels are `pixel_aspect` times as wide as high (1 = square;
    /// must be > 0). Throws ConfigError when a fixed-size model is asked for another explicit size, naming both
    /// sizes.
    static ReformatPlan make(int width, int height, const ProcessingSize& size, const ModelContract& contract,
                             double pixel_aspect = 1.0);

    bool resizes() const { return scaled_width != plate_width || scaled_height != plate_height; }

    /// Packed float RGB over the data window (plate_width x plate_height) -> the model input.
    /// Values are clamped to [0,1] (the model's range; the count of clamped values is returned in
    /// `out_of_range` when not null) and NaN/Inf become 0. In run_job this is a guard only: the colour stage
    /// (ColorTransform::apply) is the one place where NaN/Inf are replaced and values clamped into 0-1, and
    /// counted for the frame's log line; its output passes here unchanged (the resize filter averages).
    ModelInput to_model_input(const OIIO::ImageBuf& rgb, long* out_of_range = nullptr) const;

    /// True when `upsample` takes the guided path here: a guided method and a plate larger than the scaled
    /// size in both directions (enlargement); then restore() needs an UpsampleGuide.
    bool guided(const UpsampleSettings& upsample) const {
        return upsample.method != DepthUpsample::Bilinear && resizes() && plate_width >= scaled_width &&
               plate_height >= scaled_height;
    }

    /// The guide for restore(): `input` is this plan's model input, `rgb` the colour-converted plate as
    /// to_model_input() got it (packed float RGB, plate_width x plate_height).
    UpsampleGuide make_guide(const ModelInput& input, const OIIO::ImageBuf& rgb) const;

    /// Model output -> a 1-channel float32 ImageBuf of plate_width x plate_height (origin 0,0), enlarged as
    /// `upsample` says (bilinear, or guided/edge_hard steered by `guide`, which guided(upsample) requires:
    /// std::invalid_argument when it is missing). Throws RenderError when `depth` is empty (width or height
    /// < 1) or its data is not width x height values: nothing is resized from an empty source.
    OIIO::ImageBuf restore(const DepthImage& depth, const UpsampleSettings& upsample = {},
                           const UpsampleGuide* guide = nullptr) const;
};

}  // namespace depthbatch
