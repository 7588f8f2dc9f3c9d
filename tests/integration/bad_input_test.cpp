// Bad input: every case gets its documented exit code (docs/errors.md "Exit codes"), a message naming the cause,
// and leaves no partial or temporary file. Includes docs/cases.md 9 (model files that are not models).
#include "depthbatch/plate.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <tuple>
#include <vector>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace depthbatch::test;

namespace {

/// A folder with P-mean, three 32x18 plates p.1001-1003.exr and a job writing out/d.####.exr.
struct Scene {
    TempDir dir;
    Scene() {
        write_p_mean(dir / "pmean.pt");
        for (int f = 1001; f <= 1003; ++f)
            write_image(dir / ("p." + std::to_string(f) + ".exr"), 32, 18, {"R", "G", "B"}, "half",
                        [](int, int, int) { return 0.25f; });
    }
    fs::path job(const std::string& extra_input = "", const std::string& model = "pmean.pt",
                 const std::string& extra = "") {
        return write_job(dir / "job.yaml", "input: {path: p.####.exr, colorspace: sRGB" + extra_input +
                                               "}\n"
                                               "model: {path: '" +
                                               model +
                                               "', size: plate}\n"
                                               "output: {path: out/d.####.exr}\n" +
                                               extra);
    }
    std::vector<std::string> outputs() const { return list_dir(dir / "out"); }
};

/// A tmpfs mounted on `dir` (created) with mount options `options` while it lives: a full or read-only disk
/// for tests. Needs root (as CI runs); `mounted` is false where the mount is refused.
struct ScopedTmpfs {
    fs::path dir;
    bool mounted = false;
    ScopedTmpfs(const fs::path& d, const std::string& options) : dir(d) {
        fs::create_directories(dir);
        mounted =
            std::system(("mount -t tmpfs -o " + options + " tmpfs '" + dir.string() + "' 2>/dev/null").c_str()) == 0;
    }
    ~ScopedTmpfs() {
        if (mounted) (void)std::system(("umount '" + dir.string() + "'").c_str());
    }
};

}  // namespace

