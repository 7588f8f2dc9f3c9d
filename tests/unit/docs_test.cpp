// The documentation (README.md and docs/) held to the code: every depthbatch/* metadata key an EXR can carry is in
// docs/output.md's table (issue 26 §4); docs/jobs.md's key table is the one the code generates from its key table
// (issue 33 §7); docs/code-map.md names every public header (§6); every page is linked from README and
// docs/README.md, and every relative link of every page points at a file and a heading that exist; every test
// docs/cases.md cites exists. A change made without its documentation fails here, naming what is missing.
#include "depthbatch/exr_metadata.h"
#include "depthbatch/job_keys.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>

using namespace depthbatch::test;

namespace {

const fs::path kSource = DEPTHBATCH_SOURCE_DIR;

/// The text between `begin` and `end` in `page` (a failure names the page and the marker).
std::string between(const fs::path& page, const std::string& begin, const std::string& end) {
    const std::string text = read_bytes(page);
    const size_t b = text.find(begin), e = text.find(end, b == std::string::npos ? 0 : b);
    if (b == std::string::npos || e == std::string::npos)
        throw std::runtime_error(page.string() + " has no " + begin + " ... " + end);
    return text.substr(b + begin.size(), e - b - begin.size());
}

/// GitHub's anchor for a heading: lower case, punctuation other than '-' and '_' dropped, spaces to '-'.
std::string anchor_of(const std::string& heading) {
    std::string a;
    for (unsigned char c : heading) {
        if (c == ' ') a += '-';
        else if (std::isalnum(c) || c == '-' || c == '_' || c >= 0x80) a += static_cast<char>(std::tolower(c));
    }
    return a;
}

/// The anchors of a Markdown page's headings (outside code fences).
std::set<std::string> anchors(const fs::path& page) {
    std::set<std::string> out;
    std::istringstream in(read_bytes(page));
    bool fence = false;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("```", 0) == 0) fence = !fence;
        if (fence || line.empty() || line[0] != '#') continue;
        const size_t text = line.find_first_not_of('#');
        if (text != std::string::npos && line[text] == ' ') out.insert(anchor_of(line.substr(text + 1)));
    }
    return out;
}

std::vector<fs::path> pages() {
    std::vector<fs::path> out = {kSource / "README.md"};
    for (const auto& e : fs::directory_iterator(kSource / "docs"))
        if (e.path().extension() == ".md") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

// The depthbatch/* metadata names live in one table (exr_metadata.h, issue 42 §6): docs/output.md's table is
// metadata_keys_markdown(), and no source spells a name outside the table (every writer and reader uses its
// constants). On a change, the expected table is written to the build folder to copy in.
TEST(Docs, TheMetadataTableIsTheCodesTableAndTheOnlySpelling) {
    const std::string page = read_bytes(kSource / "docs/output.md");
    const size_t table = page.find("| key | what it holds |");
    ASSERT_NE(table, std::string::npos) << "docs/output.md has no depthbatch/* key table";
    const std::string rows = page.substr(table, page.find("\n\n", table) + 1 - table);
    const std::string expected = depthbatch::metadata_keys_markdown();
    if (rows != expected) {
        const fs::path out = fs::path(DEPTHBATCH_BUILD_DIR) / "docs-metadata-table.md";
        std::ofstream(out) << expected;
        ADD_FAILURE() << "docs/output.md's metadata table is not the code's: copy " << out << " in its place";
    }
    EXPECT_GT(depthbatch::metadata_keys().size(), 40u);
    const std::regex literal("\"depthbatch/[a-z0-9_]*\"");
    for (const auto& entry : fs::recursive_directory_iterator(kSource / "src")) {
        if (!entry.is_regular_file() || entry.path().filename() == "exr_metadata.cpp") continue;
        const std::string text = read_bytes(entry.path());
        std::smatch m;
        EXPECT_FALSE(std::regex_search(text, m, literal))
            << entry.path() << " spells " << m.str() << ": use its exr_meta:: constant (exr_metadata.h)";
    }
}

// docs/jobs.md's key table is generated: the text between its markers is job_keys_markdown(). On a change, the
// expected text is written to the build folder to copy in.
TEST(Docs, JobKeyTableIsTheCodesTable) {
    const std::string page = between(
        kSource / "docs/jobs.md", "<!-- job keys: generated, see tests/unit/docs_test.cpp -->\n", "<!-- /job keys -->");
    const std::string expected = depthbatch::job_keys_markdown();
    if (page != expected) {
        const fs::path out = fs::path(DEPTHBATCH_BUILD_DIR) / "docs-jobs-key-table.md";
        std::ofstream(out) << expected;
        ADD_FAILURE() << "docs/jobs.md's key table is not the code's: copy " << out << " between its markers";
    }
    for (const depthbatch::JobKey& k : depthbatch::job_keys())  // and it cannot be empty or lose a row
        EXPECT_NE(page.find("| `" + std::string(k.key) + "` |"), std::string::npos) << k.key;
}

// docs/code-map.md names every public header (and every internal header of src/ a concept's row cites exists).
TEST(Docs, CodeMapNamesEveryPublicHeader) {
    const std::string map = read_bytes(kSource / "docs/code-map.md");
    size_t headers = 0;
    for (const auto& e : fs::directory_iterator(kSource / "include/depthbatch")) {
        ++headers;
        EXPECT_NE(map.find("`" + e.path().filename().string() + "`"), std::string::npos)
            << "docs/code-map.md does not name include/depthbatch/" << e.path().filename().string();
    }
    EXPECT_GT(headers, 30u);
    const std::regex internal(R"(`(src/[a-z_/]+\.h)`)");
    for (auto it = std::sregex_iterator(map.begin(), map.end(), internal); it != std::sregex_iterator(); ++it)
        EXPECT_TRUE(fs::exists(kSource / (*it)[1].str()))
            << "docs/code-map.md names " << (*it)[1] << ", which does not exist";
}

// Every page is linked from README.md and docs/README.md; every relative link points at a file that exists and,
// with #anchor, at a heading of that file.
TEST(Docs, EveryPageIsLinkedAndEveryLinkLands) {
    const std::string readme = read_bytes(kSource / "README.md"), index = read_bytes(kSource / "docs/README.md");
    std::map<fs::path, std::set<std::string>> heads;
    size_t links = 0;
    for (const fs::path& page : pages()) {
        const std::string name = page.filename().string();
        if (page.parent_path().filename() == "docs" && name != "README.md") {
            EXPECT_NE(readme.find("](docs/" + name + ")"), std::string::npos)
                << "README.md does not link docs/" << name;
            EXPECT_NE(index.find("](" + name + ")"), std::string::npos) << "docs/README.md does not link " << name;
        }
        const std::string text = read_bytes(page);
        static const std::regex link(R"(\]\(([^)#:\s]*)(#([^)\s]+))?\))");
        for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
            const fs::path target =
                (*it)[1].length() ? fs::weakly_canonical(page.parent_path() / (*it)[1].str()) : page;
            ++links;
            ASSERT_TRUE(fs::exists(target)) << page << " links " << (*it)[0] << ": no such file";
            if (!(*it)[3].matched) continue;
            if (!heads.count(target)) heads[target] = anchors(target);
            EXPECT_TRUE(heads[target].count((*it)[3].str())) << page << " links " << (*it)[0] << ": no such heading";
        }
    }
    EXPECT_GT(links, 40u);
}

