// What the key table's schema half (job_keys.h JobKeySchema: names, docs, forms) gives, never reading a job's
// values: the schema a job is checked against (job_schema.h), find_job_key, --help-job and docs/jobs.md's table.
#include "job_schema.h"

#include "depthbatch/job_keys.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace depthbatch {

const JobKey* find_job_key(const std::string& key) {
    for (const JobKey& k : job_keys())
        if (key == k.key) return &k;
    return nullptr;
}

const std::map<std::string, std::set<std::string>>& job_sections() {
    static const auto sections = [] {
        std::map<std::string, std::set<std::string>> s;
        for (const JobKey& k : job_keys()) {
            const std::string key = k.key;
            const auto dot = key.find('.');
            if (key.find('.', dot + 1) == std::string::npos) s[key.substr(0, dot)].insert(key.substr(dot + 1));
        }
        return s;
    }();
    return sections;
}

const std::map<std::string, std::set<std::string>>& job_nested_keys() {
    static const auto nested = [] {
        std::map<std::string, std::set<std::string>> s;
        for (const JobKey& k : job_keys()) {
            const std::string key = k.key;
            const auto inner = key.find('.', key.find('.') + 1);
            if (inner != std::string::npos) s[key.substr(0, inner)].insert(key.substr(inner + 1));
        }
        return s;
    }();
    return nested;
}

const char* job_scalar_form(const std::string& key) {
    const JobKey* k = find_job_key(key);
    return k ? k->scalar_form : "";
}

std::string job_keys_help() {
    std::ostringstream s;
    s << "Job file keys (YAML or TOML, one schema; docs/jobs.md \"Job file\"). Nested keys (a.b.c) go in a mapping:\n"
         "output: {preview: {path: p.####.jpg, size: 480}}; a bare value sets the one named.\n"
         "* = not in the settings fingerprint (--skip-existing keeps outputs made with other values).\n";
    std::vector<std::string> sections;  // in the order the table first names them
    for (const JobKey& k : job_keys()) {
        const std::string key = k.key, section = key.substr(0, key.find('.'));
        if (std::find(sections.begin(), sections.end(), section) == sections.end()) sections.push_back(section);
    }
    for (const std::string& section : sections) {
        s << "\n" << section << ":\n";
        for (const JobKey& k : job_keys()) {
            const std::string key = k.key;
            if (key.compare(0, section.size() + 1, section + ".") != 0) continue;
            std::string doc = k.doc;
            if (k.holds_keys()) doc += " (a bare value is its " + std::string(k.scalar_form) + ")";
            if (*k.old_name_of) doc += k.deprecated ? " (deprecated: use " + std::string(k.old_name_of) + ")" : "";
            if (std::string(k.default_text) == "(required)") doc += "; required";
            else if (*k.default_text) doc += std::string("; default: ") + k.default_text;
            s << "  " << (k.affects_pixels() ? " " : "*") << std::left << std::setw(26) << key << " " << doc << "\n";
        }
    }
    return s.str();
}

std::string job_keys_markdown() {
    const auto cell = [](std::string text) {  // a Markdown table cell: '|' would end it
        std::string out;
        for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
        return out;
    };
    std::ostringstream s;
    s << "| key | default | fingerprint | what |\n|---|---|---|---|\n";
    for (const JobKey& k : job_keys()) {
        std::string def = k.default_text;
        if (def == "(required)") def = "required";
        std::string doc = k.doc;
        if (k.holds_keys()) doc += " (a bare value is its " + std::string(k.scalar_form) + ")";
        if (k.deprecated) doc += " (deprecated: use " + std::string(k.old_name_of) + ")";
        s << "| `" << k.key << "` | " << cell(def) << " | " << (k.affects_pixels() ? "yes" : "\xe2\x80\x94") << " | "
          << cell(doc) << " |\n";
    }
    return s.str();
}

}  // namespace depthbatch
