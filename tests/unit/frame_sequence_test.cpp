// Unit tests for include/depthbatch/frame_sequence.h: frame specs, path patterns, frames on disk.
// docs/cases.md 1 (a plate numbered from 1001 must never come back numbered from 0; padding grows).
#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/plate.h"
#include "depthbatch/sequence_stats.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

using namespace depthbatch::test;
using depthbatch::ConfigError;
using depthbatch::format_frame_spec;
using depthbatch::FrameSequence;
using depthbatch::parse_frame_spec;
using depthbatch::sequence_through;
using Frames = std::vector<int>;

namespace {

Frames range(int first, int last, int step = 1) {
    Frames out;
    for (int f = first; f <= last; f += step) out.push_back(f);
    return out;
}

// The ConfigError message for `spec`; fails the test when parse_frame_spec does not throw ConfigError.
std::string spec_error(const std::string& spec) {
    return expect_error<ConfigError>([&] { parse_frame_spec(spec); }, "parse_frame_spec('" + spec + "')");
}

std::string pattern_error(const std::string& pattern) {
    return expect_error<ConfigError>([&] { FrameSequence seq(pattern); }, "FrameSequence('" + pattern + "')");
}

// A one-byte file `name` in `dir`.
void touch(const TempDir& dir, const std::string& name) { write_file(dir / name, "x"); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// parse_frame_spec
// ---------------------------------------------------------------------------------------------

TEST(ParseFrameSpec, SingleFrame) {
    EXPECT_EQ(parse_frame_spec("1001"), Frames({1001}));
    EXPECT_EQ(parse_frame_spec("0"), Frames({0}));
}

TEST(ParseFrameSpec, InclusiveRange) {
    const Frames f = parse_frame_spec("1001-1100");
    ASSERT_EQ(f.size(), 100u);
    EXPECT_EQ(f.front(), 1001);
    EXPECT_EQ(f.back(), 1100);
    EXPECT_EQ(f, range(1001, 1100));
}

TEST(ParseFrameSpec, OneFrameRange) { EXPECT_EQ(parse_frame_spec("1005-1005"), Frames({1005})); }

TEST(ParseFrameSpec, SteppedRangeStartsAtFirstFrame) {
    EXPECT_EQ(parse_frame_spec("1001-1010x3"), Frames({1001, 1004, 1007, 1010}));
    // The last frame is only included when the step lands on it.
    EXPECT_EQ(parse_frame_spec("1001-1009x3"), Frames({1001, 1004, 1007}));
    EXPECT_EQ(parse_frame_spec("1001-1100x2").size(), 50u);
    EXPECT_EQ(parse_frame_spec("1001-1100x2").back(), 1099);
    EXPECT_EQ(parse_frame_spec("1-10X5"), Frames({1, 6}));
    EXPECT_EQ(parse_frame_spec("1-3x1"), Frames({1, 2, 3}));
    EXPECT_EQ(parse_frame_spec("1-3x100"), Frames({1}));
}

TEST(ParseFrameSpec, CommaList) {
    Frames expected = {1001, 1005};
    for (int f = 1010; f <= 1020; ++f) expected.push_back(f);
    EXPECT_EQ(parse_frame_spec("1001,1005,1010-1020"), expected);
}

TEST(ParseFrameSpec, WhitespaceAroundItemsIsAllowed) {
    EXPECT_EQ(parse_frame_spec(" 1001 , 1003 - 1005 "), Frames({1001, 1003, 1004, 1005}));
}

TEST(ParseFrameSpec, NegativeFrames) {
    EXPECT_EQ(parse_frame_spec("-3--1"), Frames({-3, -2, -1}));
    EXPECT_EQ(parse_frame_spec("-2-2"), Frames({-2, -1, 0, 1, 2}));
    EXPECT_EQ(parse_frame_spec("-10--1x3"), Frames({-10, -7, -4, -1}));
    EXPECT_EQ(parse_frame_spec("-5"), Frames({-5}));
}

TEST(ParseFrameSpec, UnsortedAndDuplicateInputIsSortedAndUnique) {
    EXPECT_EQ(parse_frame_spec("1010,1001,1005,1001"), Frames({1001, 1005, 1010}));
    EXPECT_EQ(parse_frame_spec("1005-1008,1001-1006"), range(1001, 1008));
    EXPECT_EQ(parse_frame_spec("3,-1,2,2,0,-1"), Frames({-1, 0, 2, 3}));
}

TEST(ParseFrameSpec, EmptySpecIsAnError) {
    EXPECT_FALSE(spec_error("").empty());
    // An empty item between commas is junk, and the message quotes the spec.
    const std::string msg = spec_error("1001,,1005");
    EXPECT_NE(msg.find("1001,,1005"), std::string::npos) << msg;
}

TEST(ParseFrameSpec, ReversedRangeNamesTheItem) {
    const std::string msg = spec_error("1001,1010-1001");
    EXPECT_NE(msg.find("1010-1001"), std::string::npos) << msg;
}

TEST(ParseFrameSpec, StepZeroNamesTheItem) {
    const std::string msg = spec_error("1001-1010x0");
    EXPECT_NE(msg.find("1001-1010x0"), std::string::npos) << msg;
}

TEST(ParseFrameSpec, NegativeStepIsAnError) {
    const std::string msg = spec_error("1001-1010x-2");
    EXPECT_NE(msg.find("1001-1010x-2"), std::string::npos) << msg;
}

TEST(ParseFrameSpec, JunkNamesTheItem) {
    for (const std::string item : {"abc", "10a", "1001-", "x3", "1001x3", "1.5", "1001-1010x", "#"}) {
        const std::string msg = spec_error("1001," + item);
        EXPECT_NE(msg.find("'" + item + "'"), std::string::npos) << "item " << item << ": " << msg;
    }
}

TEST(ParseFrameSpec, FrameNumberOverflowIsAConfigError) {
    const std::string msg = spec_error("99999999999999999999");
    EXPECT_NE(msg.find("99999999999999999999"), std::string::npos) << msg;
}

// ---------------------------------------------------------------------------------------------
// format_frame_spec
// ---------------------------------------------------------------------------------------------

TEST(FormatFrameSpec, CompactForms) {
    EXPECT_EQ(format_frame_spec({1001, 1004, 1007, 1010, 1020}), "1001-1010x3,1020");
    EXPECT_EQ(format_frame_spec(range(1001, 1100)), "1001-1100");
    EXPECT_EQ(format_frame_spec({1001}), "1001");
    EXPECT_EQ(format_frame_spec({1001, 1005}), "1001,1005");
    EXPECT_EQ(format_frame_spec({-3, -2, -1}), "-3--1");
    EXPECT_EQ(format_frame_spec({}), "");
}

TEST(FormatFrameSpec, RoundTripsThroughParse) {
    const std::vector<Frames> cases = {
        {1001},
        range(1001, 1100),
        range(1001, 1100, 2),
        {1001, 1004, 1007, 1010, 1020},
        {1001, 1005, 1010, 1011, 1012, 1013, 1014, 1015, 1016, 1017, 1018, 1019, 1020},
        {-10, -7, -4, -1, 0, 1},
        {1, 3, 4, 5, 9, 20, 21},
        {9998, 9999, 10000, 10001},
        {-5, 7},
    };
    for (const Frames& frames : cases) {
        const std::string spec = format_frame_spec(frames);
        EXPECT_EQ(parse_frame_spec(spec), frames) << "spec '" << spec << "'";
    }
    for (const std::string spec : {"1001-1100", "1001-1010x3", "1001,1005,1010-1020", "-3--1"})
        EXPECT_EQ(parse_frame_spec(format_frame_spec(parse_frame_spec(spec))), parse_frame_spec(spec)) << spec;
}

// ---------------------------------------------------------------------------------------------
// FrameSequence: tokens and padding
// ---------------------------------------------------------------------------------------------

TEST(FrameSequence, FourPaddedSpellingsGiveTheSamePaths) {
    const FrameSequence hashes("/shots/sh010/plate.####.exr");
    for (const std::string pattern :
         {"/shots/sh010/plate.%04d.exr", "/shots/sh010/plate.$F4.exr", "/shots/sh010/plate.@@@@.exr"}) {
        const FrameSequence seq(pattern);
        EXPECT_EQ(seq.padding(), 4) << pattern;
        EXPECT_EQ(seq.pattern(), pattern);
        for (int f : {-5, 0, 1, 7, 42, 999, 1001, 9998, 9999, 10000, 10001, 123456})
            EXPECT_EQ(seq.path(f), hashes.path(f)) << pattern << " frame " << f;
    }
    EXPECT_EQ(hashes.path(1001), "/shots/sh010/plate.1001.exr");
    EXPECT_EQ(hashes.path(7), "/shots/sh010/plate.0007.exr");
}

TEST(FrameSequence, UnpaddedSpellingsGiveTheSamePaths) {
    const FrameSequence printf_d("p.%d.exr"), houdini("p.$F.exr");
    EXPECT_EQ(printf_d.padding(), 0);
    EXPECT_EQ(houdini.padding(), 0);
    for (int f : {-5, 0, 1, 7, 1001, 10001}) EXPECT_EQ(printf_d.path(f), houdini.path(f)) << f;
    EXPECT_EQ(printf_d.path(7), "p.7.exr");
    EXPECT_EQ(printf_d.path(1001), "p.1001.exr");
    EXPECT_EQ(houdini.path(-5), "p.-5.exr");
    // For 4-digit frames every spelling gives the same path.
    for (const std::string pattern : {"p.####.exr", "p.%04d.exr", "p.$F4.exr", "p.@@@@.exr"})
        EXPECT_EQ(FrameSequence(pattern).path(1001), printf_d.path(1001)) << pattern;
}

TEST(FrameSequence, OtherPaddingWidths) {
    EXPECT_EQ(FrameSequence("p.#.exr").path(5), "p.5.exr");
    EXPECT_EQ(FrameSequence("p.#.exr").path(1001), "p.1001.exr");
    EXPECT_EQ(FrameSequence("p.######.exr").path(1001), "p.001001.exr");
    EXPECT_EQ(FrameSequence("p.%06d.exr").path(1001), "p.001001.exr");
    EXPECT_EQ(FrameSequence("p.$F6.exr").path(1001), "p.001001.exr");
    EXPECT_EQ(FrameSequence("p.@@@@@@.exr").path(1001), "p.001001.exr");
    EXPECT_EQ(FrameSequence("p.##.exr").padding(), 2);
}

TEST(FrameSequence, PaddingGrowsAndNeverWraps) {
    const FrameSequence seq("p.####.exr");
    EXPECT_EQ(seq.path(9998), "p.9998.exr");
    EXPECT_EQ(seq.path(9999), "p.9999.exr");
    EXPECT_EQ(seq.path(10000), "p.10000.exr");
    EXPECT_EQ(seq.path(10001), "p.10001.exr");
    EXPECT_EQ(seq.path(1234567), "p.1234567.exr");
    EXPECT_EQ(seq.path(1001), "p.1001.exr");
    // Negative frames follow printf: the sign counts toward the width.
    EXPECT_EQ(seq.path(-5), "p.-005.exr");
    EXPECT_EQ(seq.path(-12345), "p.-12345.exr");
    // Distinct frames give distinct paths (no wrap to 0000/0001).
    EXPECT_NE(seq.path(10000), seq.path(0));
    EXPECT_NE(seq.path(10001), seq.path(1));
}

TEST(FrameSequence, TokenMayBeAnywhereInTheFileName) {
    EXPECT_EQ(FrameSequence("/a/b/sh010_####_depth.exr").path(1001), "/a/b/sh010_1001_depth.exr");
    EXPECT_EQ(FrameSequence("####.exr").path(12), "0012.exr");
    EXPECT_EQ(FrameSequence("plate.$F4").path(3), "plate.0003");
}

TEST(FrameSequence, NoTokenIsAnError) {
    const std::string msg = pattern_error("/shots/plate.exr");
    EXPECT_NE(msg.find("/shots/plate.exr"), std::string::npos) << msg;
    pattern_error("");
}

TEST(FrameSequence, TwoTokensAreAnError) {
    for (const std::string pattern : {"p.####.####.exr", "p.####.%04d.exr", "p.$F4_@@@@.exr", "p.%d.$F.exr"}) {
        const std::string msg = pattern_error(pattern);
        EXPECT_NE(msg.find(pattern), std::string::npos) << msg;
    }
}

// Issue 32 §5: frames found on disk belong to the sequence from the first to the last at the step of their gaps
// (their greatest common divisor): its holes are frames of the shot (missing plates), as in a frame list.
TEST(SequenceThrough, FillsTheHolesAtTheSequencesStep) {
    EXPECT_EQ(sequence_through({}), Frames({}));
    EXPECT_EQ(sequence_through({1001}), Frames({1001}));
    EXPECT_EQ(sequence_through({1001, 1002, 1003}), Frames({1001, 1002, 1003}));
    EXPECT_EQ(sequence_through({1001, 1002, 1004, 1005}), Frames({1001, 1002, 1003, 1004, 1005}));
    EXPECT_EQ(sequence_through({1001, 1003, 1007}), Frames({1001, 1003, 1005, 1007})) << "on twos: 1005 is the hole";
    EXPECT_EQ(sequence_through({1001, 1005}), Frames({1001, 1005})) << "two frames: their own step";
    EXPECT_EQ(sequence_through({1001, 1003, 1004}), Frames({1001, 1002, 1003, 1004}))
        << "a step of 1 somewhere: every frame";
    EXPECT_EQ(sequence_through({-3, -1, 3}), Frames({-3, -1, 1, 3}));
    const std::string msg = expect_error<ConfigError>([] { sequence_through({1, 2, 2000000}); }, "sequence_through");
    EXPECT_TRUE(contains(msg, "the frames on disk (1,2,2000000) span 2000000 frames at step 1")) << msg;
}

// ---------------------------------------------------------------------------------------------
// FrameSequence::frames_on_disk (docs/cases.md 1, FrameSequence half)
// ---------------------------------------------------------------------------------------------

TEST(FramesOnDisk, FindsExactlyTheFramesOfThePattern) {
    TempDir dir;
    Frames expected;
    for (int f = 1001; f <= 1010; ++f) {
        touch(dir, "p." + std::to_string(f) + ".exr");
        expected.push_back(f);
    }
    for (int f = 9998; f <= 10001; ++f) {
        touch(dir, "p." + std::to_string(f) + ".exr");
        expected.push_back(f);
    }
    touch(dir, "p.0042.exr");  // a real (padded) frame 42
    touch(dir, "p.-005.exr");  // a real frame -5, as path(-5) writes it
    expected.push_back(42);
    expected.push_back(-5);
    std::sort(expected.begin(), expected.end());

    // Decoys: names that are not written exactly as path() would write them.
    for (const std::string decoy : {"p.01001.exr", "p.abc.exr", "q.1001.exr", "p.1001.exr.tmp", "p.1001.png",
                                    "p.100.exr", "p.42.exr", "p.-5.exr", "p..exr", "p.1001a.exr", "xp.1001.exr",
                                    "p.1001.exrx", "p.+1001.exr", "p. 1001.exr", "p.1001.EXR", "P.1001.exr"})
        touch(dir, decoy);

    for (const std::string token : {"####", "%04d", "$F4", "@@@@"}) {
        const FrameSequence seq((dir.path / ("p." + token + ".exr")).string());
        const Frames found = seq.frames_on_disk();
        EXPECT_EQ(found, expected) << token;
        EXPECT_EQ(std::count(found.begin(), found.end(), 0), 0);
        EXPECT_EQ(std::count(found.begin(), found.end(), 1), 0);
        for (int f : found) EXPECT_TRUE(fs::exists(seq.path(f))) << seq.path(f);
    }
}

TEST(FramesOnDisk, UnpaddedPattern) {
    TempDir dir;
    for (const std::string name : {"p.1.exr", "p.7.exr", "p.1001.exr", "p.01.exr", "p.007.exr", "p.-3.exr"})
        touch(dir, name);
    const FrameSequence seq((dir.path / "p.$F.exr").string());
    EXPECT_EQ(seq.frames_on_disk(), Frames({-3, 1, 7, 1001}));
}

TEST(FramesOnDisk, SubfolderNamedLikeAFrameIsNotAFrame) {
    TempDir dir;
    touch(dir, "p.1001.exr");
    fs::create_directory(dir.path / "p.1002.exr");
    const FrameSequence seq((dir.path / "p.####.exr").string());
    EXPECT_EQ(seq.frames_on_disk(), Frames({1001}));
}

TEST(FramesOnDisk, OnlyTheFileNamePartMatchesInTheRightFolder) {
    TempDir dir;
    fs::create_directories(dir.path / "a");
    fs::create_directories(dir.path / "b");
    touch(dir, "a/p.1001.exr");
    touch(dir, "b/p.1002.exr");
    EXPECT_EQ(FrameSequence((dir.path / "a" / "p.####.exr").string()).frames_on_disk(), Frames({1001}));
    EXPECT_EQ(FrameSequence((dir.path / "b" / "p.####.exr").string()).frames_on_disk(), Frames({1002}));
}

TEST(FramesOnDisk, MissingFolderGivesNoFrames) {
    TempDir dir;
    const FrameSequence seq((dir.path / "does_not_exist" / "p.####.exr").string());
    EXPECT_TRUE(seq.frames_on_disk().empty());
}

TEST(FramesOnDisk, EmptyFolderGivesNoFrames) {
    TempDir dir;
    EXPECT_TRUE(FrameSequence((dir.path / "p.####.exr").string()).frames_on_disk().empty());
}

// shot_frames: input.frames when set (whatever is on disk, even nothing, and without parsing input.path),
// else the sequence of the plates on disk, its hole 1003 included (issue 32 §5: a missing plate).
TEST(FramesOnDisk, ShotFramesAreInputFramesElseThePlatesOnDisk) {
    TempDir dir;
    for (const std::string name : {"p.1001.exr", "p.1002.exr", "p.1004.exr"}) touch(dir, name);
    depthbatch::InputSettings input;
    input.path = (dir.path / "p.####.exr").string();
    EXPECT_EQ(depthbatch::shot_frames(input), Frames({1001, 1002, 1003, 1004}));
    input.frames = {1001, 1003, 1005};
    EXPECT_EQ(depthbatch::shot_frames(input), Frames({1001, 1003, 1005})) << "input.frames, not what is on disk";
    input.path = (dir.path / "p.exr").string();
    EXPECT_EQ(depthbatch::shot_frames(input), Frames({1001, 1003, 1005})) << "the pattern is not read";
    input.frames.clear();
    EXPECT_THROW(depthbatch::shot_frames(input), ConfigError) << "a pattern without a frame token";
    input.path = (dir.path / "none" / "p.####.exr").string();
    EXPECT_TRUE(depthbatch::shot_frames(input).empty());
}

// Found by scripts/fuzz (issue 13): "1-99999999" in several items took gigabytes and minutes. A spec names
// at most a million frames in all (over eleven hours at 24 fps); more is a config error naming the item.
TEST(FrameSpec, AtMostAMillionFramesInAll) {
    EXPECT_EQ(parse_frame_spec("1-1000000").size(), 1000000u);
    EXPECT_EQ(parse_frame_spec("1-2000000x2").size(), 1000000u);
    const std::string one = expect_error<ConfigError>([] { parse_frame_spec("1-1000001"); });
    EXPECT_TRUE(contains(one, "range '1-1000001' makes more than 1000000 frames")) << one;
    const std::string sum = expect_error<ConfigError>([] { parse_frame_spec("1-600000,700001-1300000"); });
    EXPECT_TRUE(contains(sum, "'700001-1300000'")) << sum;
    const std::string huge = expect_error<ConfigError>([] { parse_frame_spec("-1073741823-1073741823"); });
    EXPECT_TRUE(contains(huge, "more than 1000000 frames")) << huge;
}

// Found by scripts/fuzz (issue 13): a padding too wide for an int ("$F011101018014") threw std::out_of_range,
// which the CLI reported as "unexpected" (exit 5). It is a config error naming the pattern.
TEST(FramePattern, PaddingWiderThanAnIntIsAConfigError) {
    for (const std::string p : {"sh-$F011101018014x.exr", "p.%099999999999d.exr", "p.%017d.exr"}) {
        const std::string msg = expect_error<ConfigError>([&] { FrameSequence seq(p); });
        EXPECT_TRUE(contains(msg, "padding over 16 digits")) << msg;
    }
    EXPECT_EQ(FrameSequence("p.$F0.exr").path(7), "p.7.exr");
    EXPECT_EQ(FrameSequence("p.%0016d.exr").path(7), "p.0000000000000007.exr");
}

// Open Job Description writes a chunk's step with ':' ("1001-1015:2"); Houdini does too. Same frames as 'x'.
TEST(ParseFrameSpec, ColonStepIsTheSameAsX) {
    EXPECT_EQ(parse_frame_spec("1001-1015:2"), parse_frame_spec("1001-1015x2"));
    EXPECT_EQ(parse_frame_spec("1001-1007:3,1010"), Frames({1001, 1004, 1007, 1010}));
    EXPECT_EQ(parse_frame_spec("1001-1001"), Frames({1001}));  // a one-frame OpenJD chunk
}

// --chunk I/N: every frame in exactly one chunk, chunks contiguous and in order, sizes within one frame of each
// other, for awkward counts and for stepped and holey frame lists.
TEST(ChunkFrames, EveryFrameInExactlyOneChunkForAwkwardCounts) {
    using depthbatch::chunk_frames;
    const std::vector<Frames> shots = {parse_frame_spec("1001-1100"), parse_frame_spec("1001-1100x3"),
                                       parse_frame_spec("1-7,20,30-33"), parse_frame_spec("-5-5"), Frames({1001})};
    for (const Frames& shot : shots) {
        for (int n : {1, 2, 3, 7, 10, 33, 34, 100, 101}) {
            Frames joined;
            size_t smallest = shot.size(), largest = 0;
            for (int i = 1; i <= n; ++i) {
                const Frames c = chunk_frames(shot, i, n);
                joined.insert(joined.end(), c.begin(), c.end());
                smallest = std::min(smallest, c.size());
                largest = std::max(largest, c.size());
            }
            EXPECT_EQ(joined, shot) << format_frame_spec(shot) << " in " << n << " chunks";
            EXPECT_LE(largest - smallest, 1u) << format_frame_spec(shot) << " in " << n << " chunks";
            if (static_cast<size_t>(n) <= shot.size()) EXPECT_GE(smallest, 1u);
        }
    }
    EXPECT_EQ(chunk_frames(parse_frame_spec("1001-1010"), 1, 3), Frames({1001, 1002, 1003}));
    EXPECT_EQ(chunk_frames(parse_frame_spec("1001-1010"), 3, 3), Frames({1007, 1008, 1009, 1010}));
    EXPECT_EQ(chunk_frames(parse_frame_spec("1001-1019x2"), 2, 2), Frames({1011, 1013, 1015, 1017, 1019}));
}

TEST(ChunkFrames, IndexOutsideOneToNIsAConfigError) {
    using depthbatch::chunk_frames;
    const Frames shot = parse_frame_spec("1-10");
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { chunk_frames(shot, 0, 3); }), "1 <= I <= N"));
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { chunk_frames(shot, 4, 3); }), "chunk 4/3"));
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { chunk_frames(shot, 1, 0); }), "chunk 1/0"));
}

