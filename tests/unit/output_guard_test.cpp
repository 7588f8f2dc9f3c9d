// Unit tests for src/output/output_guard.h: every spelling of a path that is an input of the job (patterns, `..`,
// symbolic and hard links) is refused for every role, roles never write over one another, an existing file is
// replaced only by its own kind, and names that cannot exist are refused before anything is written.
#include "job_outputs.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/job_config.h"
#include "support/test_support.h"

#include <OpenImageIO/imagebuf.h>
#include <OpenImageIO/imagebufalgo.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <set>
#include <vector>

using namespace depthbatch;
using namespace depthbatch::test;

namespace {

void write_text(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
}

std::string read_text(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

/// A job over four JPEG-named plates in `dir`/pl, its job file and a model file beside it.
JobConfig job_in(const fs::path& dir, const std::string& extra = "") {
    for (int f = 1001; f <= 1004; ++f)
        write_text(dir / ("pl/p." + std::to_string(f) + ".jpg"), "plate " + std::to_string(f));
    write_text(dir / "model.pt", "model");
    const std::string text = "input: {path: pl/p.####.jpg, frames: 1001-1004}\nmodel: {path: model.pt}\n" +
                             (extra.rfind("output:", 0) == 0 ? extra : "output: {path: out/d.####.exr}\n" + extra);
    write_text(dir / "job.yaml", text);
    return load_job((dir / "job.yaml").string());
}

OutputGuard guard_for(const JobConfig& job) { return job_output_guard(job, job.input.frames, job.model.path); }

/// Every role of the table (src/output/output_roles.h).
std::vector<OutputRole> all_roles() {
    std::vector<OutputRole> roles;
    for (const OutputRoleRow& row : output_roles()) roles.push_back(row.role);
    return roles;
}

}  // namespace

TEST(OutputGuard, EverySpellingOfAPlateIsRefusedForEveryRole) {
    TempDir t;
    const JobConfig job = job_in(t.path);
    fs::create_directories(t / "sub");
    fs::create_symlink(t / "pl/p.1001.jpg", t / "soft.json");
    fs::create_hard_link(t / "pl/p.1002.jpg", t / "hard.json");
    fs::create_directory_symlink(t / "pl", t / "plates_link");
    const OutputGuard g = guard_for(job);
    const std::vector<std::string> spellings = {
        (t / "pl/p.1003.jpg").string(),   (t / "sub/../pl/p.1003.jpg").string(),
        (t / "pl/./p.1004.jpg").string(), (t / "plates_link/p.1001.jpg").string(),
        (t / "soft.json").string(),       (t / "hard.json").string(),
        (t / "pl//p.1002.jpg").string()};
    for (const std::string& path : spellings)
        for (OutputRole role : all_roles()) {
            const std::string msg = expect_error<ConfigError>([&] { g.check(path, role, "some.key"); }, path);
            EXPECT_TRUE(contains(msg, "some.key: ")) << msg;
            EXPECT_TRUE(contains(msg, "is plate frame 100")) << path << ": " << msg;
        }
    // The plates are untouched.
    EXPECT_EQ(read_text(t / "pl/p.1003.jpg"), "plate 1003");
}

TEST(OutputGuard, TheJobFileModelAndOcioConfigAreInputs) {
    TempDir t;
    write_text(t / "my.ocio", "ocio");
    const JobConfig job = job_in(t.path, "color: {config: my.ocio}\n");
    const OutputGuard g = guard_for(job);
    EXPECT_TRUE(contains(
        expect_error<ConfigError>([&] { g.check((t / "job.yaml").string(), OutputRole::Summary, "pipeline.summary"); }),
        "is the job file"));
    EXPECT_TRUE(
        contains(expect_error<ConfigError>([&] { g.check((t / "pl/../model.pt").string(), OutputRole::Preview, "k"); }),
                 "is the model"));
    EXPECT_TRUE(
        contains(expect_error<ConfigError>([&] { g.check((t / "my.ocio").string(), OutputRole::ReviewSheet, "k"); }),
                 "is the OCIO config"));
}

// Issue 32 §7: the camera's .chan file and the OCIO config in force ($OCIO when the job names none) are inputs of
// the job: writing over them is refused as such, never as "a file of another kind: delete it".
TEST(OutputGuard, TheChanFileAndTheOcioConfigInForceAreInputsNeverToDelete) {
    TempDir t;
    write_text(t / "cam.chan", "1001 0 0 0 0 0 0 40\n");
    write_text(t / "studio.ocio", "ocio");
    const JobConfig job = job_in(t.path, "camera: {chan: cam.chan}\n");
    const char* before = std::getenv("OCIO");
    const std::string saved = before ? before : "";
    ::setenv("OCIO", (t / "studio.ocio").string().c_str(), 1);
    const OutputGuard g = guard_for(job);
    if (before) ::setenv("OCIO", saved.c_str(), 1);
    else ::unsetenv("OCIO");
    const std::string chan = (t / "cam.chan").string(), ocio = (t / "studio.ocio").string();
    EXPECT_EQ(expect_error<ConfigError>([&] { g.check(chan, OutputRole::Summary, "pipeline.summary"); }),
              "pipeline.summary: " + chan +
                  " is the camera's .chan file (camera.chan): refusing to write a JSON summary over an "
                  "input of the job; choose another path for the JSON summary");
    EXPECT_EQ(expect_error<ConfigError>([&] { g.check(ocio, OutputRole::ReviewSheet, "review --out"); }),
              "review --out: " + ocio +
                  " is the OCIO config in force: refusing to write a review sheet over an input of "
                  "the job; choose another path for the review sheet");
    EXPECT_EQ(read_text(t / "cam.chan"), "1001 0 0 0 0 0 0 40\n");
}

TEST(OutputGuard, PatternsOfAnotherRoleAreRefusedInEverySpelling) {
    TempDir t;
    const JobConfig job = job_in(t.path);
    const OutputGuard g = guard_for(job);
    for (const std::string pattern :
         {"out/d.####.exr", "out/d.%04d.exr", "out/d.$F4.exr", "out/d.@@@@.exr", "x/../out/d.####.exr"}) {
        const FrameSequence seq((t / pattern).string());
        const std::string msg =
            expect_error<ConfigError>([&] { g.check(seq.path(1002), OutputRole::Preview, "output.preview"); }, pattern);
        EXPECT_TRUE(contains(msg, "is also output.path (depth frame 1002)")) << msg;
    }
    // The depth frames themselves pass as depth frames.
    g.check((t / "out/d.1002.exr").string(), OutputRole::DepthFrame, "output.path");
}

TEST(OutputGuard, PreflightRefusesPreviewsSummaryAndReviewOverPlatesBeforeAnythingIsWritten) {
    TempDir t;
    JobConfig job = job_in(t.path, "output: {path: out/d.####.exr, preview: pl/p.####.jpg}\n");
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { guard_for(job).preflight({1001}); }), "output.preview: "));
    job.output.preview.path.clear();
    job.pipeline.summary = (t / "pl/p.1004.jpg").string();
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { guard_for(job).preflight({1001}); }), "pipeline.summary: "));
    job.pipeline.summary.clear();
    job.pipeline.review = (t / "pl/p.1002.jpg").string();
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { guard_for(job).preflight({1001}); }), "pipeline.review: "));
    // A summary path that is a hard link to a plate is the plate, though its name is the summary's.
    fs::create_hard_link(t / "pl/p.1003.jpg", t / "hard.json");
    job.pipeline.summary = (t / "hard.json").string();
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { guard_for(job).preflight({1001}); }), "is plate frame 1003"));
    job.pipeline.review = (t / "out/review.png").string();
    job.pipeline.summary = (t / "out/d.1003.exr").string();  // a summary named like a depth frame
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { guard_for(job).preflight({1001}); }), "is also output.path"));
    EXPECT_FALSE(fs::exists(t / "out"));
}

