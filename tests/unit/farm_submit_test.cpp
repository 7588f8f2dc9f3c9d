// Unit tests for include/depthbatch/farm_submit.h: how a job is cut for a farm and the files each engine gets.
// The engines' own tools check these files for real in tests/integration/farm_test.cpp.
#include "depthbatch/error.h"
#include "depthbatch/farm_submit.h"
#include "depthbatch/frame_sequence.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>

using namespace depthbatch;
using test::contains;
using test::expect_error;

namespace {

JobConfig job_of(const std::string& frames, const std::vector<std::string>& sets = {}) {
    std::vector<std::string> all = {"input.frames=" + frames};
    all.insert(all.end(), sets.begin(), sets.end());
    return parse_job("input:\n  path: /plates/a.####.exr\noutput:\n  path: /renders/a/d.####.exr\n", "yaml", "shot.yaml",
                     "/jobs", all);
}

SubmitOptions options(FarmEngine engine, int chunk_size) {
    SubmitOptions o;
    o.engine = engine;
    o.job_path = "/jobs/shot.yaml";
    o.chunk_size = chunk_size;
    o.out_dir = "/jobs/shot.farm";
    o.executable = "/opt/depthbatch/bin/depthbatch";
    return o;
}

std::map<std::string, std::string> files_of(const FarmPlan& plan, const SubmitOptions& o) {
    std::map<std::string, std::string> m;
    for (const auto& [name, text] : farm_job_files(plan, o)) m[name] = text;
    return m;
}

}  // namespace

TEST(FarmPlan, ChunksOfTheShot) {
    const FarmPlan p = plan_farm_job(job_of("1001-1100"), options(FarmEngine::Slurm, 10));
    EXPECT_EQ(p.name, "shot");
    EXPECT_EQ(p.frames.size(), 100u);
    EXPECT_EQ(p.chunk_size, 10);
    EXPECT_EQ(p.chunks, 10);
    EXPECT_FALSE(p.needs_stats);
    EXPECT_EQ(p.note, "");
    const FarmPlan q = plan_farm_job(job_of("1001-1101", {"depth.normalize=sequence"}), options(FarmEngine::Slurm, 10));
    EXPECT_EQ(q.chunks, 11);   // 101 frames: the 11th chunk is not dropped
    EXPECT_TRUE(q.needs_stats);
    EXPECT_TRUE(contains(expect_error<ConfigError>([] { plan_farm_job(job_of("1-5"), options(FarmEngine::Slurm, 0)); }),
                         "--chunk-size"));
}

// Slurm refuses array indices at or above MaxArraySize (1001 by default): 4000 frames in chunks of 2 would need
// indices up to 2000. The plan raises the chunk size to the smallest that fits and says so with the numbers.
TEST(FarmPlan, SlurmChunksFitMaxArraySize) {
    SubmitOptions o = options(FarmEngine::Slurm, 2);
    o.max_array_size = 1001;
    const FarmPlan p = plan_farm_job(job_of("1001-5000"), o);
    EXPECT_EQ(p.chunk_size, 4);
    EXPECT_EQ(p.chunks, 1000);                        // indices 1-1000, all below 1001
    EXPECT_TRUE(contains(p.note, "2000 chunks of 2 frames")) << p.note;
    EXPECT_TRUE(contains(p.note, "MaxArraySize is 1001")) << p.note;
    o.max_array_size = 5;
    const FarmPlan q = plan_farm_job(job_of("1-10"), o);
    EXPECT_EQ(q.chunks, 4);                           // indices 1-4 < 5
    EXPECT_EQ(q.chunk_size, 3);
    o.engine = FarmEngine::Tractor;                   // the limit is Slurm's only
    EXPECT_EQ(plan_farm_job(job_of("1-10"), o).chunks, 5);
}

TEST(FarmFiles, SlurmArrayOfChunksAfterTheStatisticsJob) {
    SubmitOptions o = options(FarmEngine::Slurm, 8);
    o.partition = "gpu";
    o.gpus_per_task = 1;
    o.sets = {"model.size=518"};
    const FarmPlan p = plan_farm_job(job_of("1001-1024", {"depth.normalize=sequence"}), o);
    auto files = files_of(p, o);
    ASSERT_EQ(files.size(), 2u);
    const std::string& r = files["render.sbatch"];
    EXPECT_TRUE(contains(r, "#SBATCH --array=1-3\n")) << r;
    EXPECT_TRUE(contains(r, "#SBATCH --partition=gpu\n")) << r;
    EXPECT_TRUE(contains(r, "#SBATCH --gpus-per-task=1\n")) << r;
    EXPECT_TRUE(contains(r, "#SBATCH --output=/jobs/shot.farm/logs/shot.%A_%a.log\n")) << r;
    EXPECT_TRUE(contains(r, "exec '/opt/depthbatch/bin/depthbatch' '/jobs/shot.yaml' --chunk \"${SLURM_ARRAY_TASK_ID}/3\" "
                            "--skip-existing")) << r;
    EXPECT_TRUE(contains(r, "'--set' 'model.size=518'")) << r;
    EXPECT_TRUE(contains(files["stats.sbatch"], "exec '/opt/depthbatch/bin/depthbatch' 'stats' '/jobs/shot.yaml' '--set' "
                                                "'model.size=518'\n"));
    o.out_dir = "/jobs/my shot.farm";
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { farm_job_files(p, o); }), "#SBATCH --output"));
}

