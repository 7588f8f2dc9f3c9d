// The plates a frame's depth was made from beyond its own (context_plates.h).
#include "context_plates.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/sha256.h"
#include "depthbatch/video_window_stage.h"

#include <algorithm>

namespace depthbatch::detail {

std::vector<int> context_positions(const TemporalReach& reach, int shot_size, int pos) {
    if (!reach.any() || shot_size <= 0) return {pos};
    const int first = std::max(0, pos - reach.stabilize_radius),
              last = std::min(shot_size - 1, pos + reach.stabilize_radius);
    if (!reach.video) {
        std::vector<int> all;
        for (int p = first; p <= last; ++p) all.push_back(p);
        return all;
    }
    return plan_video_windows(*reach.video, shot_size, first, last).positions;
}

namespace {
std::string digest(const std::vector<int>& frames, const std::function<std::string(int)>& identity) {
    std::string lines;
    for (int f : frames) lines += std::to_string(f) + " " + identity(f) + "\n";
    return sha256_text(lines);
}
constexpr const char* kFrames = "frames ";
constexpr const char* kDigest = ", sha256 ";
}  // namespace

std::string context_plates_value(const std::vector<int>& frames, const std::function<std::string(int)>& identity) {
    return kFrames + format_frame_spec(frames) + kDigest + digest(frames, identity);
}

std::string context_plates_changed(const std::string& value, const std::vector<int>& frames_now,
                                   const std::function<std::string(int)>& identity) {
    const size_t at = value.rfind(kDigest);
    if (value.rfind(kFrames, 0) != 0 || at == std::string::npos)
        return "recorded with context plates it cannot read (depthbatch/context_plates '" + value + "')";
    const std::string spec = value.substr(std::string(kFrames).size(), at - std::string(kFrames).size());
    std::vector<int> frames;
    try {
        frames = parse_frame_spec(spec);
    } catch (const ConfigError&) {
        return "recorded with context plates it cannot read (depthbatch/context_plates '" + value + "')";
    }
    if (frames != frames_now)
        return "made with the frames " + spec + " around it; in the shot as it is now they are " +
               format_frame_spec(frames_now) + " (the shot changed at an end)";
    if (digest(frames, identity) == value.substr(at + std::string(kDigest).size())) return "";
    return "made with neighbouring plates of which one or more have changed since (frames " + spec + ")";
}

}  // namespace depthbatch::detail
