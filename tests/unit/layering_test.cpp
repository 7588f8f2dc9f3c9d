// The layers of the code, kept by reading its #include lines (issue 42 §8; docs/code-map.md "Layers").
//
//   job layer       the job file and a run of it: include/depthbatch/{job_config,job_keys,job_flags,run_job,
//                   run_report,farm_submit,farm_command,review,progress,depthbatch}.h and src/ outside the modules
//   concept layer   every other public header: one concept each (a plate, a colour transform, a model ...); none
//                   knows the job (JobConfig), directly or through another header
//   modules         src/output/ (writing files) and src/frames/ (what needs more than one frame): below the job;
//                   none includes the job's context (src/job_context.h), config or outputs (src/job_outputs.h)
// Public headers are the API: they include only public headers and the standard and third-party libraries, and
// name no type declared only under src/. Every header and source is on docs/code-map.md.
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using depthbatch::test::read_bytes;
const fs::path kSource = DEPTHBATCH_SOURCE_DIR;

/// The project headers a file includes with #include "...", as written.
std::vector<std::string> project_includes(const fs::path& file) {
    static const std::regex include(R"re(^\s*#\s*include\s*"([^"]+)")re");
    std::vector<std::string> out;
    std::istringstream lines(read_bytes(file));
    for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (std::regex_search(line, m, include)) out.push_back(m[1]);
    }
    return out;
}

/// The file an include of `name` written in `from` resolves to, as the build resolves it (the including file's
/// folder, then src/, then include/); empty when it is not the project's.
fs::path resolve(const fs::path& from, const std::string& name) {
    for (const fs::path& dir : {from.parent_path(), kSource / "src", kSource / "include"})
        if (fs::exists(dir / name)) return fs::weakly_canonical(dir / name);
    return {};
}

/// Every project file `file` includes, directly or through other project files.
std::set<fs::path> includes_closure(const fs::path& file) {
    std::set<fs::path> seen;
    std::vector<fs::path> todo{fs::weakly_canonical(file)};
    while (!todo.empty()) {
        const fs::path f = todo.back();
        todo.pop_back();
        for (const std::string& name : project_includes(f))
            if (const fs::path p = resolve(f, name); !p.empty() && seen.insert(p).second) todo.push_back(p);
    }
    return seen;
}

/// The .h and .cpp files under `dir` (relative to the source tree), sorted.
std::vector<fs::path> code_files(const std::string& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(kSource / dir)) {
        const std::string ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".h" || ext == ".cpp")) out.push_back(fs::weakly_canonical(e.path()));
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string in_tree(const fs::path& p) { return fs::relative(p, fs::weakly_canonical(kSource)).string(); }

const std::set<std::string> kJobLayerHeaders = {"job_config.h", "job_keys.h",    "job_flags.h",    "run_job.h",
                                                "run_report.h", "farm_submit.h", "farm_command.h", "review.h",
                                                "progress.h",   "depthbatch.h"};

/// `text` without comments, string and character literals (so a word in a comment or a message is not code).
std::string code_only(const std::string& text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, 2, "//") == 0) {
            i = text.find('\n', i);
            if (i == std::string::npos) break;
            out += '\n';
        } else if (text.compare(i, 2, "/*") == 0) {
            i = text.find("*/", i + 2);
            if (i == std::string::npos) break;
            ++i;
        } else if (text[i] == '"' || text[i] == '\'') {
            const char quote = text[i];
            for (++i; i < text.size() && text[i] != quote; ++i)
                if (text[i] == '\\') ++i;
            out += "\"\"";
        } else {
            out += text[i];
        }
    }
    return out;
}

/// The types a header declares with a body or an alias: struct/class/enum X {...}, using X = ...
std::set<std::string> declared_types(const fs::path& header) {
    static const std::regex type(R"(\b(?:struct|class|enum class|enum)\s+([A-Z][A-Za-z0-9_]*)\s*(?:final\s*)?[:{])");
    static const std::regex alias(R"(\busing\s+([A-Z][A-Za-z0-9_]*)\s*=)");
    const std::string code = code_only(read_bytes(header));
    std::set<std::string> out;
    for (const std::regex* r : {&type, &alias})
        for (auto it = std::sregex_iterator(code.begin(), code.end(), *r); it != std::sregex_iterator(); ++it)
            out.insert((*it)[1]);
    return out;
}

}  // namespace

