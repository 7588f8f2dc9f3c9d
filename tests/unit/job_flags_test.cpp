// Unit tests for include/depthbatch/job_flags.h, and the command-line defaults the library now owns
// (farm_command.h: JOB.farm; review.h: the review sheet's paths).
#include "depthbatch/error.h"
#include "depthbatch/farm_command.h"
#include "depthbatch/install_layout.h"
#include "depthbatch/job_flags.h"
#include "depthbatch/review.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

using namespace depthbatch;
using test::contains;
using test::expect_error;

namespace {
const char* kJob =
    "input:\n  path: /plates/a.####.exr\n  frames: 1001-1100\noutput:\n  path: /depth/a_depth.####.exr\n";
}

TEST(JobFlags, FlagsBecomeKeysAndThisRunsFrames) {
    test::TempDir dir;
    const auto job_path = test::write_job(dir / "shot.yaml", kJob).string();
    JobFlags f;
    f.chunk = "3/8";
    f.device = "cpu";
    f.skip_existing = true;
    f.threads = "010";
    f.sets = {"model.size=256"};
    const JobConfig job = load_job_with_flags(job_path, f);
    EXPECT_EQ(job.render.chunk_index, 3);
    EXPECT_EQ(job.render.chunk_count, 8);
    EXPECT_FALSE(job.render.range);
    EXPECT_EQ(job.output.overwrite, OverwritePolicy::Skip);
    EXPECT_EQ(job.pipeline.threads, 10);
    JobFlags r;
    r.range = "1005-1010";
    r.frames = "1001-1003";
    const JobConfig ranged = load_job_with_flags(job_path, r);
    EXPECT_EQ(ranged.render.range, std::make_pair(1005, 1010));
    EXPECT_EQ(ranged.render.frames, (std::vector<int>{1001, 1002, 1003}));
}

TEST(JobFlags, BadValuesAreErrorsNamingTheFlag) {
    test::TempDir dir;
    const auto job_path = test::write_job(dir / "shot.yaml", kJob).string();
    JobFlags f;
    f.chunk = "0/8";
    EXPECT_EQ(expect_error<ConfigError>([&] { load_job_with_flags(job_path, f); }),
              "--chunk '0/8': expected I/N with 1 <= I <= N, e.g. 3/8 (the 3rd of 8 chunks; an unset "
              "$SLURM_ARRAY_TASK_ID gives '/8')");
    JobFlags empty;
    empty.frames_given = true;
    EXPECT_EQ(expect_error<ConfigError>([&] { load_job_with_flags(job_path, empty); }),
              "--frames is empty (an unset $CHUNK?): give a frame spec such as 1001-1050");
    JobFlags junk;
    junk.frames = "x";
    EXPECT_EQ(expect_error<ConfigError>([&] { load_job_with_flags(job_path, junk); }).rfind("--frames: ", 0), 0u);
    EXPECT_EQ(empty_value_error("--chunk"),
              "--chunk is given an empty value (an unset variable in the command?): give "
              "a value, or leave --chunk out");
}

TEST(JobFlags, AnEmptyValueAfterEqualsIsFoundBeforeCLI11ReadsIt) {
    const char* bare[] = {"depthbatch", "shot.yaml", "--summary=", "--skip-existing"};
    EXPECT_EQ(flag_with_empty_equals(4, bare), "--summary");
    const char* fine[] = {"depthbatch", "shot.yaml", "--summary=s.json", "--=", "x="};
    EXPECT_EQ(flag_with_empty_equals(5, fine), "");
}

TEST(FarmCommand, DefaultFolderIsJobDotFarmBesideTheJob) {
    EXPECT_EQ(default_farm_dir("/shows/a/shot.yaml"), "/shows/a/shot.farm");
    EXPECT_EQ(default_farm_dir("/shows/a/shot.v2.toml"), "/shows/a/shot.v2.farm");
    SubmitFlags f;
    f.job = "jobs/shot.yaml";
    const SubmitOptions o = submit_options(f, "/work/show");
    EXPECT_EQ(o.job_path, "/work/show/jobs/shot.yaml");
    EXPECT_EQ(o.out_dir, "/work/show/jobs/shot.farm");
    EXPECT_EQ(o.engine, FarmEngine::Slurm);
    EXPECT_EQ(o.chunk_size, 10);
    EXPECT_TRUE(o.chunk_size_default);
    EXPECT_EQ(o.gpus_per_task, -1);
    EXPECT_EQ(o.executable, (executable_dir() / "depthbatch").string());
    f.out = "farm";
    f.chunk_size = "7";
    f.engine = "tractor";
    const SubmitOptions given = submit_options(f, "/work/show");
    EXPECT_EQ(given.out_dir, "/work/show/farm");
    EXPECT_EQ(given.chunk_size, 7);
    EXPECT_FALSE(given.chunk_size_default);
    f.chunk_size = "0";
    EXPECT_EQ(expect_error<ConfigError>([&] { submit_options(f, "/w"); }),
              "--chunk-size '0': expected a whole number from 1 to 1000000");
    f.chunk_size = "", f.target_runtime = "x";
    EXPECT_EQ(expect_error<ConfigError>([&] { submit_options(f, "/w"); }),
              "--target-runtime 'x': expected a whole number from 0 to 604800");
}

TEST(ReviewTarget, FlagElseJobKeyElseBesideTheOutputs) {
    test::TempDir dir;
    JobConfig job = load_job(test::write_job(dir / "shot.yaml", kJob).string(), std::vector<std::string>{});
    const ReviewTarget by_default = review_target(job, "", "/cwd");
    EXPECT_EQ(by_default.out, "/depth/shot.review.png");
    EXPECT_EQ(by_default.key, "review (default path)");
    const ReviewTarget flag = review_target(job, "sheets/s.html", "/cwd");
    EXPECT_EQ(flag.out, "/cwd/sheets/s.html");
    EXPECT_EQ(flag.key, "review --out");
    job.pipeline.review = "/r/s.png";
    EXPECT_EQ(review_target(job, "", "/cwd").out, "/r/s.png");
    EXPECT_EQ(review_target(job, "", "/cwd").key, "pipeline.review");
}
