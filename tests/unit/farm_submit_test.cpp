// Unit tests for include/depthbatch/farm_submit.h: how a job is cut for a farm and the files each engine gets.
// The engines' own tools check these files for real in tests/integration/farm_test.cpp.
#include "depthbatch/error.h"
#include "depthbatch/farm_submit.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/log.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

using namespace depthbatch;
using test::contains;
using test::expect_error;

namespace {

JobConfig job_of(const std::string& frames, const std::vector<std::string>& sets = {}) {
    std::vector<std::string> all = {"input.frames=" + frames};
    all.insert(all.end(), sets.begin(), sets.end());
    return parse_job("input:\n  path: /plates/a.####.exr\noutput:\n  path: /renders/a/d.####.exr\n", "yaml",
                     "shot.yaml", "/jobs", all);
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
    EXPECT_EQ(q.chunks, 11);  // 101 frames: the 11th chunk is not dropped
    EXPECT_TRUE(q.needs_stats);
    EXPECT_TRUE(contains(expect_error<ConfigError>([] { plan_farm_job(job_of("1-5"), options(FarmEngine::Slurm, 0)); }),
                         "--chunk-size"));
}

// Issue 41 §5: what the submit log says of the chunks is what the tasks render. Slurm and Tractor tasks run
// --chunk I/N (equal shares, as the render cuts them); Deadline, OpenJD and OpenCue cut the list into chunk_size.
TEST(FarmPlan, TheChunksSaidAreTheFramesEachTaskRenders) {
    const FarmPlan p = plan_farm_job(job_of("1001-1100"), options(FarmEngine::Slurm, 30));
    EXPECT_EQ(p.chunks, 4);
    EXPECT_EQ(task_frame_counts(p, FarmEngine::Slurm), (std::vector<int>{25, 25, 25, 25}));
    for (int i = 1; i <= p.chunks; ++i) EXPECT_EQ(chunk_frames(p.frames, i, p.chunks).size(), 25u);
    EXPECT_EQ(describe_chunks(p, FarmEngine::Slurm), "4 chunks of 25 frames");
    EXPECT_EQ(describe_chunks(p, FarmEngine::Tractor), "4 chunks of 25 frames");
    EXPECT_EQ(task_frame_counts(p, FarmEngine::Deadline), (std::vector<int>{30, 30, 30, 10}));
    for (const FarmEngine e : {FarmEngine::Deadline, FarmEngine::OpenJD, FarmEngine::OpenCue})
        EXPECT_EQ(describe_chunks(p, e), "4 chunks of 30 frames (the last 10)");
    const FarmPlan q = plan_farm_job(job_of("1001-1100"), options(FarmEngine::Slurm, 34));
    EXPECT_EQ(describe_chunks(q, FarmEngine::Slurm), "3 chunks of 33-34 frames");
    EXPECT_EQ(describe_chunks(q, FarmEngine::Deadline), "3 chunks of 34 frames (the last 32)");
    EXPECT_EQ(describe_chunks(plan_farm_job(job_of("1-7"), options(FarmEngine::Slurm, 10)), FarmEngine::Slurm),
              "1 chunk of 7 frames");
    EXPECT_EQ(describe_chunks(plan_farm_job(job_of("1-3"), options(FarmEngine::Slurm, 1)), FarmEngine::OpenJD),
              "3 chunks of 1 frame");
}

// Slurm refuses array indices at or above MaxArraySize (1001 by default): 4000 frames in chunks of 2 would need
// indices up to 2000. The plan raises the chunk size to the smallest that fits and says so with the numbers.
TEST(FarmPlan, SlurmChunksFitMaxArraySize) {
    SubmitOptions o = options(FarmEngine::Slurm, 2);
    o.max_array_size = 1001;
    const FarmPlan p = plan_farm_job(job_of("1001-5000"), o);
    EXPECT_EQ(p.chunk_size, 4);
    EXPECT_EQ(p.chunks, 1000);  // indices 1-1000, all below 1001
    EXPECT_TRUE(contains(p.note, "2000 chunks of 2 frames")) << p.note;
    EXPECT_TRUE(contains(p.note, "MaxArraySize is 1001")) << p.note;
    o.max_array_size = 5;
    const FarmPlan q = plan_farm_job(job_of("1-10"), o);
    EXPECT_EQ(q.chunks, 4);  // indices 1-4 < 5
    EXPECT_EQ(q.chunk_size, 3);
    o.engine = FarmEngine::Tractor;  // the limit is Slurm's only
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
    EXPECT_TRUE(contains(r, "#SBATCH --output=logs/shot.%A_%a.log\n")) << r;  // relative to sbatch --chdir
    EXPECT_TRUE(contains(r,
                         "exec '/opt/depthbatch/bin/depthbatch' '/jobs/shot.yaml' --chunk \"${SLURM_ARRAY_TASK_ID}/3\" "
                         "--skip-existing"))
        << r;
    EXPECT_TRUE(contains(r, "'--set' 'model.size=518'")) << r;
    EXPECT_TRUE(contains(files["stats.sbatch"],
                         "exec '/opt/depthbatch/bin/depthbatch' 'stats' '/jobs/shot.yaml' '--set' "
                         "'model.size=518'\n"));
    o.partition = "gpu --wrap=rm";  // one token, or nothing reaches the #SBATCH line
    EXPECT_TRUE(contains(expect_error<ConfigError>([&] { farm_job_files(p, o); }), "--partition 'gpu --wrap=rm'"));
    o.partition = "gpu,cpu_2";
    EXPECT_NO_THROW(farm_job_files(p, o));
}

// Issue 26: a folder and a job stem that hold everything a file system allows. #SBATCH lines get only names
// depthbatch chose (farm_safe_name), relative to sbatch --chdir; every shell word is single-quoted.
TEST(FarmFiles, SlurmCarriesAnyPathOutsideTheSbatchLines) {
    SubmitOptions o = options(FarmEngine::Slurm, 2);
    o.job_path = "/jobs/shot 010 \"it's\" $(touch X) `touch Y` 100% \xc3\xa9/job 50%.yaml";
    o.out_dir = "/jobs/shot 010 \"it's\" $(touch X) `touch Y` 100% \xc3\xa9/job 50%.farm";
    const FarmPlan p = plan_farm_job(job_of("1001-1004", {"depth.normalize=sequence"}), o);
    EXPECT_EQ(p.name, "job 50%");
    EXPECT_EQ(p.safe_name, "job_50_");
    auto files = files_of(p, o);
    const std::string& r = files["render.sbatch"];
    EXPECT_TRUE(contains(r, "#SBATCH --job-name=depthbatch-job_50_\n")) << r;
    EXPECT_TRUE(contains(r, "#SBATCH --output=logs/job_50_.%A_%a.log\n")) << r;
    EXPECT_TRUE(contains(files["stats.sbatch"], "#SBATCH --output=logs/job_50_.stats.%j.log\n"))
        << files["stats.sbatch"];
    EXPECT_TRUE(contains(r,
                         "exec '/opt/depthbatch/bin/depthbatch' '/jobs/shot 010 \"it'\\''s\" $(touch X) `touch Y` 100% "
                         "\xc3\xa9/job 50%.yaml' --chunk"))
        << r;
    EXPECT_TRUE(
        contains(r,
                 "--summary '/jobs/shot 010 \"it'\\''s\" $(touch X) `touch Y` 100% \xc3\xa9/job 50%.farm/summaries/"
                 "job_50_.chunk-'\"${SLURM_ARRAY_TASK_ID}\".json"))
        << r;
    for (const auto& [name, text] : files) {  // every #SBATCH line holds only what depthbatch chose
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);)
            if (line.rfind("#SBATCH", 0) == 0) EXPECT_EQ(line.find_first_of(" \"'$`\\", 8), std::string::npos) << line;
    }
    // A newline in a path stays inside its quotes and never ends a comment line.
    o.job_path = "/jobs/a\nrm -rf x/shot.yaml";
    const std::string nl = files_of(p, o)["render.sbatch"];
    EXPECT_TRUE(contains(nl, "# depthbatch render of /jobs/a\\nrm -rf x/shot.yaml:")) << nl;
    EXPECT_TRUE(contains(nl, "'/jobs/a\nrm -rf x/shot.yaml'")) << nl;
}

