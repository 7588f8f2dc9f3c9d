// depthbatch — what happened to one frame: its status, its message, its paths, the time each stage took and the
// pixels the render changed. The frame's record carries it (frame_record.h) and the job's report lists it
// (run_job.h: JobReport::frames, the summary JSON's "frames").
#pragma once

#include "depthbatch/error.h"

#include <cstddef>
#include <string>

namespace depthbatch {

/// Milliseconds spent on one frame per stage.
struct StageTimes {
    double read_ms = 0, color_ms = 0, reformat_ms = 0, infer_ms = 0, restore_ms = 0, write_ms = 0;
};

/// One frame's outcome, as the report and the summary JSON give it.
struct FrameResult {
    int frame = 0;
    ExitCode status = ExitCode::Ok;  ///< Ok, or the failure class (Input, Model, Render, OutputExists)
    std::string message;             ///< empty when Ok
    std::string rerender_reason;     ///< why an existing output was not kept under "skip" ("" = none was there)
    double seconds = 0;              ///< wall time from the frame's start to its file being in place
    std::string input_path, output_path;
    StageTimes times;
    long nonfinite_pixels = 0;     ///< plate pixels with NaN/Inf in R,G,B, replaced by 0 before the colour stage
    long out_of_range_pixels = 0;  ///< plate pixels outside [0,1] after the colour stage (clamped into it)
    size_t depth_clamped = 0;      ///< written depth values clamped by the convention (normalized, clip)
};

}  // namespace depthbatch
