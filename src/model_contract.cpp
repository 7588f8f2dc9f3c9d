#include "depthbatch/model_contract.h"
#include "depthbatch/passes.h"

#include "depthbatch/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <optional>
#include <type_traits>

namespace depthbatch {

const char* depth_kind_name(DepthKind kind) { return option_name(kind); }

std::optional<DepthKind> parse_depth_kind(const std::string& name) {
    for (const auto& [kind, spelling] : option_names(DepthKind{}))
        if (name == spelling) return kind;
    return std::nullopt;
}

const char* align_name(TemporalWindowing::Align align) { return option_name(align); }

namespace {

/// input.frames and the temporal block (TemporalWindowing's invariants); `fail` throws naming the field.
template <class Fail> void validate_temporal(const ModelContract& c, const Fail& fail) {
    const auto n = [](long long v) { return std::to_string(v); };
    if (c.frames < 1 || c.frames > kMaxContractFrames)
        fail("input.frames must be 1 to " + n(kMaxContractFrames) + ", not " + n(c.frames));
    const TemporalWindowing& t = c.temporal;
    if (c.any_view()) {  // an any-view model: its views block instead of a temporal one
        const ViewsContract& v = c.views;
        if (t.window != 0) fail("temporal and views are both set: a model is a video model or an any-view one");
        if (v.window < 2 || v.window > c.frames)
            fail("views.window must be 2 to input.frames (" + n(c.frames) + "), not " + n(v.window));
        if (v.overlap < 1 || v.overlap >= v.window)
            fail("views.overlap must be 1 to views.window - 1 (" + n(v.window - 1) + "), not " + n(v.overlap));
        return;
    }
    if (c.frames == 1) {
        if (t.window != 0) fail("temporal is set but input.frames is 1 (a windowed model takes input.frames > 1)");
        return;
    }
    if (t.window == 0)
        fail("temporal is missing: a multi-frame model (input.frames " + n(c.frames) + ") must state its windowing");
    if (t.window < 2 || t.window > c.frames)
        fail("temporal.window must be 2 to input.frames (" + n(c.frames) + "), not " + n(t.window));
    if (t.overlap < 1 || t.overlap >= t.window)
        fail("temporal.overlap must be 1 to temporal.window - 1 (" + n(t.window - 1) + "), not " + n(t.overlap));
    if (t.crossfade < 2 || t.crossfade >= t.overlap)
        fail("temporal.crossfade must be 2 to temporal.overlap - 1 (" + n(t.overlap - 1) + "), not " + n(t.crossfade));
    if (static_cast<int>(t.keyframes.size()) != t.overlap)
        fail("temporal.keyframes must list temporal.overlap (" + n(t.overlap) + ") frames, not " +
             n(static_cast<long long>(t.keyframes.size())));
    for (size_t i = 0; i < t.keyframes.size(); ++i) {
        if (t.keyframes[i] < 0 || t.keyframes[i] >= t.window)
            fail("temporal.keyframes[" + n(static_cast<long long>(i)) + "] must be 0 to " + n(t.window - 1) + ", not " +
                 n(t.keyframes[i]));
        if (i > 0 && t.keyframes[i] <= t.keyframes[i - 1]) fail("temporal.keyframes must be strictly increasing");
    }
    for (int i = 0; i < t.crossfade; ++i)
        if (t.keyframes[static_cast<size_t>(t.overlap - t.crossfade + i)] != t.window - t.crossfade + i)
            fail("temporal.keyframes must end with the window's last temporal.crossfade (" + n(t.crossfade) +
                 ") frames, " + n(t.window - t.crossfade) + " to " + n(t.window - 1) +
                 " (the frames the next window cross-fades)");
    if (c.kind == DepthKind::MetricDepth && t.align != TemporalWindowing::Align::None)
        fail("temporal.align must be \"none\" for metric_depth output (metric depth is not rescaled)");
}

}  // namespace

void validate_model_contract(const ModelContract& c, const std::string& origin) {
    auto fail = [&](const std::string& what) { throw ModelError(origin + ": model contract: " + what); };
    if (c.multiple < 1 || c.multiple > kMaxContractMultiple)
        fail("input.multiple must be 1 to " + std::to_string(kMaxContractMultiple) + " px, not " +
             std::to_string(c.multiple));
    if ((c.height != 0) != (c.width != 0)) fail("input.size needs both height and width");
    if (c.height != 0 && (c.height < 1 || c.width < 1 || c.height > kMaxContractSize || c.width > kMaxContractSize))
        fail("input.size [" + std::to_string(c.height) + ", " + std::to_string(c.width) +
             "] ([height, width]): each side must be 1 to " + std::to_string(kMaxContractSize) + " px");
    if (c.height > 0 && (c.height % c.multiple || c.width % c.multiple))
        fail("input.size " + std::to_string(c.height) + "x" + std::to_string(c.width) + " is not a multiple of " +
             std::to_string(c.multiple));
    if (c.fixed_size && c.height <= 0) fail("a fixed-size (traced) model must state input.size");
    if (c.kind == DepthKind::MetricDepth && c.units != "m") fail("metric_depth output must have units \"m\"");
    if (c.colorspace.empty()) fail("input.colorspace is empty");
    if (!(c.max_scale >= 1 && c.max_scale <= kMaxOutputScale))
        fail("output.max_scale must be 1 to " + std::to_string(static_cast<int>(kMaxOutputScale)) + ", not " +
             std::to_string(c.max_scale));
    if (!(c.reference_focal_px >= 0) || !std::isfinite(c.reference_focal_px))
        fail("output.reference_focal_px must be > 0 (or absent), not " + std::to_string(c.reference_focal_px));
    validate_temporal(c, fail);
    // output.extra_outputs (issue 25): names a job can list in output.passes, channels the EXR can hold.
    for (size_t i = 0; i < c.extra_outputs.size(); ++i) {
        const ExtraOutput& e = c.extra_outputs[i];
        const bool name_ok =
            !e.name.empty() && e.name.size() <= 64 && !is_geometric_pass(e.name) &&
            std::all_of(e.name.begin(), e.name.end(), [](unsigned char ch) { return std::isalnum(ch) || ch == '_'; });
        if (!name_ok)
            fail("output.extra_outputs name '" + e.name.substr(0, 64) + "' must be letters, digits and _ (not P or N)");
        const bool channel_ok =
            !e.channel.empty() && e.channel.size() <= 128 &&
            std::all_of(e.channel.begin(), e.channel.end(), [](unsigned char ch) { return ch > 0x20 && ch < 0x7f; }) &&
            e.channel != "R" && e.channel != "G" && e.channel != "B" && e.channel != "A" && e.channel != "depth.Z" &&
            e.channel.front() != '.' && e.channel.back() != '.';
        if (!channel_ok)
            fail("output.extra_outputs channel '" + e.channel.substr(0, 64) + "' of '" + e.name +
                 "' is not a channel name of its own (printable, no spaces, not R, G, B, A or depth.Z)");
        for (size_t k = 0; k < i; ++k)
            if (c.extra_outputs[k].name == e.name || c.extra_outputs[k].channel == e.channel)
                fail("output.extra_outputs: '" + e.name + "' (" + e.channel + ") repeats a name or channel");
    }
}

ModelOutputCheck check_clip_output(const std::vector<int64_t>& out, const std::string& dtype,
                                   const std::vector<int64_t>& in, const ModelContract& c) {
    if (in.size() != 5 || in[0] < 1 || in[1] < 1 || in[3] < 1 || in[4] < 1)
        throw ModelError("model input " + shape_text(in) + " is not [B,T,3,H,W] with B, T, H, W >= 1");
    if (out.size() != 4 || out[0] != in[0] || out[1] != in[1])
        throw ModelError("model output " + shape_text(out) + " is not [B,T,H,W] with B = " + std::to_string(in[0]) +
                         " and T = " + std::to_string(in[1]) + " for input " + shape_text(in) +
                         " (a multi-frame model returns one depth map per input frame)");
    // Each frame as an image of a batch of B x T (the frame count cannot overflow: both are small positive).
    try {
        return check_model_output({out[0] * out[1], out[2], out[3]}, dtype, {in[0] * in[1], in[2], in[3], in[4]}, c);
    } catch (const ModelError& e) {
        throw ModelError(std::string(e.what()) + " (as frames of model output " + shape_text(out) + " for input " +
                         shape_text(in) + ")");
    }
}

std::string shape_text(const std::vector<int64_t>& sizes) {
    std::string s = "[";
    for (size_t i = 0; i < sizes.size(); ++i) s += (i ? "," : "") + std::to_string(sizes[i]);
    return s + "]";
}

ModelOutputCheck check_model_output(const std::vector<int64_t>& out, const std::string& dtype,
                                    const std::vector<int64_t>& in, const ModelContract& c) {
    const std::string shapes = "model output " + shape_text(out);
    const std::string for_input = " for input " + shape_text(in);
    if (in.size() != 4 || in[0] < 1 || in[2] < 1 || in[3] < 1)
        throw ModelError("model input " + shape_text(in) + " is not [N,3,H,W] with N, H, W >= 1");
    for (int64_t d : out)
        if (d == 0) throw ModelError(shapes + " has a zero dimension" + for_input + ": no depth to write");
    if (!((out.size() == 4 && out[1] == 1) || out.size() == 3) || out[0] != in[0])
        throw ModelError(shapes + " is not an image [N,1,H,W] or [N,H,W] with N = " + std::to_string(in[0]) +
                         for_input);
    if (dtype != "Float" && dtype != "Double" && dtype != "Half" && dtype != "BFloat16")
        throw ModelError(shapes + " is " + dtype + ", not floating point depth" + for_input +
                         " (float32 is expected; float16, bfloat16 and float64 are converted to float32)");
    const int64_t oh = out[out.size() - 2], ow = out[out.size() - 1], ih = in[2], iw = in[3];
    if (oh < 0 || ow < 0) throw ModelError(shapes + " has a negative dimension" + for_input);
    // Compared in double: a huge dimension times max_scale cannot overflow.
    if (static_cast<double>(oh) > c.max_scale * static_cast<double>(ih) ||
        static_cast<double>(ow) > c.max_scale * static_cast<double>(iw)) {
        char scale[32];
        std::snprintf(scale, sizeof scale, "%g", c.max_scale);
        throw ModelError(shapes + " is more than " + scale + "x the input " + shape_text(in) +
                         " in height or width: refused before it is resized and written (a contract allows larger "
                         "outputs with output.max_scale, up to " +
                         std::to_string(static_cast<int>(kMaxOutputScale)) + ")");
    }
    if (oh > INT_MAX || ow > INT_MAX) throw ModelError(shapes + " is larger than an image can be" + for_input);
    ModelOutputCheck r;
    r.height = static_cast<int>(oh);
    r.width = static_cast<int>(ow);
    // Transposed: H' x W' is W x H, exactly or at one scale (within a pixel of rounding), on a non-square input
    // whose own aspect the output does not have.
    if (ih != iw) {
        const double oh_d = static_cast<double>(oh), ow_d = static_cast<double>(ow);
        const bool swapped_aspect = std::abs(ow_d - oh_d * ih / iw) <= 1.0 && std::abs(oh_d - ow_d * iw / ih) <= 1.0;
        const bool own_aspect = std::abs(ow_d - oh_d * iw / ih) <= 1.0 || std::abs(oh_d - ow_d * ih / iw) <= 1.0;
        r.transposed = swapped_aspect && !own_aspect;
    }
    if (r.transposed && c.fixed_size)
        throw ModelError(shapes + " has the height and width of the input " + shape_text(in) +
                         " swapped (H x W = " + std::to_string(oh) + "x" + std::to_string(ow) + " for " +
                         std::to_string(ih) + "x" + std::to_string(iw) +
                         "): its depth would be rotated; a fixed-size model must return "
                         "its input's orientation (re-export it)");
    return r;
}

namespace {

using nlohmann::json;

/// `v` for an error message: its JSON text, cut to 80 characters (a huge array names itself, not its bytes).
std::string brief(const json& v) {
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (s.size() > 80) s = s.substr(0, 77) + "...";
    return s;
}

template <class T> const char* json_type_name();
template <> const char* json_type_name<std::string>() { return "a string"; }
template <> const char* json_type_name<double>() { return "a number"; }
template <> const char* json_type_name<bool>() { return "true or false"; }

std::string field_name(const std::string& where, const char* key) { return where.empty() ? key : where + "." + key; }

/// The field `key` of `parent` (whose path in the file is `where`, "" for the top) as T: `fallback` when it is
/// absent, and a ModelError naming the field, what it must be and what it is otherwise (null included).
template <class T> T field(const json& parent, const std::string& where, const char* key, const std::string& origin,
                           std::optional<T> fallback = std::nullopt) {
    const std::string name = field_name(where, key);
    if (!parent.contains(key)) {
        if (fallback) return *fallback;
        throw ModelError(origin + ": depthbatch.json has no field " + name);
    }
    const json& v = parent[key];
    const bool ok = std::is_same_v<T, std::string> ? v.is_string()
                    : std::is_same_v<T, bool>      ? v.is_boolean()
                                                   : v.is_number();
    if (!ok)
        throw ModelError(origin + ": depthbatch.json field " + name + " must be " + json_type_name<T>() + ", not " +
                         brief(v));
    return v.get<T>();
}

/// An integer element `v` of the field `name`, in [lo, hi]: a ModelError naming the field otherwise (a
/// non-integer, or a value outside the range, which get<int>() would have wrapped silently).
int integer_in(const json& v, const std::string& name, long long lo, long long hi, const std::string& origin,
               const std::string& what = "an integer") {
    if (!v.is_number_integer())
        throw ModelError(origin + ": depthbatch.json field " + name + " must be " + what + ", not " + brief(v));
    // nlohmann keeps a non-negative integer as unsigned (up to 2^64 - 1), a negative one as signed.
    const bool fits = v.is_number_unsigned()
                          ? v.get<unsigned long long>() <= static_cast<unsigned long long>(hi) &&
                                (lo <= 0 || v.get<unsigned long long>() >= static_cast<unsigned long long>(lo))
                          : v.get<long long>() >= lo && v.get<long long>() <= hi;
    if (!fits)
        throw ModelError(origin + ": depthbatch.json field " + name + " must be " + std::to_string(lo) + " to " +
                         std::to_string(hi) + ", not " + brief(v));
    return static_cast<int>(v.get<long long>());
}

/// An integer field, `fallback` when absent.
int int_field(const json& parent, const std::string& where, const char* key, const std::string& origin, int fallback,
              long long lo, long long hi) {
    if (!parent.contains(key)) return fallback;
    return integer_in(parent[key], field_name(where, key), lo, hi, origin);
}

/// An object-valued field (input, output), named in the error when absent or not an object.
const json& section(const json& parent, const char* key, const std::string& origin) {
    if (!parent.contains(key) || !parent[key].is_object())
        throw ModelError(origin + ": depthbatch.json field " + key + " must be an object" +
                         (parent.contains(key) ? ", not " + brief(parent[key]) : " (it is missing)"));
    return parent[key];
}

/// A string of the contract that reaches the log and the EXR's metadata (name, colorspace, units, provenance):
/// refused when it holds a control character (C0, DEL or C1: a newline would forge a log line, an ESC drive the
/// terminal) or a Unicode line separator or bidirectional control (U+2028, U+2029: a line break to many readers;
/// U+202A-U+202E, U+2066-U+2069: they reorder what a terminal shows, as "Trojan Source", CVE-2021-42574),
/// naming the field and the character.
void refuse_control_characters(const std::string& value, const std::string& name, const std::string& origin) {
    for (size_t i = 0; i < value.size(); ++i) {
        const unsigned char ch = static_cast<unsigned char>(value[i]);
        const auto at = [&](size_t k) { return i + k < value.size() ? static_cast<unsigned char>(value[i + k]) : 0; };
        const bool c1 = ch == 0xC2 && at(1) >= 0x80 && at(1) <= 0x9F;
        // UTF-8 E2 80 A8..AE = U+2028..U+202E; E2 81 A6..A9 = U+2066..U+2069.
        const bool format = ch == 0xE2 && ((at(1) == 0x80 && at(2) >= 0xA8 && at(2) <= 0xAE) ||
                                           (at(1) == 0x81 && at(2) >= 0xA6 && at(2) <= 0xA9));
        if (ch >= 0x20 && ch != 0x7F && !c1 && !format) continue;
        char code[8];
        const unsigned cp = format ? 0x2000u + ((at(1) & 0x3Fu) << 6) + (at(2) & 0x3Fu) : c1 ? at(1) : ch;
        std::snprintf(code, sizeof code, "U+%04X", cp);
        throw ModelError(origin + ": depthbatch.json field " + name + " holds a control character (" + code +
                         " at byte " + std::to_string(i) +
                         "): the contract's strings go into the log and every "
                         "EXR's metadata; re-export the model with printable text there");
    }
}

}  // namespace

ModelContract parse_model_contract(const std::string& text, const std::string& origin) {
    json j;
    bool too_deep = false;
    try {
        // Nesting is bounded while parsing (a contract is two levels deep): a deeply nested file is refused
        // before any recursive walk of it (dump, destruction) could exhaust the stack.
        const json::parser_callback_t depth_limit = [&too_deep](int depth, json::parse_event_t event, json&) {
            if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
                depth >= kMaxContractDepth) {
                too_deep = true;
                throw std::length_error("nesting");
            }
            return true;
        };
        j = json::parse(text, depth_limit);
    } catch (const json::exception& e) {
        std::string what = e.what();  // names the bytes it stopped at: cut, and any invalid UTF-8 left as it is
        if (what.size() > 300) what = what.substr(0, 300) + "...";
        throw ModelError(origin + ": depthbatch.json is not valid JSON: " + what);
    } catch (const std::length_error&) {
        if (!too_deep) throw;
    }
    if (too_deep)
        throw ModelError(origin + ": depthbatch.json nests objects or arrays deeper than " +
                         std::to_string(kMaxContractDepth) + " levels (a contract has two)");
    if (!j.is_object()) throw ModelError(origin + ": depthbatch.json must be a JSON object, not " + brief(j));
    ModelContract c;
    c.embedded = true;
    if (const int format = int_field(j, "", "format", origin, 1, INT_MIN, INT_MAX); format != 1)
        throw ModelError(origin + ": depthbatch.json format " + std::to_string(format) +
                         " is newer than this depthbatch understands (1)");
    c.name = field<std::string>(j, "", "name", origin, std::string());
    const json& in = section(j, "input", origin);
    c.colorspace = field<std::string>(in, "input", "colorspace", origin, c.colorspace);
    c.multiple = int_field(in, "input", "multiple", origin, 1, 1, kMaxContractMultiple);
    if (in.contains("size") && !in["size"].is_null()) {
        const json& size = in["size"];
        if (!size.is_array() || size.size() != 2 || !size[0].is_number_integer() || !size[1].is_number_integer())
            throw ModelError(origin +
                             ": depthbatch.json field input.size must be [height, width] in integer pixels, not " +
                             brief(size));
        c.height = integer_in(size[0], "input.size", 1, kMaxContractSize, origin);
        c.width = integer_in(size[1], "input.size", 1, kMaxContractSize, origin);
    }
    c.fixed_size = field<bool>(in, "input", "fixed_size", origin, false);
    for (const char* key : {"mean", "std"})
        if (in.contains(key) && !in[key].is_null())
            throw ModelError(origin + ": depthbatch.json input." + key +
                             " is set: depthbatch feeds RGB in [0,1] and expects the module to apply "
                             "its own normalization (re-export with normalization inside)");
    if (in.contains("frames")) c.frames = integer_in(in["frames"], "input.frames", 1, kMaxContractFrames, origin);
    const json& out = section(j, "output", origin);
    const std::string kind = field<std::string>(out, "output", "kind", origin);
    auto k = parse_depth_kind(kind);
    if (!k)
        throw ModelError(origin + ": depthbatch.json output.kind '" +
                         (kind.size() > 80 ? kind.substr(0, 77) + "..." : kind) +
                         "' is unknown (metric_depth, relative_inverse_depth or relative_depth)");
    c.kind = *k;
    c.units = field<std::string>(out, "output", "units", origin, std::string());
    c.reference_focal_px = field<double>(out, "output", "reference_focal_px", origin, 0.0);
    if (!(c.reference_focal_px >= 0) || !std::isfinite(c.reference_focal_px))
        throw ModelError(origin + ": depthbatch.json output.reference_focal_px must be > 0, not " +
                         brief(out.at("reference_focal_px")));
    c.max_scale = field<double>(out, "output", "max_scale", origin, 4.0);
    if (!(c.max_scale >= 1 && c.max_scale <= kMaxOutputScale))
        throw ModelError(origin + ": depthbatch.json field output.max_scale must be 1 to " +
                         std::to_string(static_cast<int>(kMaxOutputScale)) + ", not " + brief(out.at("max_scale")));
    if (j.contains("temporal")) {
        const json& t = section(j, "temporal", origin);
        TemporalWindowing& w = c.temporal;
        const auto required = [&](const char* key) -> const json& {
            if (!t.contains(key)) throw ModelError(origin + ": depthbatch.json has no field temporal." + key);
            return t[key];
        };
        w.window = integer_in(required("window"), "temporal.window", 2, kMaxContractFrames, origin);
        w.overlap = integer_in(required("overlap"), "temporal.overlap", 1, kMaxContractFrames, origin);
        w.crossfade = integer_in(required("crossfade"), "temporal.crossfade", 2, kMaxContractFrames, origin);
        const json& keys = required("keyframes");
        if (!keys.is_array() || keys.size() > static_cast<size_t>(kMaxContractFrames))
            throw ModelError(origin +
                             ": depthbatch.json field temporal.keyframes must be an array of frame indices, not " +
                             brief(keys));
        for (const json& k : keys)
            w.keyframes.push_back(integer_in(k, "temporal.keyframes", 0, kMaxContractFrames, origin));
        const std::string align = field<std::string>(t, "temporal", "align", origin);
        const auto& spellings = option_names(TemporalWindowing::Align{});
        const auto spelled =
            std::find_if(spellings.begin(), spellings.end(), [&](const auto& s) { return align == s.second; });
        if (spelled != spellings.end()) w.align = spelled->first;
        else
            throw ModelError(origin +
                             ": depthbatch.json field temporal.align must be \"scale_shift\" or \"none\", not " +
                             brief(t["align"]));
    }
    if (j.contains("views")) {
        const json& v = section(j, "views", origin);
        for (const char* key : {"window", "overlap"})
            if (!v.contains(key)) throw ModelError(origin + ": depthbatch.json has no field views." + key);
        c.views.window = integer_in(v["window"], "views.window", 2, kMaxContractFrames, origin);
        c.views.overlap = integer_in(v["overlap"], "views.overlap", 1, kMaxContractFrames, origin);
        c.views.pose = field<std::string>(v, "views", "pose", origin, std::string());
        refuse_control_characters(c.views.pose, "views.pose", origin);
        for (const auto& [key, want] :
             {std::pair<const char*, const char*>{"extrinsics", "opencv_world_to_camera"}, {"intrinsics", "pixels"}})
            if (v.contains(key) && field<std::string>(v, "views", key, origin) != want)
                throw ModelError(origin + ": depthbatch.json field views." + key + " must be \"" + want +
                                 "\" (the only convention depthbatch reads), not " + brief(v[key]));
    }
    if (out.contains("extra_outputs") && !out["extra_outputs"].is_null()) {
        const json& extras = out["extra_outputs"];
        if (!extras.is_array() || extras.size() > 16)
            throw ModelError(origin +
                             ": depthbatch.json field output.extra_outputs must be a list (at most 16) of "
                             "{\"name\": ..., \"channel\": ...}, not " +
                             brief(extras));
        for (const json& e : extras) {
            if (!e.is_object() || !e.contains("name") || !e.contains("channel") || !e["name"].is_string() ||
                !e["channel"].is_string())
                throw ModelError(origin + ": depthbatch.json output.extra_outputs entry " + brief(e) +
                                 " is not {\"name\": string, \"channel\": string}");
            c.extra_outputs.push_back({e["name"].get<std::string>(), e["channel"].get<std::string>()});
        }
    }
    if (j.contains("exported_by")) {  // {"torch": "2.13.0+cpu"}: what wrote the file (tools/contract.py)
        const json& by = j["exported_by"];
        if (!by.is_object())
            throw ModelError(origin +
                             ": depthbatch.json field exported_by must be an object ({\"torch\": \"2.13.0\"}), not " +
                             brief(by));
        if (by.contains("torch")) {
            const json& v = by["torch"];
            const bool ok = v.is_string() && !v.get_ref<const std::string&>().empty() &&
                            v.get_ref<const std::string&>().size() <= 64 &&
                            std::all_of(v.get_ref<const std::string&>().begin(), v.get_ref<const std::string&>().end(),
                                        [](unsigned char ch) { return ch > 0x20 && ch < 0x7f; });
            if (!ok)
                throw ModelError(origin +
                                 ": depthbatch.json field exported_by.torch must be a torch version (1-64 printable "
                                 "characters, e.g. \"2.13.0\"), not " +
                                 brief(v));
            c.exported_torch = v.get<std::string>();
        }
    }
    for (auto it = j.begin(); it != j.end(); ++it)
        if (it.key() != "input" && it.key() != "output" && it.key() != "format" && it.key() != "name" &&
            it.key() != "temporal" && it.key() != "views" && it.key() != "exported_by")
            c.provenance[it.key()] =
                it->is_string() ? it->get<std::string>() : it->dump(-1, ' ', false, json::error_handler_t::replace);
    refuse_control_characters(c.name, "name", origin);
    refuse_control_characters(c.colorspace, "input.colorspace", origin);
    refuse_control_characters(c.units, "output.units", origin);
    for (const auto& [key, value] : c.provenance) {
        refuse_control_characters(key, "key " + json(key).dump(-1, ' ', true, json::error_handler_t::replace), origin);
        refuse_control_characters(value, key, origin);
    }
    validate_model_contract(c, origin);
    return c;
}

