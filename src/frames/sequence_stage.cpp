#include "depthbatch/sequence_stage.h"

#include "depthbatch/frame_sequence.h"
#include "depthbatch/temporal_stabilizer.h"
#include "depthbatch/exr_metadata.h"

#include <algorithm>
#include <map>

namespace depthbatch {

// ---- FrameRecord ------------------------------------------------------------------------------------------

std::string FrameRecord::temporal_cut() const { return lacked.empty() ? std::string() : format_frame_spec(lacked); }

// ---- StageChain -------------------------------------------------------------------------------------------

void StageChain::add(std::unique_ptr<SequenceStage> stage) { stages_.push_back(std::move(stage)); }

void StageChain::push(FrameRecord frame) {
    if (!frame.failed()) {
        if (open_ && (frame.input.width != width_ || frame.input.height != height_)) {
            size_changes_.push_back(frame.frame);
            end_from(0, SegmentEnd::SizeChange, {});
        }
        open_ = true;
        width_ = frame.input.width, height_ = frame.input.height;
    } else {
        open_ = false;
    }
    feed(0, std::move(frame));
}

void StageChain::feed(size_t stage, FrameRecord frame) {
    // A partial render's frames the stages after the planner do not need (plan_partial) go past them.
    const bool past = stage == pass_from_ && (frame.shot_pos < pass_first_ || frame.shot_pos > pass_last_);
    if (stage == stages_.size() || past) {
        out_.push_back(std::move(frame));
        return;
    }
    if (frame.failed()) {  // a gap: the stages from here on end their segment before it, then it passes
        end_from(stage, SegmentEnd::Gap, {frame.frame});
        out_.push_back(std::move(frame));
        return;
    }
    if (frame.abandoned) {
        // A stage before this one could not finish it (a stop, or a failure, cut its windows): its depth is no
        // neighbour's context. The stages from here on end their segment before it, as at the stop that cut it
        // (their frames whose window it would have been are abandoned in turn) or as at a gap (marked cut: the
        // frame itself fails, run_job.cpp), then it passes.
        if (ending_ == SegmentEnd::Stop) end_from(stage, SegmentEnd::Stop, {});
        else end_from(stage, SegmentEnd::Gap, {frame.frame});
        out_.push_back(std::move(frame));
        return;
    }
    stages_[stage]->push(std::move(frame));
    drain(stage);
}

void StageChain::drain(size_t stage) {
    for (FrameRecord& f : stages_[stage]->pop_ready()) feed(stage + 1, std::move(f));
}

void StageChain::end_from(size_t stage, SegmentEnd why, const std::vector<int>& gap) {
    const SegmentEnd outer = ending_;
    if (why == SegmentEnd::Stop) ending_ = SegmentEnd::Stop;  // what the frames drained below were cut by
    for (size_t k = stage; k < stages_.size(); ++k) {
        stages_[k]->end_segment(why, gap);
        drain(k);  // what it finished belongs to the segment that ends in the stages after it
    }
    ending_ = outer;
}

void StageChain::end_segment(SegmentEnd why) {
    end_from(0, why, {});
    open_ = false;
}

std::vector<FrameRecord> StageChain::pop_ready() { return std::move(out_); }

std::vector<FrameRecord> StageChain::flush(SegmentEnd why) {
    end_segment(why);
    return pop_ready();
}

int StageChain::context_frames() const {
    int n = 0;
    for (const auto& s : stages_) n += s->context_frames();
    return n;
}

std::optional<std::vector<int>> StageChain::plan_partial(int shot_size, int first, int last) {
    pass_from_ = kNoPass;
    // The stage that plans its context itself (a video model's windows: it needs its segment's start), and the
    // bounded context each side of the stages after it (the stabilizer's radius).
    size_t planner = stages_.size();
    int after = 0;
    for (size_t k = 0; k < stages_.size(); ++k) {
        const SequenceStage& s = *stages_[k];
        if (s.needs_segment_start()) {
            if (planner != stages_.size()) return std::nullopt;  // two such stages: planned from their context
            planner = k;
        } else if (s.context_frames() > 0) {
            if (planner == stages_.size()) return std::nullopt;  // a stage before it: planned from the context
            after += s.context_frames();
        }
    }
    if (planner == stages_.size()) return std::nullopt;
    // The stages after the planner need its frames first - after .. last + after: it plans those. What else it gives
    // out (the inputs of its windows alone) passes them by (feed), so they see those frames as a segment of their own,
    // as a whole render's frames around first .. last.
    const int from = std::max(0, first - after), to = std::min(shot_size - 1, last + after);
    auto positions = stages_[planner]->plan_partial(shot_size, from, to);
    if (positions && after > 0) {
        pass_from_ = planner + 1;
        pass_first_ = from, pass_last_ = to;
    }
    return positions;
}

bool StageChain::needs_segment_start() const {
    return std::any_of(stages_.begin(), stages_.end(), [](const auto& s) { return s->needs_segment_start(); });
}

std::string StageChain::temporal_names() const {
    std::string all;
    for (const auto& s : stages_)
        if (s->context_frames() > 0 || s->needs_segment_start()) all += (all.empty() ? "" : " and ") + s->name();
    return all;
}

int StageChain::max_held() const {
    int n = 0;
    for (const auto& s : stages_) n += s->max_held();
    return n;
}

std::vector<std::pair<std::string, std::string>> StageChain::metadata() const {
    std::vector<std::pair<std::string, std::string>> all;
    for (const auto& s : stages_)
        for (auto& kv : s->metadata()) all.push_back(std::move(kv));
    return all;
}

// ---- BatchInferenceStage ----------------------------------------------------------------------------------

struct BatchInferenceStage::InFlight {
    std::vector<FrameRecord> frames;
    std::function<void()> complete;
};

BatchInferenceStage::BatchInferenceStage(int batch, Forward forward)
    : BatchInferenceStage(batch, 0, [forward = std::move(forward)](std::vector<FrameRecord*>& frames) {
          forward(frames);
          return std::function<void()>();
      }) {}

BatchInferenceStage::BatchInferenceStage(int batch, int lookahead, Launch launch)
    : batch_(std::max(1, batch)), lookahead_(std::max(0, lookahead)), launch_(std::move(launch)) {}

// Batches still in flight (an exception unwinding the driver) are completed, so that no forward outlives its frames.
BatchInferenceStage::~BatchInferenceStage() {
    while (!in_flight_.empty()) complete_oldest();
}

void BatchInferenceStage::push(FrameRecord frame) {
    pending_.push_back(std::move(frame));
    if (static_cast<int>(pending_.size()) >= batch_) run();
}

void BatchInferenceStage::end_segment(SegmentEnd, const std::vector<int>&) {
    run();
    while (!in_flight_.empty()) complete_oldest();
}

void BatchInferenceStage::run() {
    if (pending_.empty()) return;
    auto b = std::make_unique<InFlight>();
    b->frames.swap(pending_);
    std::vector<FrameRecord*> frames;
    for (FrameRecord& f : b->frames) frames.push_back(&f);
    b->complete = launch_(frames);
    in_flight_.push_back(std::move(b));
    while (static_cast<int>(in_flight_.size()) > lookahead_) complete_oldest();
}

void BatchInferenceStage::complete_oldest() {
    std::unique_ptr<InFlight> b = std::move(in_flight_.front());
    in_flight_.pop_front();
    if (b->complete) b->complete();
    for (FrameRecord& f : b->frames) ready_.push_back(std::move(f));
}

std::vector<FrameRecord> BatchInferenceStage::pop_ready() { return std::move(ready_); }

// ---- StabilizerStage --------------------------------------------------------------------------------------

struct StabilizerStage::Impl {
    TemporalStabilizer stabilizer;
    int radius, shot_size;
    std::map<int, FrameRecord> held;  ///< frames inside the stabilizer (their depth moved into it), by id
    std::vector<FrameRecord> ready;
    // The current segment: shot positions of its first and last frames, and why it started.
    bool open = false;
    int start_pos = 0, last_pos = 0;
    SegmentEnd start = SegmentEnd::End;  ///< End: the job's frames start here (nothing is missing before)
    std::vector<int> start_gap;
    Impl(int r, int n) : stabilizer(r), radius(r), shot_size(n) {}
};

StabilizerStage::StabilizerStage(int radius, int shot_size)
    : impl_(std::make_unique<Impl>(std::max(1, radius), shot_size)) {}
StabilizerStage::~StabilizerStage() = default;

int StabilizerStage::context_frames() const { return impl_->stabilizer.warmup_frames(); }
int StabilizerStage::max_held() const { return impl_->radius + 1; }

void StabilizerStage::push(FrameRecord frame) {
    Impl& s = *impl_;
    if (!s.open) {
        s.open = true;
        s.start_pos = frame.shot_pos;
    }
    s.last_pos = frame.shot_pos;
    s.stabilizer.push(frame.id, std::move(frame.depth), frame.input);
    const int id = frame.id;
    s.held.emplace(id, std::move(frame));
    take(false, SegmentEnd::End, {});
}

void StabilizerStage::end_segment(SegmentEnd why, const std::vector<int>& gap) {
    Impl& s = *impl_;
    const bool had_frames = s.open;
    if (s.open) {
        s.stabilizer.flush();
        take(true, why, gap);
        s.open = false;
    }
    // What the next segment starts after: consecutive failed frames (no frame between them) add up to one gap.
    if (why == SegmentEnd::Gap) {
        if (had_frames || s.start != SegmentEnd::Gap) s.start_gap.clear();
        s.start_gap.insert(s.start_gap.end(), gap.begin(), gap.end());
    } else {
        s.start_gap.clear();
    }
    s.start = why;
}

void StabilizerStage::take(bool flushing, SegmentEnd why, const std::vector<int>& gap) {
    Impl& s = *impl_;
    const int r = s.radius;
    for (auto& [id, depth] : s.stabilizer.pop_ready()) {
        auto it = s.held.find(id);
        FrameRecord f = std::move(it->second);
        s.held.erase(it);
        f.depth = std::move(depth);
        // Its window in an uninterrupted whole render: min(R, p, N - 1 - p) on each side; here: as far as the
        // segment reaches. Shorter on a side the segment ends by a gap or a stop means the window was cut.
        const int p = f.shot_pos;
        const bool short_before = p - s.start_pos < std::min(r, p);
        const bool short_after = flushing && s.last_pos - p < std::min(r, s.shot_size - 1 - p);
        std::vector<int> lacked;
        if (short_before && s.start == SegmentEnd::Gap) lacked = s.start_gap;
        if (short_after && why == SegmentEnd::Gap) lacked.insert(lacked.end(), gap.begin(), gap.end());
        if (short_after && why == SegmentEnd::Stop) {
            f.abandoned = true;
        } else if (!lacked.empty()) {
            std::sort(lacked.begin(), lacked.end());
            lacked.erase(std::unique(lacked.begin(), lacked.end()), lacked.end());
            f.lacked = std::move(lacked);
        }
        s.ready.push_back(std::move(f));
    }
}

std::vector<FrameRecord> StabilizerStage::pop_ready() { return std::move(impl_->ready); }

std::vector<std::pair<std::string, std::string>> StabilizerStage::metadata() const {
    return {{exr_meta::kStabilize, "centred: " + std::to_string(impl_->radius) + " frames on each side"}};
}

}  // namespace depthbatch
