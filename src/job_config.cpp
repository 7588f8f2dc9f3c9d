#include "depthbatch/job_config.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/install_layout.h"
#include "depthbatch/log.h"

#include <toml++/toml.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace depthbatch {
namespace {

// The job-file spelling of every closed option set, one table each: parsing and option_name() read them.
template <class E>
struct OptionNames;
#define DEPTHBATCH_OPTION_NAMES(E, ...)                                                        \
    template <>                                                                                \
    struct OptionNames<E> {                                                                    \
        static constexpr std::pair<E, const char*> table[] = {__VA_ARGS__};                   \
    };
DEPTHBATCH_OPTION_NAMES(OverwritePolicy, {OverwritePolicy::Error, "error"}, {OverwritePolicy::Skip, "skip"},
                        {OverwritePolicy::Overwrite, "overwrite"})
DEPTHBATCH_OPTION_NAMES(Compression, {Compression::Zip, "zip"}, {Compression::Zips, "zips"},
                        {Compression::Piz, "piz"}, {Compression::Dwaa, "dwaa"}, {Compression::None, "none"})
DEPTHBATCH_OPTION_NAMES(OutputChannels, {OutputChannels::Rgba, "rgba"}, {OutputChannels::Depth, "depth"},
                        {OutputChannels::All, "all"})
DEPTHBATCH_OPTION_NAMES(ExistingDepth, {ExistingDepth::Replace, "replace"}, {ExistingDepth::Rename, "rename"})
DEPTHBATCH_OPTION_NAMES(PassthroughType, {PassthroughType::Keep, "keep"}, {PassthroughType::Half, "half"},
                        {PassthroughType::Float, "float"})
DEPTHBATCH_OPTION_NAMES(Precision, {Precision::Fp32, "fp32"}, {Precision::Fp16, "fp16"}, {Precision::Bf16, "bf16"})
DEPTHBATCH_OPTION_NAMES(HdrMode, {HdrMode::Clamp, "clamp"}, {HdrMode::View, "view"})
DEPTHBATCH_OPTION_NAMES(DepthConvention, {DepthConvention::Raw, "raw"}, {DepthConvention::Metric, "metric"},
                        {DepthConvention::Inverse, "inverse"}, {DepthConvention::Normalized, "normalized"})
DEPTHBATCH_OPTION_NAMES(Normalization, {Normalization::Raw, "raw"}, {Normalization::Frame, "frame"},
                        {Normalization::Sequence, "sequence"}, {Normalization::Fixed, "fixed"})
DEPTHBATCH_OPTION_NAMES(OnError, {OnError::Stop, "stop"}, {OnError::Continue, "continue"})
DEPTHBATCH_OPTION_NAMES(DepthUpsample, {DepthUpsample::Bilinear, "bilinear"}, {DepthUpsample::Guided, "guided"},
                        {DepthUpsample::EdgeHard, "edge_hard"})
#undef DEPTHBATCH_OPTION_NAMES

template <class E>
const char* name_of(E v) {
    for (const auto& [value, name] : OptionNames<E>::table)
        if (value == v) return name;
    return "?";
}

// The schema: section -> allowed keys. One table, so unknown keys are caught in one place.
const std::map<std::string, std::set<std::string>>& schema() {
    static const std::map<std::string, std::set<std::string>> s = {
        {"input", {"path", "frames", "colorspace", "part", "view", "layer", "pixel_aspect"}},
        {"output", {"path", "overwrite", "compression", "zip_level", "channels", "existing_depth", "pixel_type", "preview"}},
        {"model", {"path", "device", "size", "colorspace", "multiple", "kind", "units", "input_size",
                   "fixed_size", "precision", "batch", "warmup", "freeze", "channels_last", "threads", "tiles"}},
        {"color", {"config", "hdr", "display", "view", "look"}},
        {"depth", {"kind", "normalize", "near_is", "near", "far", "percentiles", "stats_frames", "stats_file",
                   "stabilize", "stabilize_window", "focal_px", "upsample", "guided_radius", "guided_epsilon",
                   "edge_threshold"}},
        {"pipeline", {"frames_in_flight", "threads", "report", "summary", "on_error", "grace_s", "review"}},
    };
    return s;
}

// Keys that hold a mapping of their own: key -> its allowed keys.
const std::map<std::string, std::set<std::string>>& nested_schema() {
    static const std::map<std::string, std::set<std::string>> s = {
        {"output.preview", {"path", "colormap", "size"}},
        {"model.tiles", {"size", "overlap"}},
    };
    return s;
}

std::string join(const std::set<std::string>& keys) {
    std::string out;
    for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
    return out;
}

// A parsed job: one YAML tree whatever the file format, plus where each key came from.
struct Tree {
    YAML::Node root = YAML::Node(YAML::NodeType::Map);
    std::string origin;                          // the job file (or "<text>")
    std::string base_dir;                        // resolves relative paths from the file
    std::map<std::string, std::string> where;    // "model.batch" -> "job.yaml:12"
    std::map<std::string, std::string> base;     // key -> folder its relative paths resolve against