// docs/cases.md cites tests by `Suite.Name`: each is a TEST in tests/ (a renamed or deleted test fails here).
TEST(Docs, EveryTestACaseCitesExists) {
    std::set<std::string> tests;
    static const std::regex def(R"(TEST(_F|_P)?\((\w+), (\w+)\))");
    for (const auto& e : fs::recursive_directory_iterator(kSource / "tests")) {
        if (e.path().extension() != ".cpp") continue;
        const std::string text = read_bytes(e.path());
        for (auto it = std::sregex_iterator(text.begin(), text.end(), def); it != std::sregex_iterator(); ++it)
            tests.insert((*it)[2].str() + "." + (*it)[3].str());
    }
    const std::string table = between(kSource / "docs/cases.md", "<!-- cases", "<!-- /cases -->");
    static const std::regex cited(R"(`([A-Z]\w+\.[A-Z]\w+)`)");
    size_t n = 0;
    for (auto it = std::sregex_iterator(table.begin(), table.end(), cited); it != std::sregex_iterator(); ++it, ++n)
        EXPECT_TRUE(tests.count((*it)[1].str())) << "docs/cases.md cites " << (*it)[1] << ", which is no test";
    EXPECT_GT(n, 30u);
}

// depthbatch.h is the whole public API in one include: it names every public header (and compiles: this file
// includes it), and its conventions block comes first.
#include "depthbatch/depthbatch.h"
TEST(Docs, TheUmbrellaHeaderIncludesEveryPublicHeader) {
    const std::string umbrella = read_bytes(kSource / "include/depthbatch/depthbatch.h");
    for (const auto& e : fs::directory_iterator(kSource / "include/depthbatch")) {
        const std::string name = e.path().filename().string();
        if (name != "depthbatch.h")
            EXPECT_NE(umbrella.find("#include \"depthbatch/" + name + "\""), std::string::npos) << name;
    }
    EXPECT_LT(umbrella.find("Errors."), umbrella.find("#pragma once"));
    EXPECT_LT(umbrella.find("Threads."), umbrella.find("#pragma once"));
    EXPECT_LT(umbrella.find("Units and layouts."), umbrella.find("#pragma once"));
}
