// libFuzzer target: the job parser (YAML and TOML text, then --set overrides). Any exception other than
// ConfigError, any crash or sanitizer report is a bug: bad input must become a clear config error (exit 2).
// Input: byte 0 picks the format (even: YAML, odd: TOML); the rest up to the first NUL is the job text, and
// each NUL-separated piece after it is one --set override ("key.path=value"). scripts/fuzz builds and runs it.
#include "depthbatch/error.h"
#include "depthbatch/job_config.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const std::string format = data[0] % 2 ? "toml" : "yaml";
    const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
    std::vector<std::string> parts;
    for (size_t start = 0;;) {
        const size_t nul = rest.find('\0', start);
        parts.push_back(rest.substr(start, nul == std::string::npos ? std::string::npos : nul - start));
        if (nul == std::string::npos) break;
        start = nul + 1;
    }
    const std::vector<std::string> overrides(parts.begin() + 1, parts.end());
    try {
        depthbatch::parse_job(parts[0], format, "fuzz." + format, "/nonexistent/jobs", overrides);
    } catch (const depthbatch::ConfigError&) {
    }
    return 0;
}