TEST(BadInput, MissingFrameInRangeFailsBeforeRendering) {
    Scene s;
    const auto r = run_cli({s.job(", frames: 1001-1004").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_TRUE(contains(r.output, "frame 1004")) << r.output;
    EXPECT_TRUE(contains(r.output, "p.1004.exr")) << r.output;
    EXPECT_TRUE(s.outputs().empty()) << "nothing may be rendered when a frame of the range is missing";
}

TEST(BadInput, TruncatedJpegNamesFrameAndLeavesNoPartialFile) {
    Scene s;
    const fs::path src = samples_dir() / "plates/bedroom/bedroom.1001.jpg";
    fs::copy_file(src, s.dir / "j.1001.jpg");
    const std::string bytes = read_bytes(src);
    write_file(s.dir / "j.1002.jpg", bytes.substr(0, bytes.size() / 2));
    write_job(s.dir / "j.yaml",
              "input: {path: j.####.jpg, frames: 1001-1002}\n"
              "model: {path: pmean.pt, size: plate}\noutput: {path: out/d.####.exr}\n");
    const auto r = run_cli({(s.dir / "j.yaml").string(), "--threads", "1", "--set", "pipeline.frames_in_flight=1"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_TRUE(contains(r.output, "frame 1002")) << r.output;
    EXPECT_TRUE(contains(r.output, "j.1002.jpg")) << r.output;
    for (const auto& name : s.outputs()) {
        EXPECT_EQ(name, "d.1001.exr") << "only the good frame may exist, and no temporary file";
    }
    EXPECT_FALSE(fs::exists(s.dir / "out/d.1002.exr"));
}

TEST(BadInput, UnknownKeyNamesFileLineAndKey) {
    Scene s;
    const auto job = s.job("", "pmean.pt", "pipeline: {threads: 1, frames_in_flihgt: 2}\n");
    const auto r = run_cli({job.string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "job.yaml:4")) << r.output;
    EXPECT_TRUE(contains(r.output, "pipeline.frames_in_flihgt")) << r.output;
    EXPECT_TRUE(contains(r.output, "frames_in_flight")) << "the allowed keys are listed\n" << r.output;
    EXPECT_TRUE(s.outputs().empty());
}

TEST(BadInput, WrongTypeNamesKey) {
    Scene s;
    const auto r = run_cli({s.job("", "pmean.pt", "pipeline: {threads: many}\n").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "job.yaml:4")) << r.output;
    EXPECT_TRUE(contains(r.output, "pipeline.threads")) << r.output;
    EXPECT_TRUE(contains(r.output, "expected an integer")) << r.output;
    const auto flag = run_cli({s.job().string(), "--frames", "1003-1001"});
    EXPECT_EQ(flag.exit_code, exit_status(ExitCode::Config)) << flag.output;
    EXPECT_TRUE(contains(flag.output, "--frames")) << flag.output;
}

// --help-job lists every key (the key table); the older names depth.kind and depth.stabilize_window still work,
// with a warning naming the new key, and both spellings of one key at once are a configuration error.
TEST(BadInput, OlderKeyNamesWarnAndHelpJobListsTheKeys) {
    const auto help = run_cli({"--help-job"});
    EXPECT_EQ(help.exit_code, 0) << help.output;
    for (const char* key : {"input.path", "depth.convention", "depth.stabilize_radius", "output.preview.colormap"})
        EXPECT_TRUE(contains(help.output, key)) << key << "\n" << help.output;
    EXPECT_TRUE(contains(help.output, "deprecated: use depth.convention")) << help.output;
    Scene s;
    const auto both = run_cli({s.job("", "pmean.pt", "depth: {kind: inverse, convention: inverse}\n").string()});
    EXPECT_EQ(both.exit_code, exit_status(ExitCode::Config)) << both.output;
    EXPECT_TRUE(contains(both.output, "'depth.kind': is the older name of depth.convention: set one of them"))
        << both.output;
    EXPECT_TRUE(s.outputs().empty());
    const auto old = run_cli({s.job().string(), "--dry-run", "--set", "depth.stabilize_window=4", "-q"});
    EXPECT_EQ(old.exit_code, 0) << old.output;
    const std::string warning =
        "--set depth.stabilize_window=4: key 'depth.stabilize_window' is deprecated: use "
        "depth.stabilize_radius";
    EXPECT_TRUE(contains(old.output, warning)) << old.output;
    EXPECT_EQ(old.output.find(warning), old.output.rfind(warning)) << "once\n" << old.output;
}

TEST(BadInput, ModelThatIsNotTorchScript) {
    Scene s;
    write_file(s.dir / "notes.pt", "this is not a model\n");
    const auto r = run_cli({s.job("", "notes.pt").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Model)) << r.output;
    EXPECT_TRUE(contains(r.output, "notes.pt")) << r.output;
    EXPECT_TRUE(contains(r.output, "not a TorchScript file")) << r.output;
    EXPECT_TRUE(s.outputs().empty());
}

TEST(BadInput, ModelWhoseOutputIsNotAnImage) {
    Scene s;
    const std::string contract = probe_contract();
    write_probe_model(s.dir / "scalar.pt", "def forward(self, x):\n    return x.sum()\n", contract);
    write_probe_model(s.dir / "rgb.pt", "def forward(self, x):\n    return x\n", contract);
    write_probe_model(s.dir / "list.pt", "def forward(self, x):\n    return [x]\n", contract);
    for (const std::string model : {"scalar.pt", "rgb.pt", "list.pt"}) {
        const auto r = run_cli({s.job("", model).string()});
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Model)) << model << "\n" << r.output;
        EXPECT_TRUE(contains(r.output, model)) << r.output;
        EXPECT_TRUE(contains(r.output, "not an image") || contains(r.output, "not a tensor")) << r.output;
        EXPECT_TRUE(s.outputs().empty()) << model;
    }
}

// Issue 43 §6: a model whose licence forbids commercial use (its contract's license: CC-BY-NC-4.0, as Video Depth
// Anything Large's or Depth Anything 3 Giant's) is refused by validate and the render alike, exit 2 naming the licence
// and the key, with nothing written, unless the job accepts that very licence; every EXR then records it.
TEST(BadInput, ANonCommercialModelRendersOnlyWhenTheJobAcceptsItsLicence) {
    Scene s;
    std::string contract = probe_contract();
    contract.insert(contract.size() - 1, R"(, "license": "CC-BY-NC-4.0")");
    write_probe_model(s.dir / "nc.pt", "def forward(self, x):\n    return x.mean(dim=1, keepdim=True)\n", contract);
    const std::string job = s.job("", "nc.pt").string();
    const auto info = run_cli({"info", (s.dir / "nc.pt").string()});
    EXPECT_TRUE(contains(info.output,
                         "license      CC-BY-NC-4.0 (forbids commercial use: a job renders it only with "
                         "model.accept_license: CC-BY-NC-4.0)"))
        << info.output;
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{job}, std::vector<std::string>{"validate", job},
          std::vector<std::string>{job, "--set", "model.accept_license=CC-BY-NC-SA-4.0"}}) {
        const auto r = run_cli(args);
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
        EXPECT_TRUE(contains(r.output, "nc.pt (probe) is licensed CC-BY-NC-4.0, which forbids commercial use"))
            << r.output;
        EXPECT_TRUE(contains(r.output, "model.accept_license: CC-BY-NC-4.0")) << r.output;
        EXPECT_TRUE(s.outputs().empty());
    }
    const auto ok =
        run_cli({job, "--set", "model.accept_license=CC-BY-NC-4.0", "--summary", (s.dir / "sum.json").string()});
    ASSERT_EQ(ok.exit_code, 0) << ok.output;
    EXPECT_EQ(s.outputs(), (std::vector<std::string>{"d.1001.exr", "d.1002.exr", "d.1003.exr"}));
    EXPECT_TRUE(contains(ok.output, "its frames are for non-commercial use only")) << ok.output;
    EXPECT_EQ(file_spec(s.dir / "out/d.1002.exr").get_string_attribute("depthbatch/model_license"), "CC-BY-NC-4.0");
    EXPECT_EQ(file_spec(s.dir / "out/d.1002.exr").get_string_attribute("depthbatch/license_accepted"), "CC-BY-NC-4.0");
    const auto summary = read_json(s.dir / "sum.json");
    EXPECT_EQ(summary["model"]["license"], "CC-BY-NC-4.0");
    EXPECT_EQ(summary["model"]["license_accepted"], "CC-BY-NC-4.0");
    // Accepted as a model card spells it.
    EXPECT_EQ(run_cli({job, "--set", "model.accept_license=cc-by-nc-4.0", "--overwrite"}).exit_code, 0);
    // A licence that allows commercial use needs no word from the job.
    write_p_mean(s.dir / "pmean.pt");
    EXPECT_EQ(run_cli({s.job().string(), "--overwrite"}).exit_code, 0);
}

// Issue 13: a scripted model whose forward works only at the size it was written for (64x64: the dry run's
// size passes) fails on the first real frame: a model error (exit 4) naming the model, the input shape and
// the fixed-size hint, never "unexpected" with a TorchScript traceback, and no frame is written.
TEST(BadInput, ModelThatCannotRunAtThePlateSizeIsAModelError) {
    TempDir dir;
    write_probe_model(dir / "fixed64.pt",
                      "def forward(self, x):\n    return x.reshape(1, 3, 64, 64).mean(1, keepdim=True)\n",
                      probe_contract());
    for (int f = 1001; f <= 1003; ++f)
        write_image(dir / ("p." + std::to_string(f) + ".exr"), 96, 80, {"R", "G", "B"}, "half",
                    [](int, int, int) { return 0.5f; });
    const auto r = run_cli({write_job(dir / "job.yaml",
                                      "input: {path: p.####.exr, colorspace: sRGB}\n"
                                      "model: {path: fixed64.pt, size: plate}\n"
                                      "output: {path: out/d.####.exr}\n")
                                .string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Model)) << r.output;
    EXPECT_TRUE(contains(r.output, (dir / "fixed64.pt").string())) << r.output;
    EXPECT_TRUE(contains(r.output, "[1,3,80,96]")) << r.output;
    EXPECT_TRUE(contains(r.output, "model.input_size")) << r.output;
    EXPECT_FALSE(contains(r.output, "unexpected")) << r.output;
    EXPECT_FALSE(contains(r.output, "Traceback")) << "the traceback belongs in the -v log\n" << r.output;
    EXPECT_TRUE(list_dir(dir / "out").empty()) << "no frame may be written";
}

