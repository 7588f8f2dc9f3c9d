// Unit tests for include/depthbatch/frame_record.h: one record per frame travels through the stage chain
// (sequence_stage.h). Stages see the frames in order, each with its own typed data; what the driver put in a record
// (its plate, paths, flags) comes out with it, moved and never copied; a failure is recorded in the record itself
// (status and message) and travels with it past the later stages to whoever writes and reports it; the chain's
// flush ends the frames without an end-of-stream token.
#include "depthbatch/frame_record.h"
#include "depthbatch/sequence_stage.h"
#include "depthbatch/video_window_stage.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <type_traits>

using namespace depthbatch;

static_assert(!std::is_copy_constructible_v<FrameRecord>, "a frame has one record: it moves, it is never copied");
static_assert(std::is_move_constructible_v<FrameRecord>);

namespace {

/// The record the driver makes for shot position p: frame 1001 + p, a 4x2 plate whose pixels hold p, the paths.
FrameRecord record_at(int p, bool write = true) {
    FrameRecord f(p, 1001 + p, p);
    f.write = write;
    f.result.input_path = "plate." + std::to_string(f.frame) + ".exr";
    f.result.output_path = "depth." + std::to_string(f.frame) + ".exr";
    f.plate_identity = "identity " + std::to_string(f.frame);
    Plate plate;
    plate.pixels.reset(OIIO::ImageSpec(4, 2, 3, OIIO::TypeDesc::FLOAT));
    std::vector<float> v(4 * 2 * 3, static_cast<float>(p));
    plate.pixels.set_pixels(plate.pixels.roi(), OIIO::TypeDesc::FLOAT, v.data());
    f.plate = std::move(plate);
    f.input.width = 2, f.input.height = 1;
    f.input.chw.assign(6, static_cast<float>(p));
    return f;
}

/// A stage that holds one frame back (so it owns a record between pushes) and notes what it saw of each.
class Probe : public SequenceStage {
public:
    std::vector<std::string> seen;
    std::string name() const override { return "probe"; }
    int max_held() const override { return 1; }
    void push(FrameRecord f) override {
        seen.push_back(std::to_string(f.frame) + " " + f.plate_identity + " depth " +
                       std::to_string(f.depth.data.at(0)));
        f.depth.data[0] += 0.5f;  // a stage reworks the depth in the record itself
        if (held_) ready_.push_back(std::move(*held_));
        held_ = std::move(f);
    }
    void end_segment(SegmentEnd, const std::vector<int>&) override {
        if (held_) ready_.push_back(std::move(*held_));
        held_.reset();
    }
    std::vector<FrameRecord> pop_ready() override { return std::move(ready_); }

private:
    std::optional<FrameRecord> held_;
    std::vector<FrameRecord> ready_;
};

/// A forward writing depth = 10 x the input's value (the shot position) for each frame of the batch.
BatchInferenceStage::Forward depth_from_input(std::vector<std::vector<int>>& batches) {
    return [&batches](std::vector<FrameRecord*>& frames) {
        batches.emplace_back();
        for (FrameRecord* f : frames) {
            batches.back().push_back(f->frame);
            f->depth.width = 1, f->depth.height = 1;
            f->depth.data = {10.0f * f->input.chw.at(0)};
        }
    };
}

}  // namespace

TEST(FrameRecord, StagesSeeTheFramesInOrderWithTheirOwnDataAndTheRecordComesOutWhole) {
    std::vector<std::vector<int>> batches;
    auto probe = std::make_unique<Probe>();
    Probe& seen = *probe;
    StageChain chain;
    chain.add(std::make_unique<BatchInferenceStage>(2, depth_from_input(batches)));
    chain.add(std::move(probe));
    std::vector<const void*> pixels;
    std::vector<FrameRecord> out;
    for (int p = 0; p < 5; ++p) {
        FrameRecord f = record_at(p, p > 0);  // position 0: a warm-up frame
        pixels.push_back(f.plate->pixels.localpixels());
        chain.push(std::move(f));
        for (FrameRecord& r : chain.pop_ready()) out.push_back(std::move(r));
    }
    EXPECT_EQ(out.size(), 3u) << "frames 1001-1003 passed both stages; 1004 sits in the probe, 1005 in a batch";
    for (FrameRecord& r : chain.flush(SegmentEnd::End)) out.push_back(std::move(r));
    EXPECT_TRUE(chain.pop_ready().empty()) << "each frame comes out exactly once";

    EXPECT_EQ(batches, (std::vector<std::vector<int>>{{1001, 1002}, {1003, 1004}, {1005}}));
    EXPECT_EQ(seen.seen,
              (std::vector<std::string>{"1001 identity 1001 depth 0.000000", "1002 identity 1002 depth 10.000000",
                                        "1003 identity 1003 depth 20.000000", "1004 identity 1004 depth 30.000000",
                                        "1005 identity 1005 depth 40.000000"}));
    ASSERT_EQ(out.size(), 5u);
    for (int p = 0; p < 5; ++p) {
        const FrameRecord& r = out[static_cast<size_t>(p)];
        EXPECT_EQ(r.id, p);
        EXPECT_EQ(r.frame, 1001 + p);
        EXPECT_EQ(r.result.frame, 1001 + p);
        EXPECT_EQ(r.shot_pos, p);
        EXPECT_EQ(r.write, p > 0);
        EXPECT_FALSE(r.failed());
        EXPECT_EQ(r.result.output_path, "depth." + std::to_string(1001 + p) + ".exr");
        EXPECT_EQ(r.depth.data, (std::vector<float>{10.0f * p + 0.5f}))
            << "the inference's depth, reworked by the probe";
        EXPECT_EQ(r.input.chw.at(0), static_cast<float>(p)) << "the model input stays with its frame";
        ASSERT_TRUE(r.plate.has_value());
        EXPECT_EQ(r.plate->pixels.localpixels(), pixels[static_cast<size_t>(p)])
            << "the plate moved with the record, not copied";
        EXPECT_EQ(r.plate->pixels.getchannel(3, 1, 0, 2), static_cast<float>(p));
        EXPECT_EQ(r.temporal_cut(), "");
    }
}

