// Issue 9: depthbatch deploys like a studio tool. `cmake --install` makes a prefix that works on its own:
// installed, moved elsewhere as a whole, run with no LD_LIBRARY_PATH, $OCIO or $DEPTHBATCH_DEFAULT_MODEL, it
// renders the sample job with the default model and the shipped OCIO config found next to the binary.
// Also: a checkout reached through a symbolic link renders the sample job (paths with `..` in the job file
// are resolved on the file system).
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace depthbatch::test;

namespace {

/// The depth.Z values of two EXRs are identical (same model, same plate, same settings).
void expect_same_depth(const fs::path& a, const fs::path& b) {
    const OIIO::ImageSpec sa = file_spec(a), sb = file_spec(b);
    ASSERT_EQ(sa.width, sb.width);
    ASSERT_EQ(sa.height, sb.height);
    const auto da = depth_values(a), db = depth_values(b);
    ASSERT_FALSE(da.empty());
    ASSERT_EQ(da.size(), db.size());
    size_t differ = 0;
    for (size_t i = 0; i < da.size(); ++i) differ += da[i] != db[i];
    EXPECT_EQ(differ, 0u) << a << " vs " << b;
}

}  // namespace

TEST(Install, RelocatedPrefixRendersTheSampleJobOnItsOwn) {
    TempDir t;
    const fs::path first = t / "software/depthbatch/0.2", moved = t / "elsewhere/depthbatch-0.2";
    const auto inst = run_program(DEPTHBATCH_CMAKE_COMMAND, {"--install", DEPTHBATCH_BUILD_DIR, "--prefix", first.string()});
    ASSERT_EQ(inst.exit_code, 0) << inst.output;
    for (const char* f : {"bin/depthbatch", "lib/libtorch_cpu.so", "lib/libc10.so",
                          "share/depthbatch/models/fastdepth-nyu.pt", "share/depthbatch/ocio/config.ocio",
                          "share/doc/depthbatch/README.md", "share/doc/depthbatch/licenses/fastdepth-nyu.LICENSE.txt"})
        EXPECT_TRUE(fs::exists(first / f)) << f << " is not installed";
    EXPECT_TRUE(contains(read_bytes(first / "share/doc/depthbatch/licenses/fastdepth-nyu.LICENSE.txt"), "MIT License"));

    fs::create_directories(moved.parent_path());
    fs::rename(first, moved);  // the prefix as a whole, moved: nothing in it may point back at the old place
    const std::string clean_env = "env -u LD_LIBRARY_PATH -u OCIO -u DEPTHBATCH_DEFAULT_MODEL";

    // Every LibTorch library the installed binary loads comes from the prefix (RPATH $ORIGIN/../lib).
    const auto ldd = run_program("ldd", {(moved / "bin/depthbatch").string()}, clean_env);
    ASSERT_EQ(ldd.exit_code, 0) << ldd.output;
    std::istringstream lines(ldd.output);
    int torch_libs = 0;
    for (std::string line; std::getline(lines, line);) {
        if (!contains(line, "libtorch") && !contains(line, "libc10")) continue;
        ++torch_libs;
        EXPECT_TRUE(contains(line, "=> " + moved.string() + "/")) << line;  // P/bin/../lib/...
    }
    EXPECT_GE(torch_libs, 2) << ldd.output;

    const auto r = run_program(moved / "bin/depthbatch",
                               {DEPTHBATCH_SOURCE_DIR "/samples/shot.yaml", "--frames", "1001-1002",
                                "--output", (t / "out/bedroom.####.exr").string()},
                               clean_env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "model " + (moved / "share/depthbatch/models/fastdepth-nyu.pt").string())) << r.output;
    EXPECT_TRUE(contains(r.output, "config " + (moved / "share/depthbatch/ocio/config.ocio").string())) << r.output;
    EXPECT_EQ(list_dir(t / "out"), (std::vector<std::string>{"bedroom.1001.exr", "bedroom.1002.exr"}));

    // The same frames from the build tree's binary: the installed one computes exactly the same depth.
    const auto b = run_cli({DEPTHBATCH_SOURCE_DIR "/samples/shot.yaml", "--frames", "1002",
                            "--output", (t / "ref/bedroom.####.exr").string()});
    ASSERT_EQ(b.exit_code, 0) << b.output;
    expect_same_depth(t / "out/bedroom.1002.exr", t / "ref/bedroom.1002.exr");
}

TEST(Install, CheckoutReachedThroughASymbolicLinkRendersTheSampleJob) {
    // ~/main -> /data/work/main, with ../shared beside the real folder only: samples/shot.yaml's
    // ../../shared/samples must be resolved on the file system, as the kernel would.
    TempDir t;
    fs::create_directories(t / "home");
    fs::create_directory_symlink(fs::canonical(DEPTHBATCH_SOURCE_DIR), t / "home/main");
    ASSERT_FALSE(fs::exists(t / "shared")) << "the text-resolved path must not exist for this test to mean anything";
    const auto r = run_cli({(t / "home/main/samples/shot.yaml").string(), "--frames", "1001",
                            "--output", (t / "out/bedroom.####.exr").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(t / "out"), (std::vector<std::string>{"bedroom.1001.exr"}));
    // The sintel TOML job the same way.
    const auto s = run_cli({(t / "home/main/samples/sintel.toml").string(), "--frames", "1001",
                            "--output", (t / "out2/sintel.####.exr").string()});
    EXPECT_EQ(s.exit_code, 0) << s.output;
}
