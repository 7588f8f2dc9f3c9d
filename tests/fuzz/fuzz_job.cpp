// libFuzzer target: the job parser (YAML and TOML text, then --set overrides). Any exception other than
// ConfigError, any crash or sanitizer report is a bug: bad input must become a clear config error (exit 2).
// Input: byte 0 picks the format and how the text is presented; the rest up to the first NUL is the job text,
// and each NUL-separated piece after it is one --set override ("key.path=value"). Byte 0:
//   bit 0  TOML (else YAML)
//   bit 1  a UTF-8 byte order mark before the text
//   bit 2  the text is Latin-1: re-encoded to UTF-8 (bytes >= 0x80 become two), so valid multi-byte text
//   bit 3  the text saved as UTF-16LE with its BOM (NUL bytes in the text: "not a job file")
//   bit 4  each line's leading spaces become tabs (tab indentation)
//   bit 5  through load_job: written to a temporary file (.yaml / .TOML) and read back (file checks, reading)
// Without bit 2 the bytes go as they are: Latin-1 and invalid UTF-8 come from the seeds and mutations.
// Path keys expand $NAME / ${NAME} and ~: SHOW, SEQ, SHOT and HOME are set, anything else is unset.
// scripts/fuzz builds and runs it.
#include "depthbatch/error.h"
#include "depthbatch/job_config.h"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    ::setenv("SHOW", "/shows/abc", 1);
    ::setenv("SEQ", "sq010", 1);
    ::setenv("SHOT", "sh010", 1);
    ::setenv("HOME", "/home/fuzz", 1);
    return 0;
}

namespace {

std::string latin1_to_utf8(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (c < 0x80) {
            out += static_cast<char>(c);
        } else {
            out += static_cast<char>(0xC0 | (c >> 6));
            out += static_cast<char>(0x80 | (c & 0x3F));
        }
    }
    return out;
}

std::string utf16le(const std::string& s) {
    std::string out = "\xFF\xFE";
    for (char c : s) {
        out += c;
        out += '\0';
    }
    return out;
}

std::string tabs_for_indentation(const std::string& s) {
    std::string out;
    bool at_start = true;
    for (char c : s) {
        if (at_start && c == ' ') {
            out += '\t';
            continue;
        }
        at_start = c == '\n';
        out += c;
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const uint8_t mode = data[0];
    const std::string format = mode & 1 ? "toml" : "yaml";
    const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
    std::vector<std::string> parts;
    for (size_t start = 0;;) {
        const size_t nul = rest.find('\0', start);
        parts.push_back(rest.substr(start, nul == std::string::npos ? std::string::npos : nul - start));
        if (nul == std::string::npos) break;
        start = nul + 1;
    }
    std::string text = parts[0];
    if (mode & 4) text = latin1_to_utf8(text);
    if (mode & 16) text = tabs_for_indentation(text);
    if (mode & 2) text = "\xEF\xBB\xBF" + text;
    if (mode & 8) text = utf16le(text);
    const std::vector<std::string> overrides(parts.begin() + 1, parts.end());
    try {
        if (mode & 32) {
            const std::string path = "/tmp/fuzz_job." + std::to_string(::getpid()) + (mode & 1 ? ".TOML" : ".yaml");
            {
                std::ofstream out(path, std::ios::binary | std::ios::trunc);
                out << text;
            }
            depthbatch::load_job(path, overrides);
        } else {
            depthbatch::parse_job(text, format, "fuzz." + format, "/nonexistent/jobs", overrides);
        }
    } catch (const depthbatch::ConfigError&) {}
    return 0;
}