TEST(OutputGuard, AFileIsReplacedOnlyByItsOwnKind) {
    TempDir t;
    write_text(t / "a.json", "{\"not\": \"ours\"}");
    write_text(t / "s.json", "{\n \"schema\": \"depthbatch-summary/1\",\n \"x\": 1}");
    write_text(t / "stats.json", "{\n \"format\": 1,\n \"what\": \"depthbatch sequence statistics: ...\"}");
    write_text(t / "page.html", "<html><head><meta name=\"generator\" content=\"depthbatch review\">");
    write_text(t / "other.html", "<html>someone's page</html>");
    write_text(t / "empty.json", "");
    EXPECT_FALSE(kind_marker_holds((t / "a.json").string(), OutputRole::Summary));
    EXPECT_TRUE(kind_marker_holds((t / "s.json").string(), OutputRole::Summary));
    EXPECT_FALSE(kind_marker_holds((t / "s.json").string(), OutputRole::StatsSidecar));
    EXPECT_TRUE(kind_marker_holds((t / "stats.json").string(), OutputRole::StatsSidecar));
    EXPECT_FALSE(kind_marker_holds((t / "stats.json").string(), OutputRole::Summary));
    EXPECT_TRUE(kind_marker_holds((t / "page.html").string(), OutputRole::ReviewSheet));
    EXPECT_FALSE(kind_marker_holds((t / "other.html").string(), OutputRole::ReviewSheet));
    EXPECT_TRUE(kind_marker_holds((t / "empty.json").string(), OutputRole::Summary));
    EXPECT_TRUE(kind_marker_holds((t / "absent.json").string(), OutputRole::Summary));
    EXPECT_FALSE(kind_marker_holds((t / "a.json").string(), OutputRole::DepthFrame));  // not an EXR
    EXPECT_FALSE(kind_marker_holds(t.path.string(), OutputRole::Summary));             // a folder
    // Images: a preview only over a file marked "depthbatch preview"; a plate-like JPEG is not one.
    OIIO::ImageBuf img(OIIO::ImageSpec(8, 8, 3, OIIO::TypeDesc::UINT8));
    OIIO::ImageBufAlgo::fill(img, {0.5f, 0.5f, 0.5f});
    for (const std::string ext : {".jpg", ".png", ".tif"}) {
        const std::string plain = (t / ("plain" + ext)).string(), marked = (t / ("marked" + ext)).string();
        ASSERT_TRUE(img.write(plain));
        OIIO::ImageBuf m = img;
        m.specmod().attribute("ImageDescription", output_marker::preview);
        ASSERT_TRUE(m.write(marked));
        EXPECT_FALSE(kind_marker_holds(plain, OutputRole::Preview)) << ext;
        EXPECT_TRUE(kind_marker_holds(marked, OutputRole::Preview)) << ext;
    }
    // Publication::open refuses before a temporary exists; publish replaces its own kind.
    const std::string msg = expect_error<ConfigError>(
        [&] { OutputGuard().open((t / "a.json").string(), OutputRole::Summary, "--summary"); });
    EXPECT_TRUE(contains(msg, "--summary: ")) << msg;
    EXPECT_TRUE(contains(msg, "is not a depthbatch JSON summary")) << msg;
    EXPECT_EQ(read_text(t / "a.json"), "{\"not\": \"ours\"}");
    {
        Publication p = OutputGuard().open((t / "s.json").string(), OutputRole::Summary, "--summary");
        std::ofstream(p.temp_path()) << "{\n \"schema\": \"depthbatch-summary/1\",\n \"x\": 2}";
        p.publish(true);
    }
    EXPECT_TRUE(contains(read_text(t / "s.json"), "\"x\": 2"));
    // A file of another kind that appears while writing is not replaced.
    {
        Publication p = OutputGuard().open((t / "late.json").string(), OutputRole::Summary, "--summary");
        std::ofstream(p.temp_path()) << "{\n \"schema\": \"depthbatch-summary/1\"}";
        write_text(t / "late.json", "someone else's");
        EXPECT_TRUE(contains(expect_error<ConfigError>([&] { p.publish(true); }), "appeared while writing"));
    }
    EXPECT_EQ(read_text(t / "late.json"), "someone else's");
    for (const auto& e : fs::directory_iterator(t.path))
        EXPECT_FALSE(contains(e.path().filename().string(), ".tmp")) << "temporary left: " << e.path();
}

