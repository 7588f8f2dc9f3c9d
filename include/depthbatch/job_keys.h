// depthbatch — every job key in one table (src/job_keys.cpp). From it come: the schema (the sections, keys and
// nested keys a job may hold, and what a bare scalar means for a key that holds keys), the settings
// fingerprint (output_settings_text: every key that changes what an output EXR holds, `key=value` in table
// order), the older spellings (both at once: ConfigError; a deprecated one: a warning naming the new key) and
// `depthbatch --help-job` (key, default, doc). Each row has two halves: its schema (JobKeySchema: names, docs,
// forms; what is derived from it alone lives in src/job_schema.cpp) and its fingerprint (JobKeyFingerprint: the
// line and the value, src/job_keys.cpp). How each value is read and checked against the others stays in
// job_config.cpp's read_* functions (cross-key rules need an order); a test checks that each of them is read.
#pragma once

#include "depthbatch/job_config.h"

#include <string>
#include <vector>

namespace depthbatch {

/// A key's schema: its name, what a user reads about it and the forms it takes. The schema a job is checked
/// against (src/job_schema.h: sections, nested keys, bare scalars), the older spellings, `--help-job` and
/// docs/jobs.md come from these fields alone (src/job_schema.cpp), never from a job's values.
struct JobKeySchema {
    const char* key = "";           ///< "depth.convention", or a nested key: "output.preview.path"
    const char* default_text = "";  ///< the default as a user reads it ("zip", "the frames on disk"; "" = none)
    const char* doc = "";           ///< one line: the values and what they do
    const char* example = "";       ///< a valid value other than the default, as YAML flow text ("piz", "[5, 95]")
    const char* scalar_form = "";   ///< a key that holds keys: the nested key a bare scalar sets ("path"); else ""
    const char* old_name_of = "";   ///< an older spelling: the key it stands for; else ""
    bool deprecated = false;        ///< old_name_of: using it logs a warning (once) naming the new key

    bool holds_keys() const { return *scalar_form != '\0'; }
};

/// A key's part in the settings fingerprint: which line its value is written on (or why it is on none) and
/// that value, from a parsed job (output_settings_text, stats_settings_text, job_settings_text).
struct JobKeyFingerprint {
    /// The fingerprint line this key's value is written in ("" = none). Keys sharing a line (model.contract,
    /// depth.upsample, model.tiles...) are written once, where the first of them stands in the table.
    const char* fingerprint = "";
    const char* not_pixels = "";  ///< fingerprint "": why the key does not change what an output EXR holds
    /// The value as the fingerprint writes it (a shared line's: all its keys), from the parsed job.
    std::string (*value)(const JobConfig&) = nullptr;
    /// nullptr: always on its fingerprint line; else the line is written only when this is true.
    bool (*fingerprint_if)(const JobConfig&) = nullptr;
    bool affects_stats = false;  ///< feeds the sequence statistics (stats_settings_text)

    bool affects_pixels() const { return *fingerprint != '\0'; }
};

/// One row of the key table: the key's schema and its fingerprint, side by side (src/job_keys.cpp).
struct JobKey : JobKeySchema, JobKeyFingerprint {};

/// The table, in fingerprint order (sections interleave only where the fingerprint needs it:
/// model.precision is its last line, as run_job wrote it before the table).
const std::vector<JobKey>& job_keys();

/// The row of `key` ("model.tiles.size"), nullptr when the table has none.
const JobKey* find_job_key(const std::string& key);

/// `depthbatch --help-job`: every key by section, with its default and doc; older names say the new one.
std::string job_keys_help();

/// The key table of docs/jobs.md, in table order: a Markdown table (key, default, fingerprint yes/—, doc; a
/// '|' in a cell escaped), one row per key. The docs test compares the page with it, so the page is generated.
std::string job_keys_markdown();

/// Every key of the table as `key=value` (shared fingerprint lines give all their keys' values), in table
/// order: two jobs that read the same give equal text (the YAML/TOML test; a readable dump of a job).
std::string job_settings_text(const JobConfig& job);

/// The keys marked affects_stats, `line=value` like the fingerprint: what the sequence statistics of a job
/// depend on among its settings (SequenceStats also keys on the model's sha256 and the plan it made).
std::string stats_settings_text(const JobConfig& job);

}  // namespace depthbatch
