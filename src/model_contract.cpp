#include "depthbatch/model_contract.h"

#include "depthbatch/error.h"

#include <nlohmann/json.hpp>

namespace depthbatch {

const char* depth_kind_name(DepthKind kind) {
    switch (kind) {
    case DepthKind::MetricDepth: return "metric_depth";
    case DepthKind::RelativeInverseDepth: return "relative_inverse_depth";
    case DepthKind::RelativeDepth: return "relative_depth";
    }
    return "";
}

std::optional<DepthKind> parse_depth_kind(const std::string& name) {
    for (DepthKind k : {DepthKind::MetricDepth, DepthKind::RelativeInverseDepth, DepthKind::RelativeDepth})
        if (name == depth_kind_name(k)) return k;
    return std::nullopt;
}

void validate_model_contract(const ModelContract& c, const std::string& origin) {
    auto fail = [&](const std::string& what) { throw ModelError(origin + ": model contract: " + what); };
    if (c.multiple < 1) fail("input.multiple must be >= 1");
    if ((c.height > 0) != (c.width > 0)) fail("input.size needs both height and width");
    if (c.height > 0 && (c.height % c.multiple || c.width % c.multiple))
        fail("input.size " + std::to_string(c.height) + "x" + std::to_string(c.width) +
             " is not a multiple of " + std::to_string(c.multiple));
    if (c.fixed_size && c.height <= 0) fail("a fixed-size (traced) model must state input.size");
    if (c.kind == DepthKind::MetricDepth && c.units != "m") fail("metric_depth output must have units \"m\"");
    if (c.colorspace.empty()) fail("input.colorspace is empty");
}

ModelContract parse_model_contract(const std::string& text, const std::string& origin) {
    using nlohmann::json;
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        throw ModelError(origin + ": depthbatch.json is not valid JSON: " + e.what());
    }
    ModelContract c;
    c.embedded = true;
    try {
        if (j.value("format", 1) != 1)
            throw ModelError(origin + ": depthbatch.json format " + j["format"].dump() +
                             " is newer than this depthbatch understands (1)");
        c.name = j.value("name", std::string());
        const json& in = j.at("input");
        c.colorspace = in.value("colorspace", c.colorspace);
        c.multiple = in.value("multiple", 1);
        if (in.contains("size") && !in["size"].is_null()) {
            c.height = in["size"].at(0).get<int>();
            c.width = in["size"].at(1).get<int>();
        }
        c.fixed_size = in.value("fixed_size", false);
        for (const char* key : {"mean", "std"})
            if (in.contains(key) && !in[key].is_null())
                throw ModelError(origin + ": depthbatch.json input." + key +
                                 " is set: depthbatch feeds RGB in [0,1] and expects the module to apply "
                                 "its own normalization (re-export with normalization inside)");
        const json& out = j.at("output");
        const std::string kind = out.at("kind").get<std::string>();
        auto k = parse_depth_kind(kind);
        if (!k) throw ModelError(origin + ": depthbatch.json output.kind '" + kind + "' is unknown");
        c.kind = *k;
        c.units = out.value("units", std::string());
        c.reference_focal_px = out.value("reference_focal_px", 0.0);
        if (c.reference_focal_px < 0) throw ModelError(origin + ": depthbatch.json output.reference_focal_px must be > 0");
        for (auto it = j.begin(); it != j.end(); ++it)
            if (it.key() != "input" && it.key() != "output" && it.key() != "format" && it.key() != "name")
                c.provenance[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
    } catch (const json::exception& e) {
        throw ModelError(origin + ": depthbatch.json is missing or mistypes a field: " + e.what());
    }
    validate_model_contract(c, origin);
    return c;
}

}  // namespace depthbatch
