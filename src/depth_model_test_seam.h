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
    static void set_fault_injector(DepthModel& model, std::function<bool(std::size_t batch, const std::string& device)> injector);
};

}  // namespace depthbatch