TEST(OutputGuard, NamesTheFileSystemCannotHoldAreConfigErrorsAndLongLegalNamesGetATemporary) {
    TempDir t;
    const std::string too_long_name = std::string(NAME_MAX + 1, 'n');
    EXPECT_TRUE(
        contains(expect_error<ConfigError>([&] { check_path_fits((t / too_long_name).string(), "pipeline.summary"); }),
                 "pipeline.summary: the name"));
    std::string deep = t.path.string();
    while (deep.size() < PATH_MAX + 10) deep += "/abcdefghij";
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { check_path_fits(deep, "output.path"); }), "PATH_MAX"));
    // A legal 245-byte name: its temporary (".name.host.pid.n.tmp") must still fit NAME_MAX.
    const std::string legal = (t / (std::string(245, 'a') + ".json")).string();
    check_path_fits(legal, "k");
    {
        Publication p = OutputGuard().open(legal, OutputRole::Summary, "k");
        EXPECT_LE(fs::path(p.temp_path()).filename().string().size(), static_cast<size_t>(NAME_MAX));
        std::ofstream out(p.temp_path());
        out << "{\"schema\": \"depthbatch-summary/1\"}";
        out.close();
        ASSERT_TRUE(out.good()) << "the temporary could not be written";
        p.publish(true);
    }
    EXPECT_TRUE(fs::exists(legal));
}

