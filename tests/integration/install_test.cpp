// Issue 9: depthbatch deploys like a studio tool. `cmake --install` makes a prefix that works on its own:
// installed, moved elsewhere as a whole, run with no LD_LIBRARY_PATH, $OCIO or $DEPTHBATCH_DEFAULT_MODEL, it
// renders the sample job with the default model and the shipped OCIO config found next to the binary.
// Also: a checkout reached through a symbolic link renders the sample job (paths with `..` in the job file
// are resolved on the file system); and the moved prefix makes a review sheet with its own script (issue 22 §8).
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <sstream>
#include <vector>

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

// One version: CMakeLists.txt's project(VERSION) is what --version prints (and what EXRs and summaries carry).
TEST(Install, VersionIsTheProjectVersion) {
    std::smatch m;
    const std::string cmake = read_bytes(DEPTHBATCH_SOURCE_DIR "/CMakeLists.txt");
    ASSERT_TRUE(std::regex_search(cmake, m, std::regex(R"(project\(depthbatch VERSION ([0-9.]+))")))
        << cmake.substr(0, 200);
    EXPECT_EQ(m[1].str(), "0.3.0");
    const auto r = run_cli({"--version"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.output, m[1].str() + "\n");
    const std::string readme = read_bytes(DEPTHBATCH_SOURCE_DIR "/README.md");
    EXPECT_NE(readme.find("cmake --install build --prefix /software/depthbatch/0.3\n"), std::string::npos)
        << "README's install example names the version's folder";
}

TEST(Install, RelocatedPrefixRendersTheSampleJobOnItsOwn) {
    TempDir t;
    const fs::path first = t / "software/depthbatch/0.2", moved = t / "elsewhere/depthbatch-0.2";
    const auto inst =
        run_program(DEPTHBATCH_CMAKE_COMMAND, {"--install", DEPTHBATCH_BUILD_DIR, "--prefix", first.string()});
    ASSERT_EQ(inst.exit_code, 0) << inst.output;
    for (const char* f :
         {"bin/depthbatch", "lib/libtorch_cpu.so", "lib/libc10.so", "share/depthbatch/models/fastdepth-nyu.pt",
          "share/depthbatch/ocio/config.ocio", "share/doc/depthbatch/README.md", "share/doc/depthbatch/docs/jobs.md",
          "share/doc/depthbatch/licenses/fastdepth-nyu.LICENSE.txt"})
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
                               {DEPTHBATCH_SOURCE_DIR "/samples/shot.yaml", "--frames", "1001-1002", "--output",
                                (t / "out/bedroom.####.exr").string()},
                               clean_env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "model " + (moved / "share/depthbatch/models/fastdepth-nyu.pt").string()))
        << r.output;
    EXPECT_TRUE(contains(r.output, "config " + (moved / "share/depthbatch/ocio/config.ocio").string())) << r.output;
    EXPECT_EQ(list_dir(t / "out"), (std::vector<std::string>{"bedroom.1001.exr", "bedroom.1002.exr"}));

    // The same frames from the build tree's binary: the installed one computes exactly the same depth.
    const auto b = run_cli({DEPTHBATCH_SOURCE_DIR "/samples/shot.yaml", "--frames", "1002", "--output",
                            (t / "ref/bedroom.####.exr").string()});
    ASSERT_EQ(b.exit_code, 0) << b.output;
    expect_same_depth(t / "out/bedroom.1002.exr", t / "ref/bedroom.1002.exr");
    // The same settings fingerprint (what --skip-existing compares), though the program is not beside the shipped
    // OCIO config as depthbatch is: a farm requeue of the CLI keeps the program's frames, and the reverse.
    EXPECT_EQ(file_spec(t / "out/bedroom.1002.exr").get_string_attribute("depthbatch/settings_sha256"),
              file_spec(t / "ref/bedroom.1002.exr").get_string_attribute("depthbatch/settings_sha256"));
}

