// depthbatch — reading a job's located tree (job_text.h), for job_config.cpp: typed access that names file:line and
// key in every failure, path expansion, and parsing the closed option sets by their spellings (option_names(), declared beside
// each enum). Internal to src/.
#pragma once

#include "job_text.h"

#include "depthbatch/job_config.h"

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace depthbatch {
namespace job_text {

// Typed, located access to the tree; every failure names file:line and key.
class Reader {
public:
    explicit Reader(const job_text::Tree& t) : t_(t) {}

    std::string where(const std::string& key) const { return t_.at(key); }
    [[noreturn]] void fail(const std::string& key, const std::string& what) const;
    YAML::Node node(const std::string& key) const;
    /// The key that holds `nested` of `key` (a key holding keys, job_keys.h): `key` itself when the job gives
    /// it as a bare scalar and `nested` is its scalar form ("output.preview: p.jpg" is output.preview.path).
    std::string sub(const std::string& key, const std::string& nested) const;
    bool has(const std::string& key) const;
    std::string str(const std::string& key) const;
    std::string str(const std::string& key, const std::string& fallback) const;
    int integer(const std::string& key, long lo, long hi) const { return integer_text(key, str(key), lo, hi); }
    /// `s` as the decimal number written: "010" is 10 (yaml-cpp's as<int> would read it as octal 8, and
    /// "08" not at all; artists pad numbers to line them up with frame names). Anything else is an error.
    int integer_text(const std::string& key, const std::string& s, long lo, long hi) const;
    double number(const std::string& key) const;
    bool boolean(const std::string& key) const;
    std::string choice(const std::string& key, const std::set<std::string>& allowed, const std::string& fallback) const;
    /// A closed option set: `value` is left as it is (the default) when the job does not set `key`.
    template <class E> void option(const std::string& key, E& value) const {
        if (!has(key)) return;
        const std::string s = str(key);
        std::set<std::string> allowed;
        for (const auto& [v, name] : option_names(E{})) {
            if (s == name) {
                value = v;
                return;
            }
            allowed.insert(name);
        }
        fail(key, "'" + s + "' is not one of: " + job_text::join(allowed));
    }
    /// `s` (the value of path key `key`) with a leading `~` (alone or before '/') replaced by $HOME and every
    /// `$NAME` / `${NAME}` (NAME = [A-Za-z_][A-Za-z0-9_]*) by that environment variable, in one pass (a value
    /// is not expanded again). Kept as written: the frame token `$F` followed by digits or by a character that
    /// cannot continue a name (`$F4`, `$F.exr`: `$FOO` is the variable FOO; `${F}` the variable F), `~user`,
    /// and a `$` before anything else; `$$` is one `$`. Fails (ConfigError naming the variable and the key)
    /// for an unset variable (or HOME for `~`) and for a `${` that does not close on a name.
    std::string expand(const std::string& key, const std::string& s) const;
    /// A path resolved against the job file's folder (or the current folder for --set values), after expand();
    /// a flag's value (--output, --summary: Tree::literal) is taken as written, never expanded.
    std::string path(const std::string& key) const;
    std::vector<int> pair(const std::string& key) const;

private:
    const job_text::Tree& t_;
};

}  // namespace job_text
}  // namespace depthbatch