TEST(OutputGuard, FarmFilesReplaceOnlyWhatAnEarlierSubmitWrote) {
    TempDir t;
    write_text(t / "farm/render.sbatch", "#!/bin/sh\n# a studio's own script\n");
    EXPECT_FALSE(kind_marker_holds((t / "farm/render.sbatch").string(), OutputRole::FarmFile));
    write_text(t / "farm" / output_marker::farm_manifest, "# files written by depthbatch submit\nrender.sbatch\n");
    EXPECT_TRUE(kind_marker_holds((t / "farm/render.sbatch").string(), OutputRole::FarmFile));
    EXPECT_FALSE(kind_marker_holds((t / "farm/x.sh").string(), OutputRole::FarmFile) && fs::exists(t / "farm/x.sh"));
}

// The role table (src/output/output_roles.h) is the one place a role is described: one row per OutputRole, in
// order, each with a name, a key and a marker; the guard's paths of a job are the rows' paths.
TEST(OutputRoles, OneRowPerRoleAndTheGuardRegistersEveryRowsPaths) {
    const auto& rows = output_roles();
    ASSERT_EQ(rows.size(), 7u);
    std::set<std::string> names;
    for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(static_cast<size_t>(rows[i].role), i) << rows[i].name;
        EXPECT_TRUE(names.insert(rows[i].name).second) << "two rows named " << rows[i].name;
        EXPECT_NE(std::string(rows[i].key), "");
        EXPECT_NE(rows[i].marker_holds, nullptr);
        EXPECT_EQ(&output_role(rows[i].role), &rows[i]);
    }
    EXPECT_EQ(std::string(output_role_name(OutputRole::StatsSidecar)), "sequence statistics sidecar");
    EXPECT_EQ(output_role(OutputRole::DepthFrame).replace, ReplacePolicy::OutputOverwrite);
    EXPECT_EQ(output_role(OutputRole::Summary).replace, ReplacePolicy::OwnKind);
    // The statistics sidecar's default path is the row's (one rule: depth.stats_file, else beside the frames).
    TempDir t;
    JobConfig job = job_in(t.path,
                           "depth: {convention: normalized, normalize: sequence}\n"
                           "pipeline: {summary: s.json, review: sheet/r.png}\n");
    EXPECT_EQ(job_output_path(job, OutputRole::StatsSidecar), (t / "out/d.stats.json").string());
    EXPECT_EQ(job_output_paths(job, OutputRole::StatsSidecar),
              std::vector<std::string>{(t / "out/d.stats.json").string()});
    EXPECT_EQ(job_output_paths(job, OutputRole::ReviewSheet),
              (std::vector<std::string>{(t / "sheet/r.png").string(), (t / "sheet/r.html").string()}));
    EXPECT_EQ(job_output_path(job, OutputRole::FarmFile), "");
    // Every row's paths are outputs of the job's guard: another role may not write there.
    const OutputGuard g = guard_for(job);
    for (const auto& [path, role] :
         std::vector<std::pair<std::string, OutputRole>>{{(t / "out/d.stats.json").string(), OutputRole::StatsSidecar},
                                                         {(t / "s.json").string(), OutputRole::Summary},
                                                         {(t / "sheet/r.html").string(), OutputRole::ReviewSheet},
                                                         {(t / "out/d.1002.exr").string(), OutputRole::DepthFrame}}) {
        g.check(path, role, "k");
        EXPECT_TRUE(
            contains(expect_error<ConfigError>([&] { g.check(path, OutputRole::FarmFile, "submit --out"); }, path),
                     "refusing to write one output over another"));
    }
    job.depth.normalize = Normalization::Frame;
    EXPECT_EQ(job_output_path(job, OutputRole::StatsSidecar), "");
}