// Issue 13: --threads 010 is ten threads (CLI11 alone read it as octal 8, and 08 as out of range).
TEST(BadInput, ThreadsFlagWithLeadingZerosIsDecimal) {
    Scene s;
    // " 10 worker threads", or fewer "(asked 10)" on a machine with fewer cores (issue 22 §5).
    auto r = run_cli({s.job().string(), "--threads", "010", "--frames", "1001"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, " 10 worker threads") || contains(r.output, " worker threads (asked 10)"))
        << r.output;
    r = run_cli({s.job().string(), "--threads", "08", "--frames", "1002"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, " 8 worker threads") || contains(r.output, " worker threads (asked 8)")) << r.output;
    r = run_cli({s.job().string(), "--threads", "0x10"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "pipeline.threads")) << r.output;
    // A flag that stands for a key names itself as typed, not the --set it becomes.
    for (const auto& [flag, value, said] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"--threads", "abc", "--threads abc: key 'pipeline.threads': expected an integer"},
             {"--device", "gpu", "--device gpu: key 'model.device': 'gpu' is not auto, cpu, cuda or cuda:N"},
             {"--grace", "soon", "--grace soon: key 'pipeline.grace_s': expected a number"},
             {"--output", "out/d.exr", "--output out/d.exr: key 'output.path': path pattern"}}) {
        r = run_cli({s.job().string(), flag, value});
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
        EXPECT_TRUE(contains(r.output, "depthbatch: error: " + said)) << r.output;
        EXPECT_FALSE(contains(r.output, "--set")) << r.output;
    }
    r = run_cli({s.job().string(), "--set", "pipeline.threads=abc"});
    EXPECT_TRUE(contains(r.output, "--set pipeline.threads=abc: key 'pipeline.threads'")) << r.output;
    // A flag's value is taken as written, not read as YAML as --set's are: '#' is part of a path, not a comment.
    r = run_cli({"--set", "model.size=plate", s.job().string(), "--frames", "1001", "--output",
                 (s.dir / "take #2/d.####.exr").string(), "--summary", (s.dir / "notes #1.json").string(), "--threads",
                 "1"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(s.dir / "take #2"), (std::vector<std::string>{"d.1001.exr"}));
    EXPECT_TRUE(fs::is_regular_file(s.dir / "notes #1.json"));
    r = run_cli({s.job().string(), "--threads", "4 # two"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "--threads 4 # two: key 'pipeline.threads': expected an integer")) << r.output;
}

// Issue 13: a full disk names what the OS said and the path; the frame already there is intact, no
// temporary is left. A 64 KiB tmpfs stands in for the full disk (needs root, as CI runs; else skipped).
TEST(BadInput, FullDiskNamesTheOsErrorAndKeepsTheOldFrame) {
    Scene s;
    const fs::path full = s.dir / "full";
    const ScopedTmpfs mount(full, "size=64k");
    if (!mount.mounted)
        GTEST_SKIP() << "cannot mount a small tmpfs here (not root?): the full-disk case is not exercised";
    // The frame already there: a small depthbatch frame (a file that is no depthbatch EXR is never replaced at all).
    write_image(s.dir / "small.1001.exr", 4, 4, {"R", "G", "B"}, "half", [](int, int, int) { return 0.25f; });
    const auto first = run_cli({write_job(s.dir / "small.yaml",
                                          "input: {path: small.####.exr, colorspace: sRGB}\n"
                                          "model: {path: pmean.pt, size: plate}\noutput: {path: full/d.####.exr}\n")
                                    .string()});
    ASSERT_EQ(first.exit_code, 0) << first.output;
    const std::string older = read_bytes(full / "d.1001.exr");
    // 1024x1024 float depth + RGB does not fit in what is left of 64 KiB.
    write_image(s.dir / "big.1001.exr", 1024, 1024, {"R", "G", "B"}, "float",
                [](int x, int y, int) { return (x ^ y) / 1024.0f; });
    write_image(s.dir / "big.1002.exr", 1024, 1024, {"R", "G", "B"}, "float",
                [](int x, int y, int) { return (x ^ y) / 1024.0f; });
    const auto r = run_cli({write_job(s.dir / "full.yaml",
                                      "input: {path: big.####.exr, colorspace: sRGB}\n"
                                      "model: {path: pmean.pt, size: plate}\n"
                                      "output: {path: full/d.####.exr, overwrite: overwrite}\n")
                                .string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Render)) << r.output;
    EXPECT_TRUE(contains(r.output, "No space left on device")) << r.output;
    EXPECT_TRUE(contains(r.output, (full / "d.1002.exr").string())) << r.output;
    EXPECT_EQ(list_dir(full), (std::vector<std::string>{"d.1001.exr"})) << "no temporary, no partial frame";
    EXPECT_EQ(read_bytes(full / "d.1001.exr"), older);

    // Room for the staging file OIIO writes but not for OpenEXR's copy of it under the full header
    // (oiio:ColorSpace, exr_depth_writer.h): the same message, nothing left.
    const auto whole = run_cli({write_job(s.dir / "whole.yaml",
                                          "input: {path: big.####.exr, colorspace: sRGB, frames: 1002}\n"
                                          "model: {path: pmean.pt, size: plate}\n"
                                          "output: {path: whole/d.####.exr}\n")
                                    .string()});
    ASSERT_EQ(whole.exit_code, 0) << whole.output;
    const auto bytes = fs::file_size(s.dir / "whole/d.1002.exr");
    const fs::path half_full = s.dir / "half_full";
    const ScopedTmpfs mount2(half_full, "size=" + std::to_string(bytes * 3 / 2 / 4096 * 4096));
    ASSERT_TRUE(mount2.mounted);
    const auto r2 = run_cli({write_job(s.dir / "half.yaml",
                                       "input: {path: big.####.exr, colorspace: sRGB, frames: 1002}\n"
                                       "model: {path: pmean.pt, size: plate}\n"
                                       "output: {path: half_full/d.####.exr}\n")
                                 .string()});
    EXPECT_EQ(r2.exit_code, exit_status(ExitCode::Render)) << r2.output;
    EXPECT_TRUE(contains(r2.output, (half_full / "d.1002.exr").string() + ": write failed: No space left on device"))
        << r2.output;
    EXPECT_TRUE(list_dir(half_full).empty()) << "no temporary, no partial frame";
}

// Issue 13: a read-only output folder is found before any frame is read, with the OS's own words.
TEST(BadInput, ReadOnlyOutputFolderNamesTheOsError) {
    Scene s;
    const fs::path ro = s.dir / "ro";
    const ScopedTmpfs mount(ro, "ro,size=64k");
    if (!mount.mounted)
        GTEST_SKIP() << "cannot mount a read-only tmpfs here (not root?): the read-only case is not exercised";
    const auto r = run_cli({s.job().string(), "--output", (ro / "d.####.exr").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Render)) << r.output;
    EXPECT_TRUE(contains(r.output, "cannot write in " + ro.string() + " (Read-only file system)")) << r.output;
    EXPECT_FALSE(contains(r.output, "frame 1001 ->")) << "no frame may be read first";
}

