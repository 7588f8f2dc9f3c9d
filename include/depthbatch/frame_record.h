// depthbatch — one frame's record: everything the render knows about a frame, in one place, from the moment the
// pipeline plans it to the moment its file is in place (or its error is reported).
//
// The frame pipeline (run_job.h) makes a FrameRecord for each frame it computes and moves it along: prepare (read,
// colour, reformat: fills the plate side and `input`) -> the stage chain (sequence_stage.h: inference fills `depth`,
// the temporal stages rework it and may mark `lacked` or `abandoned`) -> finish (restore, convention, write: reads
// the plate side and `depth`) -> the report (`result`). Whoever holds the record owns it; nobody keeps a second copy
// of its data, and no stage casts anything back: a stage reads and writes the record's own typed fields. A failure
// anywhere is recorded in it (fail(): `result.status` and `result.message`) and travels with it to the report.
//
// Units and shapes: `input` 3 x H x W float32 RGB in [0,1] at the model's size; `depth` and each tile's `raw` the
// model's output (model units: relative inverse depth or metres, as the model contract says) at the model's size;
// `plate` the plate as read (float32, its data window). Not thread-safe: one stage holds a record at a time.
#pragma once

#include "depthbatch/camera.h"
#include "depthbatch/error.h"
#include "depthbatch/frame_result.h"
#include "depthbatch/model_data.h"
#include "depthbatch/plate.h"
#include "depthbatch/reformat.h"
#include "depthbatch/tiling.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace depthbatch {

/// One tile of a tiled frame (model.tiles, tiling.h): a plate of its own to the model.
struct FrameTile {
    TileRect rect;      ///< in the plate's data window, origin at its top-left pixel
    ReformatPlan plan;  ///< the tile -> the model's size, and back
    ModelInput input;   ///< what the model sees of the tile (emptied once inferred)
    DepthImage raw;     ///< its depth (model units, focal-corrected), at the model's size
    std::optional<UpsampleGuide> guide;
};

/// One frame of a render, as it travels (see the file comment).
struct FrameRecord {
    FrameRecord() = default;
    /// A frame planned at position `id` of the job's plan, frame number `frame`, at `shot_pos` in the shot's frames.
    FrameRecord(int id, int frame, int shot_pos) : id(id), frame(frame), shot_pos(shot_pos) { result.frame = frame; }
    /// One record per frame: it moves, it is never copied (a copy would duplicate its plate and depth).
    FrameRecord(FrameRecord&&) = default;
    FrameRecord& operator=(FrameRecord&&) = default;
    FrameRecord(const FrameRecord&) = delete;
    FrameRecord& operator=(const FrameRecord&) = delete;

    // ---- who it is ----------------------------------------------------------------------------------------------
    int id = 0;         ///< its position in the job's plan
    int frame = 0;      ///< the frame number (result.frame says the same)
    int shot_pos = 0;   ///< its position in the shot's frames (temporal windows are counted there)
    bool write = true;  ///< false for warm-up frames (inferred for their neighbours, not written)
    std::chrono::steady_clock::time_point started;  ///< when the pipeline took it up (result.seconds)

    // ---- at the model's size: what the stages read and write ----------------------------------------------------
    ModelInput input;              ///< what the model sees: 3 x H x W float32 RGB in [0,1]
    DepthImage depth;              ///< the raw depth (model units), as each stage leaves it
    std::vector<FrameTile> tiles;  ///< model.tiles: the frame's tiles (empty = untiled)
    bool abandoned = false;        ///< a stage could not finish it with its whole context (a stop cut its window):
                                   ///< it must not be published
    std::vector<int> lacked;       ///< frames missing from its temporal context (a gap): published marked
                                   ///< (EXR depthbatch/temporal_context), so --skip-existing renders it again later

    // ---- the plate side: what prepare makes and finish writes from ---------------------------------------------
    std::optional<Plate> plate;          ///< the plate as read (dropped once written; never kept for warm-up frames)
    std::string plate_identity;          ///< plate_identity() of the plate as read (EXR depthbatch/plate_identity)
    std::string context_plates;          ///< the other plates its depth was made from (EXR depthbatch/context_plates:
                                         ///< "frames SPEC, sha256 HEX" over their identities as read; "" for none)
    ReformatPlan plan;                   ///< the plate -> the model's size, and back (restore)
    std::optional<UpsampleGuide> guide;  ///< the plate's luma, for depth.upsample guided / edge_hard
    std::optional<PlateCamera> camera;   ///< the frame's camera (camera.h) when the job states one

    // ---- what the report gets -----------------------------------------------------------------------------------
    FrameResult result;  ///< status and message (the frame's error), paths, times, pixel counts

    /// Failed somewhere upstream: later stages pass it untouched (a gap), finish writes nothing, the report says why.
    bool failed() const { return result.status != ExitCode::Ok; }
    /// Record `e` (its exit code and message, which names the frame) as the frame's failure, replacing any earlier.
    void fail(const Error& e) {
        result.status = e.code();
        result.message = e.what();
    }
    /// "" when its temporal context was whole, else the frames it lacked as a frame spec ("1010-1011"): the EXR
    /// says "cut: " and that (depthbatch/temporal_context).
    std::string temporal_cut() const;
};

}  // namespace depthbatch
