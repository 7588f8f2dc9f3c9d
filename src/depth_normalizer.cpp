#include "depthbatch/depth_normalizer.h"

#include "depthbatch/error.h"
#include "depthbatch/exr_metadata.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace depthbatch {
namespace {
bool depth_like(DepthKind k) { return k != DepthKind::RelativeInverseDepth; }
}  // namespace

DepthNormalizer::DepthNormalizer(const DepthSettings& d, DepthKind model_kind)
    : kind_(d.convention), normalize_(d.normalize), model_kind_(model_kind), near_is_(d.near_is) {
    if (d.near && d.far) {
        has_near_far_ = true;
        near_ = *d.near;
        far_ = *d.far;
    }
    const bool metric_model = model_kind == DepthKind::MetricDepth;
    if (kind_ == DepthConvention::Metric) {
        if (metric_model && normalize_ != Normalization::Raw)
            throw ConfigError(std::string("depth.normalize '") + option_name(normalize_) +
                              "': the model already outputs metric depth; "
                              "use depth.convention normalized to normalize it");
        if (!metric_model) {
            if (!has_near_far_)
                throw ConfigError(std::string("depth.convention metric: the model outputs ") +
                                  depth_kind_name(model_kind) +
                                  ", which has no scale; set depth.near and depth.far (metres) and depth.normalize "
                                  "frame or sequence to map it into that range");
            if (normalize_ != Normalization::Frame && normalize_ != Normalization::Sequence)
                throw ConfigError(
                    "depth.convention metric from a relative model needs depth.normalize frame or sequence (with "
                    "depth.near and depth.far in metres)");
        }
        if (has_near_far_ && !(near_ > 0 && near_ < far_))
            throw ConfigError("depth.near/far: metric needs 0 < near < far (metres)");
    }
    if (kind_ == DepthConvention::Inverse && has_near_far_ && depth_like(model_kind) && !(near_ > 0 && near_ < far_))
        throw ConfigError("depth.near/far: clipping before 1/z needs 0 < near < far");
    if (normalize_ == Normalization::Fixed && near_ == far_) throw ConfigError("depth.near and depth.far must differ");
}

DepthRange DepthNormalizer::range_from_percentiles(double lo, double hi) const {
    if (depth_like(model_kind_)) return {lo, hi};
    return {hi, lo};
}

size_t DepthNormalizer::apply(float* v, size_t n, const DepthRange* range) const {
    size_t clamped = 0;
    if (kind_ == DepthConvention::Raw) return 0;
    if (kind_ == DepthConvention::Inverse) {
        if (!depth_like(model_kind_)) {
            for (size_t i = 0; i < n; ++i)
                if (!std::isfinite(v[i])) v[i] = 0.0f;
            return 0;
        }
        for (size_t i = 0; i < n; ++i) {
            double d = v[i];
            if (has_near_far_ && std::isfinite(d) && d > 0) {
                const double c = std::clamp(d, near_, far_);
                clamped += c != d;
                d = c;
            }
            v[i] = (std::isfinite(d) && d > 0) ? static_cast<float>(1.0 / d) : 0.0f;
        }
        return clamped;
    }
    if (kind_ == DepthConvention::Metric && model_kind_ == DepthKind::MetricDepth) {
        if (!has_near_far_) return 0;
        for (size_t i = 0; i < n; ++i) {
            const float c = std::clamp(v[i], static_cast<float>(near_), static_cast<float>(far_));
            clamped += std::isfinite(v[i]) && c != v[i];
            v[i] = std::isfinite(v[i]) ? c : static_cast<float>(far_);
        }
        return clamped;
    }
    // Normalized position t in [0,1] with t = 0 at the near end.
    if (normalize_ != Normalization::Fixed && !range) throw RenderError("depth normalization needs a range");
    const DepthRange r = normalize_ == Normalization::Fixed ? DepthRange{near_, far_} : *range;
    const double span = r.far_value - r.near_value;
    if (kind_ == DepthConvention::Metric) {
        for (size_t i = 0; i < n; ++i) {
            double t = span != 0 && std::isfinite(v[i]) ? (v[i] - r.near_value) / span : 1.0;
            const double c = std::clamp(t, 0.0, 1.0);
            clamped += c != t;
            const double nearness = 1.0 - c;  // 1 at near
            v[i] = model_kind_ == DepthKind::RelativeInverseDepth
                       ? static_cast<float>(1.0 / (1.0 / far_ + nearness * (1.0 / near_ - 1.0 / far_)))
                       : static_cast<float>(near_ + c * (far_ - near_));
        }
        return clamped;
    }
    // normalized
    for (size_t i = 0; i < n; ++i) {
        double t = span != 0 && std::isfinite(v[i]) ? (v[i] - r.near_value) / span : 1.0;
        const double c = std::clamp(t, 0.0, 1.0);
        clamped += c != t;
        v[i] = static_cast<float>(near_is_ == 1 ? 1.0 - c : c);
    }
    return clamped;
}