TEST(Install, CheckoutReachedThroughASymbolicLinkRendersTheSampleJob) {
    // ~/main -> /data/work/main, with ../shared beside the real folder only: samples/shot.yaml's
    // ../../shared/samples must be resolved on the file system, as the kernel would.
    TempDir t;
    fs::create_directories(t / "home");
    fs::create_directory_symlink(fs::canonical(DEPTHBATCH_SOURCE_DIR), t / "home/main");
    ASSERT_FALSE(fs::exists(t / "shared")) << "the text-resolved path must not exist for this test to mean anything";
    const auto r = run_cli({(t / "home/main/samples/shot.yaml").string(), "--frames", "1001", "--output",
                            (t / "out/bedroom.####.exr").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(t / "out"), (std::vector<std::string>{"bedroom.1001.exr"}));
    // The sintel TOML job the same way.
    const auto s = run_cli({(t / "home/main/samples/sintel.toml").string(), "--frames", "1001", "--output",
                            (t / "out2/sintel.####.exr").string()});
    EXPECT_EQ(s.exit_code, 0) << s.output;
}

// Issue 22 §8: `depthbatch review` from a moved prefix uses the prefix's own share/depthbatch/tools/review.py,
// never the checkout's tools/: no path of the source tree is compiled in (only the configured venv, which the
// test replaces with DEPTHBATCH_PYTHON). Proved by behaviour: with PATH and PYTHONPATH free of the checkout the
// sheet is made and -v names the prefix's script; with that script removed the review fails naming it (no
// fallback reaches the checkout); $DEPTHBATCH_TOOLS pointing at a copy of tools/ in a temporary folder works;
// and no __pycache__ appears under the prefix, the copy or the checkout's tools/.
TEST(Install, RelocatedPrefixMakesTheReviewSheetWithItsOwnScript) {
    TempDir t;
    const auto start = fs::file_time_type::clock::now() - std::chrono::seconds(2);
    const fs::path first = t / "software/depthbatch/0.2", moved = t / "elsewhere/depthbatch-0.2";
    const auto inst =
        run_program(DEPTHBATCH_CMAKE_COMMAND, {"--install", DEPTHBATCH_BUILD_DIR, "--prefix", first.string()});
    ASSERT_EQ(inst.exit_code, 0) << inst.output;
    const fs::path installed_script = first / "share/depthbatch/tools/review.py";
    ASSERT_TRUE(fs::is_regular_file(fs::symlink_status(installed_script))) << "a copy, not a link into the checkout";
    EXPECT_EQ(read_bytes(installed_script), read_bytes(DEPTHBATCH_SOURCE_DIR "/tools/review.py"));
    EXPECT_EQ(list_dir(first / "share/depthbatch/tools"), std::vector<std::string>{"review.py"});
    fs::create_directories(moved.parent_path());
    fs::rename(first, moved);

    // The tools venv by its own path (the checkout's .venv may be a link to it), the checkout nowhere on PATH.
    const fs::path venv_python = fs::canonical(fs::path(DEPTHBATCH_TEST_PYTHON).parent_path()) / "python";
    const std::string env =
        "env -u LD_LIBRARY_PATH -u OCIO -u DEPTHBATCH_DEFAULT_MODEL -u DEPTHBATCH_TOOLS -u PYTHONPATH "
        "PATH=/usr/bin:/bin DEPTHBATCH_PYTHON='" +
        venv_python.string() + "'";
    fs::create_directories(t / "shot");
    const fs::path job = write_job(t / "shot/shot.yaml",
                                   "input:\n  path: " + (samples_dir() / "plates/bedroom/bedroom.####.jpg").string() +
                                       "\n  frames: 1001-1002\noutput:\n  path: out/d.####.exr\n");
    const fs::path bin = moved / "bin/depthbatch";
    auto r = run_program(bin, {job.string(), "-q"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.output;

    r = run_program(bin, {"review", job.string(), "--out", (t / "sheet/s.png").string(), "-v"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "review: " + venv_python.string() + " ($DEPTHBATCH_PYTHON) -B " +
                                       (moved / "share/depthbatch/tools/review.py").string()))
        << r.output;
    EXPECT_FALSE(contains(r.output, DEPTHBATCH_SOURCE_DIR "/tools")) << r.output;
    EXPECT_EQ(list_dir(t / "sheet"), (std::vector<std::string>{"s.html", "s.png"}));
    EXPECT_EQ(file_spec(t / "sheet/s.png").width, 1800);
    EXPECT_TRUE(contains(read_bytes(t / "sheet/s.html"), "2 of 2 frames rendered"));

    // $DEPTHBATCH_TOOLS: a copy of the checkout's tools/ that nothing else points at.
    fs::copy(DEPTHBATCH_SOURCE_DIR "/tools", t / "copied-tools", fs::copy_options::recursive);
    std::vector<fs::path> caches;  // pytest's, if the checkout ran it
    for (const auto& e : fs::recursive_directory_iterator(t / "copied-tools"))
        if (e.path().filename() == "__pycache__") caches.push_back(e.path());
    for (const fs::path& c : caches) fs::remove_all(c);
    r = run_program(bin, {"review", job.string(), "--out", (t / "sheet2/s.png").string(), "-v"},
                    env + " DEPTHBATCH_TOOLS='" + (t / "copied-tools").string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, " -B " + (t / "copied-tools/review.py").string())) << r.output;
    EXPECT_EQ(list_dir(t / "sheet2"), (std::vector<std::string>{"s.html", "s.png"}));

    // Without the prefix's script there is nothing to fall back on: one line naming it, exit 5, nothing made.
    fs::remove(moved / "share/depthbatch/tools/review.py");
    r = run_program(bin, {"review", job.string(), "--out", (t / "sheet3/s.png").string()}, env);
    EXPECT_EQ(r.exit_code, 5) << r.output;
    EXPECT_EQ(r.output, "depthbatch: error: review: " + (moved / "share/depthbatch/tools/review.py").string() +
                            " is missing: this install is incomplete (cmake --install puts it there), or set "
                            "DEPTHBATCH_TOOLS to a folder holding review.py\n");
    EXPECT_FALSE(fs::exists(t / "sheet3"));

    // No bytecode written anywhere: not in the prefix, not in the copy, not in the checkout's tools/.
    for (const fs::path& root : {t.path, fs::path(DEPTHBATCH_SOURCE_DIR "/tools")})
        for (const auto& e : fs::recursive_directory_iterator(root)) {
            if (root == t.path) EXPECT_NE(e.path().filename(), "__pycache__") << e.path();
            if (e.path().extension() == ".pyc" && contains(e.path().filename().string(), "review"))
                EXPECT_LT(e.last_write_time(), start) << e.path() << " was written by this test";
        }
}

// Issue 42 §2: the first program of include/depthbatch/depthbatch.h, as the header shows it, compiled against the
// installed package alone: its headers from P/include (the checkout's include/ and src/ are on no include path), the
// library and what it links from P/lib/cmake/depthbatch (find_package(depthbatch CONFIG), LibTorch through Torch_DIR).
// It renders two frames of the bedroom plate, with exactly the CLI's depth.
TEST(Install, TheFirstProgramOfDepthbatchHBuildsAgainstTheInstalledPackageAndRenders) {
    TempDir t;
    const fs::path prefix = t / "prefix";
    const auto inst =
        run_program(DEPTHBATCH_CMAKE_COMMAND, {"--install", DEPTHBATCH_BUILD_DIR, "--prefix", prefix.string()});
    ASSERT_EQ(inst.exit_code, 0) << inst.output;
    for (const char* f :
         {"include/depthbatch/depthbatch.h", "lib/libdepthbatch_core.a", "lib/cmake/depthbatch/depthbatchConfig.cmake",
          "lib/cmake/depthbatch/depthbatchTargets.cmake"})
        EXPECT_TRUE(fs::exists(prefix / f)) << f << " is not installed";
    EXPECT_EQ(list_dir(prefix / "include/depthbatch"), list_dir(DEPTHBATCH_SOURCE_DIR "/include/depthbatch"))
        << "the public headers, and only they";

    // The program, cut out of the header's comment ("A first program": the indented lines up to the next blank one).
    std::istringstream header(read_bytes(DEPTHBATCH_SOURCE_DIR "/include/depthbatch/depthbatch.h"));
    std::string program;
    bool in = false;
    for (std::string line; std::getline(header, line);) {
        if (contains(line, "// A first program")) {
            in = true;
            continue;
        }
        if (!in) continue;
        if (line == "//" && !program.empty()) break;
        if (line.rfind("//     ", 0) == 0) program += line.substr(7) + "\n";
    }
    ASSERT_TRUE(contains(program, "depthbatch::run_job(job)")) << program;
    const fs::path src = t / "first";
    fs::create_directories(src);
    write_file(src / "main.cpp", program);
    write_file(src / "CMakeLists.txt",
               "cmake_minimum_required(VERSION 3.18)\n"
               "project(first LANGUAGES CXX)\n"
               "find_package(depthbatch 0.3 REQUIRED CONFIG)\n"
               "add_executable(first main.cpp)\n"
               "target_link_libraries(first PRIVATE depthbatch::depthbatch)\n");
    const auto configure = run_program(
        DEPTHBATCH_CMAKE_COMMAND, {"-S", src.string(), "-B", (src / "build").string(), "-DCMAKE_BUILD_TYPE=Release",
                                   "-DCMAKE_PREFIX_PATH=" + prefix.string(), "-DTorch_DIR=" DEPTHBATCH_TORCH_DIR});
    ASSERT_EQ(configure.exit_code, 0) << configure.output;
    const auto build = run_program(DEPTHBATCH_CMAKE_COMMAND, {"--build", (src / "build").string(), "--verbose"});
    ASSERT_EQ(build.exit_code, 0) << build.output;
    EXPECT_TRUE(contains(build.output, prefix.string() + "/include")) << build.output;
    EXPECT_FALSE(contains(build.output, DEPTHBATCH_SOURCE_DIR "/include")) << "the checkout's headers are not used";
    EXPECT_FALSE(contains(build.output, DEPTHBATCH_SOURCE_DIR "/src")) << "nor its internal ones";

    // Its job: two frames of the bedroom plate, with the installed model and OCIO config (the program is not beside
    // them, as depthbatch is).
    const fs::path job = write_job(
        t / "job.yaml", "input:\n  path: " + (samples_dir() / "plates/bedroom/bedroom.####.jpg").string() +
                            "\n  frames: 1001-1002\n  scene: indoor\n"
                            "output:\n  path: " +
                            (t / "out/bedroom.####.exr").string() +
                            "\nmodel:\n  path: " + (prefix / "share/depthbatch/models/fastdepth-nyu.pt").string() +
                            "\ncolor:\n  config: " + (prefix / "share/depthbatch/ocio/config.ocio").string() + "\n");
    const auto r = run_program(src / "build/first", {job.string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(t / "out"), (std::vector<std::string>{"bedroom.1001.exr", "bedroom.1002.exr"}));
    const auto b = run_cli({job.string(), "--frames", "1002", "--output", (t / "ref/bedroom.####.exr").string()});
    ASSERT_EQ(b.exit_code, 0) << b.output;
    expect_same_depth(t / "out/bedroom.1002.exr", t / "ref/bedroom.1002.exr");
}