// The guard is the door: every Publication comes from OutputGuard::open (Publication::open is private), each
// open is told to the debug hook with its role, and a key left out is the role's key from the table.
TEST(OutputGuard, EveryOpenIsToldToTheHookWithItsRole) {
    TempDir t;
    std::vector<std::pair<std::string, OutputRole>> seen;
    const auto previous =
        detail::set_open_observer([&](const std::string& p, OutputRole r) { seen.emplace_back(p, r); });
    {
        Publication p = OutputGuard().open((t / "a/s.json").string(), OutputRole::Summary);
        EXPECT_EQ(p.key(), "pipeline.summary");
        EXPECT_EQ(p.role(), OutputRole::Summary);
        EXPECT_TRUE(fs::is_directory(t / "a")) << "the guard's open makes the folder";
        const std::string scratch = p.scratch_path();
        EXPECT_NE(scratch, p.temp_path());
        EXPECT_EQ(fs::path(scratch).parent_path(), t / "a");
        std::ofstream(scratch) << "staging";
    }  // never published: both temporaries go
    EXPECT_TRUE(list_dir(t / "a").empty());
    detail::set_open_observer(previous);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].first, (t / "a/s.json").string());
    EXPECT_EQ(seen[0].second, OutputRole::Summary);
}

// One guard for every command: model.path "default" is the prepared model the job would load, an input of the job
// for review, submit and the failure summary too (each built its own guard and mapped "default" to "" before).
TEST(OutputGuard, TheDefaultModelIsAnInputOfEveryCommandsGuard) {
    TempDir t;
    JobConfig job = job_in(t.path);
    job.model.path = "default";
    write_text(t / "prepared.pt", "model");
    ::setenv("DEPTHBATCH_DEFAULT_MODEL", (t / "prepared.pt").string().c_str(), 1);
    const OutputGuard g = job_output_guard(job);
    ::unsetenv("DEPTHBATCH_DEFAULT_MODEL");
    EXPECT_TRUE(contains(
        expect_error<ConfigError>([&] { g.check((t / "prepared.pt").string(), OutputRole::FarmFile, "submit --out"); }),
        "is the model"));
    EXPECT_EQ(read_text(t / "prepared.pt"), "model");
}
