// Unit tests for include/depthbatch/sequence_stage.h: the chain's contract (each frame out exactly once, in order;
// batches; a size change and a failed frame end segments), and the stabilizer stage's knowledge of its windows
// (a gap marks the frames whose window lacked it, a stop abandons those it cut).
#include "depthbatch/sequence_stage.h"

#include <gtest/gtest.h>

#include <map>

using namespace depthbatch;

namespace {

FrameRecord frame_at(int pos, int w = 4, int h = 4, bool failed = false) {
    FrameRecord f(pos, 1001 + pos, pos);
    if (failed) f.fail(InputError("frame " + std::to_string(f.frame) + ": unreadable"));
    f.input.width = w, f.input.height = h;
    f.input.chw.assign(static_cast<size_t>(3) * w * h, 0.5f);
    return f;
}

/// A forward that records its groups and writes depth = frame number.
struct Recorder {
    std::vector<std::vector<int>> groups;
    BatchInferenceStage::Forward forward() {
        return [this](std::vector<FrameRecord*>& frames) {
            groups.emplace_back();
            for (FrameRecord* f : frames) {
                groups.back().push_back(f->frame);
                f->depth.width = f->input.width, f->depth.height = f->input.height;
                f->depth.data.assign(static_cast<size_t>(f->input.width) * f->input.height,
                                     static_cast<float>(f->frame));
            }
        };
    }
};

std::vector<int> frames_of(const std::vector<FrameRecord>& out) {
    std::vector<int> v;
    for (const auto& f : out) v.push_back(f.frame);
    return v;
}

/// A stage that holds every frame until its segment ends, as a video model's windows do: at a stop it gives them
/// back abandoned, their depth unfinished (here: -1000, far outside any real frame's).
struct HoldingStage : SequenceStage {
    std::vector<FrameRecord> held, ready;
    std::string name() const override { return "holding"; }
    void push(FrameRecord f) override {
        f.depth.width = f.input.width, f.depth.height = f.input.height;
        f.depth.data.assign(static_cast<size_t>(f.input.width) * f.input.height, static_cast<float>(f.frame));
        held.push_back(std::move(f));
        while (held.size() > 2) {  // two frames of lookahead
            ready.push_back(std::move(held.front()));
            held.erase(held.begin());
        }
    }
    void end_segment(SegmentEnd why, const std::vector<int>&) override {
        for (FrameRecord& f : held) {
            if (why == SegmentEnd::Stop) {
                f.abandoned = true;
                std::fill(f.depth.data.begin(), f.depth.data.end(), -1000.0f);
            }
            ready.push_back(std::move(f));
        }
        held.clear();
    }
    std::vector<FrameRecord> pop_ready() override { return std::move(ready); }
};

}  // namespace

// Issue 41 (a new user's T24): a stage before the stabilizer that abandons frames at a stop (a video model's
// unfinished windows) must not lend their depth to the stabilizer's windows: the frames whose window they would
// have been are abandoned too, never written with it, so a resume renders them as a clean render does.
TEST(StabilizerStage, FramesAnEarlierStageAbandonedAreNoOnesNeighbours) {
    constexpr int R = 2, N = 20;
    StageChain chain;
    chain.add(std::make_unique<HoldingStage>());
    chain.add(std::make_unique<StabilizerStage>(R, N));
    for (int p = 0; p <= 9; ++p) chain.push(frame_at(p));
    chain.end_segment(SegmentEnd::Stop);
    std::vector<int> abandoned, written;
    for (const FrameRecord& f : chain.pop_ready()) {
        (f.abandoned ? abandoned : written).push_back(f.frame);
        if (f.abandoned) continue;
        for (float v : f.depth.data) EXPECT_GT(v, 0.0f) << "frame " << f.frame << " was averaged with abandoned depth";
    }
    // 1009 and 1010 abandoned by the holding stage; 1007 and 1008 lack them in their windows: abandoned as well.
    EXPECT_EQ(abandoned, (std::vector<int>{1007, 1008, 1009, 1010}));
    EXPECT_EQ(written, (std::vector<int>{1001, 1002, 1003, 1004, 1005, 1006}));
}

TEST(StageChain, BatchesOfOneSizeEachFrameOutOnceInOrder) {
    Recorder rec;
    StageChain chain;
    chain.add(std::make_unique<BatchInferenceStage>(3, rec.forward()));
    std::vector<FrameRecord> out;
    for (int p = 0; p < 8; ++p) {
        chain.push(frame_at(p, p < 5 ? 4 : 6));  // the size changes at 1006
        for (auto& f : chain.pop_ready()) out.push_back(std::move(f));
    }
    chain.end_segment(SegmentEnd::End);
    for (auto& f : chain.pop_ready()) out.push_back(std::move(f));
    EXPECT_EQ(frames_of(out), (std::vector<int>{1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008}));
    EXPECT_EQ(rec.groups, (std::vector<std::vector<int>>{{1001, 1002, 1003}, {1004, 1005}, {1006, 1007, 1008}}));
    EXPECT_EQ(chain.size_changes(), (std::vector<int>{1006}));
    EXPECT_EQ(out[6].depth.data.at(0), 1007.0f);
    EXPECT_EQ(chain.max_held(), 2);
    EXPECT_EQ(chain.context_frames(), 0);
}

