// install_layout.h: data found next to the executable, and `..` in user paths resolved on the file system
// (issue 9: a checkout reached through a symbolic link, as on farms and in home folders).
#include "depthbatch/install_layout.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

using namespace depthbatch;
using namespace depthbatch::test;

TEST(UserPaths, DotDotGoesToTheParentOfWhatALinkPointsAt) {
    TempDir t;
    fs::create_directories(t / "data/work/main/samples");
    fs::create_directories(t / "data/work/shared/samples");
    fs::create_directories(t / "home");
    fs::create_directory_symlink(t / "data/work/main", t / "home/main");  // ~/main -> /data/work/main
    const fs::path base = t / "home/main/samples";
    const std::string p = resolve_user_path(base, "../../shared/samples/a.####.exr");
    // By text this would be home/shared/..., which does not exist; the kernel goes to data/work/shared.
    EXPECT_EQ(p, (fs::canonical(t / "data/work/shared/samples") / "a.####.exr").string());
    EXPECT_TRUE(fs::is_directory(fs::path(p).parent_path()));
}

TEST(UserPaths, PathsWithoutDotDotKeepTheirLinks) {
    TempDir t;
    fs::create_directories(t / "real/plates");
    fs::create_directory_symlink(t / "real", t / "show");
    EXPECT_EQ(resolve_user_path(t / "show", "./plates//a.####.exr"), (t / "show/plates/a.####.exr").string());
    EXPECT_EQ(resolve_user_path(t / "elsewhere", (t / "show/plates/b.exr").string()),
              (t / "show/plates/b.exr").string())
        << "an absolute path ignores the base";
}

TEST(UserPaths, DotDotOverFoldersThatDoNotExistYetIsRemovedByText) {
    TempDir t;
    EXPECT_EQ(resolve_user_path(t / "jobs", "../renders/new/../d.####.exr"),
              (fs::canonical(t.path) / "renders/d.####.exr").string());
}

TEST(DataFiles, FoundNextToTheExecutableNotInTheSourceTree) {
    // This test runs from build/tests/: build/share/depthbatch mirrors an installed prefix's share/depthbatch.
    const auto dirs = data_dirs();
    ASSERT_EQ(dirs.size(), 2u);
    EXPECT_EQ(dirs[0], executable_dir().parent_path() / "share" / "depthbatch");
    EXPECT_EQ(dirs[1], executable_dir() / "share" / "depthbatch");
    const fs::path ocio = find_data_file("ocio/config.ocio");
    EXPECT_TRUE(fs::exists(ocio)) << ocio;
    EXPECT_TRUE(fs::equivalent(ocio, DEPTHBATCH_SOURCE_DIR "/configs/ocio/config.ocio"));
    EXPECT_EQ(find_data_file("no/such/file"), dirs[0] / "no/such/file") << "a missing file names where it was expected";
}