TEST(FarmFiles, OpenJDChunkedFrameParameter) {
    SubmitOptions o = options(FarmEngine::OpenJD, 5);
    o.target_runtime_s = 300;
    const auto plain = files_of(plan_farm_job(job_of("1001-1024"), o), o)["job.template.yaml"];
    EXPECT_TRUE(contains(plain, "extensions:\n  - TASK_CHUNKING\n")) << plain;
    EXPECT_TRUE(contains(plain, "type: CHUNK[INT]\n          range: \"1001-1024\"\n")) << plain;
    EXPECT_TRUE(contains(plain,
                         "defaultTaskCount: 5\n            targetRuntimeSeconds: 300\n            rangeConstraint: "
                         "CONTIGUOUS\n"))
        << plain;
    EXPECT_TRUE(contains(plain, "- \"{{Task.Param.Frame}}\"")) << plain;
    EXPECT_TRUE(
        contains(plain, "command: \"{{Param.Depthbatch}}\"\n          args:\n          - \"{{Param.JobFile}}\"\n"))
        << plain;
    EXPECT_TRUE(contains(plain, "  - name: JobFile\n    type: STRING\n")) << plain;
    EXPECT_TRUE(contains(plain, "    default: \"/jobs/shot.yaml\"\n")) << plain;
    EXPECT_FALSE(contains(plain, "SequenceStatistics"));
    // Every other frame: contiguous chunks would be one frame each; non-contiguous ones read as "1001-1009:2".
    const auto stepped =
        files_of(plan_farm_job(job_of("1001-1047x2", {"depth.normalize=sequence"}), o), o)["job.template.yaml"];
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
    EXPECT_TRUE(contains(files["plugin_info.job"],
                         "Executable=/opt/depthbatch/bin/depthbatch\n"
                         "Arguments=/jobs/shot.yaml --range <STARTFRAME>-<ENDFRAME> --skip-existing --summary "
                         "/jobs/shot.farm/summaries/shot.frames-<STARTFRAME>-<ENDFRAME>.json\n"))
        << files["plugin_info.job"];
    EXPECT_TRUE(contains(files["stats_plugin_info.job"], "Arguments=stats /jobs/shot.yaml\n"));
    EXPECT_TRUE(contains(files["submit.sh"], "JobDependencies=$stats")) << files["submit.sh"];
    EXPECT_FALSE(contains(files["plugin_info.job"], "DepthbatchGPUsPerTask"));
    EXPECT_TRUE(contains(files["JobPreLoad.py"], "def __main__(deadlinePlugin):"));
    // .NET splits Arguments by the Microsoft C runtime rules: quotes, and backslashes only before a quote.
    SubmitOptions q = o;
    q.job_path = "/jobs/shot 010 \"it's\" $(touch X) 100%/a\\\"b\\/job.yaml";
    q.sets = {"output.path=out dir\\"};
    files = files_of(plan_farm_job(job_of("1001-1004"), q), q);
    EXPECT_TRUE(contains(files["plugin_info.job"],
                         "Arguments=\"/jobs/shot 010 \\\"it's\\\" $(touch X) 100%/a\\\\\\\"b\\/job.yaml\" "
                         "--range <STARTFRAME>-<ENDFRAME> --skip-existing --summary "
                         "/jobs/shot.farm/summaries/job.frames-<STARTFRAME>-<ENDFRAME>.json "
                         "--set \"output.path=out dir\\\\\"\n"))
        << files["plugin_info.job"];
    q.job_path = "/jobs/a\nb/job.yaml";  // a key=value line cannot hold a line break
    EXPECT_TRUE(
        contains(expect_error<ConfigError>([&] { farm_job_files(plan_farm_job(job_of("1-2"), q), q); }), "line break"));
}