TEST(FrameRecord, AFailedFrameCarriesItsErrorPastTheLaterStagesToTheWriter) {
    std::vector<std::vector<int>> batches;
    StageChain chain;
    chain.add(std::make_unique<BatchInferenceStage>(1, depth_from_input(batches)));
    chain.add(std::make_unique<StabilizerStage>(2, 8));
    for (int p = 0; p < 8; ++p) {
        FrameRecord f = record_at(p);
        if (p == 3 || p == 4)
            f.fail(InputError("frame " + std::to_string(f.frame) + " (" + f.result.input_path + "): truncated"));
        chain.push(std::move(f));
    }
    const std::vector<FrameRecord> out = chain.flush(SegmentEnd::End);
    ASSERT_EQ(out.size(), 8u);
    EXPECT_EQ(batches.size(), 6u) << "the failed frames never reach the model";
    const FrameRecord& failed = out[3];
    EXPECT_TRUE(failed.failed());
    EXPECT_EQ(failed.result.status, ExitCode::Input);
    EXPECT_EQ(failed.result.message, "frame 1004 (plate.1004.exr): truncated");
    EXPECT_TRUE(failed.depth.data.empty());
    EXPECT_EQ(failed.result.output_path, "depth.1004.exr") << "the writer knows which file it does not write";
    EXPECT_EQ(out[4].result.message, "frame 1005 (plate.1005.exr): truncated");
    // The frames whose stabilizer window the gap cut carry it, as the EXR's depthbatch/temporal_context says it:
    // before the gap, the frame that ended their segment; after it, the whole gap.
    EXPECT_EQ(out[1].temporal_cut(), "1004");
    EXPECT_EQ(out[2].temporal_cut(), "1004");
    EXPECT_EQ(out[5].temporal_cut(), "1004,1005");
    EXPECT_EQ(out[6].temporal_cut(), "1004,1005");
    EXPECT_EQ(out[0].temporal_cut(), "");
    EXPECT_EQ(out[7].temporal_cut(), "");
    for (size_t k : {0u, 1u, 2u, 5u, 6u, 7u}) EXPECT_FALSE(out[k].failed()) << k;
}

TEST(FrameRecord, AFailedVideoForwardIsRecordedInEveryFrameItTakesDown) {
    TemporalWindowing t;  // Video Depth Anything's windows
    t.window = 32, t.overlap = 10, t.crossfade = 8, t.align = TemporalWindowing::Align::ScaleShift;
    t.keyframes = {0, 12, 24, 25, 26, 27, 28, 29, 30, 31};
    for (const bool model_error : {true, false}) {
        StageChain chain;
        int told = 0;
        chain.add(std::make_unique<VideoWindowStage>(
            t, 1,
            [model_error](const std::vector<std::vector<const ModelInput*>>&) -> std::vector<std::vector<DepthImage>> {
                if (model_error) throw ModelError("CUDA out of memory");
                throw std::runtime_error("bad tensor");
            },
            [&told](FrameRecord& f, const std::exception&) { told += f.failed(); }));
        for (int p = 0; p < 3; ++p) chain.push(record_at(p));
        const std::vector<FrameRecord> out = chain.flush(SegmentEnd::End);
        ASSERT_EQ(out.size(), 3u);
        EXPECT_EQ(told, 3) << "on_failure hears of each frame after its record is failed";
        for (const FrameRecord& f : out) {
            EXPECT_TRUE(f.failed());
            EXPECT_EQ(f.result.status, model_error ? ExitCode::Model : ExitCode::Render);
            EXPECT_EQ(f.result.message,
                      "frame " + std::to_string(f.frame) + ": " + (model_error ? "CUDA out of memory" : "bad tensor"));
            EXPECT_EQ(f.result.output_path, "depth." + std::to_string(f.frame) + ".exr");
        }
    }
}

TEST(FrameRecord, TheChainsFlushAbandonsWhatAStopCutAndFinishesTheRest) {
    for (const SegmentEnd why : {SegmentEnd::Stop, SegmentEnd::End}) {
        std::vector<std::vector<int>> batches;
        StageChain chain;
        chain.add(std::make_unique<BatchInferenceStage>(1, depth_from_input(batches)));
        chain.add(std::make_unique<StabilizerStage>(2, 12));
        std::vector<int> frames, abandoned;
        for (int p = 0; p <= 6; ++p) {
            chain.push(record_at(p));
            for (const FrameRecord& f : chain.pop_ready()) frames.push_back(f.frame);
        }
        EXPECT_EQ(frames, (std::vector<int>{1001, 1002, 1003, 1004, 1005})) << "the stabilizer holds the last R = 2";
        for (const FrameRecord& f : chain.flush(why)) {
            frames.push_back(f.frame);
            if (f.abandoned) abandoned.push_back(f.frame);
        }
        EXPECT_EQ(frames, (std::vector<int>{1001, 1002, 1003, 1004, 1005, 1006, 1007}));
        EXPECT_EQ(abandoned, why == SegmentEnd::Stop ? (std::vector<int>{1006, 1007}) : std::vector<int>{});
        EXPECT_TRUE(chain.flush(SegmentEnd::End).empty()) << "nothing is left once flushed";
    }
}
