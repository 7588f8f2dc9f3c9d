// depthbatch — the job's text (internal to src/): a job file or string, YAML or TOML, becomes one located
// YAML tree (every key with the file:line it came from), and --set overrides are applied to it. What the keys
// mean, and which are allowed, is the key table's (job_keys.cpp, job_schema.h); reading the tree into a
// JobConfig is job_config.cpp's.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <string>

namespace depthbatch::job_text {

// A parsed job: one YAML tree whatever the file format, plus where each key came from.
struct Tree {
    YAML::Node root = YAML::Node(YAML::NodeType::Map);
    std::string origin;                        // the job file (or "<text>")
    std::string base_dir;                      // resolves relative paths from the file
    std::map<std::string, std::string> where;  // "model.batch" -> "job.yaml:12"
    std::map<std::string, std::string> base;   // key -> folder its relative paths resolve against
    std::set<std::string> literal;             // keys set by a flag (--output, --summary): taken as written

    std::string at(const std::string& key) const {
        auto it = where.find(key);
        return it != where.end() ? it->second : origin;
    }
};

/// "a, b, c": the allowed keys or sections in messages.
std::string join(const std::set<std::string>& keys);

/// `text` (UTF-8, a leading BOM dropped) in `format` ("yaml" or "toml") as a located tree. Throws ConfigError
/// naming origin:line for a syntax error, a NUL byte, a repeated key, a second YAML document, a TOML date, and
/// (TOML) a byte beyond ASCII outside a string or comment (toml_as_ascii).
Tree parse_tree(const std::string& text, const std::string& format, const std::string& origin,
                const std::string& base_dir);

/// `text` (TOML) with no byte beyond ASCII and the same values, for toml++ (3.x reaches undefined behaviour on
/// some of them): in basic strings such a character becomes an escape (backslash-u and 4 hex digits, or
/// backslash-U and 8); a literal string holding one becomes the basic string of the same value; in comments each
/// such byte becomes '?'. Throws ConfigError naming origin:line for one elsewhere (TOML allows them only in
/// strings and comments), for a backslash before one (not an escape), and for bytes that are not UTF-8. Keeps
/// line numbers.
std::string toml_as_ascii(const std::string& text, const std::string& origin);

/// One --set "key=value" applied to the tree (the key checked against the schema here, the value later).
/// Errors about it name `typed` (how the user wrote it, e.g. "--threads 8"), or "--set key=value" when empty.
/// `literal`: the value is a plain string (a flag's path), not parsed as YAML, and a path is taken as written
/// (no `~` or `$NAME` expansion: the shell that ran the command already expanded what it meant to).
void apply_override(Tree& tree, const std::string& assignment, const std::string& typed = "", bool literal = false);

/// The text of job file `job_path` and its format ("yaml" or "toml", from the extension in any case). Throws
/// ConfigError for a wrong extension, a missing file, a directory, a FIFO/device/socket (never opened), a file
/// over 4 MiB (never read whole) and a read failure.
std::string read_job_file(const std::string& job_path, std::string& format);

}  // namespace depthbatch::job_text
