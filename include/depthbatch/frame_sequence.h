// depthbatch — frame sequences: a path pattern plus a frame list.
//
// Patterns accept the field's four spellings of a frame-number token, each meaning the same thing:
//   "####" (Nuke: one '#' per digit), "%04d" (printf), "$F4" (Houdini; "$F" = unpadded), "@@@@" (one '@'
//   per digit). Padding is a minimum width: frame 10001 in a 4-digit pattern is "10001" (it grows, it
//   never wraps), frame -5 is "-005" (printf semantics). A pattern holds exactly one token. A '#' or '@' of the
//   file name's own is written \# or \@ ("take\#2.####.exr" is take#2.1001.exr).
// Frame specs: comma-separated items "1001", "1001-1100", "1001-1100x2" (every 2nd frame from the first;
//   "1001-1100:2" is the same, the step as Open Job Description's range expressions and Houdini write it);
//   negative frames are allowed ("-10--1"). The result is sorted ascending without duplicates, so the
//   output frame numbers are always the input frame numbers.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace depthbatch {

struct InputSettings;  // plate.h: the job's input section

/// Parse a frame spec into sorted, unique frame numbers.
/// Throws ConfigError naming the offending item (empty spec, reversed range, step < 1, junk, more than
/// 1,000,000 frames in all).
std::vector<int> parse_frame_spec(const std::string& spec);

/// The `index`-th of `count` contiguous chunks of `frames` (a farm task's share: `--chunk I/N`), counted
/// from 1. Chunk sizes differ by at most one frame (chunk i holds frames[floor(n(i-1)/N), floor(ni/N)) of
/// the n frames), so N chunks of n >= N frames are never empty and every frame is in exactly one chunk;
/// with N > n some chunks are empty. Throws ConfigError unless 1 <= index <= count.
std::vector<int> chunk_frames(const std::vector<int>& frames, int index, int count);

/// The frames of `frames` from `first` to `last` inclusive (`--range`: a farm engine's <STARTFRAME> and
/// <ENDFRAME>, which bound a chunk of the job's frame list without naming its step or holes).
std::vector<int> frames_in_range(const std::vector<int>& frames, int first, int last);

/// `--range FIRST-LAST` as written: two decimal integers of up to 9 digits ("010" is 10, never octal), either may
/// be negative ("-10--1"), spaces allowed around each. Returns {first, last}, for frames_in_range. Throws
/// ConfigError "--range 'TEXT': expected FIRST-LAST, e.g. 1001-1010 (an engine's <STARTFRAME>-<ENDFRAME>)" for
/// anything else, and "--range 'TEXT' ends before it starts" when last < first.
std::pair<int, int> parse_frame_range(const std::string& text);

/// `--chunk I/N` as written (a farm task's share, chunk_frames): two decimal integers of up to 9 digits, spaces
/// allowed around each, with 1 <= I <= N. Throws ConfigError "--chunk 'TEXT': expected I/N with 1 <= I <= N, e.g.
/// 3/8 (the 3rd of 8 chunks; an unset $SLURM_ARRAY_TASK_ID gives '/8')" otherwise ("0/8", "9/8", "/8", "3/8x").
struct Chunk {
    int index = 0;  ///< I, from 1
    int count = 0;  ///< N
};
Chunk parse_chunk(const std::string& text);

/// Format frames back as a compact spec ("1001-1010x3,1020"), for logs and metadata.
std::string format_frame_spec(const std::vector<int>& frames);

/// A file name's own '#' and '@', written \# and \@ in a pattern, held apart (as the bytes 0x01 and 0x02) so that a
/// search for the frame-number token passes them by; restore_escaped_marks puts them back as plain '#' and '@'.
/// FrameSequence and default_stats_path (sequence_stats.h) read patterns through these.
std::string hide_escaped_marks(const std::string& text);
std::string restore_escaped_marks(std::string text);

/// A path pattern with one frame-number token.
class FrameSequence {
public:
    /// Parse `pattern`. Throws ConfigError if it has no token or more than one.
    explicit FrameSequence(const std::string& pattern);

    /// The path of frame `frame` (padding grows for wide numbers, see above).
    std::string path(int frame) const;

    /// Frames whose files exist on disk, ascending. Only names whose number is written exactly as
    /// path() would write it count (so "p.01001.exr" is not frame 1001 of "p.####.exr").
    std::vector<int> frames_on_disk() const;

    const std::string& pattern() const { return pattern_; }
    int padding() const { return padding_; }

private:
    std::string pattern_, prefix_, suffix_;
    int padding_ = 0;
};

/// The sequence that frames found on disk (sorted, unique) belong to: every frame from the first to the last at
/// the sequence's step, the greatest common divisor of the gaps between found frames (1 for 1001,1002,1004: 1003 is
/// a hole; 2 for 1001,1003,1007: 1005 is). A hole is a missing plate, as in a frame list the job gives. Fewer than
/// two frames: themselves. Throws ConfigError when that sequence would hold more than 1,000,000 frames.
std::vector<int> sequence_through(const std::vector<int>& found);

/// The shot's frames: input.frames when the job sets it, else the sequence the frames of input.path on disk
/// belong to (sequence_through(FrameSequence::frames_on_disk()): its holes included, as missing plates; empty
/// when none match). The one place that rule lives: the render, the review sheet and the farm plan take the shot
/// from here. Without input.frames, throws ConfigError for an input.path that is no pattern (FrameSequence's
/// constructor) and for a sequence over 1,000,000 frames.
std::vector<int> shot_frames(const InputSettings& input);

}  // namespace depthbatch
