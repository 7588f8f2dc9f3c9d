#include "depthbatch/sequence_stats.h"
#include "sequence_stats_pvt.h"

#include "depthbatch/depth_normalizer.h"
#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/log.h"
#include "depthbatch/sha256.h"

#include "output/atomic_file.h"
#include "output/output_guard.h"
#include "output/output_roles.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <unistd.h>

namespace fs = std::filesystem;

namespace depthbatch {

std::string SequenceStats::mismatch(const SequenceStats& o) const {
    if (model_sha256 != o.model_sha256)
        return "model (sha256 " + o.model_sha256.substr(0, 12) + " vs " + model_sha256.substr(0, 12) + ")";
    if (input_pattern != o.input_pattern) return "input.path ('" + o.input_pattern + "' vs '" + input_pattern + "')";
    if (shot_frames != o.shot_frames) return "input.frames ('" + o.shot_frames + "' vs '" + shot_frames + "')";
    // The keys compared on their own first, so that the message names them; then the rest of the processing.
    if (percentile_low != o.percentile_low || percentile_high != o.percentile_high) return "depth.percentiles";
    // A sample taken while plates were missing (pipeline.on_error: continue samples the frames that exist) is
    // another sample once they arrive: never reused for the whole shot's.
    if (sample_frames != o.sample_frames)
        return "the sample (depth.stats_frames: frames " + format_frame_spec(o.sample_frames) + " now, " +
               format_frame_spec(sample_frames) + " when it was made, with plates missing or another count)";
    // A sample plate re-delivered since (0.3's sidecars recorded no identities: nothing to compare).
    if (!sample_plates.empty() && !o.sample_plates.empty() && sample_plates != o.sample_plates) {
        std::vector<int> changed;
        for (size_t i = 0; i < sample_frames.size() && i < sample_plates.size() && i < o.sample_plates.size(); ++i)
            if (sample_plates[i] != o.sample_plates[i]) changed.push_back(sample_frames[i]);
        return "the sample's plates (frames " + format_frame_spec(changed) +
               " changed since the statistics were taken)";
    }
    // A sidecar of depthbatch 0.2 has no "; settings" digest: the rest agreeing, it stands (as it did then).
    const bool older_sidecar =
        processing.find("; settings ") == std::string::npos && o.processing.rfind(processing + "; settings ", 0) == 0;
    if (processing != o.processing && !older_sidecar)
        return "processing ('" + o.processing + "' vs '" + processing + "')";
    return "";
}

std::string SequenceStats::identity() const {
    const nlohmann::json j = {model_sha256,  input_pattern, shot_frames, processing, percentile_low, percentile_high,
                              sample_frames, sample_plates, low,         high,       values};
    return sha256_text(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string recompute_stats_advice(const std::string& job_file, const std::string& sidecar) {
    const auto quoted = [](const std::string& text) {  // one shell word: '...', a ' inside as '\''
        std::string q = "'";
        for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
        return q + "'";
    };
    return "recompute them with `depthbatch stats " + quoted(job_file) +
           (sidecar.empty() ? std::string() : " --set depth.stats_file=" + quoted(sidecar)) +
           " --overwrite`, then render with --skip-existing: the "
           "frames normalized with the old statistics render again";
}

std::vector<int> changed_sample_plates(const SequenceStats& stats,
                                       const std::function<std::string(int)>& identity_now) {
    std::vector<int> changed;
    for (size_t i = 0; i < stats.sample_frames.size() && i < stats.sample_plates.size(); ++i)
        if (identity_now(stats.sample_frames[i]) != stats.sample_plates[i]) changed.push_back(stats.sample_frames[i]);
    return changed;
}

std::vector<int> sample_frames(const std::vector<int>& shot, int count) {
    if (count <= 0 || shot.empty()) return {};
    if (static_cast<size_t>(count) >= shot.size()) return shot;
    if (count == 1) return {shot.front()};
    std::vector<int> out;
    const double step = static_cast<double>(shot.size() - 1) / (count - 1);
    for (int i = 0; i < count; ++i) {
        const int f = shot[static_cast<size_t>(std::llround(i * step))];
        if (out.empty() || out.back() != f) out.push_back(f);
    }
    return out;
}

std::string default_stats_path(const std::string& output_pattern) {
    const fs::path p(output_pattern);
    static const std::regex token(R"([._-]?(#+|@+|%0?\d*d|\$F\d*))");
    std::string name = restore_escaped_marks(std::regex_replace(hide_escaped_marks(p.stem().string()), token, ""));
    if (name.empty()) name = "depth";
    return (p.parent_path() / (name + ".stats.json")).string();
}

std::optional<SequenceStats> read_sequence_stats(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    try {
        const nlohmann::json j = nlohmann::json::parse(in);
        SequenceStats s;
        s.model_sha256 = j.at("model_sha256");
        s.input_pattern = j.at("input_pattern");
        s.shot_frames = j.at("shot_frames");
        s.processing = j.at("processing");
        s.percentile_low = j.at("percentiles").at(0);
        s.percentile_high = j.at("percentiles").at(1);
        s.sample_frames = j.at("sample_frames").get<std::vector<int>>();
        if (j.contains("sample_plates")) s.sample_plates = j.at("sample_plates").get<std::vector<std::string>>();
        s.low = j.at("low");
        s.high = j.at("high");
        s.values = j.at("values");
        return s;
    } catch (const nlohmann::json::exception& e) {
        throw ConfigError(path + ": not a depthbatch sequence statistics file (" + e.what() +
                          "); move it away, or set depth.stats_file to another path");
    }
}

bool write_sequence_stats(Publication& pub, const SequenceStats& s, bool replace) {
    const std::string& path = pub.final_path();
    nlohmann::json j = {
        {"format", 1},
        {"what", std::string(output_marker::stats) + ": percentiles of the raw model output over sample_frames"},
        {"model_sha256", s.model_sha256},
        {"input_pattern", s.input_pattern},
        {"shot_frames", s.shot_frames},
        {"processing", s.processing},
        {"percentiles", {s.percentile_low, s.percentile_high}},
        {"sample_frames", s.sample_frames},
        {"sample_plates", s.sample_plates},
        {"low", s.low},
        {"high", s.high},
        {"values", s.values},
    };
    {
        std::ofstream out(pub.temp_path());
        out << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        if (!out) throw RenderError(path + ": cannot write the statistics sidecar");
    }
    return pub.publish(replace) == detail::TempFile::Result::Published;
}

SequenceStats reuse_or_compute_sequence_stats(const OutputGuard& guard, const std::string& path, SequenceStats want,
                                              bool replace, bool force, const std::string& advice,
                                              const std::function<std::vector<float>(int frame)>& frame_values) {
    if (force) replace = true;
    if (auto have = force ? std::nullopt : read_sequence_stats(path)) {
        const std::string diff = have->mismatch(want);
        if (diff.empty()) {
            log_info("sequence statistics from ", path, ": range [", have->low, ", ", have->high, "]");
            return *have;
        }
        if (!replace)
            throw OutputExistsError(path + ": sequence statistics made for another job (" + diff + " differs); " +
                                    advice);
        log_warning(path, ": made for another job (", diff, " differs): recomputing");
    }
    log_info("sequence statistics: ", want.sample_frames.size(), " frames (", format_frame_spec(want.sample_frames),
             ")");
    std::vector<float> values;
    for (int f : want.sample_frames) {
        const std::vector<float> v = frame_values(f);
        values.insert(values.end(), v.begin(), v.end());
    }
    want.values =
        static_cast<long long>(std::count_if(values.begin(), values.end(), [](float v) { return std::isfinite(v); }));
    std::tie(want.low, want.high) = percentile_pair(std::move(values), want.percentile_low, want.percentile_high);
    Publication out = guard.open(path, OutputRole::StatsSidecar);
    if (!write_sequence_stats(out, want, replace)) {
        // Another task wrote it first: use theirs so every chunk agrees.
        if (auto theirs = read_sequence_stats(path); theirs && theirs->mismatch(want).empty()) {
            log_info("sequence statistics: another task wrote ", path, " first; using it");
            return *theirs;
        }
        throw OutputExistsError(path + ": another task wrote different sequence statistics; " + advice);
    }
    log_info("sequence statistics written to ", path, ": range [", want.low, ", ", want.high, "]");
    return want;
}

}  // namespace depthbatch
