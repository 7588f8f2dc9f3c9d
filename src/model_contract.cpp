#include "depthbatch/model_contract.h"

#include "depthbatch/error.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <type_traits>

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

namespace {

using nlohmann::json;

template <class T> const char* json_type_name();
template <> const char* json_type_name<std::string>() { return "a string"; }
template <> const char* json_type_name<int>() { return "an integer"; }
template <> const char* json_type_name<double>() { return "a number"; }
template <> const char* json_type_name<bool>() { return "true or false"; }

/// The field `key` of `parent` (whose path in the file is `where`, "" for the top) as T: `fallback` when it is
/// absent, and a ModelError naming the field, what it must be and what it is otherwise (null included).
template <class T>
T field(const json& parent, const std::string& where, const char* key, const std::string& origin,
        std::optional<T> fallback = std::nullopt) {
    const std::string name = where.empty() ? key : where + "." + key;
    if (!parent.contains(key)) {
        if (fallback) return *fallback;
        throw ModelError(origin + ": depthbatch.json has no field " + name);
    }
    const json& v = parent[key];
    const bool ok = std::is_same_v<T, std::string> ? v.is_string()
                  : std::is_same_v<T, bool>        ? v.is_boolean()
                  : std::is_same_v<T, int>         ? v.is_number_integer()
                                                   : v.is_number();
    if (!ok) throw ModelError(origin + ": depthbatch.json field " + name + " must be " + json_type_name<T>() + ", not " + v.dump());
    return v.get<T>();
}

/// An object-valued field (input, output), named in the error when absent or not an object.
const json& section(const json& parent, const char* key, const std::string& origin) {
    if (!parent.contains(key) || !parent[key].is_object())
        throw ModelError(origin + ": depthbatch.json field " + key + " must be an object" +
                         (parent.contains(key) ? ", not " + parent[key].dump() : " (it is missing)"));
    return parent[key];
}

}  // namespace

ModelContract parse_model_contract(const std::string& text, const std::string& origin) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        throw ModelError(origin + ": depthbatch.json is not valid JSON: " + e.what());
    }
    if (!j.is_object()) throw ModelError(origin + ": depthbatch.json must be a JSON object, not " + j.dump());
    ModelContract c;
    c.embedded = true;
    if (const int format = field<int>(j, "", "format", origin, 1); format != 1)
        throw ModelError(origin + ": depthbatch.json format " + std::to_string(format) +
                         " is newer than this depthbatch understands (1)");
    c.name = field<std::string>(j, "", "name", origin, std::string());
    const json& in = section(j, "input", origin);
    c.colorspace = field<std::string>(in, "input", "colorspace", origin, c.colorspace);
    c.multiple = field<int>(in, "input", "multiple", origin, 1);
    if (in.contains("size") && !in["size"].is_null()) {
        const json& size = in["size"];
        if (!size.is_array() || size.size() != 2 || !size[0].is_number_integer() || !size[1].is_number_integer())
            throw ModelError(origin + ": depthbatch.json field input.size must be [height, width] in integer pixels, not " +
                             size.dump());
        c.height = size[0].get<int>();
        c.width = size[1].get<int>();
    }
    c.fixed_size = field<bool>(in, "input", "fixed_size", origin, false);
    for (const char* key : {"mean", "std"})
        if (in.contains(key) && !in[key].is_null())
            throw ModelError(origin + ": depthbatch.json input." + key +
                             " is set: depthbatch feeds RGB in [0,1] and expects the module to apply "
                             "its own normalization (re-export with normalization inside)");
    const json& out = section(j, "output", origin);
    const std::string kind = field<std::string>(out, "output", "kind", origin);
    auto k = parse_depth_kind(kind);
    if (!k) throw ModelError(origin + ": depthbatch.json output.kind '" + kind + "' is unknown");
    c.kind = *k;
    c.units = field<std::string>(out, "output", "units", origin, std::string());
    c.reference_focal_px = field<double>(out, "output", "reference_focal_px", origin, 0.0);
    if (c.reference_focal_px < 0) throw ModelError(origin + ": depthbatch.json output.reference_focal_px must be > 0");
    for (auto it = j.begin(); it != j.end(); ++it)
        if (it.key() != "input" && it.key() != "output" && it.key() != "format" && it.key() != "name")
            c.provenance[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
    validate_model_contract(c, origin);
    return c;
}

}  // namespace depthbatch