    std::string at(const std::string& key) const {
        auto it = where.find(key);
        return it != where.end() ? it->second : origin;
    }
};

void record_yaml_marks(const YAML::Node& node, const std::string& prefix, Tree& tree) {
    if (!node.IsMap()) return;
    std::map<std::string, int> seen;  // yaml-cpp accepts repeated keys; YAML (and TOML) do not
    for (const auto& kv : node) {
        const std::string key = prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar();
        const int line = kv.first.Mark().line + 1;
        if (!seen.emplace(key, line).second)
            throw ConfigError(tree.origin + ":" + std::to_string(line) + ": key '" + key +
                              "' is repeated (first at line " + std::to_string(seen[key]) + ")");
        tree.where[key] = tree.origin + ":" + std::to_string(line);
        record_yaml_marks(kv.second, key, tree);
    }
}

YAML::Node toml_to_yaml(const toml::node& node, const std::string& key, Tree& tree) {
    if (!key.empty())
        tree.where[key] = tree.origin + ":" + std::to_string(node.source().begin.line);
    if (const auto* table = node.as_table()) {
        YAML::Node out(YAML::NodeType::Map);
        for (const auto& [k, v] : *table) {
            const std::string child = key.empty() ? std::string(k.str()) : key + "." + std::string(k.str());
            out[std::string(k.str())] = toml_to_yaml(v, child, tree);
        }
        return out;
    }
    if (const auto* array = node.as_array()) {
        YAML::Node out(YAML::NodeType::Sequence);
        for (const auto& v : *array) out.push_back(toml_to_yaml(v, key, tree));
        tree.where[key] = tree.origin + ":" + std::to_string(node.source().begin.line);
        return out;
    }
    std::ostringstream s;
    if (const auto* str = node.as_string()) s << str->get();
    else if (const auto* i = node.as_integer()) s << i->get();
    else if (const auto* f = node.as_floating_point()) s << f->get();
    else if (const auto* b = node.as_boolean()) s << (b->get() ? "true" : "false");
    else throw ConfigError(tree.at(key) + ": key '" + key + "': dates and times are not job values");
    return YAML::Node(s.str());
}

/// TOML allows characters beyond ASCII only inside strings and comments. toml++ 3.x reaches
/// TOML_UNREACHABLE (undefined behaviour in a release build) on some of them elsewhere, e.g. a stray 'é' or
/// 'â' after a key (found by scripts/fuzz): refuse those first, naming the line.
void check_toml_bytes(const std::string& text, const std::string& origin) {
    enum class In { Code, Comment, Basic, Literal, MultiBasic, MultiLiteral } in = In::Code;
    int line = 1;
    // A quote opens a string only where TOML allows one (line start, after '=', '[', ',', '{' or '.'):
    // in `x =0"é"` toml++ reads a bare value, so the 'é' is outside any string.
    char last = '\n';
    const auto at = [&](size_t i, const char* s) { return text.compare(i, std::strlen(s), s) == 0; };
    for (size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (ch == '\n') {
            ++line;
            last = '\n';
            if (in != In::MultiBasic && in != In::MultiLiteral) in = In::Code;  // (unterminated: toml++ says so)
            continue;
        }
        switch (in) {
        case In::Code: {
            const bool opens = last != '\0' && std::strchr("\n=[,{.", last) != nullptr;
            if (ch != ' ' && ch != '\t') last = ch;
            if (ch == '#') in = In::Comment;
            else if (opens && at(i, "\"\"\"")) in = In::MultiBasic, i += 2;
            else if (opens && at(i, "'''")) in = In::MultiLiteral, i += 2;
            else if (opens && ch == '"') in = In::Basic;
            else if (opens && ch == '\'') in = In::Literal;
            else if (static_cast<unsigned char>(ch) >= 0x80)
                throw ConfigError(origin + ":" + std::to_string(line) + ": TOML syntax error: a character beyond ASCII "
                                  "outside a string or comment (quote the value: path = 'plate.####.exr')");
            break;
        }
        case In::Comment: break;
        case In::Basic:
            if (ch == '\\') ++i;
            else if (ch == '"') in = In::Code, last = ch;
            break;
        case In::Literal:
            if (ch == '\'') in = In::Code, last = ch;
            break;
        case In::MultiBasic:
            if (ch == '\\') ++i;
            else if (at(i, "\"\"\"")) in = In::Code, i += 2, last = '"';
            break;
        case In::MultiLiteral:
            if (at(i, "'''")) in = In::Code, i += 2, last = '\'';
            break;
        }
    }
}

/// The 1-based number of the line holding byte `pos` of `text`.
int line_of(const std::string& text, size_t pos) {
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(std::min(pos, text.size())), '\n'));
}

/// For a YAML syntax error on line `error_line` (1-based): the first line up to it whose indentation holds a
/// tab, 0 if none. A tab after the indentation (`key:<TAB>value`) is not one. A blank or comment line with a
/// tab at its start counts only as the error line itself (yaml-cpp refuses one inside a block, not at the top).
int tab_indented_line(const std::string& text, int error_line) {
    int line = 1;
    for (size_t start = 0; start < text.size() && line <= error_line; ++line) {
        const size_t nl = text.find('\n', start);
        const std::string l = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        const size_t content = l.find_first_not_of(" \t\r");
        const bool tab = l.find('\t') < content;   // (npos: a blank line, all of it indentation)
        if (tab && (line == error_line || (content != std::string::npos && l[content] != '#'))) return line;
        if (nl == std::string::npos) break;
        start = nl + 1;
    }
    return 0;
}

/// yaml-cpp events of one document: where it starts and whether it holds anything (a node other than null).
struct DocumentProbe : YAML::EventHandler {
    YAML::Mark start;
    bool content = false;
    void OnDocumentStart(const YAML::Mark& mark) override { start = mark, content = false; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override { content = true; }
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override { content = true; }
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
        content = true;
    }
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
        content = true;
    }
    void OnMapEnd() override {}
};

