// The job's text: YAML/TOML -> one located tree, the TOML byte check, --set overrides (job_text.h).
#include "job_text.h"

#include "job_schema.h"

#include "depthbatch/error.h"
#include "depthbatch/log.h"

#include <toml++/toml.h>

#include <cstdio>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cstdint>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace fs = std::filesystem;

namespace depthbatch::job_text {
namespace {

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
    if (!key.empty()) tree.where[key] = tree.origin + ":" + std::to_string(node.source().begin.line);
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

}  // namespace

/// TOML allows characters beyond ASCII only inside strings and comments. toml++ 3.x reaches
/// TOML_UNREACHABLE (undefined behaviour in a release build) on some of them (a stray 'é' after a key; `\ÿ` in a
/// multi-line string: is_non_ascii_horizontal_whitespace, U+00A1..U+03F9; found by scripts/fuzz). So toml++ is
/// never handed a byte beyond ASCII: in strings they become \uXXXX escapes (a literal string holding one becomes
/// the basic string of the same value), in comments '?'; elsewhere, and after a backslash, they are refused.
std::string toml_as_ascii(const std::string& text, const std::string& origin) {
    enum class In { Code, Comment, Basic, Literal, MultiBasic, MultiLiteral } in = In::Code;
    int line = 1;
    std::string out;
    out.reserve(text.size() + 16);
    // A quote opens a string only where TOML allows one (line start, after '=', '[', ',', '{' or '.'):
    // in `x =0"é"` toml++ reads a bare value, so the 'é' is outside any string.
    char last = '\n';
    const auto at = [&](size_t i, const char* s) { return text.compare(i, std::strlen(s), s) == 0; };
    const auto fail = [&](const std::string& what) {
        throw ConfigError(origin + ":" + std::to_string(line) + ": TOML syntax error: " + what);
    };
    const std::string not_utf8 = "a byte that is not UTF-8 (save the job as UTF-8)";
    // The UTF-8 character starting at byte i (>= 0x80) as an escape; i moves to its last byte.
    const auto escape = [&](size_t& i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        const int n = c >= 0xF0 && c < 0xF5 ? 3 : c >= 0xE0 && c < 0xF0 ? 2 : c >= 0xC2 && c < 0xE0 ? 1 : -1;
        if (n < 0 || i + n >= text.size()) fail(not_utf8);
        unsigned cp = c & (n == 1 ? 0x1F : n == 2 ? 0x0F : 0x07);
        for (int k = 1; k <= n; ++k) {
            const unsigned char cc = static_cast<unsigned char>(text[i + k]);
            if ((cc & 0xC0) != 0x80) fail(not_utf8);
            cp = cp << 6 | (cc & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            fail(not_utf8);
        char buf[16];
        if (cp <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04X", cp);
        else std::snprintf(buf, sizeof buf, "\\U%08X", cp);
        out += buf;
        i += n;
    };
    // A literal string from i (its opening quote): one past its closing quote(s), npos when unterminated;
    // `wide`: whether it holds a byte beyond ASCII.
    const auto literal_end = [&](size_t i, bool multi, bool& wide) {
        wide = false;
        for (size_t j = i + (multi ? 3 : 1); j < text.size(); ++j) {
            if (multi ? at(j, "'''") : text[j] == '\'') return j + (multi ? 3 : 1);
            if (!multi && text[j] == '\n') return std::string::npos;
            if (static_cast<unsigned char>(text[j]) >= 0x80) wide = true;
        }
        return std::string::npos;
    };
    for (size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        const bool wide = static_cast<unsigned char>(ch) >= 0x80;
        if (ch == '\n') {
            ++line;
            last = '\n';
            if (in != In::MultiBasic && in != In::MultiLiteral) in = In::Code;  // (unterminated: toml++ says so)
            out += ch;
            continue;
        }
        switch (in) {
        case In::Code: {
            const bool opens = last != '\0' && std::strchr("\n=[,{.", last) != nullptr;
            if (ch != ' ' && ch != '\t') last = ch;
            if (ch == '#') {
                in = In::Comment, out += ch;
            } else if (opens && at(i, "\"\"\"")) {
                in = In::MultiBasic, out += "\"\"\"", i += 2;
            } else if (opens && ch == '\'') {
                const bool multi = at(i, "'''");
                bool has_wide = false;
                const size_t end = literal_end(i, multi, has_wide);
                if (end == std::string::npos && has_wide)  // toml++ would read on past it as code
                    fail(std::string("a literal string without its closing quote") +
                         (multi ? " (''')" : " (') on its line"));
                if (end == std::string::npos || !has_wide) {  // copied as written
                    in = multi ? In::MultiLiteral : In::Literal;
                    out += multi ? "'''" : "'";
                    i += multi ? 2 : 0;
                    break;
                }
                // The same value as a basic string: backslash and quote escaped, wide characters as escapes.
                const char* quote = multi ? "\"\"\"" : "\"";
                out += quote;
                for (size_t j = i + (multi ? 3 : 1); j < end - (multi ? 3 : 1); ++j) {
                    const char c = text[j];
                    if (c == '\n') ++line, out += c;
                    else if (c == '\\') out += "\\\\";
                    else if (c == '"') out += "\\\"";
                    else if (static_cast<unsigned char>(c) >= 0x80) escape(j);
                    else out += c;
                }
                out += quote;
                i = end - 1;
            } else if (opens && ch == '"') {
                in = In::Basic, out += ch;
            } else if (wide) {
                fail("a character beyond ASCII outside a string or comment (quote the value: path = 'plate.####.exr')");
            } else {
                out += ch;
            }
            break;
        }
        case In::Comment: out += wide ? '?' : ch; break;
        case In::Basic:
        case In::MultiBasic:
            if (ch == '\\') {
                if (i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80)
                    fail("a backslash before a character beyond ASCII is not an escape (write \\\\ for a backslash)");
                out += ch;
                if (i + 1 < text.size() && text[i + 1] != '\n') out += text[++i];  // (a newline: counted above)
            } else if (in == In::Basic && ch == '"') {
                in = In::Code, last = ch, out += ch;
            } else if (in == In::MultiBasic && at(i, "\"\"\"")) {
                in = In::Code, i += 2, last = '"', out += "\"\"\"";
            } else if (wide) {
                escape(i);
            } else {
                out += ch;
            }
            break;
        case In::Literal:
            if (ch == '\'') in = In::Code, last = ch;
            out += ch;
            break;
        case In::MultiLiteral:
            if (at(i, "'''")) in = In::Code, i += 2, last = '\'', out += "''";
            out += ch;
            break;
        }
    }
    // The promise above, whatever path a malformed text took through the states.
    for (size_t i = 0; i < out.size(); ++i)
        if (static_cast<unsigned char>(out[i]) >= 0x80) {
            line = 1 + static_cast<int>(std::count(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(i), '\n'));
            fail("a character beyond ASCII outside a string or comment (quote the value: path = 'plate.####.exr')");
        }
    return out;
}

namespace {

/// The 1-based number of the line holding byte `pos` of `text`.
int line_of(const std::string& text, size_t pos) {
    return 1 + static_cast<int>(
                   std::count(text.begin(), text.begin() + static_cast<long>(std::min(pos, text.size())), '\n'));
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
        const bool tab = l.find('\t') < content;  // (npos: a blank line, all of it indentation)
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
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {
        content = true;
    }
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
            return ConfigError(origin + ":" + std::to_string(tab) +
                               ": a tab character in the indentation; YAML "
                               "indents with spaces (YAML syntax error: " +
                               msg + ")");
        return ConfigError(origin + ":" + std::to_string(line) + ": YAML syntax error: " + msg);
    };
    try {
        std::istringstream in(text);
        YAML::Parser parser(in);
        DocumentProbe doc;
        std::optional<int> last_start;  // Mark::pos of the document before
        for (int index = 0; parser.HandleNextDocument(doc); ++index) {
            if (last_start && doc.start.pos == *last_start) {
                const size_t at = static_cast<size_t>(std::max(0, doc.start.pos));
                throw syntax_error(doc.start.line + 1,
                                   "unexpected '" + printable(text.substr(at, 1)) + "' (a ',' outside [ ] or { }?)");
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

}  // namespace

std::string join(const std::set<std::string>& keys) {
    std::string out;
    for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
    return out;
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
        const std::string ascii = toml_as_ascii(text, origin);
        try {
            toml::table table = toml::parse(ascii, origin);
            tree.root = toml_to_yaml(table, "", tree);
        } catch (const toml::parse_error& e) {
            throw ConfigError(origin + ":" + std::to_string(e.source().begin.line) +
                              ": TOML syntax error: " + std::string(e.description()));
        }
    } else {
        tree.root = load_yaml_document(text, origin);
        if (tree.root.IsNull()) tree.root = YAML::Node(YAML::NodeType::Map);
        if (!tree.root.IsMap())
            throw ConfigError(origin + ": a job file is a mapping of sections (input, output, ...)");
        record_yaml_marks(tree.root, "", tree);
    }
    return tree;
}

/// One --set "key=value" applied to the tree. The key is checked against the schema here, so an error about it
/// names the flag ("--set key=value: ..."), never the job file; the value is checked later by the Reader, which
/// finds "--set key=value" as the key's `where`.
void apply_override(Tree& tree, const std::string& assignment, const std::string& typed, bool literal) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) throw ConfigError("--set '" + assignment + "': expected key.path=value");
    const std::string key = assignment.substr(0, eq);
    const std::string value = assignment.substr(eq + 1);
    const auto dot = key.find('.');
    if (dot == std::string::npos)
        throw ConfigError("--set '" + assignment + "': key must be section.key (e.g. model.device)");
    const std::string flag = typed.empty() ? "--set " + assignment : typed;
    {
        const auto sec = job_sections().find(key.substr(0, dot));
        if (sec == job_sections().end()) {
            std::set<std::string> sections;
            for (const auto& kv : job_sections()) sections.insert(kv.first);
            throw ConfigError(flag + ": unknown section '" + key.substr(0, dot) + "' (allowed: " + join(sections) +
                              ")");
        }
        const auto inner = key.find('.', dot + 1);
        const std::string first = key.substr(0, inner);  // section.key
        if (!sec->second.count(first.substr(dot + 1)))
            throw ConfigError(flag + ": unknown key '" + first + "' (allowed in '" + sec->first +
                              "': " + join(sec->second) + ")");
        if (inner != std::string::npos) {
            const auto nested = job_nested_keys().find(first);
            if (nested == job_nested_keys().end())
                throw ConfigError(flag + ": '" + first + "' holds one value, not keys (--set " + first + "=VALUE)");
            if (!nested->second.count(key.substr(inner + 1)))
                throw ConfigError(flag + ": unknown key '" + key + "' (allowed in '" + first +
                                  "': " + join(nested->second) + ")");
        }
    }
    YAML::Node parsed;
    try {
        parsed = literal ? YAML::Node(value) : YAML::Load(value);
    } catch (const YAML::Exception&) {
        parsed = YAML::Node(value);
    }
    // A YAML null (`null`, `Null`, `NULL`, `~`) unsets the key, as the same word does in the job file (a TOML job
    // has no null: --set is the one way to unset its key); an empty value stays an empty string (the reader names
    // it), never a null: `--set key=$UNSET` must not silently fall back to the default.
    // (`#x` also loads as null: a comment; it stays the string written.)
    const bool yaml_null = !literal && (value == "null" || value == "Null" || value == "NULL" || value == "~");
    if (yaml_null) parsed = YAML::Node(YAML::NodeType::Null);
    else if (parsed.IsNull()) parsed = YAML::Node(value);
    const std::string section = key.substr(0, dot), leaf = key.substr(dot + 1);
    if (tree.root[section] && !tree.root[section].IsNull() && !tree.root[section].IsMap())  // the file's error
        throw ConfigError(tree.at(section) + ": section '" + section + "' must be a mapping of keys");
    if (!tree.root[section] || !tree.root[section].IsMap()) {
        tree.root[section] = YAML::Node(YAML::NodeType::Map);
        if (!tree.where.count(section)) tree.where[section] = flag;
    }
    YAML::Node sec = tree.root[section];
    if (const auto inner = leaf.find('.'); inner != std::string::npos) {  // output.preview.path=...
        const std::string outer = leaf.substr(0, inner);
        if (!sec[outer] || !sec[outer].IsMap()) {
            YAML::Node map(YAML::NodeType::Map);
            // A nested key's scalar form is its main key: "preview: p.jpg" is its path, "tiles: 1024" its size.
            if (sec[outer] && sec[outer].IsScalar()) map[job_scalar_form(section + "." + outer)] = sec[outer];
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
    if (literal) tree.literal.insert(key);
    else tree.literal.erase(key);  // a later --set of the key is YAML and a path in it expands, as in the file
}

std::string read_job_file(const std::string& job_path, std::string& format) {
    const fs::path p(job_path);
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
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
                          (fs::is_fifo(st)             ? "a FIFO (named pipe)"
                           : fs::is_character_file(st) ? "a character device"
                           : fs::is_block_file(st)     ? "a block device"
                           : fs::is_socket(st)         ? "a socket"
                                                       : "not a regular file") +
                          ")");
    const auto too_big = [&](const std::string& size) {
        return ConfigError(job_path + ": not a job file (" + size + "; a job file is at most 4 MiB of text)");
    };
    if (const std::uintmax_t size = fs::file_size(p, ec); !ec && size > kMaxJobBytes)
        throw too_big(std::to_string(size) + " bytes");
    std::ifstream in(p, std::ios::binary);
    if (!in) throw ConfigError(job_path + ": cannot open the job file (" + std::strerror(errno) + ")");
    std::string text;
    char chunk[65536];
    while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {  // bounded: the file may grow as it is read
        text.append(chunk, static_cast<size_t>(in.gcount()));
        if (text.size() > kMaxJobBytes) throw too_big("over 4 MiB");
    }
    if (in.bad()) throw ConfigError(job_path + ": cannot read the job file");
    return text;
}

}  // namespace depthbatch::job_text