TEST(FarmFiles, TractorOneTaskPerChunkAfterTheStatistics) {
    const SubmitOptions o = options(FarmEngine::Tractor, 4);
    const FarmPlan p = plan_farm_job(job_of("1001-1010", {"depth.normalize=sequence"}), o);
    const std::string alf = files_of(p, o)["job.alf"];
    EXPECT_TRUE(contains(alf, "Job -title {depthbatch shot} -serialsubtasks 1 -subtasks {")) << alf;
    EXPECT_LT(alf.find("sequence statistics"), alf.find("chunk 1/3"));
    EXPECT_TRUE(contains(alf, "Task -title {chunk 1/3: frames 1001-1003} -cmds {")) << alf;
    EXPECT_TRUE(contains(alf, "Task -title {chunk 3/3: frames 1007-1010} -cmds {")) << alf;
    EXPECT_TRUE(
        contains(alf,
                 "RemoteCmd {{/opt/depthbatch/bin/depthbatch} {/jobs/shot.yaml} {--chunk} {2/3} "
                 "{--skip-existing} {--summary} {/jobs/shot.farm/summaries/shot.chunk-2.json}} -service {depthbatch}"))
        << alf;
    // Braces and backslashes (which a braced word cannot hold) are escaped; nothing can end the braced word.
    SubmitOptions braced = o;
    braced.job_path = "/jobs/{shot} [x] $y\\z/a b.yaml";
    EXPECT_TRUE(contains(files_of(p, braced)["job.alf"],
                         "RemoteCmd {{/opt/depthbatch/bin/depthbatch} "
                         "/jobs/\\{shot\\}\\ \\[x\\]\\ \\$y\\\\z/a\\ b.yaml {--chunk}"))
        << files_of(p, braced)["job.alf"];
}

