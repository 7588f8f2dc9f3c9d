// README "What is written" documents every depthbatch/* metadata key an EXR can carry (issue 26 §4): each
// "depthbatch/<key>" string in src/ (and the depthbatch/model_<key> entries copied from a model's contract) is
// in README's table. A key added without its line fails here, naming it.
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

using namespace depthbatch::test;

TEST(ReadmeMetadata, EveryDepthbatchKeyWrittenIsDocumented) {
    std::set<std::string> keys = {"model_license", "model_source", "model_source_sha256", "model_variant", "model_domain"};
    const std::regex literal("\"depthbatch/([a-z0-9_]*[a-z0-9])\"");   // not the "depthbatch/model_" prefix
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(DEPTHBATCH_SOURCE_DIR) / "src")) {
        if (!entry.is_regular_file()) continue;   // src/farm/ and the like: their files are scanned too
        const std::string text = read_bytes(entry.path());
        for (auto it = std::sregex_iterator(text.begin(), text.end(), literal); it != std::sregex_iterator(); ++it)
            keys.insert((*it)[1].str());
    }
    ASSERT_GT(keys.size(), 30u) << "the source scan found too few keys";
    const std::string readme = read_bytes(fs::path(DEPTHBATCH_SOURCE_DIR) / "README.md");
    const size_t table = readme.find("| key | what it holds |");
    ASSERT_NE(table, std::string::npos) << "README has no depthbatch/* key table";
    const std::string rows = readme.substr(table, readme.find("\n\n", table) - table);
    for (const std::string& k : keys)
        EXPECT_NE(rows.find("| `depthbatch/" + k + "`"), std::string::npos) << "README's table lacks depthbatch/" << k;
}