/// YAML: the one document of a job. A second document (after `---`) would be dropped by a plain Load, so the
/// documents are walked first (yaml-cpp's parser events) and any one past the first that holds something is an
/// error naming the line it starts on. Not YAML::LoadAll: on a stray ',' where a document starts, yaml-cpp
/// hands out empty documents at the same place forever (found by scripts/fuzz), and YAML::Load reads it as
/// an empty job; a document that starts where the one before started is that, a syntax error.
YAML::Node load_yaml_document(const std::string& text, const std::string& origin) {
    const auto syntax_error = [&](int line, const std::string& msg) {
        if (const int tab = tab_indented_line(text, line))
            return ConfigError(origin + ":" + std::to_string(tab) + ": a tab character in the indentation; YAML "
                               "indents with spaces (YAML syntax error: " + msg + ")");
        return ConfigError(origin + ":" + std::to_string(line) + ": YAML syntax error: " + msg);
    };
    try {
        std::istringstream in(text);
        YAML::Parser parser(in);
        DocumentProbe doc;
        std::optional<int> last_start;   // Mark::pos of the document before
        for (int index = 0; parser.HandleNextDocument(doc); ++index) {
            if (last_start && doc.start.pos == *last_start) {
                const size_t at = static_cast<size_t>(std::max(0, doc.start.pos));
                throw syntax_error(doc.start.line + 1, "unexpected '" + printable(text.substr(at, 1)) +
                                                           "' (a ',' outside [ ] or { }?)");
            }
            last_start = doc.start.pos;
            if (index > 0 && doc.content)
                throw ConfigError(origin + ":" + std::to_string(doc.start.line + 1) +
                                  ": a second YAML document ('---'): a job file is one document, the rest would be "
                                  "ignored (merge its keys into the first, or make it a job file of its own)");
        }
        return YAML::Load(text);
    } catch (const YAML::Exception& e) {
        throw syntax_error(e.mark.line + 1, e.msg);
    }
}

Tree parse_tree(const std::string& raw_text, const std::string& format, const std::string& origin,
                const std::string& base_dir) {
    Tree tree;
    tree.origin = origin;
    tree.base_dir = base_dir;
    // A UTF-8 byte order mark (Windows editors write one) is not part of the job, in either format.
    const std::string text = raw_text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? raw_text.substr(3) : raw_text;
    if (const size_t nul = text.find('\0'); nul != std::string::npos)
        throw ConfigError(origin + ": not a job file (a NUL byte on line " + std::to_string(line_of(text, nul)) +
                          ": a binary file, or text saved as UTF-16; job files are UTF-8 text)");
    if (format == "toml") {
        check_toml_bytes(text, origin);
        try {
            toml::table table = toml::parse(text, origin);
            tree.root = toml_to_yaml(table, "", tree);
        } catch (const toml::parse_error& e) {
            throw ConfigError(origin + ":" + std::to_string(e.source().begin.line) +
                              ": TOML syntax error: " + std::string(e.description()));
        }
    } else {
        tree.root = load_yaml_document(text, origin);
        if (tree.root.IsNull()) tree.root = YAML::Node(YAML::NodeType::Map);
        if (!tree.root.IsMap()) throw ConfigError(origin + ": a job file is a mapping of sections (input, output, ...)");
        record_yaml_marks(tree.root, "", tree);
    }
    return tree;
}

/// One --set "key=value" applied to the tree. The key is checked against the schema here, so an error about it
/// names the flag ("--set key=value: ..."), never the job file; the value is checked later by the Reader, which
/// finds "--set key=value" as the key's `where`.
void apply_override(Tree& tree, const std::string& assignment) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
        throw ConfigError("--set '" + assignment + "': expected key.path=value");
    const std::string key = assignment.substr(0, eq);
    const std::string value = assignment.substr(eq + 1);
    const auto dot = key.find('.');
    if (dot == std::string::npos)
        throw ConfigError("--set '" + assignment + "': key must be section.key (e.g. model.device)");
    const std::string flag = "--set " + assignment;
    {
        const auto sec = schema().find(key.substr(0, dot));
        if (sec == schema().end()) {
            std::set<std::string> sections;
            for (const auto& kv : schema()) sections.insert(kv.first);
            throw ConfigError(flag + ": unknown section '" + key.substr(0, dot) + "' (allowed: " + join(sections) + ")");
        }
        const auto inner = key.find('.', dot + 1);
        const std::string first = key.substr(0, inner);   // section.key
        if (!sec->second.count(first.substr(dot + 1)))
            throw ConfigError(flag + ": unknown key '" + first + "' (allowed in '" + sec->first + "': " +
                              join(sec->second) + ")");
        if (inner != std::string::npos) {
            const auto nested = nested_schema().find(first);
            if (nested == nested_schema().end())
                throw ConfigError(flag + ": '" + first + "' holds one value, not keys (--set " + first + "=VALUE)");
            if (!nested->second.count(key.substr(inner + 1)))
                throw ConfigError(flag + ": unknown key '" + key + "' (allowed in '" + first + "': " +
                                  join(nested->second) + ")");
        }
    }
    YAML::Node parsed;
    try {
        parsed = YAML::Load(value);
    } catch (const YAML::Exception&) {
        parsed = YAML::Node(value);
    }
    if (parsed.IsNull()) parsed = YAML::Node(value);
    const std::string section = key.substr(0, dot), leaf = key.substr(dot + 1);
    if (tree.root[section] && !tree.root[section].IsNull() && !tree.root[section].IsMap())   // the file's error
        throw ConfigError(tree.at(section) + ": section '" + section + "' must be a mapping of keys");
    if (!tree.root[section] || !tree.root[section].IsMap()) {
        tree.root[section] = YAML::Node(YAML::NodeType::Map);
        if (!tree.where.count(section)) tree.where[section] = flag;
    }
    YAML::Node sec = tree.root[section];
    if (const auto inner = leaf.find('.'); inner != std::string::npos) {   // output.preview.path=...
        const std::string outer = leaf.substr(0, inner);
        if (!sec[outer] || !sec[outer].IsMap()) {
            YAML::Node map(YAML::NodeType::Map);
            // A nested key's scalar form is its main key: "preview: p.jpg" is its path, "tiles: 1024" its size.
            if (sec[outer] && sec[outer].IsScalar()) map[key.rfind("model.tiles", 0) == 0 ? "size" : "path"] = sec[outer];
            else if (!tree.where.count(section + "." + outer)) tree.where[section + "." + outer] = flag;
            sec[outer] = map;
        }
        YAML::Node holder = sec[outer];
        holder[leaf.substr(inner + 1)] = parsed;
    } else {
        sec[leaf] = parsed;
    }
    tree.where[key] = flag;
    tree.base[key] = fs::current_path().string();
}