// --range A-B (Deadline's <STARTFRAME>-<ENDFRAME>, OpenCue's #FRAME_START#-#FRAME_END#): the job's own frames
// inside, so a stepped or holey job never renders a frame it does not have, and an end past the last frame
// (an older cuebot's last chunk) adds nothing.
TEST(FramesInRange, OnlyTheJobsFramesInsideTheRange) {
    using depthbatch::frames_in_range;
    EXPECT_EQ(frames_in_range(parse_frame_spec("1001-1019x2"), 1004, 1010), Frames({1005, 1007, 1009}));
    EXPECT_EQ(frames_in_range(parse_frame_spec("1001-1010"), 1009, 1012), Frames({1009, 1010}));
    EXPECT_EQ(frames_in_range(parse_frame_spec("1001-1010"), 900, 1000), Frames());
}

// --chunk I/N and --range FIRST-LAST as written (issue 33 §5: parsed by the library, not by the app's own regexes).
TEST(ParseChunk, ThirdOfEightOfAHundredFramesIsItsExactShare) {
    const depthbatch::Chunk c = depthbatch::parse_chunk("3/8");
    EXPECT_EQ(c.index, 3);
    EXPECT_EQ(c.count, 8);
    // 100 frames in 8 chunks: chunk 3 is frames[25, 37) of the shot, 1026-1037.
    EXPECT_EQ(depthbatch::chunk_frames(parse_frame_spec("1001-1100"), c.index, c.count), parse_frame_spec("1026-1037"));
    EXPECT_EQ(depthbatch::parse_chunk(" 010 / 12 ").index, 10);  // decimal as written, never octal
}

