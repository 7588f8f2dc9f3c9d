// depthbatch — the schema of a job as the key table's schema half gives it (job_keys.h JobKeySchema;
// job_schema.cpp), for the readers in src/ (job_text.cpp checks --set keys with it, job_config.cpp the tree).
// Internal to src/.
#pragma once

#include <map>
#include <set>
#include <string>

namespace depthbatch {

/// section -> its allowed keys ("output" -> {"path", "preview", ...}).
const std::map<std::string, std::set<std::string>>& job_sections();

/// A key that holds keys -> its allowed nested keys ("output.preview" -> {"colormap", "path", "size"}).
const std::map<std::string, std::set<std::string>>& job_nested_keys();

/// The nested key a bare scalar sets for `key` ("output.preview" -> "path", "model.tiles" -> "size"); "" for
/// a key that holds no keys.
const char* job_scalar_form(const std::string& key);

}  // namespace depthbatch
