// Typed, located access to a job's tree (job_reader.h): every failure names file:line and key.
#include "job_reader.h"

#include "job_schema.h"

#include "depthbatch/error.h"
#include "depthbatch/install_layout.h"
#include "depthbatch/log.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;

namespace depthbatch {
namespace job_text {

void Reader::fail(const std::string& key, const std::string& what) const {
    throw ConfigError(t_.at(key) + ": key '" + key + "': " + what);
}

YAML::Node Reader::node(const std::string& key) const {
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

std::string Reader::sub(const std::string& key, const std::string& nested) const {
    return node(key).IsScalar() && nested == job_scalar_form(key) ? key : key + "." + nested;
}

bool Reader::has(const std::string& key) const {
    YAML::Node n = node(key);
    return n && !n.IsNull();
}

std::string Reader::str(const std::string& key) const {
    YAML::Node n = node(key);
    if (n && n.IsNull()) {  // written null (or --set KEY=null) where a value is needed
        const auto dot = key.rfind('.');
        const std::string holder = dot == std::string::npos ? std::string() : key.substr(0, dot);
        fail(key, "is null, and a value is needed here" +
                      (job_nested_keys().count(holder)
                           ? "; to leave out '" + holder + "' as a whole, unset it (--set " + holder + "=null)"
                           : std::string()));
    }
    if (!n.IsScalar()) fail(key, "expected a single value (a string)");
    return n.Scalar();
}

std::string Reader::str(const std::string& key, const std::string& fallback) const {
    return has(key) ? str(key) : fallback;
}

int Reader::integer_text(const std::string& key, const std::string& s, long lo, long hi) const {
    const bool digits = !s.empty() &&
                        s.find_first_not_of("0123456789", s[0] == '-' || s[0] == '+' ? 1 : 0) == std::string::npos &&
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

double Reader::number(const std::string& key) const {
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

bool Reader::boolean(const std::string& key) const {
    // The YAML spellings users write: YAML 1.2's core schema (true, True, TRUE) and YAML 1.1's yes/on, each in the
    // three cases the 1.1 type repository lists (yes, Yes, YES); TOML's true/false arrive as "true"/"false".
    const std::string s = str(key);
    static const std::set<std::string> yes = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
    static const std::set<std::string> no = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
    if (yes.count(s)) return true;
    if (no.count(s)) return false;
    fail(key, "expected true or false, got '" + s + "'");
}

std::string Reader::choice(const std::string& key, const std::set<std::string>& allowed,
                           const std::string& fallback) const {
    if (!has(key)) return fallback;
    const std::string s = str(key);
    if (!allowed.count(s)) fail(key, "'" + s + "' is not one of: " + job_text::join(allowed));
    return s;
}

std::string Reader::expand(const std::string& key, const std::string& s) const {
    const auto starts_name = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
    const auto in_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    const auto value_of = [&](const std::string& name) -> std::string {
        const char* v = std::getenv(name.c_str());
        if (!v)
            fail(key, "environment variable " + name + " is not set (in '" + printable(s) + "'; $$ is a literal $)");
        return v;
    };
    std::string out;
    size_t i = 0;
    if (!s.empty() && s[0] == '~' && (s.size() == 1 || s[1] == '/')) {
        const char* home = std::getenv("HOME");
        if (!home || !*home)
            fail(key, "'" + printable(s) + "' starts with ~, and environment variable HOME is not set");
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
                              "' in '" + printable(s) +
                              "' is not ${NAME} (NAME: letters, digits and _, not "
                              "starting with a digit; $$ is a literal $)");
            out += value_of(name);
            i = close + 1;
        } else if (starts_name(s[i + 1])) {
            size_t end = i + 1;
            while (end < s.size() && in_name(s[end])) ++end;
            if (s[i + 1] == 'F' &&
                (i + 2 == s.size() || !in_name(s[i + 2]) || std::isdigit(static_cast<unsigned char>(s[i + 2])))) {
                out += "$F";  // the frame token ($F, $F4): its digits follow as they are
                i += 2;
            } else {
                out += value_of(s.substr(i + 1, end - i - 1));
                i = end;
            }
        } else {
            out += s[i++];  // "$" before anything else ("$1", "$-") is itself
        }
    }
    return out;
}

std::string Reader::path(const std::string& key) const {
    const std::string written = str(key);
    const std::string s = t_.literal.count(key) ? written : expand(key, written);
    if (s.empty())
        fail(key, written.empty() ? "path is empty" : "path '" + printable(written) + "' is empty once expanded");
    // "D:\temp\new.####.exr" in double quotes is D:<TAB>emp<LF>ew...: YAML and TOML unescape \t and \n.
    const auto control = std::find_if(s.begin(), s.end(), [](unsigned char ch) { return ch < 0x20 || ch == 0x7f; });
    if (control != s.end())
        fail(key, "the path '" + printable(s) + "' holds a control character (" + printable(std::string(1, *control)) +
                      " at position " + std::to_string(control - s.begin() + 1) +
                      ") after unescaping: in double quotes, "
                      "\\t, \\n and other backslash escapes are read as such. Write Windows paths in single quotes "
                      "('D:\\shots\\plate.####.exr' in YAML, 'D:\\shots\\...' or \"D:\\\\shots\\\\...\" in TOML) "
                      "or with forward slashes (D:/shots/plate.####.exr)");
    auto b = t_.base.find(key);
    const fs::path base = b != t_.base.end() ? fs::path(b->second) : fs::path(t_.base_dir);
    return resolve_user_path(base, s);
}

std::vector<int> Reader::pair(const std::string& key) const {
    YAML::Node n = node(key);
    if (!n.IsSequence() || n.size() != 2) fail(key, "expected [width, height]");
    std::vector<int> out;
    for (const auto& v : n) {
        if (!v.IsScalar()) fail(key, "expected [width, height] in integer pixels");
        out.push_back(integer_text(key, v.Scalar(), 1, 65536));
    }
    return out;
}

}  // namespace job_text
}  // namespace depthbatch