// A concept header knows no job: JobConfig is the job layer's, reached by no other public header.
TEST(Layering, ConceptHeadersDoNotIncludeTheJobConfig) {
    const fs::path job_config = fs::weakly_canonical(kSource / "include/depthbatch/job_config.h");
    size_t concepts = 0;
    for (const fs::path& h : code_files("include/depthbatch")) {
        if (kJobLayerHeaders.count(h.filename().string())) continue;
        ++concepts;
        EXPECT_FALSE(includes_closure(h).count(job_config))
            << in_tree(h) << " is a concept header but includes depthbatch/job_config.h (directly or through another "
            << "header): take the settings it needs as its own struct, as ModelSettings or ExrWriteOptions do";
    }
    EXPECT_GT(concepts, 25u);
}

// src/output/ and src/frames/ sit below the job: they never include its context, config or outputs.
TEST(Layering, TheOutputAndFramesModulesDoNotKnowTheJob) {
    const std::set<fs::path> job = {fs::weakly_canonical(kSource / "src/job_context.h"),
                                    fs::weakly_canonical(kSource / "src/job_outputs.h"),
                                    fs::weakly_canonical(kSource / "include/depthbatch/job_config.h")};
    size_t files = 0;
    for (const std::string dir : {"src/output", "src/frames"})
        for (const fs::path& f : code_files(dir)) {
            ++files;
            for (const fs::path& p : includes_closure(f))
                EXPECT_FALSE(job.count(p)) << in_tree(f) << " includes " << in_tree(p)
                                           << ": the module is below the job layer; the code belongs in src/";
        }
    EXPECT_GT(files, 10u);
}

// Public headers are the API: only public headers among the project's includes, and no type that only src/ declares.
TEST(Layering, PublicHeadersNameOnlyPublicTypes) {
    std::set<std::string> public_types, internal_types;
    for (const fs::path& h : code_files("include/depthbatch")) {
        const auto t = declared_types(h);
        public_types.insert(t.begin(), t.end());
    }
    for (const fs::path& h : code_files("src"))
        if (h.extension() == ".h")
            for (const std::string& t : declared_types(h))
                if (!public_types.count(t)) internal_types.insert(t);
    EXPECT_TRUE(internal_types.count("Publication") && internal_types.count("OutputGuard") &&
                internal_types.count("JobContext"))
        << "the reading of src/ headers found none of the internal types it must";
    for (const fs::path& h : code_files("include/depthbatch")) {
        for (const std::string& name : project_includes(h))
            EXPECT_EQ(name.rfind("depthbatch/", 0), 0u) << in_tree(h) << " includes \"" << name << "\", not public";
        // A friend declaration (DepthModel's test seam) grants access; it is no part of what an embedder calls.
        const std::string code =
            std::regex_replace(code_only(read_bytes(h)), std::regex(R"(\bfriend\s+(struct|class)\s+\w+\s*;)"), "");
        for (const std::string& t : internal_types)
            EXPECT_FALSE(std::regex_search(code, std::regex("\\b" + t + "\\b")))
                << in_tree(h) << " names " << t << ", a type declared only under src/ (declare what takes it in an "
                << "internal header, src/*_pvt.h)";
    }
}

// docs/code-map.md names every header and source (a source X.cpp is named with its header X.h).
TEST(Layering, EveryHeaderAndSourceIsOnTheCodeMap) {
    const std::string map = read_bytes(kSource / "docs/code-map.md");
    const auto named = [&](const std::string& file) {
        return std::regex_search(map,
                                 std::regex("(^|[^A-Za-z0-9_])" + std::regex_replace(file, std::regex(R"(\.)"), "\\.") +
                                            "($|[^A-Za-z0-9_])"));
    };
    size_t files = 0;
    for (const std::string dir : {"src", "apps", "include"})
        for (const fs::path& f : code_files(dir)) {
            ++files;
            const std::string name = f.filename().string(), stem = f.stem().string();
            EXPECT_TRUE(named(name) || (f.extension() == ".cpp" && named(stem + ".h")))
                << in_tree(f) << " is not on docs/code-map.md (name it in its concept's row)";
        }
    EXPECT_GT(files, 100u);
}