TEST(ParseChunk, ZeroOverOrMissingIndexIsAConfigErrorNamingTheFlag) {
    const std::string expected_tail =
        "': expected I/N with 1 <= I <= N, e.g. 3/8 (the 3rd of 8 chunks; an unset "
        "$SLURM_ARRAY_TASK_ID gives '/8')";
    for (const std::string text : {"0/8", "9/8", "/8", "3/8x", "1234567890/2000000000"})
        EXPECT_EQ(expect_error<ConfigError>([&] { depthbatch::parse_chunk(text); }, text),
                  "--chunk '" + text + expected_tail);
}

TEST(ParseFrameRange, FirstAndLastAsWrittenOrAnErrorNamingTheFlag) {
    EXPECT_EQ(depthbatch::parse_frame_range("1005-1010"), std::make_pair(1005, 1010));
    EXPECT_EQ(depthbatch::parse_frame_range(" 010 - 012 "), std::make_pair(10, 12));
    EXPECT_EQ(depthbatch::parse_frame_range("-5--1"), std::make_pair(-5, -1));
    EXPECT_EQ(depthbatch::frames_in_range(parse_frame_spec("1001-1100x3"), 1005, 1012), (Frames{1007, 1010}));
    EXPECT_EQ(expect_error<ConfigError>([] { depthbatch::parse_frame_range("abc"); }),
              "--range 'abc': expected FIRST-LAST, e.g. 1001-1010 (an engine's <STARTFRAME>-<ENDFRAME>)");
    EXPECT_EQ(expect_error<ConfigError>([] { depthbatch::parse_frame_range("10-1"); }),
              "--range '10-1' ends before it starts");
}

// Issue 41 §5: a '#' (or '@') of the file name's own is written \# (or \@) and is then literal; unescaped, a second
// run is a second token and is refused, saying how to write it.
TEST(FrameSequence, AHashOfTheFileNamesOwnIsWrittenEscaped) {
    EXPECT_EQ(FrameSequence("/shots/take\\#2.####.exr").path(1001), "/shots/take#2.1001.exr");
    EXPECT_EQ(FrameSequence("/shots/a\\@b\\#.%04d.exr").path(7), "/shots/a@b#.0007.exr");
    EXPECT_EQ(FrameSequence("/sh\\#ots/p.####.exr").path(5), "/sh\\#ots/p.0005.exr") << "folders are left alone";
    const std::string msg = expect_error<ConfigError>([] { FrameSequence("/shots/take#2.####.exr"); }, "two # runs");
    EXPECT_NE(msg.find("more than one frame-number token"), std::string::npos) << msg;
    EXPECT_NE(msg.find("is written \\# or \\@"), std::string::npos) << msg;
    // The statistics sidecar named after such a pattern keeps the file name's own '#'.
    EXPECT_EQ(depthbatch::default_stats_path("/out/take\\#2.####.exr"), "/out/take#2.stats.json");
}