std::string contract_license(const ModelContract& contract) {
    const auto it = contract.provenance.find("license");
    return it == contract.provenance.end() ? std::string() : it->second;
}

namespace {

/// A licence name as compared: upper case, every run of spaces, tabs, underscores or hyphens one hyphen, none at the
/// ends ("  cc by-nc 4.0 " -> "CC-BY-NC-4.0").
std::string license_key(const std::string& license) {
    std::string key;
    for (unsigned char ch : license) {
        const bool gap = std::isspace(ch) || ch == '_' || ch == '-';
        if (gap) {
            if (!key.empty() && key.back() != '-') key += '-';
        } else {
            key += static_cast<char>(std::toupper(ch));
        }
    }
    if (!key.empty() && key.back() == '-') key.pop_back();
    return key;
}

}  // namespace

bool is_non_commercial_license(const std::string& license) {
    const std::string key = "-" + license_key(license) + "-";
    for (const char* mark :
         {"-BY-NC-", "-NC-BY-", "NONCOMMERCIAL", "NON-COMMERCIAL", "NOT-FOR-COMMERCIAL", "NO-COMMERCIAL"})
        if (key.find(mark) != std::string::npos) return true;
    return false;
}

bool license_accepted(const std::string& license, const std::string& accepted) {
    return !accepted.empty() && license_key(license) == license_key(accepted);
}

void check_model_license(const ModelContract& contract, const std::string& model_path, const std::string& accepted) {
    const std::string license = contract_license(contract);
    if (!is_non_commercial_license(license) || license_accepted(license, accepted)) return;
    throw ConfigError("model.path: " + model_path + " (" + contract.name + ") is licensed " + license +
                      ", which forbids commercial use" +
                      (accepted.empty() ? std::string() : " (model.accept_license names " + accepted + ")") +
                      ": a job renders it only when it accepts that licence by name (model.accept_license: " + license +
                      "); for work you are paid for, use a model whose licence allows it (docs/models.md)");
}

}  // namespace depthbatch
