// libFuzzer target: the model contract (depthbatch.json inside a TorchScript file) and the check of a model's
// output against its input (check_model_output). The first byte picks the mode:
//   0  the rest is depthbatch.json text, as it comes
//   1  structure-aware: the rest picks, field by field, a value (valid, edge, wrong type, absent) of every
//      field of the contract, so that the parser's checks behind a valid document are reached
//   2  the rest is an output shape, dtype, input shape and contract (max_scale, fixed_size) for check_model_output
// Either a ModelError, or a result that keeps the documented invariants (checked here; __builtin_trap when
// broken); any other exception escapes and is a crash.
#include "depthbatch/error.h"
#include "depthbatch/model_contract.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace depthbatch;

/// Bytes consumed one at a time; 0 once they run out.
struct Bytes {
    const uint8_t* p;
    size_t n;
    uint8_t next() {
        if (!n) return 0;
        --n;
        return *p++;
    }
    int64_t next64() {
        int64_t v = 0;
        for (int i = 0; i < 8; ++i) v = (v << 8) | next();
        return v;
    }
    std::string rest() { return std::string(reinterpret_cast<const char*>(p), n); }
};

void check(bool ok) {
    if (!ok) __builtin_trap();
}

void check_contract(const ModelContract& c) {
    check(c.multiple >= 1 && c.multiple <= kMaxContractMultiple);
    check((c.height == 0 && c.width == 0) ||
          (c.height >= 1 && c.width >= 1 && c.height <= kMaxContractSize && c.width <= kMaxContractSize));
    check(c.height % c.multiple == 0 && c.width % c.multiple == 0);
    check(c.max_scale >= 1 && c.max_scale <= kMaxOutputScale);
    check(c.reference_focal_px >= 0);
    check(!c.colorspace.empty());
    check(c.kind != DepthKind::MetricDepth || c.units == "m");
    check(c.frames >= 1 && c.frames <= kMaxContractFrames);
    check(c.exported_torch.size() <= 64 && c.provenance.count("exported_by") == 0);  // exported_by.torch: printable
    for (char ch : c.exported_torch) check(ch > 0x20 && ch < 0x7f);
    if (c.multi_frame()) {  // TemporalWindowing's invariants
        const TemporalWindowing& t = c.temporal;
        check(t.window >= 2 && t.window <= c.frames && t.overlap >= 1 && t.overlap < t.window);
        check(t.crossfade >= 2 && t.crossfade < t.overlap && static_cast<int>(t.keyframes.size()) == t.overlap);
        for (size_t i = 0; i < t.keyframes.size(); ++i) check(t.keyframes[i] >= 0 && t.keyframes[i] < t.window);
        check(t.keyframes.back() == t.window - 1);
    } else {
        check(c.temporal.window == 0);
    }
    validate_model_contract(c, "fuzz.pt");  // must not throw on what parse accepted
}

void parse(const std::string& text) {
    try {
        check_contract(parse_model_contract(text, "fuzz.pt"));
    } catch (const ModelError& e) {
        check(std::string(e.what()).rfind("fuzz.pt: ", 0) == 0);
    }
}

/// One of `values`, or the field absent (""), by the next byte.
std::string pick(Bytes& b, const std::vector<std::string>& values) {
    const size_t i = b.next() % (values.size() + 1);
    return i == values.size() ? std::string() : values[i];
}

const std::vector<std::string> kAny = {"null",
                                       "true",
                                       "0",
                                       "-1",
                                       "1.5",
                                       "\"\"",
                                       "[]",
                                       "{}",
                                       "[[[[]]]]",
                                       "\"\xc3\xa9\"",
                                       "18446744073709551615",
                                       "-9223372036854775808",
                                       "1e308",
                                       "-0"};

std::vector<std::string> with_any(std::vector<std::string> v) {
    v.insert(v.end(), kAny.begin(), kAny.end());
    return v;
}