TEST(StageChain, InferenceOneBatchAheadCompletesInOrderAndHoldsWhatIsInFlight) {
    std::vector<std::string> log;
    StageChain chain;
    chain.add(std::make_unique<BatchInferenceStage>(2, 1, [&log](std::vector<FrameRecord*>& frames) {
        const int first = frames.front()->frame;
        log.push_back("launch " + std::to_string(first));
        return std::function<void()>([&log, frames, first] {
            log.push_back("complete " + std::to_string(first));
            for (FrameRecord* f : frames) {
                f->depth.width = f->depth.height = 1;
                f->depth.data = {static_cast<float>(f->frame)};
            }
        });
    }));
    EXPECT_EQ(chain.max_held(), 3) << "a batch collecting (batch - 1) and one launched";
    std::vector<FrameRecord> out;
    std::vector<size_t> ready_after;
    for (int p = 0; p < 5; ++p) {
        chain.push(frame_at(p, 4));
        for (auto& f : chain.pop_ready()) out.push_back(std::move(f));
        ready_after.push_back(out.size());
    }
    // Batch 1001-1002 comes out only once 1003-1004 is launched: the model always has the next batch.
    EXPECT_EQ(ready_after, (std::vector<size_t>{0, 0, 0, 2, 2}));
    chain.end_segment(SegmentEnd::End);
    for (auto& f : chain.pop_ready()) out.push_back(std::move(f));
    EXPECT_EQ(frames_of(out), (std::vector<int>{1001, 1002, 1003, 1004, 1005}));
    for (const auto& f : out) EXPECT_EQ(f.depth.data.at(0), static_cast<float>(f.frame));
    EXPECT_EQ(log, (std::vector<std::string>{"launch 1001", "launch 1003", "complete 1001", "launch 1005",
                                             "complete 1003", "complete 1005"}));
}

TEST(StageChain, AFailedFramePassesAroundTheStagesAndEndsTheirSegment) {
    Recorder rec;
    StageChain chain;
    chain.add(std::make_unique<BatchInferenceStage>(4, rec.forward()));
    for (int p = 0; p < 6; ++p) chain.push(frame_at(p, 4, 4, p == 2));
    chain.end_segment(SegmentEnd::End);
    const auto out = chain.pop_ready();
    EXPECT_EQ(frames_of(out), (std::vector<int>{1001, 1002, 1003, 1004, 1005, 1006}));
    EXPECT_TRUE(out[2].failed());
    EXPECT_TRUE(out[2].depth.data.empty()) << "a failed frame never reaches the model";
    EXPECT_EQ(rec.groups, (std::vector<std::vector<int>>{{1001, 1002}, {1004, 1005, 1006}}));
}

TEST(StabilizerStage, AGapMarksTheFramesWhoseWindowLackedItAndAStopAbandonsWhatItCut) {
    constexpr int R = 2, N = 12;
    // Frame 1006 (position 5) fails: positions 3,4 lack it after, 6,7 before. The first and last frames of the
    // shot have short windows in any render: not cut.
    {
        Recorder rec;
        StageChain chain;
        chain.add(std::make_unique<BatchInferenceStage>(1, rec.forward()));
        chain.add(std::make_unique<StabilizerStage>(R, N));
        EXPECT_EQ(chain.context_frames(), R);
        EXPECT_EQ(chain.max_held(), R + 1);
        for (int p = 0; p < N; ++p) chain.push(frame_at(p, 4, 4, p == 5));
        chain.end_segment(SegmentEnd::End);
        std::map<int, std::vector<int>> lacked;
        const auto out = chain.pop_ready();
        EXPECT_EQ(out.size(), static_cast<size_t>(N));
        for (const auto& f : out) {
            EXPECT_FALSE(f.abandoned) << f.frame;
            if (!f.lacked.empty()) lacked[f.frame] = f.lacked;
        }
        EXPECT_EQ(lacked,
                  (std::map<int, std::vector<int>>{{1004, {1006}}, {1005, {1006}}, {1007, {1006}}, {1008, {1006}}}));
    }
    // Two failed frames in a row are one gap for the frames after them.
    {
        Recorder rec;
        StageChain chain;
        chain.add(std::make_unique<BatchInferenceStage>(1, rec.forward()));
        chain.add(std::make_unique<StabilizerStage>(R, N));
        for (int p = 0; p < N; ++p) chain.push(frame_at(p, 4, 4, p == 5 || p == 6));
        chain.end_segment(SegmentEnd::End);
        std::map<int, std::vector<int>> lacked;
        for (const auto& f : chain.pop_ready())
            if (!f.lacked.empty()) lacked[f.frame] = f.lacked;
        EXPECT_EQ(lacked.at(1008), (std::vector<int>{1006, 1007}));
        EXPECT_EQ(lacked.at(1009), (std::vector<int>{1006, 1007}));
        EXPECT_EQ(lacked.at(1005), (std::vector<int>{1006}));
    }
    // A stop after position 6 of 12: frames 5 and 6 lack successors the stop never read: abandoned; 0-4 are whole.
    {
        Recorder rec;
        StageChain chain;
        chain.add(std::make_unique<BatchInferenceStage>(1, rec.forward()));
        chain.add(std::make_unique<StabilizerStage>(R, N));
        for (int p = 0; p <= 6; ++p) chain.push(frame_at(p));
        chain.end_segment(SegmentEnd::Stop);
        std::vector<int> abandoned;
        const auto out = chain.pop_ready();
        EXPECT_EQ(out.size(), 7u);
        for (const auto& f : out)
            if (f.abandoned) abandoned.push_back(f.frame);
        EXPECT_EQ(abandoned, (std::vector<int>{1006, 1007}));
    }
    // The same frames ending at the shot's end (N = 7) are whole: nothing is abandoned.
    {
        Recorder rec;
        StageChain chain;
        chain.add(std::make_unique<BatchInferenceStage>(1, rec.forward()));
        chain.add(std::make_unique<StabilizerStage>(R, 7));
        for (int p = 0; p <= 6; ++p) chain.push(frame_at(p));
        chain.end_segment(SegmentEnd::Stop);
        for (const auto& f : chain.pop_ready()) EXPECT_FALSE(f.abandoned) << f.frame;
    }
}
