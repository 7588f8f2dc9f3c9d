// Which LibTorch loads a model: the message for a file this LibTorch cannot load because it needs a newer one
// (describe_load_failure, declared in model_contract.h). docs/models.md "Which LibTorch loads a model".
#include "depthbatch/model_contract.h"

#include <nlohmann/json.hpp>
#include <torch/version.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

namespace depthbatch {
namespace {

/// The text of the line of `text` that contains position `pos`, trimmed.
std::string line_at(const std::string& text, size_t pos) {
    size_t begin = text.rfind('\n', pos);
    begin = begin == std::string::npos ? 0 : begin + 1;
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    const size_t first = line.find_first_not_of(" \t\r");
    const size_t last = line.find_last_not_of(" \t\r");
    line = first == std::string::npos ? std::string() : line.substr(first, last - first + 1);
    return line.size() > 200 ? line.substr(0, 200) + "..." : line;
}

// LibTorch's wording (torch/csrc/jit/frontend, caffe2/serialize/inline_container.cc; the same in 2.4.1 and 2.13).
const std::string kUnknownOp = "Unknown builtin op: ";
const std::string kUnknownType = "Unknown type name '";
const std::string kFileVersion = "Attempted to read a PyTorch file with version ";
const std::string kMaxVersion = "maximum supported version for reading is ";

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// An operator name `ns::name` (with `.overload` when `with_overload`) starting at `pos` of `text`; "" if none.
std::string op_at(const std::string& text, size_t pos, bool with_overload) {
    size_t i = pos;
    while (i < text.size() && name_char(text[i])) ++i;
    if (i == pos || text.compare(i, 2, "::") != 0) return "";
    size_t j = i + 2;
    while (j < text.size() && name_char(text[j])) ++j;
    if (j == i + 2) return "";
    if (with_overload && j + 1 < text.size() && text[j] == '.' && name_char(text[j + 1])) {
        ++j;
        while (j < text.size() && name_char(text[j])) ++j;
    }
    return text.substr(pos, j - pos);
}

/// The first line of `text` that begins (after indentation) with an operator's schema, `ns::name(` or
/// `ns::name.overload(`: the schema LibTorch shows when a call does not match it. Returns the operator, "" if none.
std::string first_schema_op(const std::string& text) {
    size_t pos = 0;
    while (pos < text.size()) {
        size_t start = text.find_first_not_of(" \t", pos);
        if (start == std::string::npos) break;
        const std::string op = op_at(text, start, true);
        if (!op.empty() && start + op.size() < text.size() && text[start + op.size()] == '(') return op;
        const size_t nl = text.find('\n', pos);
        if (nl == std::string::npos) break;
        pos = nl + 1;
    }
    return "";
}

/// The little-endian unsigned integer of `bytes` bytes at `pos` of `data` (ZIP fields are little-endian); 0 when
/// `data` is too short.
uint64_t little_endian(const std::string& data, size_t pos, int bytes) {
    if (pos + bytes > data.size()) return 0;
    uint64_t value = 0;
    for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(data[pos + i]);
    return value;
}

/// `size` bytes of the file `in` from `offset` ("" when the file ends before).
std::string read_at(std::ifstream& in, uint64_t offset, uint64_t size) {
    std::string data(size, '\0');
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(data.data(), static_cast<std::streamsize>(size));
    return in.gcount() == static_cast<std::streamsize>(size) ? data : std::string();
}

/// The bytes of the first stored (uncompressed) entry of the ZIP file at `path` whose name ends with `suffix`; ""
/// if there is none. Found the way a ZIP reader finds it (PKWARE APPNOTE.TXT): the end of central directory record
/// (4.3.16; its ZIP64 form, 4.3.14-15, when the offset is 0xFFFFFFFF), the central directory's file headers (4.3.12;
/// sizes and offset from the ZIP64 extra field, 4.5.3, when 0xFFFFFFFF), then the local file header (4.3.7), after
/// which the data starts. torch.jit.save's local headers leave the sizes 0 (a data descriptor follows the data).
std::string stored_zip_entry(const std::string& path, const std::string& suffix) {
    constexpr uint64_t kAll = 0xFFFFFFFFu, kMaxDirectory = uint64_t(64) << 20, kMaxEntry = uint64_t(1) << 20;
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return "";
    const uint64_t file_size = static_cast<uint64_t>(in.tellg());
    const uint64_t tail_size = std::min<uint64_t>(file_size, 22 + 65535);  // the record and its longest comment
    const std::string tail = read_at(in, file_size - tail_size, tail_size);
    const size_t end = tail.rfind("PK\5\6");
    if (end == std::string::npos) return "";
    uint64_t directory = little_endian(tail, end + 16, 4), directory_size = little_endian(tail, end + 12, 4);
    if (directory == kAll && end >= 20 && tail.compare(end - 20, 4, "PK\6\7") == 0) {
        const std::string zip64 = read_at(in, little_endian(tail, end - 20 + 8, 8), 56);
        if (zip64.compare(0, 4, "PK\6\6") != 0) return "";
        directory_size = little_endian(zip64, 40, 8);
        directory = little_endian(zip64, 48, 8);
    }
    if (directory_size > kMaxDirectory) return "";
    const std::string headers = read_at(in, directory, directory_size);
    for (size_t at = 0; at + 46 <= headers.size() && headers.compare(at, 4, "PK\1\2") == 0;) {
        const uint64_t method = little_endian(headers, at + 10, 2), name_size = little_endian(headers, at + 28, 2),
                       extra_size = little_endian(headers, at + 30, 2),
                       comment_size = little_endian(headers, at + 32, 2);
        const std::string name = headers.substr(at + 46, name_size);
        uint64_t size = little_endian(headers, at + 20, 4), local = little_endian(headers, at + 42, 4);
        if (method == 0 && name.size() >= suffix.size() &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
            const uint64_t uncompressed = little_endian(headers, at + 24, 4);
            // ZIP64 extra field (id 1): the 8-byte values of the fields that are 0xFFFFFFFF above, in this order.
            for (size_t x = at + 46 + name_size; x + 4 <= at + 46 + name_size + extra_size;) {
                const uint64_t id = little_endian(headers, x, 2), length = little_endian(headers, x + 2, 2);
                if (id == 1) {
                    size_t field = x + 4;
                    if (uncompressed == kAll) field += 8;
                    if (size == kAll) size = little_endian(headers, field, 8), field += 8;
                    if (local == kAll) local = little_endian(headers, field, 8);
                }
                x += 4 + length;
            }
            if (size > kMaxEntry) return "";
            const std::string header = read_at(in, local, 30);
            if (header.compare(0, 4, "PK\3\4") != 0) return "";
            return read_at(in, local + 30 + little_endian(header, 26, 2) + little_endian(header, 28, 2), size);
        }
        at += 46 + name_size + extra_size + comment_size;
    }
    return "";
}

/// The leading decimal number at `pos` of `text` ("" if none).
std::string number_at(const std::string& text, size_t pos) {
    size_t end = pos;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    return text.substr(pos, end - pos);
}

/// "2.13.0+cpu" -> "2.13"; a text that is not a version stays as it is.
std::string major_minor(const std::string& version) {
    const size_t dot = version.find('.');
    if (dot == std::string::npos || dot == 0) return version;
    size_t end = dot + 1;
    while (end < version.size() && std::isdigit(static_cast<unsigned char>(version[end]))) ++end;
    return end == dot + 1 ? version : version.substr(0, end);
}

}  // namespace

std::string libtorch_version() { return TORCH_VERSION; }

std::string recorded_exporting_torch(const std::string& path) {
    try {
        const nlohmann::json j =
            nlohmann::json::parse(stored_zip_entry(path, "/extra/depthbatch.json"), nullptr, false);
        if (!j.is_object() || !j.contains("exported_by") || !j["exported_by"].is_object()) return "";
        const nlohmann::json& torch = j["exported_by"].value("torch", nlohmann::json());
        if (!torch.is_string()) return "";
        const std::string version = torch.get<std::string>();
        if (version.empty() || version.size() > 64) return "";
        for (const char c : version)
            if (c < 0x20 || c > 0x7e) return "";
        return version;
    } catch (const std::exception&) {  // an unreadable file: not recorded
        return "";
    }
}

std::string describe_load_failure(const std::string& path, const std::string& libtorch_error,
                                  const std::string& exported_torch) {
    const std::string& e = libtorch_error;
    const std::string here = "this LibTorch (" + libtorch_version() + ")";
    std::string what;
    if (const size_t at = e.find(kUnknownOp); at != std::string::npos) {
        const std::string op = op_at(e, at + kUnknownOp.size(), false);
        if (!op.empty()) what = "uses the operator " + op + ", which " + here + " does not have";
    }
    if (what.empty())
        if (const size_t at = e.find("Schema not found for node"); at != std::string::npos) {
            // "... Node: %3 : Tensor = aten::foo(%1, %2)": the operator after the first " = " of the node line
            const size_t eq = e.find(" = ", at);
            const std::string op = eq == std::string::npos ? std::string() : op_at(e, eq + 3, false);
            what = "uses " + (op.empty() ? std::string("an operator") : "the operator " + op) + " in a form " + here +
                   " does not have";
        }
    if (what.empty())
        for (const char* reason :
             {"Keyword argument ", "Expected at most ", "Argument ", "Expected a value of type "}) {
            const size_t at = e.find(reason);
            const std::string op = at == std::string::npos ? std::string() : first_schema_op(e);
            if (op.empty() || (std::string(reason) == "Argument " && e.find(" not provided", at) == std::string::npos))
                continue;
            what = "calls the operator " + op + " with arguments " + here + " does not accept (\"" + line_at(e, at) +
                   "\": a newer signature of it)";
            break;
        }
    if (what.empty())
        if (const size_t at = e.find(kUnknownType); at != std::string::npos) {
            const size_t begin = at + kUnknownType.size(), end = e.find('\'', begin);
            if (end != std::string::npos && end - begin <= 80)
                what = "uses the type " + e.substr(begin, end - begin) + ", which " + here + " does not know";
        }
    if (what.empty())
        if (const size_t at = e.find(kFileVersion); at != std::string::npos) {
            const std::string file = number_at(e, at + kFileVersion.size());
            const size_t max_at = e.find(kMaxVersion, at);
            const std::string max =
                max_at == std::string::npos ? std::string() : number_at(e, max_at + kMaxVersion.size());
            if (!file.empty())
                what = "is TorchScript file format version " + file + ", newer than " + here + " reads" +
                       (max.empty() ? std::string() : " (up to " + max + ")");
        }
    if (what.empty()) return "";
    const std::string made = exported_torch.empty() ? "the file does not record the torch that exported it (exported "
                                                      "before depthbatch recorded it, or made elsewhere)"
                                                    : "the file was exported with torch " + exported_torch;
    const std::string newer = exported_torch.empty()
                                  ? std::string("a newer LibTorch (as new as the torch that exported it)")
                                  : "a LibTorch >= " + major_minor(exported_torch);
    return path + ": " + what + "; " + made +
           ". Re-export it with this project's tools/ (python -m tools.export ..., "
           "or python -m tools.fastdepth prepare for the default model; their exports call only operators LibTorch 2.4 "
           "has), save a file made elsewhere again with torch " +
           major_minor(libtorch_version()) + " or older, or run depthbatch on " + newer +
           " (docs/models.md \"Which LibTorch loads a model\")";
}

}  // namespace depthbatch
