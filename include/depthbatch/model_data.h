// depthbatch — the data a model takes and gives for one frame, at model resolution. The model (depth_model.h),
// the reformat plan (reformat.h) and the sequence stages (sequence_stage.h) all depend on these, not on each other.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace depthbatch {

/// Model input for one frame: planar CHW float32, 3 x height x width, RGB in [0,1] after clamping.
struct ModelInput {
    int width = 0, height = 0;
    std::vector<float> chw;
};

/// Raw model output for one frame: height x width float32 in the model's units (row-major, width >= 1,
/// height >= 1 when it comes from DepthModel::infer).
struct DepthImage {
    int width = 0, height = 0;
    std::vector<float> data;
    /// Metric models only (contract kind metric_depth): how many values are < 0 (physically impossible depth),
    /// and the smallest. They are kept as the model gave them, never clamped to 0: the job's depth.kind treats
    /// them as any other value (raw and metric write them negative, inverse writes 0 for depth <= 0), and
    /// run_job warns with the count for the frame.
    size_t negative = 0;
    float negative_min = 0;
    /// The contract's extra outputs (output.extra_outputs), in its order: width x height values each, on the
    /// depth's grid; empty for a model without them.
    std::vector<std::vector<float>> extra;
};

/// What an any-view model (model_contract.h ViewsContract) gives for one view of a window: its depth (the model's
/// units, larger = farther; `extra` holds the contract's extra outputs, e.g. confidence) and its camera in the
/// window's own gauge: `world_to_camera` the OpenCV 3x4 [R|t] (x right, y down, z forward; row-major), `intrinsics`
/// the 3x3 K (row-major) in the pixels of the model's input (width x height of `depth` when the model keeps its input
/// size).
struct ViewOutput {
    DepthImage depth;
    std::array<double, 12> world_to_camera{};
    std::array<double, 9> intrinsics{};
    int input_width = 0, input_height = 0;  ///< the model input the intrinsics are in (px)
};

}  // namespace depthbatch