// Typed, located access to the tree; every failure names file:line and key.
class Reader {
public:
    explicit Reader(const Tree& t) : t_(t) {}

    [[noreturn]] void fail(const std::string& key, const std::string& what) const {
        throw ConfigError(t_.at(key) + ": key '" + key + "': " + what);
    }
    YAML::Node node(const std::string& key) const {
        // yaml-cpp: Node::operator= writes into the node it refers to; reset() re-points it. Lookups go through
        // a const node, which never adds keys.
        YAML::Node n;
        n.reset(t_.root);
        for (size_t start = 0;;) {
            const auto dot = key.find('.', start);
            if (!n.IsMap()) return YAML::Node();
            const YAML::Node& parent = n;
            const YAML::Node child = parent[key.substr(start, dot == std::string::npos ? std::string::npos : dot - start)];
            if (!child) return YAML::Node();
            if (dot == std::string::npos) return child;
            n.reset(child);
            start = dot + 1;
        }
    }
    bool has(const std::string& key) const {
        YAML::Node n = node(key);
        return n && !n.IsNull();
    }
    std::string str(const std::string& key) const {
        YAML::Node n = node(key);
        if (!n.IsScalar()) fail(key, "expected a single value (a string)");
        return n.Scalar();
    }
    std::string str(const std::string& key, const std::string& fallback) const {
        return has(key) ? str(key) : fallback;
    }
    int integer(const std::string& key, long lo, long hi) const { return integer_text(key, str(key), lo, hi); }
    /// `s` as the decimal number written: "010" is 10 (yaml-cpp's as<int> would read it as octal 8, and
    /// "08" not at all; artists pad numbers to line them up with frame names). Anything else is an error.
    int integer_text(const std::string& key, const std::string& s, long lo, long hi) const {
        const bool digits = !s.empty() && s.find_first_not_of("0123456789", s[0] == '-' || s[0] == '+' ? 1 : 0) == std::string::npos &&
                            s.find_first_of("0123456789") != std::string::npos;
        if (!digits) fail(key, "expected an integer (decimal digits), got '" + printable(s) + "'");
        long v = 0;
        try {
            v = std::stol(s, nullptr, 10);
        } catch (const std::out_of_range&) {
            fail(key, "value " + s + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
        }
        if (v < lo || v > hi)
            fail(key, "value " + s + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return static_cast<int>(v);
    }
    double number(const std::string& key) const {
        const std::string s = str(key);
        try {
            size_t used = 0;
            double v = std::stod(s, &used);
            if (used != s.size() || !std::isfinite(v)) throw std::invalid_argument(s);
            return v;
        } catch (const std::logic_error&) {
            fail(key, "expected a number, got '" + s + "'");
        }
    }
    bool boolean(const std::string& key) const {
        const std::string s = str(key);
        if (s == "true" || s == "yes" || s == "on") return true;
        if (s == "false" || s == "no" || s == "off") return false;
        fail(key, "expected true or false, got '" + s + "'");
    }
    std::string choice(const std::string& key, const std::set<std::string>& allowed, const std::string& fallback) const {
        if (!has(key)) return fallback;
        const std::string s = str(key);
        if (!allowed.count(s)) fail(key, "'" + s + "' is not one of: " + join(allowed));
        return s;
    }
    /// A closed option set: `value` is left as it is (the default) when the job does not set `key`.
    template <class E>
    void option(const std::string& key, E& value) const {
        if (!has(key)) return;
        const std::string s = str(key);
        std::set<std::string> allowed;
        for (const auto& [v, name] : OptionNames<E>::table) {
            if (s == name) {
                value = v;
                return;
            }
            allowed.insert(name);
        }
        fail(key, "'" + s + "' is not one of: " + join(allowed));
    }
    /// `s` (the value of path key `key`) with a leading `~` (alone or before '/') replaced by $HOME and every
    /// `$NAME` / `${NAME}` (NAME = [A-Za-z_][A-Za-z0-9_]*) by that environment variable, in one pass (a value
    /// is not expanded again). Kept as written: the frame token `$F` followed by digits or by a character that
    /// cannot continue a name (`$F4`, `$F.exr`: `$FOO` is the variable FOO; `${F}` the variable F), `~user`,
    /// and a `$` before anything else; `$$` is one `$`. Fails (ConfigError naming the variable and the key)
    /// for an unset variable (or HOME for `~`) and for a `${` that does not close on a name.
    std::string expand(const std::string& key, const std::string& s) const {
        const auto starts_name = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
        const auto in_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
        const auto value_of = [&](const std::string& name) -> std::string {
            const char* v = std::getenv(name.c_str());
            if (!v)
                fail(key, "environment variable " + name + " is not set (in '" + printable(s) +
                              "'; $$ is a literal $)");
            return v;
        };
        std::string out;
        size_t i = 0;
        if (!s.empty() && s[0] == '~' && (s.size() == 1 || s[1] == '/')) {
            const char* home = std::getenv("HOME");
            if (!home || !*home) fail(key, "'" + printable(s) + "' starts with ~, and environment variable HOME is not set");
            out = home;
            i = 1;
        }
        while (i < s.size()) {
            if (s[i] != '$' || i + 1 == s.size()) {
                out += s[i++];
            } else if (s[i + 1] == '$') {
                out += '$';
                i += 2;
            } else if (s[i + 1] == '{') {
                const size_t close = s.find('}', i + 2);
                const std::string name = close == std::string::npos ? "" : s.substr(i + 2, close - i - 2);
                if (name.empty() || !starts_name(name[0]) || !std::all_of(name.begin(), name.end(), in_name))
                    fail(key, "'" + printable(s.substr(i, close == std::string::npos ? std::string::npos : close + 1 - i)) +
                                  "' in '" + printable(s) + "' is not ${NAME} (NAME: letters, digits and _, not "
                                  "starting with a digit; $$ is a literal $)");
                out += value_of(name);
                i = close + 1;
            } else if (starts_name(s[i + 1])) {
                size_t end = i + 1;
                while (end < s.size() && in_name(s[end])) ++end;
                if (s[i + 1] == 'F' && (i + 2 == s.size() || !in_name(s[i + 2]) ||
                                        std::isdigit(static_cast<unsigned char>(s[i + 2])))) {
                    out += "$F";   // the frame token ($F, $F4): its digits follow as they are
                    i += 2;
                } else {
                    out += value_of(s.substr(i + 1, end - i - 1));
                    i = end;
                }
            } else {
                out += s[i++];   // "$" before anything else ("$1", "$-") is itself
            }
        }
        return out;
    }
    /// A path resolved against the job file's folder (or the current folder for --set values), after expand().
    std::string path(const std::string& key) const {
        const std::string written = str(key);
        const std::string s = expand(key, written);
        if (s.empty()) fail(key, written.empty() ? "path is empty" : "path '" + printable(written) + "' is empty once expanded");
        // "D:\temp\new.####.exr" in double quotes is D:<TAB>emp<LF>ew...: YAML and TOML unescape \t and \n.
        const auto control = std::find_if(s.begin(), s.end(), [](unsigned char ch) { return ch < 0x20 || ch == 0x7f; });
        if (control != s.end())
            fail(key, "the path '" + printable(s) + "' holds a control character (" + printable(std::string(1, *control)) +
                      " at position " + std::to_string(control - s.begin() + 1) + ") after unescaping: in double quotes, "
                      "\\t, \\n and other backslash escapes are read as such. Write Windows paths in single quotes "
                      "('D:\\shots\\plate.####.exr' in YAML, 'D:\\shots\\...' or \"D:\\\\shots\\\\...\" in TOML) "
                      "or with forward slashes (D:/shots/plate.####.exr)");
        auto b = t_.base.find(key);
        const fs::path base = b != t_.base.end() ? fs::path(b->second) : fs::path(t_.base_dir);
        return resolve_user_path(base, s);
    }
    std::vector<int> pair(const std::string& key) const {
        YAML::Node n = node(key);
        if (!n.IsSequence() || n.size() != 2) fail(key, "expected [width, height]");
        std::vector<int> out;
        for (const auto& v : n) {
            if (!v.IsScalar()) fail(key, "expected [width, height] in integer pixels");
            out.push_back(integer_text(key, v.Scalar(), 1, 65536));
        }
        return out;
    }

private:
    const Tree& t_;
};

void check_keys(const Tree& tree) {
    for (const auto& section : tree.root) {
        const std::string name = section.first.Scalar();
        auto it = schema().find(name);
        if (it == schema().end()) {
            std::set<std::string> sections;
            for (const auto& kv : schema()) sections.insert(kv.first);
            throw ConfigError(tree.at(name) + ": unknown section '" + name + "' (allowed: " + join(sections) + ")");
        }
        if (!section.second.IsMap())
            throw ConfigError(tree.at(name) + ": section '" + name + "' must be a mapping of keys");
        for (const auto& kv : section.second) {
            const std::string key = name + "." + kv.first.Scalar();
            if (!it->second.count(kv.first.Scalar()))
                throw ConfigError(tree.at(key) + ": unknown key '" + key + "' (allowed in '" + name +
                                  "': " + join(it->second) + ")");
            const auto nested = nested_schema().find(key);
            if (nested != nested_schema().end() && kv.second.IsMap())
                for (const auto& inner : kv.second)
                    if (!nested->second.count(inner.first.Scalar()))
                        throw ConfigError(tree.at(key + "." + inner.first.Scalar()) + ": unknown key '" + key + "." +
                                          inner.first.Scalar() + "' (allowed in '" + key + "': " +
                                          join(nested->second) + ")");
        }
    }
}

ProcessingSize read_size(const Reader& r) {
    ProcessingSize size;
    if (!r.has("model.size")) return size;
    YAML::Node n = r.node("model.size");
    if (n.IsSequence()) {
        auto wh = r.pair("model.size");
        size.mode = ProcessingSize::Mode::Explicit;
        size.width_px = wh[0];
        size.height_px = wh[1];
        return size;
    }
    const std::string s = r.str("model.size");
    if (s == "model") return size;
    if (s == "plate") {
        size.mode = ProcessingSize::Mode::Plate;
        return size;
    }
    size.mode = ProcessingSize::Mode::ShortSide;
    size.short_side_px = r.integer("model.size", 1, 65536);
    return size;
}

/// input.*: the plate: path pattern, frames, colorspace, part/view.
void read_input(const Reader& r, JobConfig& job) {
    if (!r.has("input.path")) r.fail("input.path", "is required (the plate's path pattern, e.g. plate.####.exr)");
    job.input.path = r.path("input.path");
    try {
        FrameSequence check(job.input.path);
    } catch (const ConfigError& e) {
        r.fail("input.path", e.what());
    }
    if (r.has("input.frames")) {
        const std::string spec = r.str("input.frames");
        try {
            job.input.frames = parse_frame_spec(spec);
        } catch (const ConfigError& e) {
            r.fail("input.frames", e.what());
        }
    }
    job.input.colorspace = r.str("input.colorspace", job.input.colorspace);
    job.input.part = r.str("input.part", job.input.part);
    job.input.view = r.str("input.view", job.input.view);
    job.input.layer = r.str("input.layer", job.input.layer);
    if (r.has("input.pixel_aspect")) {
        const std::string s = r.str("input.pixel_aspect");
        if (s == "ignore") job.input.pixel_aspect = 1.0;
        else if (s != "auto") {
            job.input.pixel_aspect = r.number("input.pixel_aspect");
            if (!(*job.input.pixel_aspect > 0))
                r.fail("input.pixel_aspect", "expected auto, ignore or a pixel aspect > 0 (2 for a 2:1 anamorphic plate)");
        }
    }
}

/// output.*: where and how frames are written (needs input.path, to refuse writing over the plate).
void read_output(const Reader& r, JobConfig& job) {
    if (!r.has("output.path")) r.fail("output.path", "is required (e.g. depth/shot_depth.####.exr)");
    job.output.path = r.path("output.path");
    try {
        FrameSequence check(job.output.path);
    } catch (const ConfigError& e) {
        r.fail("output.path", e.what());
    }
    if (fs::path(job.output.path).extension() != ".exr")
        r.fail("output.path", "depthbatch writes OpenEXR: the pattern must end in .exr");
    if (FrameSequence(job.output.path).path(1) == FrameSequence(job.input.path).path(1))
        r.fail("output.path", "is the same as input.path: refusing to overwrite the plate");
    r.option("output.overwrite", job.output.overwrite);
    r.option("output.compression", job.output.compression);
    if (r.has("output.zip_level")) {
        job.output.zip_level = r.integer("output.zip_level", 1, 9);
        if (job.output.compression != Compression::Zip && job.output.compression != Compression::Zips)
            r.fail("output.zip_level", std::string("applies to zip and zips compression, not ") + option_name(job.output.compression));
    }
    r.option("output.channels", job.output.channels);
    r.option("output.existing_depth", job.output.existing_depth);
    r.option("output.pixel_type", job.output.pixel_type);
    // output.preview: a path, or {path, colormap, size}.
    if (r.has("output.preview")) {
        if (r.node("output.preview").IsScalar()) {
            job.output.preview.path = r.path("output.preview");
        } else {
            job.output.preview.path = r.path("output.preview.path");
            job.output.preview.colormap = r.choice("output.preview.colormap", {"turbo", "viridis", "inferno"}, "turbo");
            if (r.has("output.preview.size")) job.output.preview.size = r.integer("output.preview.size", 64, 16384);
        }
    }
}

/// model.*: the model file, device, processing size, contract overrides and backend options.
void read_model(const Reader& r, JobConfig& job) {
    if (r.has("model.path")) job.model.path = r.str("model.path") == "default" ? "default" : r.path("model.path");
    job.model.device = r.str("model.device", job.model.device);
    {
        const std::string& d = job.model.device;
        const bool ok = d == "auto" || d == "cpu" || d == "cuda" ||
                        (d.rfind("cuda:", 0) == 0 && d.size() > 5 &&
                         d.find_first_not_of("0123456789", 5) == std::string::npos);
        if (!ok) r.fail("model.device", "'" + d + "' is not auto, cpu, cuda or cuda:N");
    }
    job.model.size = read_size(r);
    ContractOverrides& c = job.model.contract;
    if (r.has("model.colorspace")) c.colorspace = r.str("model.colorspace");
    if (r.has("model.multiple")) c.multiple = r.integer("model.multiple", 1, 1024);
    if (r.has("model.kind")) {
        const std::string k = r.choice("model.kind", {"metric_depth", "relative_inverse_depth", "relative_depth"}, "");
        c.kind = parse_depth_kind(k);
    }
    if (r.has("model.units")) c.units = r.str("model.units");
    if (r.has("model.input_size")) {
        auto wh = r.pair("model.input_size");
        c.width_px = wh[0];
        c.height_px = wh[1];
    }
    if (r.has("model.fixed_size")) c.fixed_size = r.boolean("model.fixed_size");
    r.option("model.precision", job.model.precision);
    if (r.has("model.batch")) job.model.batch = r.integer("model.batch", 1, 256);
    if (r.has("model.warmup")) job.model.warmup = r.integer("model.warmup", 0, 100);
    if (r.has("model.freeze")) job.model.freeze = r.boolean("model.freeze");
    if (r.has("model.channels_last")) job.model.channels_last = r.boolean("model.channels_last");
    if (r.has("model.threads")) job.model.threads = r.integer("model.threads", 0, 1024);
    // model.tiles: a tile size, or {size, overlap}.
    if (r.has("model.tiles")) {
        auto& t = job.model.tiles;
        const bool nested = !r.node("model.tiles").IsScalar();
        const std::string size_key = nested ? "model.tiles.size" : "model.tiles";
        if (nested && !r.has(size_key)) r.fail("model.tiles", "needs size (the tile edge in plate pixels)");
        t.size = r.integer(size_key, 0, 65536);
        t.overlap = t.size / 4;
        if (nested && r.has("model.tiles.overlap")) t.overlap = r.integer("model.tiles.overlap", 0, 65536);
        if (t.size > 0 && t.size < 32) r.fail(size_key, "a tile is at least 32 plate pixels (0 = no tiles)");
        if (t.size > 0 && 2 * t.overlap >= t.size)
            r.fail(nested && r.has("model.tiles.overlap") ? "model.tiles.overlap" : size_key,
                   "the overlap (" + std::to_string(t.overlap) + " px) must be under half the tile size (" +
                       std::to_string(t.size) + " px)");
    }
}

/// color.*: OCIO config and the HDR rule.
void read_color(const Reader& r, JobConfig& job) {
    if (r.has("color.config")) job.color.config = r.path("color.config");
    r.option("color.hdr", job.color.hdr);
    job.color.display = r.str("color.display", job.color.display);
    job.color.view = r.str("color.view", job.color.view);
    job.color.look = r.str("color.look", job.color.look);
    if (job.color.hdr == HdrMode::View && (job.color.display.empty() || job.color.view.empty()))
        r.fail("color.hdr", "'view' needs color.display and color.view (e.g. 'sRGB - Display' / 'ACES 1.0 - SDR Video')");
}

/// depth.*: the written convention, its range and stabilization (checked against each other).
void read_depth(const Reader& r, JobConfig& job) {
    JobConfig::Depth& d = job.depth;
    r.option("depth.normalize", d.normalize);
    // A normalization without a kind means a normalized pass.
    if (d.normalize != Normalization::Raw) d.kind = DepthConvention::Normalized;
    r.option("depth.kind", d.kind);
    if (r.has("depth.near_is")) {
        d.near_is = r.integer("depth.near_is", 0, 1);
    }
    if (r.has("depth.near")) d.near = r.number("depth.near");
    if (r.has("depth.far")) d.far = r.number("depth.far");
    if (d.near.has_value() != d.far.has_value()) r.fail(d.near ? "depth.near" : "depth.far", "depth.near and depth.far go together");
    if (d.near && *d.near == *d.far) r.fail("depth.near", "must differ from depth.far");
    if (r.has("depth.percentiles")) {
        YAML::Node n = r.node("depth.percentiles");
        bool ok = n.IsSequence() && n.size() == 2;
        try {
            if (ok) {
                d.percentile_low = n[0].as<double>();
                d.percentile_high = n[1].as<double>();
            }
        } catch (const YAML::Exception&) {
            ok = false;
        }
        if (!ok || !(0 <= d.percentile_low && d.percentile_low < d.percentile_high && d.percentile_high <= 100))
            r.fail("depth.percentiles", "expected [low, high] with 0 <= low < high <= 100");
    }
    if (r.has("depth.stats_frames")) d.stats_frames = r.integer("depth.stats_frames", 1, 100000);
    if (r.has("depth.stats_file")) d.stats_file = r.path("depth.stats_file");
    if (r.has("depth.stabilize")) d.stabilize = r.boolean("depth.stabilize");
    if (r.has("depth.stabilize_window")) d.stabilize_window = r.integer("depth.stabilize_window", 1, 256);
    if (r.has("depth.focal_px")) {
        d.focal_px = r.number("depth.focal_px");
        if (!(*d.focal_px > 0)) r.fail("depth.focal_px", "must be > 0 (pixels)");
    }
    r.option("depth.upsample", d.upsample.method);
    if (r.has("depth.guided_radius")) {
        d.upsample.radius_px = r.number("depth.guided_radius");
        if (!(d.upsample.radius_px >= 0 && d.upsample.radius_px <= 1024))
            r.fail("depth.guided_radius", "expected a radius in plate pixels from 0 (two model pixels) to 1024");
    }
    if (r.has("depth.guided_epsilon")) {
        d.upsample.epsilon = r.number("depth.guided_epsilon");
        if (!(d.upsample.epsilon > 0 && d.upsample.epsilon <= 1))
            r.fail("depth.guided_epsilon", "expected a value > 0 and <= 1 (squared luma, e.g. 1e-4)");
    }
    if (r.has("depth.edge_threshold")) {
        d.upsample.edge_threshold = r.number("depth.edge_threshold");
        if (!(d.upsample.edge_threshold > 0 && d.upsample.edge_threshold <= 1))
            r.fail("depth.edge_threshold", "expected a fraction of the depth range, > 0 and <= 1 (e.g. 0.05)");
    }
    if (d.normalize == Normalization::Fixed && !d.near) r.fail("depth.normalize", "'fixed' needs depth.near and depth.far");
    if (d.kind == DepthConvention::Normalized && d.normalize == Normalization::Raw)
        r.fail("depth.kind", "'normalized' needs depth.normalize: frame, sequence or fixed");
    if ((d.kind == DepthConvention::Raw || d.kind == DepthConvention::Inverse) && d.normalize != Normalization::Raw)
        r.fail("depth.normalize", std::string("'") + option_name(d.normalize) + "' applies to depth.kind normalized "
               "(or metric from a relative model); depth.kind is '" + option_name(d.kind) + "'");
}

/// pipeline.*: threads, frames in flight, the JSON report.
void read_pipeline(const Reader& r, JobConfig& job) {
    if (r.has("pipeline.frames_in_flight")) job.pipeline.frames_in_flight = r.integer("pipeline.frames_in_flight", 1, 4096);
    if (r.has("pipeline.threads")) job.pipeline.threads = r.integer("pipeline.threads", 0, 1024);
    if (r.has("pipeline.report") && r.has("pipeline.summary"))
        r.fail("pipeline.report", "is the older name of pipeline.summary: set one of them");
    if (r.has("pipeline.report")) job.pipeline.summary = r.path("pipeline.report");
    if (r.has("pipeline.summary")) job.pipeline.summary = r.path("pipeline.summary");
    r.option("pipeline.on_error", job.pipeline.on_error);
    if (r.has("pipeline.review")) job.pipeline.review = r.path("pipeline.review");
    if (r.has("pipeline.grace_s")) {
        job.pipeline.grace_s = r.number("pipeline.grace_s");
        if (!(job.pipeline.grace_s >= 0 && job.pipeline.grace_s <= 3600))
            r.fail("pipeline.grace_s", "must be between 0 and 3600 seconds");
    }
}

JobConfig build(const Tree& tree) {
    check_keys(tree);
    Reader r(tree);
    JobConfig job;   // the defaults: JobConfig's member initialisers; each section overrides what the job states
    job.job_file = tree.origin;
    read_input(r, job);
    read_output(r, job);
    read_model(r, job);
    read_color(r, job);
    read_depth(r, job);
    read_pipeline(r, job);
    return job;
}

}  // namespace

const char* option_name(OverwritePolicy v) { return name_of(v); }
const char* option_name(Compression v) { return name_of(v); }
const char* option_name(OutputChannels v) { return name_of(v); }
const char* option_name(ExistingDepth v) { return name_of(v); }
const char* option_name(PassthroughType v) { return name_of(v); }
const char* option_name(Precision v) { return name_of(v); }
const char* option_name(HdrMode v) { return name_of(v); }
const char* option_name(DepthConvention v) { return name_of(v); }
const char* option_name(Normalization v) { return name_of(v); }
const char* option_name(OnError v) { return name_of(v); }
const char* option_name(DepthUpsample v) { return name_of(v); }

std::vector<int> select_render_frames(const JobConfig::RenderSelection& render, const std::vector<int>& shot) {
    std::vector<int> frames = render.frames.empty() ? shot : render.frames;
    if (render.range) frames = frames_in_range(frames, render.range->first, render.range->second);
    if (render.chunk_count > 0) frames = chunk_frames(frames, render.chunk_index, render.chunk_count);
    return frames;
}

std::string output_settings_text(const JobConfig& job) {
    std::ostringstream s;
    s.precision(17);
    const auto& i = job.input;
    const auto& o = job.output;
    const auto& m = job.model;
    const auto& c = job.color;
    const auto& d = job.depth;
    const auto opt = [](const std::optional<double>& v) {
        std::ostringstream t;
        t.precision(17);
        if (v) t << *v; else t << "-";
        return t.str();
    };
    s << "input.path=" << i.path << "\ninput.colorspace=" << i.colorspace << "\ninput.part=" << i.part
      << "\ninput.view=" << i.view << "\ninput.layer=" << i.layer << "\ninput.pixel_aspect=" << opt(i.pixel_aspect) << "\n";
    // The shot's frames change the sequence statistics and the frames stabilization sees.
    if (d.normalize == Normalization::Sequence || d.stabilize) s << "input.frames=" << format_frame_spec(i.frames) << "\n";
    s << "output.compression=" << option_name(o.compression) << "\noutput.zip_level=" << o.zip_level << "\noutput.channels=" << option_name(o.channels)
      << "\noutput.existing_depth=" << option_name(o.existing_depth) << "\noutput.pixel_type=" << option_name(o.pixel_type)
      << "\nmodel.path=" << m.path << "\nmodel.size=" << static_cast<int>(m.size.mode) << "," << m.size.short_side_px << ","
      << m.size.width_px << "," << m.size.height_px << "\nmodel.contract=" << m.contract.colorspace.value_or("-") << "," << m.contract.multiple.value_or(0) << ","
      << (m.contract.kind ? depth_kind_name(*m.contract.kind) : "-") << "," << m.contract.units.value_or("-") << ","
      << m.contract.width_px.value_or(0) << "," << m.contract.height_px.value_or(0) << ","
      << (m.contract.fixed_size ? (*m.contract.fixed_size ? "fixed" : "any") : "-") << "\n"
      << "model.tiles=" << m.tiles.size << "," << m.tiles.overlap << "\n"
      << "color.config=" << c.config << "\ncolor.hdr=" << option_name(c.hdr) << "\ncolor.display=" << c.display
      << "\ncolor.view=" << c.view << "\ncolor.look=" << c.look << "\n"
      << "depth.kind=" << option_name(d.kind) << "\ndepth.normalize=" << option_name(d.normalize)
      << "\ndepth.near_is=" << d.near_is << "\ndepth.near=" << opt(d.near)
      << "\ndepth.far=" << opt(d.far) << "\ndepth.percentiles=" << d.percentile_low << ","
      << d.percentile_high << "\ndepth.stats_frames=" << d.stats_frames << "\ndepth.stabilize=" << (d.stabilize ? "centred" : "0")
      << "\ndepth.stabilize_window=" << d.stabilize_window
      << "\ndepth.focal_px=" << opt(d.focal_px) << "\ndepth.upsample=" << option_name(d.upsample.method) << ","
      << d.upsample.radius_px << "," << d.upsample.epsilon << "," << d.upsample.edge_threshold << "\n";
    return s.str();
}

JobConfig parse_job(const std::string& text, const std::string& format, const std::string& origin,
                    const std::string& base_dir, const std::vector<std::string>& overrides) {
    Tree tree = parse_tree(text, format, origin, base_dir);
    for (const auto& o : overrides) apply_override(tree, o);
    return build(tree);
}

JobConfig load_job(const std::string& job_path, const std::vector<std::string>& overrides) {
    const fs::path p(job_path);
    std::string format;
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (ext == ".yaml" || ext == ".yml") format = "yaml";
    else if (ext == ".toml") format = "toml";
    else throw ConfigError(job_path + ": job files end in .yaml, .yml or .toml");
    // What the name leads to is checked before it is opened: opening a FIFO waits for a writer, and a device
    // (/dev/zero) or a huge file never ends; a job is a small regular file, read no further than kMaxJobBytes.
    constexpr std::uintmax_t kMaxJobBytes = 4u << 20;
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (!fs::exists(st)) throw ConfigError(job_path + ": job file not found");
    if (fs::is_directory(st)) throw ConfigError(job_path + ": is a directory, not a job file");
    if (!fs::is_regular_file(st))
        throw ConfigError(job_path + ": not a job file (" +
                          (fs::is_fifo(st)              ? "a FIFO (named pipe)"
                           : fs::is_character_file(st) ? "a character device"
                           : fs::is_block_file(st)     ? "a block device"
                           : fs::is_socket(st)         ? "a socket"
                                                       : "not a regular file") + ")");
    const auto too_big = [&](const std::string& size) {
        return ConfigError(job_path + ": not a job file (" + size + "; a job file is at most 4 MiB of text)");
    };
    if (const std::uintmax_t size = fs::file_size(p, ec); !ec && size > kMaxJobBytes)
        throw too_big(std::to_string(size) + " bytes");
    std::ifstream in(p, std::ios::binary);
    if (!in) throw ConfigError(job_path + ": cannot open the job file (" + std::strerror(errno) + ")");
    std::string text;
    char chunk[65536];
    while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {   // bounded: the file may grow as it is read
        text.append(chunk, static_cast<size_t>(in.gcount()));
        if (text.size() > kMaxJobBytes) throw too_big("over 4 MiB");
    }
    if (in.bad()) throw ConfigError(job_path + ": cannot read the job file");
    const fs::path base = fs::absolute(p).parent_path();
    return parse_job(text, format, job_path, base.string(), overrides);
}

}  // namespace depthbatch