bool DepthNormalizer::metres() const {
    return kind_ == DepthConvention::Metric || (kind_ == DepthConvention::Raw && model_kind_ == DepthKind::MetricDepth);
}

std::string DepthNormalizer::units() const {
    if (metres()) return "m";
    if (kind_ == DepthConvention::Inverse && model_kind_ == DepthKind::MetricDepth) return "1/m";
    return "";
}

bool DepthNormalizer::larger_is_nearer() const {
    switch (kind_) {
    case DepthConvention::Inverse: return true;  // 1/z, or a relative inverse model's own values
    case DepthConvention::Raw: return model_kind_ == DepthKind::RelativeInverseDepth;
    case DepthConvention::Normalized: return near_is_ == 1;
    case DepthConvention::Metric: return false;
    }
    return false;
}

std::vector<std::pair<std::string, std::string>> DepthNormalizer::metadata(const DepthRange* range) const {
    std::vector<std::pair<std::string, std::string>> m = {
        {exr_meta::kDepthConvention, option_name(kind_)},
        {exr_meta::kNormalize, option_name(normalize_)},
        {exr_meta::kDepthUnits, units()},
        {exr_meta::kLargerIsNearer, larger_is_nearer() ? "1" : "0"},
    };
    if (kind_ == DepthConvention::Normalized)
        m.push_back({exr_meta::kNearIs, near_is_ == 1 ? "1 (near = 1, far = 0)" : "0 (near = 0, far = 1)"});
    if (kind_ == DepthConvention::Inverse) m.push_back({exr_meta::kInverseZeroMeans, "infinitely far (no depth)"});
    const DepthRange* r = range;
    DepthRange fixed{near_, far_};
    if (normalize_ == Normalization::Fixed) r = &fixed;
    if (r && (kind_ == DepthConvention::Normalized || kind_ == DepthConvention::Metric)) {
        m.push_back({exr_meta::kRangeNearValue, metadata_number(r->near_value)});
        m.push_back({exr_meta::kRangeFarValue, metadata_number(r->far_value)});
    }
    if (has_near_far_) {
        m.push_back({exr_meta::kNear, metadata_number(near_)});
        m.push_back({exr_meta::kFar, metadata_number(far_)});
    }
    return m;
}

std::pair<double, double> percentile_pair(std::vector<float> values, double p_low, double p_high) {
    values.erase(std::remove_if(values.begin(), values.end(), [](float x) { return !std::isfinite(x); }), values.end());
    if (values.empty()) return {0.0, 0.0};
    auto at = [&](double p) {
        const size_t k = static_cast<size_t>(std::llround(p / 100.0 * static_cast<double>(values.size() - 1)));
        std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
        return static_cast<double>(values[k]);
    };
    const double lo = at(p_low);
    const double hi = at(p_high);
    return {lo, hi};
}

}  // namespace depthbatch
