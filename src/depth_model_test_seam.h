// depthbatch — internal: a test seam into DepthModel. Not installed, not part of the public API; only
// tests include it (tests/unit/depth_model_test.cpp).
#pragma once

#include "depthbatch/depth_model.h"

#include <cstddef>
#include <functional>
#include <string>

namespace depthbatch {

struct DepthModelTestSeam {
    /// Called before every forward with (batch size, device name); returning true makes that forward fail
    /// as if the device ran out of memory, to test the batch split and the CPU fallback of infer().
    static void set_fault_injector(DepthModel& model,
                                   std::function<bool(std::size_t batch, const std::string& device)> injector);
    /// How many CPU forwards, after the first, had an input shape not among the last 8 distinct ones (each
    /// called release_free_heap, src/depth_model.cpp, before it ran).
    static int cpu_new_shapes(const DepthModel& model);
    /// Lets DepthModel::load run fp16/bf16 on the CPU (as a cast module) for models loaded after the call, so that
    /// the precision check (DepthModel::check_precision) can be tested without a GPU. Off by default.
    static void allow_low_precision_on_cpu(bool allow);
};

}  // namespace depthbatch