TEST(FarmFiles, OpenJDChunkedFrameParameter) {
    SubmitOptions o = options(FarmEngine::OpenJD, 5);
    o.target_runtime_s = 300;
    const auto plain = files_of(plan_farm_job(job_of("1001-1024"), o), o)["job.template.yaml"];
    EXPECT_TRUE(contains(plain, "extensions:\n  - TASK_CHUNKING\n")) << plain;
    EXPECT_TRUE(contains(plain, "type: CHUNK[INT]\n          range: \"1001-1024\"\n")) << plain;
    EXPECT_TRUE(contains(plain, "defaultTaskCount: 5\n            targetRuntimeSeconds: 300\n            rangeConstraint: "
                                "CONTIGUOUS\n")) << plain;
    EXPECT_TRUE(contains(plain, "- '{{Task.Param.Frame}}'")) << plain;
    EXPECT_FALSE(contains(plain, "SequenceStatistics"));
    // Every other frame: contiguous chunks would be one frame each; non-contiguous ones read as "1001-1009:2".
    const auto stepped = files_of(plan_farm_job(job_of("1001-1047x2", {"depth.normalize=sequence"}), o), o)["job.template.yaml"];
    EXPECT_TRUE(contains(stepped, "range: \"1001-1047:2\"")) << stepped;
    EXPECT_TRUE(contains(stepped, "rangeConstraint: NONCONTIGUOUS")) << stepped;
    EXPECT_TRUE(contains(stepped, "dependencies:\n      - dependsOn: SequenceStatistics\n")) << stepped;
    EXPECT_EQ(openjd_range_expression(parse_frame_spec("1001-1005,1010-1020x5")), "1001-1005,1010-1020:5");
}

TEST(FarmFiles, DeadlineCommandLineJobWithFrameTokens) {
    const SubmitOptions o = options(FarmEngine::Deadline, 10);
    auto files = files_of(plan_farm_job(job_of("1001-1100x2", {"depth.normalize=sequence"}), o), o);
    EXPECT_TRUE(contains(files["job_info.job"], "Plugin=CommandLine\n")) << files["job_info.job"];
    EXPECT_TRUE(contains(files["job_info.job"], "Frames=1001-1099x2\nChunkSize=10\n")) << files["job_info.job"];
    EXPECT_TRUE(contains(files["job_info.job"], "OutputDirectory0=/renders/a\nOutputFilename0=d.####.exr\n"));
    EXPECT_TRUE(contains(files["plugin_info.job"], "Executable=/opt/depthbatch/bin/depthbatch\n"
                                                   "Arguments=/jobs/shot.yaml --range <STARTFRAME>-<ENDFRAME> --skip-existing\n"));
    EXPECT_TRUE(contains(files["stats_plugin_info.job"], "Arguments=stats /jobs/shot.yaml\n"));
    EXPECT_TRUE(contains(files["submit.sh"], "JobDependencies=$stats")) << files["submit.sh"];
}

TEST(FarmFiles, TractorOneTaskPerChunkAfterTheStatistics) {
    const SubmitOptions o = options(FarmEngine::Tractor, 4);
    const FarmPlan p = plan_farm_job(job_of("1001-1010", {"depth.normalize=sequence"}), o);
    const std::string alf = files_of(p, o)["job.alf"];
    EXPECT_TRUE(contains(alf, "Job -title {depthbatch shot} -serialsubtasks 1 -subtasks {")) << alf;
    EXPECT_LT(alf.find("sequence statistics"), alf.find("chunk 1/3"));
    EXPECT_TRUE(contains(alf, "Task -title {chunk 1/3: frames 1001-1003} -cmds {")) << alf;
    EXPECT_TRUE(contains(alf, "Task -title {chunk 3/3: frames 1007-1010} -cmds {")) << alf;
    EXPECT_TRUE(contains(alf, "RemoteCmd {{/opt/depthbatch/bin/depthbatch} {/jobs/shot.yaml} {--chunk} {2/3} "
                              "{--skip-existing}} -service {depthbatch}")) << alf;
    SubmitOptions braced = o;
    braced.job_path = "/jobs/{shot}.yaml";
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { farm_job_files(p, braced); }), "Tractor"));
}

TEST(FarmFiles, OpenCueShellLayerWithFrameTokens) {
    const SubmitOptions o = options(FarmEngine::OpenCue, 4);
    const std::string py = files_of(plan_farm_job(job_of("1001-1010", {"depth.normalize=sequence"}), o), o)["opencue_submit.py"];
    EXPECT_TRUE(contains(py, "\"--range\", \"#FRAME_START#-#FRAME_END#\", \"--skip-existing\"]")) << py;
    EXPECT_TRUE(contains(py, "range=\"1001-1010\", chunk=4)")) << py;
    EXPECT_TRUE(contains(py, "render.depend_all(stats)")) << py;
    EXPECT_TRUE(contains(py, "use_pycuerun=False")) << py;
}

TEST(FarmFiles, ShellQuoteKeepsEveryByte) {
    EXPECT_EQ(shell_quote("plain"), "'plain'");
    EXPECT_EQ(shell_quote("it's $HOME"), "'it'\\''s $HOME'");
    EXPECT_EQ(farm_engine_from_name("openjd"), FarmEngine::OpenJD);
    EXPECT_TRUE(contains(expect_error<ConfigError>([] { farm_engine_from_name("qube"); }), "slurm, openjd"));
}