// Issue 13: a plate with several colour layers (Blender's ViewLayer.Combined and ViewLayer.DiffCol): without
// input.layer an input error listing the layers and naming the key; with it, the model sees that layer.
TEST(BadInput, SeveralColourLayersNeedInputLayer) {
    TempDir dir;
    write_p_mean(dir / "pmean.pt");
    const std::vector<std::string> names = {"ViewLayer.Combined.R", "ViewLayer.Combined.G", "ViewLayer.Combined.B",
                                            "ViewLayer.Combined.A", "ViewLayer.DiffCol.R",  "ViewLayer.DiffCol.G",
                                            "ViewLayer.DiffCol.B"};
    // Combined is 0.2 everywhere, DiffCol (0.3, 0.6, 0.9): P-mean gives 0.2 or 0.6.
    const float values[] = {0.2f, 0.2f, 0.2f, 1.0f, 0.3f, 0.6f, 0.9f};
    write_image(dir / "p.1001.exr", 16, 8, names, "float", [&](int, int, int c) { return values[c]; });
    const std::string job =
        "input: {path: p.####.exr, colorspace: sRGB}\nmodel: {path: pmean.pt, size: plate}\n"
        "output: {path: out/d.####.exr}\n";
    auto r = run_cli({write_job(dir / "job.yaml", job).string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_TRUE(contains(r.output, "ViewLayer.Combined, ViewLayer.DiffCol") ||
                contains(r.output, "ViewLayer.Combined,ViewLayer.DiffCol"))
        << r.output;
    EXPECT_TRUE(contains(r.output, "input.layer")) << r.output;
    r = run_cli({(dir / "job.yaml").string(), "--set", "input.layer=ViewLayer.DiffCol"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NEAR(depth_at(dir / "out/d.1001.exr", 3, 2), 0.6f, 1e-5);
    r = run_cli({(dir / "job.yaml").string(), "--set", "input.layer=ViewLayer.Combined", "--overwrite"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NEAR(depth_at(dir / "out/d.1001.exr", 3, 2), 0.2f, 1e-5);
    r = run_cli({(dir / "job.yaml").string(), "--set", "input.layer=ViewLayer.Spec", "--overwrite"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "input.layer 'ViewLayer.Spec'") && contains(r.output, "ViewLayer.DiffCol"))
        << r.output;
}

// Issue 13: dwaa is lossy on half R, G, B: one warning per job, saying depth.Z stays lossless.
TEST(BadInput, DwaaCompressionWarnsOnceThatItIsLossy) {
    Scene s;
    const auto r = run_cli({s.job().string(), "--set", "output.compression=dwaa"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    size_t count = 0;
    for (size_t at = r.output.find("dwaa is lossy"); at != std::string::npos;
         at = r.output.find("dwaa is lossy", at + 1))
        ++count;
    EXPECT_EQ(count, 1u) << r.output;
    EXPECT_TRUE(contains(r.output, "depth.Z is float and stays lossless")) << r.output;
    const auto z = run_cli({s.job().string(), "--overwrite"});
    EXPECT_FALSE(contains(z.output, "lossy")) << z.output;
}

// docs/cases.md 9: a Git LFS pointer, half a .pt, an empty file, a directory: model exit code before any
// frame is read (the plates here do not even exist), the path in the message, no outputs.
TEST(BadInput, ModelFilesThatAreNotModels) {
    TempDir dir;
    write_p_mean(dir / "good.pt");
    const std::string bytes = read_bytes(dir / "good.pt");
    write_file(dir / "half.pt", bytes.substr(0, bytes.size() / 2));
    write_file(dir / "lfs.pt",
               "version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
               "size 98765432\n");
    write_file(dir / "empty.pt", "");
    fs::create_directories(dir / "folder.pt");
    for (const std::string model : {"lfs.pt", "half.pt", "empty.pt", "folder.pt"}) {
        write_job(dir / "job.yaml",
                  "input: {path: missing.####.exr, frames: 1-3}\n"
                  "model: {path: " +
                      model + "}\noutput: {path: out/d.####.exr}\n");
        const auto r = run_cli({(dir / "job.yaml").string()});
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Model)) << model << "\n" << r.output;
        EXPECT_TRUE(contains(r.output, (dir / model).string())) << r.output;
        EXPECT_FALSE(contains(r.output, "frame 1")) << "no frame may be touched before the model loads\n" << r.output;
        EXPECT_FALSE(fs::exists(dir / "out"));
    }
    write_job(dir / "job.yaml",
              "input: {path: missing.####.exr, frames: 1-3}\nmodel: {path: lfs.pt}\n"
              "output: {path: out/d.####.exr}\n");
    EXPECT_TRUE(contains(run_cli({(dir / "job.yaml").string()}).output, "Git LFS pointer"));
}

TEST(BadInput, ExistingOutputsAreNeverOverwrittenWithoutAsking) {
    Scene s;
    fs::create_directories(s.dir / "out");
    write_file(s.dir / "out/d.1002.exr", "precious");
    auto r = run_cli({s.job().string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::OutputExists)) << r.output;
    EXPECT_TRUE(contains(r.output, "d.1002.exr")) << r.output;
    EXPECT_EQ(s.outputs(), (std::vector<std::string>{"d.1002.exr"})) << "nothing rendered when outputs exist";
    EXPECT_EQ(read_bytes(s.dir / "out/d.1002.exr"), "precious");
    // A file that is no depth frame is never replaced, not even when asked (issue 22: a writer replaces only its
    // own kind): --skip-existing and --overwrite stop before frame 1, naming it (exit 6).
    for (const char* flag : {"--skip-existing", "--overwrite"}) {
        r = run_cli({s.job().string(), flag});
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::OutputExists)) << flag << "\n" << r.output;
        EXPECT_TRUE(contains(r.output, (s.dir / "out/d.1002.exr").string() + " (not an OpenEXR file)")) << r.output;
        EXPECT_EQ(read_bytes(s.dir / "out/d.1002.exr"), "precious") << flag;
        EXPECT_EQ(s.outputs(), (std::vector<std::string>{"d.1002.exr"})) << flag;
    }
    // An empty file holds nothing to lose: --skip-existing completes the job, saying why it replaces it.
    write_file(s.dir / "out/d.1002.exr", "");
    r = run_cli({s.job().string(), "--skip-existing"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(s.outputs(), (std::vector<std::string>{"d.1001.exr", "d.1002.exr", "d.1003.exr"}));
    EXPECT_TRUE(contains(r.output, "frame 1002: rendering again, the existing " + (s.dir / "out/d.1002.exr").string() +
                                       " is not a readable OpenEXR file"))
        << r.output;
    EXPECT_EQ(channel_names(s.dir / "out/d.1002.exr"), (std::vector<std::string>{"R", "G", "B", "depth.Z"}));
    const auto kept = read_bytes(s.dir / "out/d.1001.exr");
    r = run_cli({s.job().string(), "--skip-existing"});
    EXPECT_TRUE(contains(r.output, "nothing to do: 3 frames exist")) << r.output;
    EXPECT_EQ(read_bytes(s.dir / "out/d.1001.exr"), kept);
    r = run_cli({s.job().string(), "--overwrite"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(channel_names(s.dir / "out/d.1002.exr"), (std::vector<std::string>{"R", "G", "B", "depth.Z"}));
}

// Issue 9: the farm retry README recommends, on a chunk whose frames all exist, with the flag or the job key.
TEST(BadInput, ChunkWhoseFramesAllExistHasNothingToDo) {
    Scene s;
    ASSERT_EQ(run_cli({s.job().string()}).exit_code, 0);
    const std::string before = read_bytes(s.dir / "out/d.1002.exr");
    ASSERT_FALSE(before.empty());
    for (const auto& args : {std::vector<std::string>{s.job().string(), "--skip-existing"},
                             std::vector<std::string>{s.job().string(), "--skip-existing", "--frames", "1002-1003"},
                             std::vector<std::string>{s.job().string(), "--set", "output.overwrite=skip"}}) {
        const auto r = run_cli(args);
        EXPECT_EQ(r.exit_code, 0) << r.output;
        EXPECT_TRUE(contains(r.output, "nothing to do: ")) << r.output;
        EXPECT_TRUE(
            contains(r.output, args.size() == 4 ? "nothing to do: 2 frames exist" : "nothing to do: 3 frames exist"))
            << r.output;
    }
    // The same with overwrite: skip written in the job file itself.
    const fs::path skip_job = write_job(s.dir / "skip.yaml",
                                        "input: {path: p.####.exr, colorspace: sRGB}\n"
                                        "model: {path: pmean.pt, size: plate}\n"
                                        "output: {path: out/d.####.exr, overwrite: skip}\n");
    const auto r = run_cli({skip_job.string()});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "nothing to do: 3 frames exist")) << r.output;
    EXPECT_EQ(read_bytes(s.dir / "out/d.1002.exr"), before) << "an existing frame is never touched";
    EXPECT_EQ(s.outputs(), (std::vector<std::string>{"d.1001.exr", "d.1002.exr", "d.1003.exr"}));
}

// Found by a first-user trial: the output reaching the plate through a linked folder, an empty --frames
// (an unset $CHUNK on a farm), a job "file" that is a folder.
TEST(BadInput, OutputThatIsThePlateThroughALinkIsRefused) {
    Scene s;
    fs::create_directory_symlink(s.dir.path, s.dir / "alias");
    const std::string before = read_bytes(s.dir / "p.1001.exr");
    write_job(s.dir / "link.yaml",
              "input: {path: p.####.exr, colorspace: sRGB}\nmodel: {path: pmean.pt, size: plate}\n"
              "output: {path: alias/p.####.exr, overwrite: overwrite}\n");
    const auto r = run_cli({(s.dir / "link.yaml").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "output.path: " + (s.dir / "alias/p.1001.exr").string() + " is plate frame 1001"))
        << r.output;
    EXPECT_EQ(read_bytes(s.dir / "p.1001.exr"), before) << "the plate is untouched";
}

TEST(BadInput, EmptyFramesFlagAndFolderAsJobAreConfigErrors) {
    Scene s;
    auto r = run_cli({s.job().string(), "--frames", ""});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_NE(r.output.find("--frames is empty"), std::string::npos) << r.output;
    EXPECT_TRUE(s.outputs().empty());
    // Every other flag too: an empty --chunk or --range (an unset variable in a farm task's command) rendered the
    // whole shot in every task, an empty --output the job's own path.
    for (const char* flag : {"--chunk", "--range", "--output", "--device", "--threads", "--summary", "--set"}) {
        r = run_cli({s.job().string(), flag, flag[2] == 'c' ? " " : ""});
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << flag << r.output;
        EXPECT_TRUE(contains(r.output, std::string("depthbatch: error: ") + flag + " is given an empty value"))
            << r.output;
    }
    r = run_cli({"validate", s.job().string(), "--chunk", ""});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "depthbatch: error: --chunk is given an empty value")) << r.output;
    // `--flag=` with nothing after '=': CLI11 would take the next argument as the value (a summary named
    // --skip-existing, the flag itself lost).
    for (const char* a : {"--summary=", "--chunk=", "--output="}) {
        r = run_cli({s.job().string(), a, "--skip-existing"});
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << a << r.output;
        EXPECT_TRUE(contains(r.output, std::string("depthbatch: error: ") + std::string(a, std::strlen(a) - 1) +
                                           " is given an empty value"))
            << r.output;
    }
    r = run_cli({"info", ""});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "the model argument is empty")) << r.output;
    r = run_cli({"submit", s.job().string(), "--engine", "openjd", "--partition", "", "--dry-run"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "--partition is given an empty value")) << r.output;
    EXPECT_TRUE(s.outputs().empty());
    fs::create_directories(s.dir / "folder.yaml");
    r = run_cli({(s.dir / "folder.yaml").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_NE(r.output.find("is a directory"), std::string::npos) << r.output;
}

TEST(BadInput, HolesInASequenceFromDiskAreReported) {
    Scene s;  // p.1001-1003
    fs::remove(s.dir / "p.1002.exr");
    write_image(s.dir / "p.1004.exr", 32, 18, {"R", "G", "B"}, "half", [](int, int, int) { return 0.25f; });
    write_job(s.dir / "disk.yaml",
              "input: {path: p.####.exr, colorspace: sRGB}\nmodel: {path: pmean.pt, size: plate}\n"
              "output: {path: out/d.####.exr}\n");
    // The hole is a missing plate (issue 32 §5): the render stops naming it, or under on_error: continue renders
    // the rest and says so (exit 7).
    auto r = run_cli({(s.dir / "disk.yaml").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_NE(r.output.find("frames 1002 are missing"), std::string::npos) << r.output;
    r = run_cli({(s.dir / "disk.yaml").string(), "--set", "pipeline.on_error=continue"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Partial)) << r.output;
    EXPECT_EQ(s.outputs(), (std::vector<std::string>{"d.1001.exr", "d.1003.exr", "d.1004.exr"}));
}

// A killed render (SIGKILL, a second Ctrl-C) can leave a hidden temporary; the next run on the same host
// removes those whose process is gone, and leaves other hosts' (shared storage) and live ones alone.
TEST(BadInput, TemporariesOfKilledRunsAreCleanedUp) {
    Scene s;
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    std::string h(host);
    std::replace(h.begin(), h.end(), '.', '_');
    const pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, nullptr, 0);  // a pid that no longer runs
    fs::create_directories(s.dir / "out");
    const std::string dead = ".d.1001.exr." + h + "." + std::to_string(child) + ".0.tmp";
    const std::string live = ".d.1002.exr." + h + "." + std::to_string(getpid()) + ".0.tmp";
    const std::string other = ".d.1003.exr.otherhost.1.0.tmp";
    for (const auto& name : {dead, live, other}) write_file(s.dir / "out" / name, "partial");
    const auto r = run_cli({s.job().string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_FALSE(fs::exists(s.dir / "out" / dead)) << r.output;
    EXPECT_TRUE(fs::exists(s.dir / "out" / live));
    EXPECT_TRUE(fs::exists(s.dir / "out" / other));
    EXPECT_NE(r.output.find("removed 1 temporary file"), std::string::npos) << r.output;
}

// Issue 22 §2: a model output that cannot be depth for the frame never reaches an EXR: exit 4 naming the
// output's and the input's shapes (the plates are 32x18: input [1,3,18,32]), and no file written.
TEST(BadInput, ModelOutputThatCannotBeDepthIsAModelError) {
    Scene s;
    const std::string contract = probe_contract();
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"x[:, :1, :0, :0]", "model output [1,1,0,0] has a zero dimension for input [1,3,18,32]"},
        {"x[:, 0, :0, :]", "model output [1,0,32] has a zero dimension for input [1,3,18,32]"},
        {"x.mean(1, keepdim=True).repeat(1, 1, 5, 5)",
         "model output [1,1,90,160] is more than 4x the input [1,3,18,32]"},
        {"(x.mean(1, keepdim=True) * 100).long()", "model output [1,1,18,32] is Long, not floating point depth"},
        {"x.mean(1, keepdim=True) > 0.1", "model output [1,1,18,32] is Bool, not floating point depth"},
        {"{'depth': x}", "model output is Dict[str, Tensor], not a tensor"},
    };
    int n = 0;
    for (const auto& [expr, expected] : cases) {
        const std::string model = "out" + std::to_string(++n) + ".pt";
        write_probe_model(s.dir / model, "def forward(self, x):\n    return " + expr + "\n", contract);
        const auto r = run_cli({s.job("", model).string()});
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Model)) << expr << "\n" << r.output;
        EXPECT_TRUE(contains(r.output, expected)) << expr << "\n" << r.output;
        EXPECT_TRUE(contains(r.output, model)) << r.output;
        EXPECT_FALSE(contains(r.output, "unexpected")) << r.output;
        EXPECT_TRUE(s.outputs().empty()) << expr;
    }
}

// A contract whose numbers are out of range exits 4 naming the field: never bad_alloc, never the plate (3).
TEST(BadInput, ContractOutOfRangeIsAModelErrorNamingTheField) {
    Scene s;
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"("multiple": 1, "size": [-18, -32])", "field input.size must be 1 to 16384, not -18"},
        {R"("multiple": 1073741824)", "field input.multiple must be 1 to 1024, not 1073741824"},
        {R"("multiple": 0)", "field input.multiple must be 1 to 1024, not 0"},
        {R"("multiple": 1, "size": [2000000000, 2000000000])", "field input.size must be 1 to 16384, not 2000000000"},
    };
    int n = 0;
    for (const auto& [input, expected] : cases) {
        const std::string model = "c" + std::to_string(++n) + ".pt";
        write_probe_model(s.dir / model, "def forward(self, x):\n    return x.mean(1, keepdim=True)\n",
                          R"({"input": {)" + input + R"(}, "output": {"kind": "metric_depth", "units": "m"}})");
        const auto r = run_cli({s.job("", model).string(), "--set", "model.size=model"});
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Model)) << input << "\n" << r.output;
        EXPECT_TRUE(contains(r.output, expected)) << r.output;
        EXPECT_FALSE(contains(r.output, "unexpected")) << r.output;
        EXPECT_TRUE(s.outputs().empty());
    }
    // output.max_scale: shown by depthbatch info, and it lets a 5x output render.
    write_probe_model(s.dir / "x5.pt", "def forward(self, x):\n    return x.mean(1, keepdim=True).repeat(1, 1, 5, 5)\n",
                      R"({"input": {}, "output": {"kind": "metric_depth", "units": "m", "max_scale": 8}})");
    const auto info = run_cli({"info", (s.dir / "x5.pt").string()});
    EXPECT_EQ(info.exit_code, 0) << info.output;
    EXPECT_TRUE(contains(info.output, "at most 8x the input's height and width (output.max_scale)")) << info.output;
    const auto r = run_cli({s.job("", "x5.pt").string()});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(s.outputs().size(), 3u);
    EXPECT_NEAR(depth_at(s.dir / "out/d.1001.exr", 5, 5), 0.25f, 1e-3f);
}