/// Structure-aware: a JSON object with every field of the contract chosen from valid, edge and wrong values.
std::string contract_from(Bytes& b) {
    const auto member = [&](const char* key, const std::vector<std::string>& values, std::string& out) {
        const std::string v = pick(b, values);
        if (v.empty()) return;
        if (out.size() > 1) out += ", ";
        out += std::string("\"") + key + "\": " + v;
    };
    std::string in = "{";
    member("colorspace", with_any({"\"sRGB\"", "\"ACEScg\"", "\"lin_rec709\""}), in);
    member("multiple", with_any({"1", "14", "32", "1024", "1025", "1073741824", "4294967296", "2147483648"}), in);
    member("size",
           with_any({"[224, 224]", "[518, 518]", "[-224, -224]", "[0, 0]", "[16384, 16384]", "[16385, 32]",
                     "[2147483647, 2147483647]", "[4294967520, 224]", "[224]", "[224, 224, 3]", "[224.0, 224]",
                     "[\"224\", 224]", "[null, null]", "[[224], [224]]"}),
           in);
    member("fixed_size", with_any({"true", "false", "1"}), in);
    member("mean", {"null", "[0.485, 0.456, 0.406]", "0"}, in);
    member("std", {"null", "[0.229, 0.224, 0.225]"}, in);
    member("frames", with_any({"1", "2", "32", "1024", "1025", "0"}), in);
    in += "}";
    std::string out = "{";
    member("kind",
           with_any({"\"metric_depth\"", "\"relative_inverse_depth\"", "\"relative_depth\"", "\"depth\"",
                     "\"METRIC_DEPTH\""}),
           out);
    member("units", with_any({"\"m\"", "\"\"", "\"mm\""}), out);
    member("reference_focal_px", with_any({"300", "0", "-300", "1e-300", "2.5"}), out);
    member("max_scale", with_any({"1", "4", "8", "64", "64.5", "0.5", "65", "1e300"}), out);
    out += "}";
    std::string temporal = "{";
    member("window", with_any({"32", "2", "8", "33", "1", "1025"}), temporal);
    member("overlap", with_any({"10", "4", "1", "31", "32"}), temporal);
    member("keyframes",
           with_any({"[0,12,24,25,26,27,28,29,30,31]", "[0,3,6,7]", "[0,1]", "[31,30]",
                     "[0,12,24,25,26,27,28,29,30,32]", "[-1]", "[0.5]"}),
           temporal);
    member("crossfade", with_any({"8", "2", "1", "10"}), temporal);
    member("align", with_any({"\"scale_shift\"", "\"none\"", "\"affine\""}), temporal);
    temporal += "}";
    std::string top = "{";
    member("format", with_any({"1", "2", "4294967297"}), top);
    member("name", with_any({"\"probe\""}), top);
    member("input", {in, in, in, "[]", "null"}, top);
    member("output", {out, out, out, "\"metric_depth\"", "null"}, top);
    member("license", with_any({"\"MIT\"", "{\"a\": [1, 2]}"}), top);
    member("temporal", {temporal, temporal, "[]"}, top);
    member("exported_by",
           with_any({"{\"torch\": \"2.13.0+cpu\"}", "{\"torch\": \"\"}", "{\"torch\": 2.13}", "{\"torch\": \"2 13\"}",
                     "{\"tools\": 1}"}),
           top);
    top += "}";
    const int wrap = b.next() % 8;  // sometimes not an object, or an object nested in arrays
    if (wrap == 1) return "[" + top + "]";
    if (wrap == 2) return top + " " + b.rest();
    if (wrap == 3) return top.substr(0, top.size() * b.next() / 256);
    return top;
}

/// Dimensions for a shape: small, zero, negative, huge and near-overflow values.
int64_t dim_from(Bytes& b) {
    const uint8_t k = b.next();
    switch (k % 8) {
    case 0: return 0;
    case 1: return 1;
    case 2: return -static_cast<int64_t>(b.next());
    case 3: return b.next64();
    case 4: return INT64_MAX - b.next();
    case 5: return static_cast<int64_t>(b.next()) * 256 + b.next();
    default: return b.next();
    }
}

void output_check(Bytes& b) {
    std::vector<int64_t> out(b.next() % 6), in;
    for (auto& d : out) d = dim_from(b);
    if (b.next() % 4) in = {1 + b.next() % 4, 3, 1 + b.next() * 8 + b.next() % 8, 1 + b.next() * 8 + b.next() % 8};
    else {
        in.resize(b.next() % 6);
        for (auto& d : in) d = dim_from(b);
    }
    static const char* kDtypes[] = {"Float", "Double", "Half",         "BFloat16",      "Long", "Int",
                                    "Bool",  "Byte",   "ComplexFloat", "Float8_e4m3fn", ""};
    const std::string dtype = kDtypes[b.next() % (sizeof kDtypes / sizeof *kDtypes)];
    ModelContract c;
    c.max_scale = 1 + b.next() % 64;  // 1 .. 64, the range the contract allows
    c.fixed_size = b.next() % 2;
    ModelOutputCheck r;
    try {
        r = check_model_output(out, dtype, in, c);
    } catch (const ModelError&) {
        return;
    }
    // Accepted: an image [N,1,H,W] or [N,H,W] of the input's N, no zero or negative dimension, float, within
    // max_scale of the input, and never transposed for a fixed-size model.
    check(in.size() == 4 && in[0] >= 1 && in[2] >= 1 && in[3] >= 1);
    check((out.size() == 4 && out[1] == 1) || out.size() == 3);
    check(out[0] == in[0]);
    for (int64_t d : out) check(d >= 1);
    check(dtype == "Float" || dtype == "Double" || dtype == "Half" || dtype == "BFloat16");
    check(r.height == out[out.size() - 2] && r.width == out[out.size() - 1]);
    check(r.height <= c.max_scale * static_cast<double>(in[2]) && r.width <= c.max_scale * static_cast<double>(in[3]));
    check(!(r.transposed && c.fixed_size));
    check(!r.transposed || in[2] != in[3]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Bytes b{data, size};
    switch (b.next() % 3) {
    case 0: parse(b.rest()); break;
    case 1: parse(contract_from(b)); break;
    default: output_check(b); break;
    }
    return 0;
}
