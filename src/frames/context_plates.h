// depthbatch (internal) — the plates a frame's depth was made from beyond its own: the stabilizer's window and a
// video model's windows (issue 41: a re-delivered plate must make every frame it shaped render again).
//
// A frame's context is the shot positions a render of that frame alone would read (the plan a farm chunk of one
// frame runs: video_window_stage.h plan_video_windows for a video model, with the stabilizer's radius on each side;
// frames p - R .. p + R for the stabilizer alone). A whole render reads no more that matters: its frames equal the
// chunk's (metric) or stay within the bound docs/video-models.md states (relative: the windows before the chunk's
// context converge). The EXR records it as `depthbatch/context_plates`:
//     "frames 1052-1083, sha256 <64 hex>"
// the digest over the lines "FRAME IDENTITY\n" of those frames in order (IDENTITY: plate_identity() of the plate
// as it was read, "" for one that was missing). About 100 bytes a frame. --skip-existing recomputes the digest from
// the plates on disk now (one stat a plate) and renders the frame again when it differs.
#pragma once

#include "depthbatch/model_contract.h"

#include <functional>
#include <string>
#include <vector>

namespace depthbatch::detail {

/// What makes a frame's depth depend on other frames' plates.
struct TemporalReach {
    const TemporalWindowing* video = nullptr;  ///< a multi-frame model's windows (nullptr: a single-frame model)
    int stabilize_radius = 0;                  ///< depth.stabilize's radius R (0: not stabilized)
    bool any() const { return video || stabilize_radius > 0; }
};

/// The shot positions (0-based, ascending, `pos` included) whose plates shape the depth of position `pos` of a shot
/// of `shot_size` frames (0 <= pos < shot_size). Just {pos} when reach.any() is false.
std::vector<int> context_positions(const TemporalReach& reach, int shot_size, int pos);

/// The `depthbatch/context_plates` value for the plates of `frames` (frame numbers, ascending), `identity(frame)`
/// giving each one's plate_identity() as read.
std::string context_plates_value(const std::vector<int>& frames, const std::function<std::string(int frame)>& identity);

/// "" when `value` names the frames `frames_now` (the frame's context in the shot as it is now: context_positions
/// of its position in it, as frame numbers) and their plates still have the identities it recorded
/// (`identity(frame)`: now); else why not, for the log: the context is other frames now (the shot grew or shrank
/// at an end, so the stabilizer's window or the video windows differ: "made with the frames 1017-1020 around it;
/// in the shot as it is now they are 1017-1023"), or a plate changed ("made with neighbouring plates of which one
/// or more have changed since (frames 1052-1083)"). A value it cannot read counts as changed.
std::string context_plates_changed(const std::string& value, const std::vector<int>& frames_now,
                                   const std::function<std::string(int frame)>& identity);

}  // namespace depthbatch::detail