// Swapped H and W on a non-square plate: the frames render (resized back to the plate) with one warning naming
// both shapes for the job, not one per frame.
TEST(BadInput, SwappedOutputWarnsOncePerJob) {
    Scene s;
    write_probe_model(s.dir / "t.pt", "def forward(self, x):\n    return x.mean(1, keepdim=True).transpose(2, 3)\n",
                      probe_contract());
    const auto r = run_cli({s.job("", "t.pt").string()});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const std::string expected = "model output [1,1,32,18] has the height and width of its input [1,3,18,32] swapped";
    EXPECT_TRUE(contains(r.output, expected)) << r.output;
    EXPECT_EQ(r.output.find(expected), r.output.rfind(expected)) << "once per job\n" << r.output;
    EXPECT_EQ(s.outputs().size(), 3u);
}

// Negative metric depth: counted in the frame's warning, written as the model gave it (not clamped to 0).
TEST(BadInput, NegativeMetricDepthIsWarnedWithTheCountAndKept) {
    Scene s;  // plates of 0.25: P-mean - 0.5 is -0.25 at each of the 32x18 pixels
    write_probe_model(s.dir / "neg.pt", "def forward(self, x):\n    return x.mean(1, keepdim=True) - 0.5\n",
                      probe_contract());
    const auto r = run_cli({s.job("", "neg.pt").string(), "--set", "depth.kind=raw"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    for (int f = 1001; f <= 1003; ++f)
        EXPECT_TRUE(contains(r.output, "frame " + std::to_string(f) +
                                           ": the model returned 576 negative metric depth values "
                                           "(min -0.25 m); kept as they are, not clamped to 0 (depth.convention raw)"))
            << r.output;
    EXPECT_NEAR(depth_at(s.dir / "out/d.1002.exr", 3, 4), -0.25f, 1e-3f);
    // A positive model gives no such warning.
    const auto ok = run_cli({s.job().string(), "--overwrite"});
    EXPECT_EQ(ok.exit_code, 0) << ok.output;
    EXPECT_FALSE(contains(ok.output, "negative")) << ok.output;
}

// Issue 22 §5: the thread counts logged and summarised are those that run. TBB gives an arena no more threads
// than the CPUs this process may use (its default limit), however many are asked.
TEST(BadInput, ThreadsBeyondTheCoresAreReportedAsTheyRun) {
    Scene s;
    cpu_set_t set;
    ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    const int cpus = std::min(64, CPU_COUNT(&set));
    const auto r =
        run_cli({s.job().string(), "--threads", "64", "--frames", "1001", "--summary", (s.dir / "s.json").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto j = nlohmann::json::parse(read_bytes(s.dir / "s.json"));
    EXPECT_EQ(j["worker_threads"].get<int>(), cpus) << r.output;
    EXPECT_GE(j["torch_threads"].get<int>(), 1);
    if (cpus < 64)
        EXPECT_TRUE(contains(r.output, " " + std::to_string(cpus) + " worker threads (asked 64), LibTorch "))
            << r.output;
    EXPECT_FALSE(contains(r.output, "TBB Warning")) << r.output;
}

// Issue 22 §5: an error a --set causes names the flag, not the job file.
TEST(BadInput, SetErrorsNameTheFlag) {
    Scene s;
    for (const auto& [set, what] : std::vector<std::pair<std::string, std::string>>{
             {"nosuch.key=1", "--set nosuch.key=1: unknown section 'nosuch'"},
             {"model.batch=abc",
              "--set model.batch=abc: key 'model.batch': expected an integer (decimal digits), got 'abc'"},
             {"output.preview.path=", "--set output.preview.path=: key 'output.preview.path': path is empty"}}) {
        const auto r = run_cli({s.job().string(), "--set", set});
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
        EXPECT_TRUE(contains(r.output, what)) << r.output;
        EXPECT_FALSE(contains(r.output, "job.yaml")) << r.output;
    }
    EXPECT_TRUE(s.outputs().empty());
}

// Issue 22 §5: $NAME, ${NAME} and ~ in path keys come from the environment; $F4 stays the frame token; an
// unset variable is exit 2 naming it.
TEST(BadInput, PathsTakeEnvironmentVariables) {
    Scene s;
    const fs::path job = write_job(s.dir / "env.yaml",
                                   "input: {path: '${PLATE}.$F4.exr', colorspace: sRGB}\n"
                                   "model: {path: pmean.pt, size: plate}\n"
                                   "output: {path: 'out/$SHOT/d_$$.####.exr'}\n");
    auto r = run_cli({job.string(), "--frames", "1001-1002"}, "PLATE=p SHOT=sh010");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(s.dir / "out" / "sh010"), (std::vector<std::string>{"d_$.1001.exr", "d_$.1002.exr"}))
        << r.output;
    r = run_cli({job.string(), "--frames", "1003"}, "env -u SHOT PLATE=p");
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "env.yaml:3: key 'output.path': environment variable SHOT is not set")) << r.output;
    // A --set value is a job key and takes them too; --output takes its value as written (issue 32 §3: the shell
    // that ran the command expanded what it meant to).
    r = run_cli({job.string(), "--frames", "1003", "--set", "output.path=" + (s.dir / "o2/$SHOT.####.exr").string()},
                "PLATE=p SHOT=x");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(fs::exists(s.dir / "o2" / "x.1003.exr")) << r.output;
    r = run_cli({job.string(), "--frames", "1003", "--output", (s.dir / "o3/$SHOT.####.exr").string()},
                "PLATE=p SHOT=x");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(list_dir(s.dir / "o3"), (std::vector<std::string>{"$SHOT.1003.exr"})) << r.output;
}

// Issue 22 §5: a FIFO or a device with a job's name is refused at once (never a hang); extensions in any case.
TEST(BadInput, WhatIsNotAJobFileIsRefusedWithoutReadingIt) {
    Scene s;
    ASSERT_EQ(::mkfifo((s.dir / "fifo.yaml").c_str(), 0600), 0);
    auto r = run_cli({(s.dir / "fifo.yaml").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "fifo.yaml: not a job file (a FIFO (named pipe))")) << r.output;
    fs::create_symlink("/dev/zero", s.dir / "zero.yml");
    r = run_cli({(s.dir / "zero.yml").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "zero.yml: not a job file (a character device)")) << r.output;
    fs::copy_file(s.job(), s.dir / "SHOT.YML");
    r = run_cli({(s.dir / "SHOT.YML").string(), "--frames", "1001"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(s.outputs(), (std::vector<std::string>{"d.1001.exr"})) << r.output;
}

// Issue 32 item 2: a plate cut short (a farm copy that stopped) is found on its header and tables alone, by
// `validate` as by the render (exit 3 naming the frame and file); intact files of every format pass.
namespace {

/// The sample plates of every format the check reads: EXR scanline/tiled/mip/multi-part, PNG, JPEG, DPX, TIFF.
std::vector<fs::path> integrity_samples() {
    const fs::path s = samples_dir();
    std::vector<fs::path> files = {s / "plates/bedroom/bedroom.1001.jpg",
                                   s / "plates/sintel/sintel.1005.png",
                                   s / "nyu/rgb.png",
                                   s / "exr/dpx_nuke_10bits_rgb.dpx",
                                   s / "exr/ladoga.tif",
                                   s / "exr/flower-rgb-contig-16.tif"};
    for (const auto& e : fs::directory_iterator(s / "exr"))
        if (e.path().extension() == ".exr") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

TEST(BadInput, TruncatedPlatesOfEveryFormatAreRefusedOnTheHeader) {
    TempDir dir;
    for (const fs::path& src : integrity_samples()) {
        SCOPED_TRACE(src.string());
        // Intact: no 'truncated' (other refusals, e.g. a part choice, are not this check's business).
        try {
            (void)depthbatch::probe_plate(src.string(), 1, {});
        } catch (const std::exception& e) {
            EXPECT_FALSE(contains(e.what(), "truncated")) << e.what();
        }
        const std::string bytes = read_bytes(src);
        // Half, and a tenth short (a TIFF's directory may sit at the end, after its strips: that is cut either way).
        for (const size_t keep : {bytes.size() / 2, bytes.size() * 9 / 10}) {
            const fs::path cut = write_file(dir / ("cut" + src.extension().string()), bytes.substr(0, keep));
            const std::string message = expect_error<depthbatch::InputError>(
                [&] { (void)depthbatch::probe_plate(cut.string(), 7, {}); }, "probe of a cut copy");
            EXPECT_TRUE(contains(message, "frame 7")) << message;
            EXPECT_TRUE(contains(message, cut.string())) << message;
        }
    }
}

TEST(BadInput, ValidatePredictsATruncatedPlateAndTheRenderSaysTheSame) {
    const fs::path s = samples_dir();
    for (const fs::path& src :
         {s / "plates/bedroom/bedroom.1001.jpg", s / "plates/sintel/sintel.1005.png", s / "exr/singlepart.0001.exr",
          s / "exr/dpx_nuke_10bits_rgb.dpx", s / "exr/ladoga.tif"}) {
        SCOPED_TRACE(src.string());
        Scene sc;
        const std::string ext = src.extension().string();
        const std::string bytes = read_bytes(src);
        fs::copy_file(src, sc.dir / ("q.1001" + ext));
        // 17 bytes short: the end of the last pixel data (or of the file's tables) is gone.
        write_file(sc.dir / ("q.1002" + ext),
                   bytes.substr(0, ext == ".tif" ? bytes.size() * 9 / 10 : bytes.size() - 17));
        const auto job = [&](const std::string& frames) {
            return write_job(sc.dir / "q.yaml",
                             "input: {path: q.####" + ext + ", frames: " + frames +
                                 "}\n"
                                 "model: {path: pmean.pt, size: plate}\noutput: {path: out/d.####.exr}\n")
                .string();
        };
        const auto ok = run_cli({"validate", job("1001")});
        EXPECT_EQ(ok.exit_code, 0) << ok.output;
        const auto v = run_cli({"validate", job("1001-1002")});
        EXPECT_EQ(v.exit_code, exit_status(ExitCode::Input)) << v.output;
        EXPECT_TRUE(contains(v.output, "q.1002" + ext)) << v.output;
        EXPECT_TRUE(contains(v.output, "truncated")) << v.output;
        EXPECT_FALSE(fs::exists(sc.dir / "out")) << "validate writes nothing";
        const auto r = run_cli({job("1001-1002"), "--threads", "1", "--set", "pipeline.frames_in_flight=1"});
        EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
        EXPECT_TRUE(contains(r.output, "frame 1002")) << r.output;
        EXPECT_TRUE(contains(r.output, "truncated")) << r.output;
        EXPECT_FALSE(fs::exists(sc.dir / "out/d.1002.exr"));
        // Under on_error: continue the frame fails alone: validate says 7 as the render does (a new user's N17: 3).
        const auto vc = run_cli({"validate", job("1001-1002"), "--set", "pipeline.on_error=continue", "--overwrite"});
        EXPECT_EQ(vc.exit_code, exit_status(ExitCode::Partial)) << vc.output;
        EXPECT_TRUE(contains(vc.output, "q.1002" + ext)) << vc.output;
        const auto rc = run_cli({job("1001-1002"), "--set", "pipeline.on_error=continue", "--overwrite"});
        EXPECT_EQ(rc.exit_code, exit_status(ExitCode::Partial)) << rc.output;
    }
}

// Issue 32 item 2b: `validate --deep` decodes every plate; damage inside complete-looking data (a PNG whose IDAT
// bytes were changed: its CRC fails) passes the header check and is found by --deep, as the render finds it.
TEST(BadInput, ValidateDeepDecodesEveryPlate) {
    Scene sc;
    const fs::path src = samples_dir() / "plates/sintel/sintel.1005.png";
    std::string bytes = read_bytes(src);
    fs::copy_file(src, sc.dir / "q.1001.png");
    for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 64; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
    write_file(sc.dir / "q.1002.png", bytes);
    const std::string job = write_job(sc.dir / "q.yaml",
                                      "input: {path: q.####.png, frames: 1001-1002}\n"
                                      "model: {path: pmean.pt, size: plate}\noutput: {path: out/d.####.exr}\n")
                                .string();
    const auto shallow = run_cli({"validate", job});
    EXPECT_EQ(shallow.exit_code, 0) << "the header and chunk lengths are intact\n" << shallow.output;
    const auto deep = run_cli({"validate", job, "--deep"});
    EXPECT_EQ(deep.exit_code, exit_status(ExitCode::Input)) << deep.output;
    EXPECT_TRUE(contains(deep.output, "frame 1002")) << deep.output;
    EXPECT_TRUE(contains(deep.output, "q.1002.png")) << deep.output;
    EXPECT_FALSE(fs::exists(sc.dir / "out")) << "validate writes nothing";
    const auto good = run_cli({"validate", job, "--deep", "--frames", "1001"});
    EXPECT_EQ(good.exit_code, 0) << good.output;
    EXPECT_TRUE(contains(good.output, "decoded in full")) << good.output;
    const auto r = run_cli({job, "--threads", "1", "--set", "pipeline.frames_in_flight=1"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_TRUE(contains(r.output, "frame 1002")) << r.output;
    // Issue 41 §5: libpng's own stderr line and OpenImageIO's two-line error carry depthbatch's prefix, like every
    // other line (the progress lines of stdout start "frame ").
    EXPECT_TRUE(contains(r.output, "depthbatch: error: libpng: ")) << r.output;
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);)
        EXPECT_TRUE(line.rfind("depthbatch: ", 0) == 0 || line.rfind("frame ", 0) == 0) << line << "\n" << r.output;
}
