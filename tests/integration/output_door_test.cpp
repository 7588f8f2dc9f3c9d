// One door for writes (issue 33 §1, docs/output.md "Output roles"): every file any command writes is opened
// through the output guard (OutputGuard::open, src/output/output_guard.h). The binary's debug hook
// (DEPTHBATCH_TRACE_OUTPUTS) records each open with its role; a render with previews, a summary, the statistics
// sidecar and a review sheet, the `review` command and `submit` for an engine must create exactly the files
// recorded, each in a role of the table (src/output/output_roles.h). A writer that opened a file itself would
// leave a file the hook never saw.
#include "output/output_roles.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

using namespace depthbatch::test;
using depthbatch::OutputRole;

namespace {

/// Every regular file under `dir` (hidden ones included), canonical.
std::set<std::string> files_under(const fs::path& dir) {
    std::set<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) files.insert(fs::canonical(e.path()).string());
    return files;
}

/// The hook's lines ("ROLE-NAME<TAB>PATH"): path -> role names it was opened as.
std::map<std::string, std::set<std::string>> read_trace(const fs::path& trace) {
    std::map<std::string, std::set<std::string>> opened;
    std::ifstream in(trace);
    for (std::string line; std::getline(in, line);) {
        const size_t tab = line.find('\t');
        if (tab == std::string::npos) {
            ADD_FAILURE() << "trace line without a tab: " << line;
            continue;
        }
        opened[line.substr(tab + 1)].insert(line.substr(0, tab));
    }
    return opened;
}

}  // namespace

TEST(OutputDoor, EveryFileAnyCommandWritesCameThroughTheGuard) {
    TempDir dir, trace_dir;  // the trace lives outside the folder whose files are compared
    const fs::path trace = trace_dir / "opens.txt";
    const std::string env = "DEPTHBATCH_TRACE_OUTPUTS=" + trace.string();
    fs::create_directories(dir / "shot");
    const fs::path job =
        write_job(dir / "shot/shot.yaml",
                  "input:\n  path: " + (samples_dir() / "plates/bedroom/bedroom.####.jpg").string() +
                      "\n  frames: 1001-1003\n"
                      "output:\n  path: out/d.####.exr\n  preview: {path: ../previews/p.####.png, size: 240}\n"
                      "depth:\n  convention: normalized\n  normalize: sequence\n"
                      "pipeline:\n  summary: ../summary/s.json\n  review: ../sheet/shot.png\n");
    const std::set<std::string> before = files_under(dir.path);

    auto r = run_cli({job.string(), "-q"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = run_cli({"review", job.string(), "--out", (dir / "review/again.png").string()}, env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = run_cli({"submit", job.string(), "--engine", "openjd", "--chunk-size", "2", "--out", (dir / "farm").string()},
                env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // The camera solve's .chan, .usda and report.
    const fs::path views = write_probe_views_model(trace_dir / "views.pt");
    r = run_cli({"solve", job.string(), "--set", "camera.solve.model=" + views.string()}, env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // A second render replaces its previews, summary and sheet (their own kind): opened again, nothing new.
    r = run_cli({job.string(), "-q", "--overwrite"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.output;

    std::set<std::string> created;
    for (const std::string& f : files_under(dir.path))
        if (!before.count(f)) created.insert(f);
    const auto opened = read_trace(trace);
    std::set<std::string> recorded;
    for (const auto& [path, roles] : opened) recorded.insert(path);
    EXPECT_EQ(created, recorded) << "files created without the guard (or opened and never published)";

    // Every recorded role is a row of the role table, and every row was exercised.
    std::set<std::string> names, seen;
    for (const auto& row : depthbatch::output_roles()) names.insert(row.name);
    for (const auto& [path, roles] : opened)
        for (const std::string& role : roles) {
            EXPECT_TRUE(names.count(role)) << path << " opened as '" << role << "', no row of the role table";
            seen.insert(role);
        }
    EXPECT_EQ(seen, names);
    // What each command wrote, by role (the bedroom's three frames).
    const auto role_of = [&](const fs::path& p) {
        const auto it = opened.find(fs::canonical(p).string());
        return it == opened.end() ? std::string("(not recorded)") : *it->second.begin();
    };
    const std::string depth_frame = depthbatch::output_role_name(OutputRole::DepthFrame);
    for (int f = 1001; f <= 1003; ++f) {
        EXPECT_EQ(role_of(dir / ("shot/out/d." + std::to_string(f) + ".exr")), depth_frame);
        EXPECT_EQ(role_of(dir / ("previews/p." + std::to_string(f) + ".png")),
                  depthbatch::output_role_name(OutputRole::Preview));
    }
    EXPECT_EQ(role_of(dir / "summary/s.json"), depthbatch::output_role_name(OutputRole::Summary));
    EXPECT_EQ(role_of(dir / "shot/out/d.stats.json"), depthbatch::output_role_name(OutputRole::StatsSidecar));
    for (const char* sheet : {"sheet/shot.png", "sheet/shot.html", "review/again.png", "review/again.html"})
        EXPECT_EQ(role_of(dir / sheet), depthbatch::output_role_name(OutputRole::ReviewSheet)) << sheet;
    EXPECT_EQ(role_of(dir / "farm/.depthbatch-submit"), depthbatch::output_role_name(OutputRole::FarmFile));
    EXPECT_EQ(role_of(dir / "farm/job.template.yaml"), depthbatch::output_role_name(OutputRole::FarmFile));
    for (const char* solve : {"shot/out/d.camera.chan", "shot/out/d.camera.usda", "shot/out/d.camera.json"})
        EXPECT_EQ(role_of(dir / solve), depthbatch::output_role_name(OutputRole::CameraSolve)) << solve;
}
