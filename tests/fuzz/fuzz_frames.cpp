// libFuzzer target: frame specs and path patterns. parse_frame_spec either throws ConfigError or returns
// sorted unique frames that format_frame_spec writes back to the same list; FrameSequence either throws
// ConfigError or formats frames. Anything else is a bug. Input: spec, NUL, pattern.
#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string in(reinterpret_cast<const char*>(data), size);
    const size_t nul = in.find('\0');
    const std::string spec = in.substr(0, nul), pattern = nul == std::string::npos ? "p.####.exr" : in.substr(nul + 1);
    try {
        const std::vector<int> frames = depthbatch::parse_frame_spec(spec);
        if (frames.empty() || !std::is_sorted(frames.begin(), frames.end()) ||
            std::adjacent_find(frames.begin(), frames.end()) != frames.end())
            std::abort();
        // The round trip is checked on specs of up to 10,000 frames: longer ones cost milliseconds each and
        // would starve the search (their bound is a unit test, FrameSpec.AtMostAMillionFramesInAll).
        if (frames.size() <= 10000 && depthbatch::parse_frame_spec(depthbatch::format_frame_spec(frames)) != frames)
            std::abort();
    } catch (const depthbatch::ConfigError&) {}
    try {
        const depthbatch::FrameSequence seq(pattern);
        for (int f : {0, 1, 1001, -5, 123456789, -2147483647}) (void)seq.path(f);
    } catch (const depthbatch::ConfigError&) {}
    return 0;
}