TEST(FarmFiles, OpenCueShellLayerWithFrameTokens) {
    const SubmitOptions o = options(FarmEngine::OpenCue, 4);
    const std::string py =
        files_of(plan_farm_job(job_of("1001-1010", {"depth.normalize=sequence"}), o), o)["opencue_submit.py"];
    // One shell line (RQD runs it through a shell), every word single-quoted, inside a Python literal.
    EXPECT_TRUE(contains(py,
                         "command=\"exec '/opt/depthbatch/bin/depthbatch' '/jobs/shot.yaml' '--range' "
                         "'#FRAME_START#-#FRAME_END#' '--skip-existing' '--summary' "
                         "'/jobs/shot.farm/summaries/shot.frames-#FRAME_START#-#FRAME_END#.json'\","))
        << py;
    EXPECT_TRUE(contains(py, "range=\"1001-1010\", chunk=4)")) << py;
    EXPECT_FALSE(contains(py, "CUE_GPU_CORES")) << py;
    EXPECT_TRUE(contains(py, "render.depend_all(stats)")) << py;
    EXPECT_TRUE(contains(py, "use_pycuerun=False")) << py;
}

TEST(FarmQuoting, EachFormatKeepsEveryByte) {
    EXPECT_EQ(shell_quote("plain"), "'plain'");
    EXPECT_EQ(shell_quote("it's $HOME"), "'it'\\''s $HOME'");
    EXPECT_EQ(farm_safe_name("job 50%"), "job_50_");
    EXPECT_EQ(farm_safe_name("sh\xc3\xa9t.v2-a_b"), "sh__t.v2-a_b");
    EXPECT_EQ(farm_safe_name(""), "job");
    EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xac"));
    for (const std::string bad : {"\xe9", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"})
        EXPECT_FALSE(is_valid_utf8(bad)) << printable(bad);
    EXPECT_EQ(yaml_quote("a \"b\" \\ {{x}} \xc3\xa9\n\x7f\xe2\x80\xa8", "E"),
              "\"a \\\"b\\\" \\\\ {{x}} \xc3\xa9\\u000A\\u007F\\u2028\"");
    EXPECT_TRUE(contains(expect_error<ConfigError>([] { yaml_quote("/jobs/\xe9.yaml", "Open Job Description"); }),
                         "not UTF-8, which Open Job Description's YAML"));
    EXPECT_EQ(python_quote("it's \"q\" \\ \n\x01 \xc3\xa9", "E"), "\"it's \\\"q\\\" \\\\ \\n\\x01 \xc3\xa9\"");
    EXPECT_EQ(tcl_list_element("a b $c [d] \"e\""), "{a b $c [d] \"e\"}");
    EXPECT_EQ(tcl_list_element(""), "{}");
    EXPECT_EQ(tcl_list_element("a{b\\\n"), "a\\{b\\\\\\n");
    EXPECT_EQ(windows_argv_quote("plain"), "plain");
    EXPECT_EQ(windows_argv_quote(""), "\"\"");
    EXPECT_EQ(windows_argv_quote("a b"), "\"a b\"");
    EXPECT_EQ(windows_argv_quote("a\\b c"), "\"a\\b c\"");          // backslashes alone stay single
    EXPECT_EQ(windows_argv_quote("a\\\"b"), "\"a\\\\\\\"b\"");      // 1 backslash + quote: 3 + quote
    EXPECT_EQ(windows_argv_quote("dir\\ x\\"), "\"dir\\ x\\\\\"");  // trailing backslash doubled
    EXPECT_EQ(farm_engine_from_name("openjd"), FarmEngine::OpenJD);
    EXPECT_TRUE(contains(expect_error<ConfigError>([] { farm_engine_from_name("qube"); }), "slurm, openjd"));
}

// Issue 26 §2: a cuda job asks each engine for GPUs in its own terms and runs on `cuda`, the first GPU the engine
// made visible (CUDA_VISIBLE_DEVICES), never on a fixed index of the machine.
TEST(FarmGpu, ACudaJobAsksEachEngineForItsGpus) {
    SubmitOptions o = options(FarmEngine::Slurm, 4);
    const JobConfig cuda1 = job_of("1001-1008", {"model.device=cuda:1", "depth.normalize=sequence"});
    FarmPlan p = plan_farm_job(cuda1, o);
    EXPECT_EQ(p.gpus, 1);
    EXPECT_EQ(p.task_sets, (std::vector<std::string>{"model.device=cuda"}));
    EXPECT_TRUE(contains(p.note, "model.device cuda:1 runs as `cuda` on the farm")) << p.note;
    EXPECT_EQ(plan_farm_job(job_of("1-4"), o).gpus, 0);  // auto: none unless asked
    EXPECT_TRUE(plan_farm_job(job_of("1-4", {"model.device=cuda"}), o).task_sets.empty());
    o.gpus_per_task = 2;
    const FarmPlan two = plan_farm_job(job_of("1-4"), o);
    EXPECT_EQ(two.gpus, 2);
    EXPECT_TRUE(two.task_sets.empty());  // auto takes cuda:0 of those
    EXPECT_TRUE(contains(plan_farm_job(job_of("1-4", {"model.device=cpu"}), o).note, "model.device is cpu"));
    o.gpus_per_task = 0;
    EXPECT_TRUE(contains(plan_farm_job(cuda1, o).note, "asks the engine for no GPU"));
    o.gpus_per_task = -1;

    auto files = files_of(p, o);
    for (const char* f : {"render.sbatch", "stats.sbatch"}) {
        EXPECT_TRUE(contains(files[f], "#SBATCH --gpus-per-task=1\n")) << files[f];
        EXPECT_TRUE(contains(files[f], "'--set' 'model.device=cuda'\n")) << files[f];
    }
    o.engine = FarmEngine::OpenJD;
    const std::string yaml = files_of(p, o)["job.template.yaml"];
    const std::string req =
        "    hostRequirements:\n      amounts:\n        - name: amount.worker.gpu\n          min: 1\n";
    EXPECT_TRUE(contains(yaml, "  - name: SequenceStatistics\n" + req)) << yaml;
    EXPECT_TRUE(contains(yaml, "      - dependsOn: SequenceStatistics\n" + req)) << yaml;
    EXPECT_TRUE(contains(yaml, "- \"model.device=cuda\"\n")) << yaml;
    o.engine = FarmEngine::OpenCue;
    const std::string py = files_of(p, o)["opencue_submit.py"];
    EXPECT_TRUE(
        contains(py,
                 "command=\"if [ -n \\\"${CUE_GPU_CORES:-}\\\" ]; then CUDA_VISIBLE_DEVICES=\\\"$CUE_GPU_CORES\\\"; "
                 "export CUDA_VISIBLE_DEVICES; fi; exec '/opt/depthbatch/bin/depthbatch' '/jobs/shot.yaml'"))
        << py;
    EXPECT_TRUE(contains(py, "chunk=4, gpus=1)")) << py;
    EXPECT_TRUE(contains(py, "'model.device=cuda'\", gpus=1)   # one frame")) << py;
    o.engine = FarmEngine::Deadline;
    files = files_of(p, o);
    EXPECT_TRUE(contains(files["plugin_info.job"], "DepthbatchGPUsPerTask=1\n")) << files["plugin_info.job"];
    EXPECT_TRUE(contains(files["stats_plugin_info.job"], "DepthbatchGPUsPerTask=1\n"));
    EXPECT_TRUE(contains(files["submit.sh"], "custom/plugins/CommandLine/JobPreLoad.py")) << files["submit.sh"];
    EXPECT_TRUE(contains(files["JobPreLoad.py"], "SetProcessEnvironmentVariable(\"CUDA_VISIBLE_DEVICES\", devices)"));
    o.engine = FarmEngine::Tractor;
    const std::string alf = files_of(p, o)["job.alf"];
    EXPECT_TRUE(contains(alf, "{--set} {model.device=cuda}}")) << alf;
    EXPECT_TRUE(contains(alf, "Tractor does not assign GPUs")) << alf;
}

// Issue 43 §5: a job whose render uses the camera solved from its plate has the solve as a task before the chunks on
// every engine (`depthbatch solve JOB`, the chunks depending on it); with sequence statistics too, the statistics
// task is the one before the chunks (its run solves the camera first). A stated camera, or nothing that uses one:
// no solve task.
TEST(FarmFiles, ACameraSolveRunsBeforeTheChunksOnEveryEngine) {
    const std::vector<std::string> solve = {"camera.solve.model=/models/views.pt", "output.passes=[P]"};
    EXPECT_TRUE(plan_farm_job(job_of("1001-1020", solve), options(FarmEngine::Slurm, 5)).needs_solve);
    EXPECT_FALSE(
        plan_farm_job(job_of("1001-1020", {"camera.solve.model=/models/views.pt"}), options(FarmEngine::Slurm, 5))
            .needs_solve)
        << "nothing uses a camera";
    std::vector<std::string> stated = solve;
    stated.push_back("camera.focal=35");
    EXPECT_FALSE(plan_farm_job(job_of("1001-1020", stated), options(FarmEngine::Slurm, 5)).needs_solve);
    const std::string cmd = "/opt/depthbatch/bin/depthbatch";
    for (FarmEngine e :
         {FarmEngine::Slurm, FarmEngine::OpenJD, FarmEngine::Deadline, FarmEngine::OpenCue, FarmEngine::Tractor}) {
        SCOPED_TRACE(farm_engine_name(e));
        const SubmitOptions o = options(e, 5);
        const FarmPlan plan = plan_farm_job(job_of("1001-1020", solve), o);
        ASSERT_TRUE(plan.needs_first_task());
        std::string all;
        for (const auto& [name, text] : files_of(plan, o)) all += "== " + name + "\n" + text;
        switch (e) {
        case FarmEngine::Slurm:
            EXPECT_TRUE(contains(all, "== solve.sbatch")) << all;
            EXPECT_TRUE(contains(all, "exec '" + cmd + "' 'solve' '/jobs/shot.yaml'")) << all;
            break;
        case FarmEngine::OpenJD:
            EXPECT_TRUE(contains(all, "  - name: CameraSolve\n")) << all;
            EXPECT_TRUE(contains(all, "- \"solve\"\n          - \"{{Param.JobFile}}\"")) << all;
            EXPECT_TRUE(contains(all, "      - dependsOn: CameraSolve\n")) << all;
            break;
        case FarmEngine::Deadline:
            EXPECT_TRUE(contains(all, "== solve_plugin_info.job")) << all;
            EXPECT_TRUE(contains(all, "Arguments=solve /jobs/shot.yaml")) << all;
            EXPECT_TRUE(contains(all, "JobDependencies=$stats")) << all;
            break;
        case FarmEngine::OpenCue:
            EXPECT_TRUE(contains(all, "ShellCommand(\"solve\"")) << all;
            EXPECT_TRUE(contains(all, "render.depend_all(stats)")) << all;
            break;
        case FarmEngine::Tractor:
            EXPECT_TRUE(contains(all, "Task -title {camera solve} -cmds")) << all;
            EXPECT_LT(all.find("camera solve"), all.find("chunk 1/")) << "serial subtasks: the solve first";
            break;
        }
        // With sequence statistics the statistics task comes first and says that it solves too.
        std::vector<std::string> both = solve;
        both.push_back("depth.normalize=sequence");
        const FarmPlan p2 = plan_farm_job(job_of("1001-1020", both), o);
        std::string all2;
        for (const auto& [name, text] : files_of(p2, o)) all2 += text;
        EXPECT_TRUE(contains(all2, "stats")) << all2;
        EXPECT_FALSE(contains(all2, cmd + " solve")) << all2;
    }
}
