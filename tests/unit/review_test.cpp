// review.cpp's choices (src/review_tools.h): which review.py and which Python `depthbatch review` runs, and the
// line of their output a failure shows. The runs themselves: tests/integration/review_test.cpp, install_test.cpp.
#include "review_tools.h"
#include "support/test_support.h"

#include "depthbatch/error.h"
#include "depthbatch/install_layout.h"

#include <gtest/gtest.h>

using namespace depthbatch;
using namespace depthbatch::test;

namespace {
fs::path executable(const fs::path& p) {
    write_file(p, "#!/bin/sh\nexit 0\n");
    fs::permissions(p, fs::perms::owner_all);
    return p;
}
}  // namespace

TEST(ReviewTools, ScriptBesideTheExecutableUnlessDepthbatchToolsSaysOtherwise) {
    // unit_tests runs from build/tests/: build/share/depthbatch/tools/review.py, the build tree's mirror of P.
    EXPECT_EQ(fs::canonical(detail::find_review_script("")), fs::canonical(DEPTHBATCH_SOURCE_DIR "/tools/review.py"));
    EXPECT_EQ(detail::find_review_script(""), executable_dir().parent_path() / "share/depthbatch/tools/review.py");
    TempDir t;
    fs::create_directories(t / "folder");
    fs::create_directories(t / "checkout/tools");
    write_file(t / "folder/review.py", "");
    write_file(t / "checkout/tools/review.py", "");
    EXPECT_EQ(detail::find_review_script((t / "folder").string()), t / "folder/review.py");
    EXPECT_EQ(detail::find_review_script((t / "checkout").string()), t / "checkout/tools/review.py");
    EXPECT_EQ(expect_error<RenderError>([&] { detail::find_review_script((t / "checkout/tools/x").string()); }),
              "review: $DEPTHBATCH_TOOLS (" + (t / "checkout/tools/x").string() +
                  ") holds no review.py (nor tools/review.py)");
}

TEST(ReviewTools, PythonFromTheEnvironmentThenTheVenvThenPath) {
    TempDir t;
    fs::create_directories(t / "venv/bin");
    fs::create_directories(t / "a");
    fs::create_directories(t / "b");
    const fs::path venv = executable(t / "venv/bin/python");
    write_file(t / "a/python3", "not executable");
    const fs::path on_path = executable(t / "b/python3");
    const std::string path = (t / "none").string() + "::" + (t / "a").string() + ":" + (t / "b").string();

    auto p = detail::find_review_python("/opt/py/bin/python", venv.string(), path);
    EXPECT_EQ(p.exe, "/opt/py/bin/python");  // taken as given: review.py says what it lacks
    EXPECT_EQ(p.origin, "$DEPTHBATCH_PYTHON");
    p = detail::find_review_python("", venv.string(), path);
    EXPECT_EQ(p.exe, venv.string());
    EXPECT_EQ(p.origin, "the tools venv");
    p = detail::find_review_python("", (t / "gone/bin/python").string(), path);
    EXPECT_EQ(p.exe, on_path.string()) << "the first executable python3 on PATH";
    EXPECT_EQ(p.origin, "python3 on PATH");
    EXPECT_EQ(expect_error<RenderError>(
                  [&] { detail::find_review_python("", (t / "gone/bin/python").string(), (t / "a").string()); }),
              "review: no Python to draw the sheet: DEPTHBATCH_PYTHON is not set, the tools venv this build was "
              "configured with (" +
                  (t / "gone/bin/python").string() +
                  ") is gone and there is no python3 on PATH; set "
                  "DEPTHBATCH_PYTHON to a Python with matplotlib, numpy, OpenEXR and PIL");
}

TEST(ReviewTools, TheLastReviewLineElseTheLastLine) {
    bool from_script = false;
    EXPECT_EQ(detail::last_meaningful_line("Traceback (most recent call last):\n  File \"x\"\nKeyError: 'frames'\n"
                                           "review: KeyError: 'frames'\n\n",
                                           from_script),
              "KeyError: 'frames'");
    EXPECT_TRUE(from_script);
    EXPECT_EQ(detail::last_meaningful_line("review: first\nMatplotlib is building the font cache\nreview: second\n  \n",
                                           from_script),
              "second");
    EXPECT_EQ(detail::last_meaningful_line(
                  "/usr/bin/python3: can't open file '/x/review.py': [Errno 2] No such file\n\n", from_script),
              "/usr/bin/python3: can't open file '/x/review.py': [Errno 2] No such file");
    EXPECT_FALSE(from_script);
    EXPECT_EQ(detail::last_meaningful_line("", from_script), "");
    EXPECT_FALSE(from_script);
}
