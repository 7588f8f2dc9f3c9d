// Unit tests for include/depthbatch/job_config.h: one schema from YAML and TOML, path resolution,
// --set overrides, and errors that name file:line and key.
#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/job_config.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace fs = std::filesystem;
using namespace depthbatch;
using namespace std::string_literals;

namespace {

// Lines joined with '\n': lines[i] is line i+1 of the text, so expected line numbers are obvious.
std::string lines(const std::vector<std::string>& ls) {
    std::string out;
    for (const auto& l : ls) out += l + "\n";
    return out;
}

const std::string kBase = "/jobs/show/sh010";

JobConfig yaml(const std::string& text, const std::vector<std::string>& overrides = {}) {
    return parse_job(text, "yaml", "job.yaml", kBase, overrides);
}
JobConfig toml(const std::string& text, const std::vector<std::string>& overrides = {}) {
    return parse_job(text, "toml", "job.toml", kBase, overrides);
}

// The ConfigError message of parsing `text`; fails the test if parse_job does not throw ConfigError.
std::string job_error(const std::string& text, const std::string& format,
                      const std::vector<std::string>& overrides = {}) {
    const std::string origin = format == "toml" ? "job.toml" : "job.yaml";
    return test::expect_error<ConfigError>([&] { parse_job(text, format, origin, kBase, overrides); },
                                           "parse_job of:\n" + text);
}

using test::contains;

std::string abs_from(const fs::path& base, const std::string& rel) { return (base / rel).lexically_normal().string(); }

// The full job in both formats: every key of the schema set to a non-default value.
const std::string kFullYaml = lines({
    "input:",
    "  path: plates/sh010.####.exr",
    "  frames: 1001-1010x3,1020",
    "  colorspace: ACEScg",
    "  part: beauty",
    "  view: left",
    "  layer: ViewLayer.DiffCol",
    "output:",
    "  path: ../depth/sh010_depth.%04d.exr",
    "  overwrite: skip",
    "  compression: piz",
    "  channels: all",
    "  existing_depth: rename",
    "  pixel_type: float",
    "model:",
    "  path: models/m.pt",
    "  device: cuda:1",
    "  size: [640, 360]",
    "  colorspace: sRGB",
    "  multiple: 14",
    "  kind: metric_depth",
    "  units: m",
    "  input_size: [518, 294]",
    "  fixed_size: true",
    "  precision: fp16",
    "  batch: 4",
    "  warmup: 2",
    "  freeze: true",
    "  channels_last: yes",
    "  threads: 6",
    "color:",
    "  config: ocio/config.ocio",
    "  hdr: view",
    "  display: sRGB - Display",
    "  view: ACES 1.0 - SDR Video",
    "  look: Neutral",
    "depth:",
    "  kind: normalized",
    "  normalize: sequence",
    "  near_is: 1",
    "  near: 0.5",
    "  far: 20",
    "  percentiles: [5, 97.5]",
    "  stats_frames: 24",
    "  stats_file: stats/sh010.json",
    "  stabilize: true",
    "  stabilize_window: 12",
    "pipeline:",
    "  frames_in_flight: 8",
    "  threads: 3",
    "  summary: reports/sh010.json",
    "  on_error: continue",
    "  grace_s: 45",
});

const std::string kFullToml = lines({
    "[input]",
    "path = \"plates/sh010.####.exr\"",
    "frames = \"1001-1010x3,1020\"",
    "colorspace = \"ACEScg\"",
    "part = \"beauty\"",
    "view = \"left\"",
    "layer = \"ViewLayer.DiffCol\"",
    "",
    "[output]",
    "path = \"../depth/sh010_depth.%04d.exr\"",
    "overwrite = \"skip\"",
    "compression = \"piz\"",
    "channels = \"all\"",
    "existing_depth = \"rename\"",
    "pixel_type = \"float\"",
    "",
    "[model]",
    "path = \"models/m.pt\"",
    "device = \"cuda:1\"",
    "size = [640, 360]",
    "colorspace = \"sRGB\"",
    "multiple = 14",
    "kind = \"metric_depth\"",
    "units = \"m\"",
    "input_size = [518, 294]",
    "fixed_size = true",
    "precision = \"fp16\"",
    "batch = 4",
    "warmup = 2",
    "freeze = true",
    "channels_last = true",
    "threads = 6",
    "",
    "[color]",
    "config = \"ocio/config.ocio\"",
    "hdr = \"view\"",
    "display = \"sRGB - Display\"",
    "view = \"ACES 1.0 - SDR Video\"",
    "look = \"Neutral\"",
    "",
    "[depth]",
    "kind = \"normalized\"",
    "normalize = \"sequence\"",
    "near_is = 1",
    "near = 0.5",
    "far = 20.0",
    "percentiles = [5, 97.5]",
    "stats_frames = 24",
    "stats_file = \"stats/sh010.json\"",
    "stabilize = true",
    "stabilize_window = 12",
    "",
    "[pipeline]",
    "frames_in_flight = 8",
    "threads = 3",
    "summary = \"reports/sh010.json\"",
    "on_error = \"continue\"",
    "grace_s = 45",
});

const std::string kMinimalYaml = lines({
    "input:",
    "  path: /plates/a.####.exr",
    "output:",
    "  path: /depth/a_depth.####.exr",
});

void expect_full_job(const JobConfig& j) {
    EXPECT_EQ(j.input.path, "/jobs/show/sh010/plates/sh010.####.exr");
    EXPECT_EQ(j.input.frames, (std::vector<int>{1001, 1004, 1007, 1010, 1020}));
    EXPECT_EQ(j.input.colorspace, "ACEScg");
    EXPECT_EQ(j.input.part, "beauty");
    EXPECT_EQ(j.input.view, "left");
    EXPECT_EQ(j.input.layer, "ViewLayer.DiffCol");
    EXPECT_EQ(j.output.path, "/jobs/show/depth/sh010_depth.%04d.exr");
    EXPECT_EQ(j.output.overwrite, OverwritePolicy::Skip);
    EXPECT_EQ(j.output.compression, Compression::Piz);
    EXPECT_EQ(j.output.channels, OutputChannels::All);
    EXPECT_EQ(j.output.existing_depth, ExistingDepth::Rename);
    EXPECT_EQ(j.output.pixel_type, PassthroughType::Float);
    EXPECT_EQ(j.model.path, "/jobs/show/sh010/models/m.pt");
    EXPECT_EQ(j.model.device.name(), "cuda:1");
    EXPECT_EQ(j.model.size.mode, ProcessingSize::Mode::Explicit);
    EXPECT_EQ(j.model.size.width_px, 640);
    EXPECT_EQ(j.model.size.height_px, 360);
    const ContractOverrides& c = j.model.contract;
    EXPECT_TRUE(c.any());
    EXPECT_EQ(c.colorspace, std::optional<std::string>("sRGB"));
    EXPECT_EQ(c.multiple, std::optional<int>(14));
    EXPECT_EQ(c.kind, std::optional<DepthKind>(DepthKind::MetricDepth));
    EXPECT_EQ(c.units, std::optional<std::string>("m"));
    EXPECT_EQ(c.width_px, std::optional<int>(518));
    EXPECT_EQ(c.height_px, std::optional<int>(294));
    EXPECT_EQ(c.fixed_size, std::optional<bool>(true));
    EXPECT_EQ(j.model.precision, Precision::Fp16);
    EXPECT_EQ(j.model.batch, 4);
    EXPECT_EQ(j.model.warmup, 2);
    EXPECT_TRUE(j.model.freeze);
    EXPECT_TRUE(j.model.channels_last);
    EXPECT_EQ(j.model.threads, 6);
    EXPECT_EQ(j.color.config, "/jobs/show/sh010/ocio/config.ocio");
    EXPECT_EQ(j.color.hdr, HdrMode::View);
    EXPECT_EQ(j.color.display, "sRGB - Display");
    EXPECT_EQ(j.color.view, "ACES 1.0 - SDR Video");
    EXPECT_EQ(j.color.look, "Neutral");
    EXPECT_EQ(j.depth.convention, DepthConvention::Normalized);
    EXPECT_EQ(j.depth.normalize, Normalization::Sequence);
    EXPECT_EQ(j.depth.near_is, 1);
    EXPECT_EQ(j.depth.near, std::optional<double>(0.5));
    EXPECT_EQ(j.depth.far, std::optional<double>(20.0));
    EXPECT_DOUBLE_EQ(j.depth.percentile_low, 5.0);
    EXPECT_DOUBLE_EQ(j.depth.percentile_high, 97.5);
    EXPECT_EQ(j.depth.stats_frames, 24);
    EXPECT_EQ(j.depth.stats_file, "/jobs/show/sh010/stats/sh010.json");
    EXPECT_TRUE(j.depth.stabilize);
    EXPECT_EQ(j.depth.stabilize_radius, 6);
    EXPECT_EQ(j.depth.stabilize_window(), 12);
    EXPECT_EQ(j.pipeline.frames_in_flight, 8);
    EXPECT_EQ(j.pipeline.threads, 3);
    EXPECT_EQ(j.pipeline.summary, "/jobs/show/sh010/reports/sh010.json");
    EXPECT_EQ(j.pipeline.on_error, OnError::Continue);
    EXPECT_DOUBLE_EQ(j.pipeline.grace_s, 45.0);
    EXPECT_TRUE(j.render.frames.empty());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// One schema, two formats
// ---------------------------------------------------------------------------------------------

TEST(JobConfig, FullYamlJob) {
    const JobConfig j = yaml(kFullYaml);
    EXPECT_EQ(j.job_file, "job.yaml");
    expect_full_job(j);
}

TEST(JobConfig, FullTomlJob) {
    const JobConfig j = toml(kFullToml);
    EXPECT_EQ(j.job_file, "job.toml");
    expect_full_job(j);
}

// YAML and TOML giving equal jobs, key by key, is generated from the key table: job_keys_test.cpp
// (JobConfigKeys.EachKeyChangesTheFingerprintIffItChangesThePixels).

TEST(JobConfig, DefaultsOfAMinimalJob) {
    const JobConfig j = yaml(kMinimalYaml);
    EXPECT_EQ(j.input.path, "/plates/a.####.exr");
    EXPECT_TRUE(j.input.frames.empty());
    EXPECT_EQ(j.input.colorspace, "auto");
    EXPECT_EQ(j.input.part, "0");
    EXPECT_EQ(j.input.view, "");
    EXPECT_EQ(j.output.path, "/depth/a_depth.####.exr");
    EXPECT_EQ(j.output.overwrite, OverwritePolicy::Error);
    EXPECT_EQ(j.output.compression, Compression::Zip);
    EXPECT_EQ(j.output.channels, OutputChannels::Rgba);
    EXPECT_EQ(j.output.existing_depth, ExistingDepth::Replace);
    EXPECT_EQ(j.output.pixel_type, PassthroughType::Auto) << "issue 25: half where it loses nothing";
    EXPECT_EQ(j.output.passthrough_colorspace, PassthroughColorspace::SceneLinear) << "issue 25: as Nuke reads EXR";
    EXPECT_EQ(j.model.path, "default");
    EXPECT_EQ(j.model.device.name(), "auto");
    EXPECT_EQ(j.model.size.mode, ProcessingSize::Mode::Model);
    EXPECT_FALSE(j.model.contract.any());
    EXPECT_EQ(j.model.precision, Precision::Fp32);
    EXPECT_EQ(j.model.batch, 1);
    EXPECT_EQ(j.model.warmup, -1);
    EXPECT_FALSE(j.model.freeze);
    EXPECT_FALSE(j.model.channels_last);
    EXPECT_EQ(j.model.threads, 0);
    EXPECT_EQ(j.color.config, "");
    EXPECT_EQ(j.color.hdr, HdrMode::Clamp);
    EXPECT_EQ(j.depth.convention, DepthConvention::Raw);
    EXPECT_EQ(j.depth.normalize, Normalization::Raw);
    EXPECT_EQ(j.depth.near_is, 0);
    EXPECT_FALSE(j.depth.near.has_value());
    EXPECT_FALSE(j.depth.far.has_value());
    EXPECT_DOUBLE_EQ(j.depth.percentile_low, 2.0);
    EXPECT_DOUBLE_EQ(j.depth.percentile_high, 98.0);
    EXPECT_EQ(j.depth.stats_frames, 16);
    EXPECT_EQ(j.depth.stats_file, "");
    EXPECT_FALSE(j.depth.stabilize);
    EXPECT_EQ(j.depth.stabilize_radius, 4);
    EXPECT_EQ(j.pipeline.frames_in_flight, 0);
    EXPECT_EQ(j.pipeline.threads, 0);
    EXPECT_EQ(j.pipeline.summary, "");
    EXPECT_EQ(j.pipeline.on_error, OnError::Stop);
    EXPECT_DOUBLE_EQ(j.pipeline.grace_s, 20.0);
    EXPECT_FALSE(j.render.any());

    const JobConfig t =
        toml(lines({"[input]", "path = \"/plates/a.####.exr\"", "[output]", "path = \"/depth/a_depth.####.exr\""}));
    EXPECT_EQ(t.input.path, j.input.path);
    EXPECT_EQ(t.output.path, j.output.path);
    EXPECT_EQ(t.model.size.mode, ProcessingSize::Mode::Model);
    EXPECT_EQ(t.model.path, "default");
}

TEST(JobConfig, ProcessingSizeModes) {
    auto with_size = [](const std::string& value) { return yaml(kMinimalYaml + "model:\n  size: " + value + "\n"); };
    EXPECT_EQ(with_size("model").model.size.mode, ProcessingSize::Mode::Model);
    EXPECT_EQ(with_size("plate").model.size.mode, ProcessingSize::Mode::Plate);
    const JobConfig n = with_size("518");
    EXPECT_EQ(n.model.size.mode, ProcessingSize::Mode::ShortSide);
    EXPECT_EQ(n.model.size.short_side_px, 518);
    const JobConfig e = with_size("[1024, 576]");
    EXPECT_EQ(e.model.size.mode, ProcessingSize::Mode::Explicit);
    EXPECT_EQ(e.model.size.width_px, 1024);
    EXPECT_EQ(e.model.size.height_px, 576);

    const std::string toml_base =
        lines({"[input]", "path = \"/p/a.####.exr\"", "[output]", "path = \"/d/a.####.exr\"", "[model]"});
    const JobConfig tn = toml(toml_base + "size = 384\n");
    EXPECT_EQ(tn.model.size.mode, ProcessingSize::Mode::ShortSide);
    EXPECT_EQ(tn.model.size.short_side_px, 384);
    EXPECT_EQ(toml(toml_base + "size = \"plate\"\n").model.size.mode, ProcessingSize::Mode::Plate);
}

TEST(JobConfig, OverwritePoliciesAndDevices) {
    auto with = [](const std::string& section_and_key) { return yaml(kMinimalYaml + section_and_key); };
    EXPECT_EQ(
        yaml(lines({"input:", "  path: /p/a.####.exr", "output:", "  path: /d/a.####.exr", "  overwrite: overwrite"}))
            .output.overwrite,
        OverwritePolicy::Overwrite);
    EXPECT_EQ(yaml(lines({"input:", "  path: /p/a.####.exr", "output:", "  path: /d/a.####.exr", "  overwrite: error"}))
                  .output.overwrite,
              OverwritePolicy::Error);
    for (const std::string device : {"auto", "cpu", "cuda", "cuda:0", "cuda:12"})
        EXPECT_EQ(with("model:\n  device: \"" + device + "\"\n").model.device.name(), device);
    // Parsed once, at the job: what the model's loader and the farm plan read.
    EXPECT_EQ(with("model:\n  device: cuda:12\n").model.device, (ModelDevice{ModelDevice::Kind::Cuda, 12}));
    EXPECT_EQ(with("model:\n  device: cuda\n").model.device, (ModelDevice{ModelDevice::Kind::Cuda, -1}));
    EXPECT_EQ(with("model:\n  device: cpu\n").model.device, ModelDevice::cpu());
    EXPECT_EQ(yaml(kMinimalYaml).model.device.kind, ModelDevice::Kind::Auto);
    EXPECT_FALSE(parse_model_device("cuda:"));
    EXPECT_FALSE(parse_model_device("cuda:1234567890"));
    EXPECT_FALSE(parse_model_device("CPU"));
    // input.scene and the preview's colour map: closed sets, read as enums.
    EXPECT_EQ(yaml(kMinimalYaml).input.scene, Scene::Unknown);
    EXPECT_EQ(yaml(lines({"input:", "  path: /p/a.####.exr", "  scene: outdoor", "output:", "  path: /d/a.####.exr"}))
                  .input.scene,
              Scene::Outdoor);
}

TEST(JobConfig, InputFramesAsSingleNumber) {
    const JobConfig j =
        yaml(lines({"input:", "  path: /p/a.####.exr", "  frames: 1001", "output:", "  path: /d/a.####.exr"}));
    EXPECT_EQ(j.input.frames, std::vector<int>{1001});
    const JobConfig t =
        toml(lines({"[input]", "path = \"/p/a.####.exr\"", "frames = 1001", "[output]", "path = \"/d/a.####.exr\""}));
    EXPECT_EQ(t.input.frames, std::vector<int>{1001});
}

// ---------------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------------

TEST(JobConfig, RelativePathsResolveAgainstBaseDir) {
    const JobConfig j =
        parse_job(lines({"input:", "  path: ./in/../plates/a.####.exr", "output:", "  path: ../../out/a_depth.####.exr",
                         "model:", "  path: m.pt", "color:", "  config: cfg/config.ocio"}),
                  "yaml", "x.yaml", "/base/dir");
    EXPECT_EQ(j.input.path, "/base/dir/plates/a.####.exr");
    EXPECT_EQ(j.output.path, "/out/a_depth.####.exr");
    EXPECT_EQ(j.model.path, "/base/dir/m.pt");
    EXPECT_EQ(j.color.config, "/base/dir/cfg/config.ocio");
}

TEST(JobConfig, AbsolutePathsAreKept) {
    const JobConfig j = yaml(lines({"input:", "  path: /abs/plates//a.####.exr",
                                    "output:", "  path: /abs/out/a.####.exr", "model:", "  path: /models/x.pt"}));
    EXPECT_EQ(j.input.path, "/abs/plates/a.####.exr");
    EXPECT_EQ(j.output.path, "/abs/out/a.####.exr");
    EXPECT_EQ(j.model.path, "/models/x.pt");
}

TEST(JobConfig, DefaultModelIsNotAPath) {
    const JobConfig j = yaml(kMinimalYaml + "model:\n  path: default\n");
    EXPECT_EQ(j.model.path, "default");
}

// ---------------------------------------------------------------------------------------------
// --set overrides
// ---------------------------------------------------------------------------------------------

TEST(JobConfig, OverridesReplaceAndAddValues) {
    const JobConfig j = yaml(kFullYaml, {"model.device=cpu", "pipeline.threads=2", "model.size=[320, 240]",
                                         "output.overwrite=overwrite", "input.frames=1001-1005", "model.multiple=32"});
    EXPECT_EQ(j.model.device.name(), "cpu");
    EXPECT_EQ(j.pipeline.threads, 2);
    EXPECT_EQ(j.model.size.mode, ProcessingSize::Mode::Explicit);
    EXPECT_EQ(j.model.size.width_px, 320);
    EXPECT_EQ(j.model.size.height_px, 240);
    EXPECT_EQ(j.output.overwrite, OverwritePolicy::Overwrite);
    EXPECT_EQ(j.input.frames, (std::vector<int>{1001, 1002, 1003, 1004, 1005}));
    EXPECT_EQ(j.model.contract.multiple, std::optional<int>(32));
    // Keys not overridden keep the file's values.
    EXPECT_EQ(j.input.colorspace, "ACEScg");
    EXPECT_EQ(j.pipeline.frames_in_flight, 8);

    // An override may add a section the file does not have.
    const JobConfig m = yaml(kMinimalYaml, {"model.size=plate", "pipeline.frames_in_flight=4"});
    EXPECT_EQ(m.model.size.mode, ProcessingSize::Mode::Plate);
    EXPECT_EQ(m.pipeline.frames_in_flight, 4);
    // The same override works on a TOML job.
    EXPECT_EQ(toml(kFullToml, {"model.device=cuda:0"}).model.device.name(), "cuda:0");
}

TEST(JobConfig, OverridePathsResolveAgainstTheCurrentFolder) {
    const fs::path cwd = fs::current_path();
    const JobConfig j =
        yaml(kFullYaml, {"output.path=out/d.####.exr", "model.path=../m2.pt", "color.config=c/config.ocio"});
    EXPECT_EQ(j.output.path, abs_from(cwd, "out/d.####.exr"));
    EXPECT_EQ(j.model.path, abs_from(cwd, "../m2.pt"));
    EXPECT_EQ(j.color.config, abs_from(cwd, "c/config.ocio"));
    // Paths from the file still resolve against the file's folder.
    EXPECT_EQ(j.input.path, "/jobs/show/sh010/plates/sh010.####.exr");
    // An absolute override is kept as is.
    EXPECT_EQ(yaml(kFullYaml, {"input.path=/x/y.####.exr"}).input.path, "/x/y.####.exr");
}

TEST(JobConfig, OverrideErrors) {
    std::string msg = job_error(kMinimalYaml, "yaml", {"model.device"});
    EXPECT_TRUE(contains(msg, "model.device")) << msg;
    msg = job_error(kMinimalYaml, "yaml", {"device=cpu"});
    EXPECT_TRUE(contains(msg, "device=cpu")) << msg;
    msg = job_error(kMinimalYaml, "yaml", {"model.fps=4"});
    EXPECT_TRUE(contains(msg, "--set model.fps=4")) << msg;
    EXPECT_TRUE(contains(msg, "'model.fps'")) << msg;
    msg = job_error(kMinimalYaml, "yaml", {"pipeline.threads=many"});
    EXPECT_TRUE(contains(msg, "--set pipeline.threads=many")) << msg;
    EXPECT_TRUE(contains(msg, "'many'")) << msg;
}

// ---------------------------------------------------------------------------------------------
// Errors: file:line, key, allowed keys
// ---------------------------------------------------------------------------------------------

TEST(JobConfigErrors, UnknownKeyYaml) {
    const std::string msg = job_error(lines({
                                          "input:",                 // 1
                                          "  path: /p/a.####.exr",  // 2
                                          "output:",                // 3
                                          "  path: /d/a.####.exr",  // 4
                                          "model:",                 // 5
                                          "  device: cpu",          // 6
                                          "  batchsize: 4",         // 7
                                      }),
                                      "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:7:")) << msg;
    EXPECT_TRUE(contains(msg, "'model.batchsize'")) << msg;
    // The allowed keys of the section are listed (sorted, comma-separated).
    const auto allowed = msg.find("allowed");
    ASSERT_NE(allowed, std::string::npos) << msg;
    for (const std::string key :
         {"batch", "colorspace", "device", "fixed_size", "input_size", "kind", "multiple", "path", "size", "units"})
        EXPECT_TRUE(contains(msg.substr(allowed), " " + key + ",") || contains(msg.substr(allowed), " " + key + ")"))
            << key << ": " << msg;
    EXPECT_TRUE(contains(msg, "colorspace, device, fixed_size")) << msg;
}

TEST(JobConfigErrors, UnknownKeyToml) {
    const std::string msg = job_error(lines({
                                          "[input]",                   // 1
                                          "path = \"/p/a.####.exr\"",  // 2
                                          "fps = 24",                  // 3
                                          "[output]",                  // 4
                                          "path = \"/d/a.####.exr\"",  // 5
                                      }),
                                      "toml");
    EXPECT_TRUE(contains(msg, "job.toml:3:")) << msg;
    EXPECT_TRUE(contains(msg, "'input.fps'")) << msg;
    EXPECT_TRUE(contains(msg, "colorspace, frames, layer, part, path, pixel_aspect, scene, view")) << msg;
}

TEST(JobConfigErrors, UnknownSection) {
    std::string msg = job_error(kMinimalYaml + "render:\n  fast: true\n", "yaml");  // render: is line 5
    EXPECT_TRUE(contains(msg, "job.yaml:5:")) << msg;
    EXPECT_TRUE(contains(msg, "'render'")) << msg;
    const auto allowed = msg.find("allowed");
    ASSERT_NE(allowed, std::string::npos) << msg;
    for (const std::string section : {"color", "depth", "input", "model", "output", "pipeline"})
        EXPECT_TRUE(contains(msg.substr(allowed), section)) << section << ": " << msg;

    msg = job_error(lines({"[input]", "path = \"/p/a.####.exr\"", "[output]", "path = \"/d/a.####.exr\"", "",
                           "[render]", "fast = true"}),
                    "toml");
    EXPECT_TRUE(contains(msg, "job.toml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "'render'")) << msg;
}

TEST(JobConfigErrors, WrongTypeNamesLineAndKey) {
    std::string msg = job_error(kMinimalYaml + "model:\n  size: abc\n", "yaml");  // size: is line 6
    EXPECT_TRUE(contains(msg, "job.yaml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "'model.size'")) << msg;
    EXPECT_TRUE(contains(msg, "'abc'")) << msg;

    msg = job_error(kMinimalYaml + "pipeline:\n  frames_in_flight: 2\n  threads: x\n", "yaml");  // line 7
    EXPECT_TRUE(contains(msg, "job.yaml:7:")) << msg;
    EXPECT_TRUE(contains(msg, "'pipeline.threads'")) << msg;
    EXPECT_TRUE(contains(msg, "'x'")) << msg;

    msg = job_error(lines({"[input]", "path = \"/p/a.####.exr\"", "[output]", "path = \"/d/a.####.exr\"", "[pipeline]",
                           "threads = \"x\""}),
                    "toml");
    EXPECT_TRUE(contains(msg, "job.toml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "'pipeline.threads'")) << msg;

    msg = job_error(kMinimalYaml + "model:\n  size: [640]\n", "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "[width, height]")) << msg;

    msg = job_error(kMinimalYaml + "model:\n  fixed_size: maybe\n", "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "'model.fixed_size'")) << msg;

    msg = job_error(kMinimalYaml + "model:\n  path:\n    - a.pt\n", "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "'model.path'")) << msg;

    msg = job_error(kMinimalYaml + "pipeline:\n  threads: -1\n", "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "out of range")) << msg;
}

TEST(JobConfigErrors, BadEnumValue) {
    const std::string msg = job_error(lines({
                                          "input:",                 // 1
                                          "  path: /p/a.####.exr",  // 2
                                          "output:",                // 3
                                          "  path: /d/a.####.exr",  // 4
                                          "  overwrite: maybe",     // 5
                                      }),
                                      "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:5:")) << msg;
    EXPECT_TRUE(contains(msg, "'output.overwrite'")) << msg;
    EXPECT_TRUE(contains(msg, "'maybe'")) << msg;
    EXPECT_TRUE(contains(msg, "error, overwrite, skip")) << msg;

    const std::string comp = job_error(kMinimalYaml + "  compression: lzw\n", "yaml");
    EXPECT_TRUE(contains(comp, "job.yaml:5:")) << comp;
    EXPECT_TRUE(contains(comp, "'output.compression'")) << comp;

    const std::string kind = job_error(kMinimalYaml + "model:\n  kind: disparity\n", "yaml");
    EXPECT_TRUE(contains(kind, "job.yaml:6:")) << kind;
    EXPECT_TRUE(contains(kind, "metric_depth, relative_depth, relative_inverse_depth")) << kind;
}

TEST(JobConfigErrors, MissingInputPath) {
    std::string msg = job_error(lines({"input:", "  frames: 1001-1010", "output:", "  path: /d/a.####.exr"}), "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml")) << msg;
    EXPECT_TRUE(contains(msg, "'input.path'")) << msg;
    EXPECT_TRUE(contains(msg, "required")) << msg;

    msg = job_error(lines({"output:", "  path: /d/a.####.exr"}), "yaml");
    EXPECT_TRUE(contains(msg, "'input.path'")) << msg;

    msg = job_error(lines({"input:", "  path: /p/a.####.exr"}), "yaml");
    EXPECT_TRUE(contains(msg, "'output.path'")) << msg;
    EXPECT_TRUE(contains(msg, "required")) << msg;

    msg = job_error("", "yaml");
    EXPECT_TRUE(contains(msg, "'input.path'")) << msg;
}

TEST(JobConfigErrors, PathWithoutFrameToken) {
    const std::string msg =
        job_error(lines({"input:", "  path: /p/a.exr", "output:", "  path: /d/a.####.exr"}), "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:2:")) << msg;
    EXPECT_TRUE(contains(msg, "'input.path'")) << msg;
}

TEST(JobConfigErrors, OutputMustBeExr) {
    const std::string msg = job_error(lines({
                                          "input:",                 // 1
                                          "  path: /p/a.####.exr",  // 2
                                          "output:",                // 3
                                          "  path: /d/a.####.png",  // 4
                                      }),
                                      "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:4:")) << msg;
    EXPECT_TRUE(contains(msg, "'output.path'")) << msg;
    EXPECT_TRUE(contains(msg, ".exr")) << msg;
}

TEST(JobConfigErrors, OutputEqualsInput) {
    std::string msg = job_error(lines({"input:", "  path: /p/a.####.exr", "output:", "  path: /p/a.####.exr"}), "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:4:")) << msg;
    EXPECT_TRUE(contains(msg, "'output.path'")) << msg;
    // Different spellings of the same files are the same files.
    msg = job_error(lines({"input:", "  path: /p/a.####.exr", "output:", "  path: /p/x/../a.%04d.exr"}), "yaml");
    EXPECT_TRUE(contains(msg, "'output.path'")) << msg;
    // Relative paths that meet after resolution.
    msg = job_error(lines({"input:", "  path: a.####.exr", "output:", "  path: " + kBase + "/a.$F4.exr"}), "yaml");
    EXPECT_TRUE(contains(msg, "'output.path'")) << msg;
}

TEST(JobConfigErrors, BadDevice) {
    for (const std::string device : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", "cuda0", "mps"}) {
        const std::string msg = job_error(kMinimalYaml + "model:\n  device: \"" + device + "\"\n", "yaml");
        EXPECT_TRUE(contains(msg, "job.yaml:6:")) << device << ": " << msg;
        EXPECT_TRUE(contains(msg, "'model.device'")) << msg;
        EXPECT_TRUE(contains(msg, "'" + device + "'")) << msg;
    }
}

TEST(JobConfigErrors, BadFrameSpecNamesKeyAndItem) {
    const std::string msg = job_error(
        lines({"input:", "  path: /p/a.####.exr", "  frames: 1001,1010-1001", "output:", "  path: /d/a.####.exr"}),
        "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:3:")) << msg;
    EXPECT_TRUE(contains(msg, "'input.frames'")) << msg;
    EXPECT_TRUE(contains(msg, "1010-1001")) << msg;
}

TEST(JobConfigErrors, TomlSyntaxErrorNamesLine) {
    const std::string msg = job_error(lines({
                                          "[input]",                   // 1
                                          "path = \"/p/a.####.exr\"",  // 2
                                          "[output]",                  // 3
                                          "path = \"/d/a.####.exr",    // 4: unterminated string
                                          "[model]",                   // 5
                                          "device = \"cpu\"",          // 6
                                      }),
                                      "toml");
    EXPECT_TRUE(contains(msg, "job.toml:4:")) << msg;
    EXPECT_TRUE(contains(msg, "TOML")) << msg;

    const std::string msg2 = job_error(lines({
                                           "[input]",                   // 1
                                           "path = \"/p/a.####.exr\"",  // 2
                                           "",                          // 3
                                           "frames = = 3",              // 4
                                       }),
                                       "toml");
    EXPECT_TRUE(contains(msg2, "job.toml:4:")) << msg2;
}

TEST(JobConfigErrors, YamlSyntaxErrorNamesLine) {
    std::string msg = job_error(lines({
                                    "input:",                  // 1
                                    "  path: /p/a.####.exr",   // 2
                                    "output:",                 // 3
                                    "  path: /d/a.####.exr",   // 4
                                    "  overwrite: skip: now",  // 5: a map value inside a plain scalar
                                }),
                                "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:5:")) << msg;
    EXPECT_TRUE(contains(msg, "YAML")) << msg;

    msg = job_error(lines({
                        "input:",                 // 1
                        "  path: /p/a.####.exr",  // 2
                        "\toutput: 3",            // 3: tab indentation
                    }),
                    "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:3:")) << msg;
    EXPECT_TRUE(contains(msg, "YAML")) << msg;

    msg = job_error(lines({
                        "input:",                 // 1
                        "  path: /p/a.####.exr",  // 2
                        " output:",               // 3: indentation matches no level
                        "  path: /d/a.####.exr",  // 4
                    }),
                    "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:3:")) << msg;
}

TEST(JobConfigErrors, DuplicateKeyNamesBothLines) {
    // A repeated key is invalid in both formats (YAML 1.2: mapping keys are unique); one value must not
    // silently win.
    std::string msg = job_error(lines({
                                    "input:",                 // 1
                                    "  path: /p/a.####.exr",  // 2
                                    "  frames: 1001-1010",    // 3
                                    "output:",                // 4
                                    "  path: /d/a.####.exr",  // 5
                                    "input:",                 // 6
                                    "  frames: 1001-1100",    // 7
                                }),
                                "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "'input'")) << msg;

    msg = job_error(lines({
                        "input:",                 // 1
                        "  path: /p/a.####.exr",  // 2
                        "  frames: 1001-1010",    // 3
                        "  frames: 1001-1100",    // 4
                        "output:",                // 5
                        "  path: /d/a.####.exr",  // 6
                    }),
                    "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:4:")) << msg;
    EXPECT_TRUE(contains(msg, "'input.frames'")) << msg;
    EXPECT_TRUE(contains(msg, "line 3")) << msg;

    msg = job_error(lines({
                        "[input]",                   // 1
                        "path = \"/p/a.####.exr\"",  // 2
                        "frames = \"1001-1010\"",    // 3
                        "frames = \"1001-1100\"",    // 4
                    }),
                    "toml");
    EXPECT_TRUE(contains(msg, "job.toml:4:")) << msg;
}

TEST(JobConfigErrors, JobMustBeAMapping) {
    const std::string msg = job_error("- a\n- b\n", "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml")) << msg;
}

TEST(JobConfigErrors, SectionMustBeAMapping) {
    const std::string msg = job_error(kMinimalYaml + "model: fast\n", "yaml");
    EXPECT_TRUE(contains(msg, "job.yaml:5:")) << msg;
    EXPECT_TRUE(contains(msg, "'model'")) << msg;
}

TEST(JobConfigErrors, LoadJobRejectsUnknownExtensionAndMissingFile) {
    EXPECT_THROW(load_job("/nonexistent/job.json"), ConfigError);
    const std::string msg = test::expect_error<ConfigError>([] { load_job("/nonexistent/dir/job.yaml"); }, "load_job");
    EXPECT_TRUE(contains(msg, "/nonexistent/dir/job.yaml")) << msg;
}

TEST(JobConfigErrors, DepthAndColourRulesNameLineAndKey) {
    auto err = [](const std::vector<std::string>& extra) {
        std::vector<std::string> ls = {"input:", "  path: /p/a.####.exr", "output:", "  path: /d/a.####.exr"};
        ls.insert(ls.end(), extra.begin(), extra.end());  // extra[0] is line 5
        return job_error(lines(ls), "yaml");
    };
    std::string msg = err({"depth:", "  kind: normalized"});
    EXPECT_TRUE(contains(msg, "job.yaml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "'depth.kind'")) << msg;

    msg = err({"depth:", "  normalize: fixed", "  kind: normalized"});
    EXPECT_TRUE(contains(msg, "job.yaml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "'depth.normalize'")) << msg;

    msg = err({"depth:", "  near: 1", "  kind: metric"});
    EXPECT_TRUE(contains(msg, "job.yaml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "'depth.near'")) << msg;

    msg = err({"depth:", "  kind: metric", "  near: 5", "  far: 5.0"});
    EXPECT_TRUE(contains(msg, "job.yaml:7:")) << msg;
    EXPECT_TRUE(contains(msg, "'depth.near'")) << msg;

    msg = err({"depth:", "  kind: metric", "  near: close", "  far: 5"});
    EXPECT_TRUE(contains(msg, "job.yaml:7:")) << msg;
    EXPECT_TRUE(contains(msg, "'close'")) << msg;

    msg = err({"depth:", "  normalize: frame", "  percentiles: [98, 2]"});
    EXPECT_TRUE(contains(msg, "job.yaml:7:")) << msg;
    EXPECT_TRUE(contains(msg, "'depth.percentiles'")) << msg;

    msg = err({"depth:", "  kind: inverse", "  normalize: frame"});
    EXPECT_TRUE(contains(msg, "job.yaml:7:")) << msg;
    EXPECT_TRUE(contains(msg, "'depth.normalize'")) << msg;

    msg = err({"color:", "  hdr: view", "  display: sRGB - Display"});
    EXPECT_TRUE(contains(msg, "job.yaml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "'color.hdr'")) << msg;

    msg = err({"model:", "  precision: fp8"});
    EXPECT_TRUE(contains(msg, "job.yaml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "bf16, fp16, fp32")) << msg;

    msg = err({"model:", "  batch: 0"});
    EXPECT_TRUE(contains(msg, "job.yaml:6:")) << msg;
    EXPECT_TRUE(contains(msg, "'model.batch'")) << msg;
}

TEST(JobConfig, NormalizeWithoutKindMeansNormalized) {
    const JobConfig j = yaml(kMinimalYaml + "depth:\n  normalize: frame\n");
    EXPECT_EQ(j.depth.convention, DepthConvention::Normalized);
    EXPECT_EQ(j.depth.normalize, Normalization::Frame);
    const JobConfig f = yaml(kMinimalYaml + "depth:\n  normalize: fixed\n  near: 1\n  far: 5\n");
    EXPECT_EQ(f.depth.convention, DepthConvention::Normalized);
    EXPECT_EQ(f.depth.near, std::optional<double>(1.0));
    EXPECT_EQ(f.depth.far, std::optional<double>(5.0));
}

// Issue 13: every integer a user writes means the decimal number written ("010" is 10, never octal 8 and
// never an error for "08"): job scalars, values inside lists, --set, frame specs.
TEST(JobConfig, LeadingZerosAreDecimalEverywhere) {
    const std::string base = lines({"input:", "  path: p.####.exr", "output:", "  path: d.####.exr"});
    const JobConfig j =
        yaml(base + lines({"pipeline:", "  threads: 010", "  frames_in_flight: 08", "model:", "  size: [0640, 0360]",
                           "  batch: 02", "depth:", "  stats_frames: 016"}));
    EXPECT_EQ(j.pipeline.threads, 10);
    EXPECT_EQ(j.pipeline.frames_in_flight, 8);
    EXPECT_EQ(j.model.size.width_px, 640);
    EXPECT_EQ(j.model.size.height_px, 360);
    EXPECT_EQ(j.model.batch, 2);
    EXPECT_EQ(j.depth.stats_frames, 16);
    const JobConfig s = yaml(
        base, {"pipeline.threads=010", "model.size=0518", "model.input_size=[010, 09]", "input.frames=01001-01003x02"});
    EXPECT_EQ(s.pipeline.threads, 10);
    EXPECT_EQ(s.model.size.short_side_px, 518);
    EXPECT_EQ(*s.model.contract.width_px, 10);
    EXPECT_EQ(*s.model.contract.height_px, 9);
    EXPECT_EQ(s.input.frames, (std::vector<int>{1001, 1003}));
    // Not a decimal integer: an error naming the key, never another number.
    for (const std::string bad : {"0x10", "1e3", "10.0", "ten"}) {
        const std::string msg = job_error(base + lines({"pipeline:", "  threads: " + bad}), "yaml");
        EXPECT_TRUE(contains(msg, "job.yaml:6: key 'pipeline.threads': expected an integer")) << msg;
    }
    const std::string list = job_error(base + lines({"model:", "  size: [0x280, 360]"}), "yaml");
    EXPECT_TRUE(contains(list, "key 'model.size': expected an integer")) << list;
    // TOML itself forbids leading zeros: a syntax error naming the line.
    const std::string t = job_error(
        lines({"[input]", "path = 'p.####.exr'", "[output]", "path = 'd.####.exr'", "[pipeline]", "threads = 010"}),
        "toml");
    EXPECT_TRUE(contains(t, "job.toml:6")) << t;
}

// Issue 13: "D:\temp\new.####.exr" in double quotes unescapes to D:<TAB>emp<LF>ew...: a config error naming the
// key and line, saying what happened and what to write instead, with no raw control character in the message.
TEST(JobConfig, PathsWithControlCharactersAreRefused) {
    const std::string yaml_text =
        lines({"input:", "  path: \"D:\\temp\\new.####.exr\"", "output:", "  path: d.####.exr"});
    const std::string toml_text =
        lines({"[input]", "path = \"D:\\temp\\new.####.exr\"", "[output]", "path = 'd.####.exr'"});
    for (const auto& [text, format, where] :
         {std::tuple{yaml_text, "yaml", "job.yaml:2"}, std::tuple{toml_text, "toml", "job.toml:2"}}) {
        const std::string msg = job_error(text, format);
        EXPECT_TRUE(contains(msg, std::string(where) + ": key 'input.path'")) << msg;
        EXPECT_TRUE(contains(msg, "control character (\\t at position 3)")) << msg;
        EXPECT_TRUE(contains(msg, "single quotes")) << msg;
        EXPECT_TRUE(contains(msg, "forward slashes")) << msg;
        EXPECT_EQ(msg.find_first_of("\t\n\r"), std::string::npos) << "raw control characters in: " << msg;
    }
    // Single quotes keep the backslashes: a plain path (relative on this system, resolved against the job).
    const JobConfig ok = yaml(lines({"input:", "  path: 'D:\\temp\\new.####.exr'", "output:", "  path: d.####.exr"}));
    EXPECT_TRUE(contains(ok.input.path, "D:\\temp\\new.####.exr")) << ok.input.path;
    // Every path key, and --set.
    const std::string out =
        job_error(lines({"input:", "  path: p.####.exr", "output:", "  path: \"a\\tb.####.exr\""}), "yaml");
    EXPECT_TRUE(contains(out, "key 'output.path'")) << out;
    const std::string set = job_error(lines({"input:", "  path: p.####.exr", "output:", "  path: d.####.exr"}), "yaml",
                                      {"color.config=/studio/\x01ocio"});
    EXPECT_TRUE(contains(set, "key 'color.config'") && contains(set, "\\x01")) << set;
}

// Found by scripts/fuzz (issue 13): a TOML table header holding non-UTF-8 bytes ("[\xff\xff\xff\x10el]") trips an
// assertion inside toml++ when it is built with assertions on; the release build must answer with a config
// error naming the file, never crash or accept it.
TEST(JobConfig, MalformedTomlTableHeaderIsAConfigError) {
    const std::string text =
        "[input]\npath = 'p.####.exr'\n[output]\npath = 'd.####.exr'\n\n\xff\xff\xff\x10"
        "el]\npath = 'x'\n";
    const std::string msg = job_error(text, "toml");
    EXPECT_TRUE(contains(msg, "job.toml:")) << msg;
}

// Found by scripts/fuzz (issue 13): a character beyond ASCII outside a TOML string ("ze\u00e2rx" as a bare
// key) reached TOML_UNREACHABLE inside toml++ 3.3 (undefined behaviour in release code). It is a syntax
// error naming the line; inside strings and comments such characters are fine.
TEST(JobConfig, NonAsciiOutsideTomlStringsIsASyntaxError) {
    const std::string base = "[input]\npath = 'p.####.exr'\n[output]\npath = 'd.####.exr'\n";
    for (const std::string bad : {std::string("ze\xc3\xa2rx\nm"), std::string("[model]\npath = plate_\xc3\xa9.pt\n"),
                                  std::string("[model]\npath = \xe2\x80\x98x.pt\xe2\x80\x99\n")}) {
        const std::string msg = job_error(base + bad, "toml");
        EXPECT_TRUE(contains(msg, "job.toml:5") || contains(msg, "job.toml:6")) << msg;
        EXPECT_TRUE(contains(msg, "beyond ASCII outside a string or comment")) << msg;
    }
    const JobConfig ok = toml(base +
                              "# caf\xc3\xa9 \xe2\x80\x98quotes\xe2\x80\x99\n[model]\ncolorspace = \"caf\xc3\xa9\"\n"
                              "kind = '''metric_depth'''\n");
    EXPECT_EQ(*ok.model.contract.colorspace, "caf\xc3\xa9");
}

// Found by scripts/fuzz (issue 13), second round: `path =0"...\xec\xb3\xa7..."` is a bare value to toml++ (a quote
// there opens no string), so the non-ASCII bytes are outside any string: the same syntax error.
TEST(JobConfig, QuoteThatOpensNoTomlStringDoesNotHideNonAscii) {
    const std::string msg = job_error("[input]\npath =0\"t4Ai\xec\xb3\xa7L1\"\n", "toml");
    EXPECT_TRUE(contains(msg, "job.toml:2: TOML syntax error: a character beyond ASCII")) << msg;
    const JobConfig ok = toml(
        "[input]\npath = \"pl\xc3\xa9.####.exr\"\n[output]\npath = 'd.####.exr'\n"
        "[depth]\npercentiles = [ 2, 98 ]  # caf\xc3\xa9\n");
    EXPECT_TRUE(contains(ok.input.path, "pl\xc3\xa9.####.exr"));
}

// Issue 32 item 8: `\ÿ` (a backslash, then U+00FF) in a TOML multi-line string reached TOML_UNREACHABLE in
// toml++ 3.3 (is_non_ascii_horizontal_whitespace, U+00A1..U+03F9). toml++ never sees a byte beyond ASCII now
// (toml_as_ascii): that backslash is a syntax error naming the line, and accented text in every kind of string
// keeps its value.
TEST(JobConfig, TomlNeverHandsNonAsciiToTomlpp) {
    const std::string base = "[output]\npath = 'd.####.exr'\n";
    for (const std::string bad : {std::string("[input]\npath = \"\"\"p\\\xc3\xbf.exr\"\"\"\n"),
                                  std::string("[input]\npath = \"\"\"\np\\\xce\xb1\"\"\"\n"),
                                  std::string("[input]\npath = \"p\\\xc3\xbf.exr\"\n")}) {
        const std::string msg = job_error(base + bad, "toml");
        EXPECT_TRUE(contains(msg, "job.toml:4") || contains(msg, "job.toml:5")) << msg;
        EXPECT_TRUE(contains(msg, "a backslash before a character beyond ASCII")) << msg;
    }
    // Basic, literal, multi-line basic and multi-line literal strings; 2-, 3- and 4-byte characters; a literal's
    // backslash and double quote stay as written.
    const std::string e = "\xc3\xa9", a = "\xce\xb1", q = "\xe2\x80\x98", smile = "\xf0\x9f\x98\x80";
    JobConfig j = toml(base + "[input]\npath = 'C:\\pl" + e + "\"tes" + a + ".####.exr'\n");
    EXPECT_TRUE(contains(j.input.path, "C:\\pl" + e + "\"tes" + a + ".####.exr")) << j.input.path;
    j = toml(base + "[input]\npath = \"pl" + e + q + smile + ".####.exr\"\n");
    EXPECT_TRUE(contains(j.input.path, "pl" + e + q + smile + ".####.exr")) << j.input.path;
    j = toml(base + "[input]\npath = \"\"\"\npl" + a + "\\u00e9.####.exr\"\"\"\n[model]\ncolorspace = '''caf" + e +
             "\\x'''\n");
    EXPECT_TRUE(contains(j.input.path, "pl" + a + e + ".####.exr")) << j.input.path;
    EXPECT_EQ(*j.model.contract.colorspace, "caf" + e + "\\x");
    // Line numbers are kept after a converted string.
    const std::string msg = job_error(base + "[input]\npath = '''a" + e + "\nb'''\nbad key = 1\n", "toml");
    EXPECT_TRUE(contains(msg, "job.toml:6")) << msg;
    // The second reproducer (scripts/fuzz, 275,853 runs): U+018E after a quote with no closing quote on its line,
    // which toml++ reads on past as code; and a raw 0x93 in a comment before it.
    const std::string fuzz2 =
        "# dt\x93tbahepcte, 1025x sRGpreviujput]\npath = 1../renders/sintel/sin:telet_d\x01['.et"
        "\x02input\x04i\xc6\x8ep.## = 448          ";
    const std::string m2 = job_error(fuzz2, "toml");
    EXPECT_TRUE(
        contains(m2, "job.toml:2: TOML syntax error: a literal string without its closing quote (') on its line"))
        << m2;
    const std::string m3 = job_error(base + "[input]\npath = '''p" + e + ".exr\n", "toml");
    EXPECT_TRUE(contains(m3, "job.toml:4: TOML syntax error: a literal string without its closing quote (''')")) << m3;
}

// pipeline.report is the older name of pipeline.summary: either works, both at once is a mistake named as such.
TEST(JobConfig, ReportIsTheOlderNameOfSummary) {
    EXPECT_EQ(yaml(kMinimalYaml, {"pipeline.report=r.json"}).pipeline.summary, abs_from(fs::current_path(), "r.json"));
    EXPECT_TRUE(contains(job_error(kMinimalYaml, "yaml", {"pipeline.report=a.json", "pipeline.summary=b.json"}),
                         "older name of pipeline.summary"));
    EXPECT_TRUE(contains(job_error(kMinimalYaml, "yaml", {"pipeline.on_error=skip"}), "stop"));
    EXPECT_TRUE(contains(job_error(kMinimalYaml, "yaml", {"pipeline.grace_s=-1"}), "pipeline.grace_s"));
}

// The settings fingerprint behind --skip-existing: a change to what an EXR holds changes it; where it goes,
// how many threads make it, and this run's share of the frames do not.
TEST(JobConfig, OutputSettingsTextChangesWithWhatTheOutputHolds) {
    const std::string base = output_settings_text(yaml(kMinimalYaml));
    for (const std::string& o : {"depth.kind=inverse", "model.size=518", "output.compression=piz",
                                 "input.colorspace=ACEScg", "output.channels=depth", "color.hdr=view"}) {
        std::vector<std::string> sets = {o};
        if (o == "color.hdr=view") sets = {o, "color.display=sRGB", "color.view=ACES 1.0 - SDR Video"};
        EXPECT_NE(output_settings_text(yaml(kMinimalYaml, sets)), base) << o;
    }
    for (const std::string& o : {"output.path=/elsewhere/b.####.exr", "pipeline.threads=1", "model.batch=4",
                                 "model.device=cpu", "pipeline.summary=/tmp/s.json", "output.overwrite=skip"})
        EXPECT_EQ(output_settings_text(yaml(kMinimalYaml, {o})), base) << o;
    JobConfig chunked = yaml(kMinimalYaml);
    chunked.render.chunk_index = 2, chunked.render.chunk_count = 3;
    EXPECT_EQ(output_settings_text(chunked), base);
    // The shot's frames matter where they change the values: sequence statistics.
    const std::vector<std::string> seq = {"depth.normalize=sequence", "input.frames=1001-1010"};
    EXPECT_NE(output_settings_text(yaml(kMinimalYaml, seq)),
              output_settings_text(yaml(kMinimalYaml, {"depth.normalize=sequence", "input.frames=1001-1011"})));
}

TEST(JobConfig, SelectRenderFramesAppliesFramesThenRangeThenChunk) {
    const std::vector<int> shot = parse_frame_spec("1001-1020");
    JobConfig::RenderSelection r;
    EXPECT_EQ(select_render_frames(r, shot), shot);
    r.range = std::make_pair(1005, 1012);
    EXPECT_EQ(select_render_frames(r, shot), parse_frame_spec("1005-1012"));
    r.chunk_index = 2, r.chunk_count = 2;
    EXPECT_EQ(select_render_frames(r, shot), parse_frame_spec("1009-1012"));
    r.range.reset();
    r.frames = parse_frame_spec("1-9");
    EXPECT_EQ(select_render_frames(r, shot), parse_frame_spec("5-9"));
}

// output.preview: a path, or {path, colormap, size}; nested keys are checked like any other, and --set reaches
// them (output.preview.size=512).
TEST(JobConfig, PreviewIsAPathOrAMapping) {
    JobConfig j = yaml(kMinimalYaml + "  preview: previews/a.####.jpg\n");
    EXPECT_EQ(j.output.preview.path, "/jobs/show/sh010/previews/a.####.jpg");
    EXPECT_EQ(j.output.preview.colormap, ColormapName::Turbo);
    EXPECT_EQ(j.output.preview.size, 960);
    j = yaml(kMinimalYaml + "  preview: {path: previews/a.####.png, colormap: inferno, size: 0512}\n",
             {"pipeline.review=review/sheet.png"});
    EXPECT_EQ(j.output.preview.colormap, ColormapName::Inferno);
    EXPECT_EQ(j.output.preview.size, 512);
    EXPECT_EQ(j.pipeline.review, abs_from(fs::current_path(), "review/sheet.png"));
    j = yaml(kMinimalYaml, {"output.preview.path=p.####.jpg", "output.preview.size=300"});
    EXPECT_EQ(j.output.preview.path, abs_from(fs::current_path(), "p.####.jpg"));
    EXPECT_EQ(j.output.preview.size, 300);
    EXPECT_TRUE(contains(job_error(kMinimalYaml + "  preview: {path: a.####.jpg, colourmap: turbo}\n", "yaml"),
                         "unknown key 'output.preview.colourmap'"));
    EXPECT_TRUE(contains(job_error(kMinimalYaml + "  preview: {path: a.####.jpg, colormap: jet}\n", "yaml"),
                         "output.preview.colormap"));
    const JobConfig t = toml(
        "[input]\npath = \"/plates/a.####.exr\"\n[output]\npath = \"/depth/a.####.exr\"\n"
        "[output.preview]\npath = \"/p/a.####.jpg\"\nsize = 640\n");
    EXPECT_EQ(t.output.preview.path, "/p/a.####.jpg");
    EXPECT_EQ(t.output.preview.size, 640);
}

// A minimal job with input.pixel_aspect set to `value`.
JobConfig aspect_job(const std::string& value) {
    return yaml(lines(
        {"input:", "  path: /plates/a.####.exr", "  pixel_aspect: " + value, "output:", "  path: /depth/a.####.exr"}));
}
std::string aspect_error(const std::string& value) {
    return job_error(lines({"input:", "  path: /plates/a.####.exr", "  pixel_aspect: " + value,
                            "output:", "  path: /depth/a.####.exr"}),
                     "yaml");
}

// Issue 14's keys: depth.upsample and its parameters, model.tiles (a size or {size, overlap}), input.pixel_aspect.
TEST(JobConfig, EdgesTilesAndPixelAspect) {
    const JobConfig d = yaml(kMinimalYaml);
    EXPECT_EQ(d.depth.upsample.method, DepthUpsample::Bilinear);
    EXPECT_EQ(d.model.tiles.size, 0);
    EXPECT_FALSE(d.input.pixel_aspect.has_value());

    const JobConfig j =
        yaml(kMinimalYaml + lines({"depth:", "  upsample: edge_hard", "  guided_radius: 6", "  guided_epsilon: 0.001",
                                   "  edge_threshold: 0.1", "model:", "  tiles: {size: 1024, overlap: 0128}"}));
    EXPECT_EQ(j.depth.upsample.method, DepthUpsample::EdgeHard);
    EXPECT_EQ(j.depth.upsample.radius_px, 6.0);
    EXPECT_EQ(j.depth.upsample.epsilon, 0.001);
    EXPECT_EQ(j.depth.upsample.edge_threshold, 0.1);
    EXPECT_EQ(j.model.tiles.size, 1024);
    EXPECT_EQ(j.model.tiles.overlap, 128) << "decimal, as written";
    // A bare size: overlap a quarter of it. --set reaches the nested keys.
    const JobConfig s = yaml(kMinimalYaml + "model: {tiles: 512}\n");
    EXPECT_EQ(s.model.tiles.size, 512);
    EXPECT_EQ(s.model.tiles.overlap, 128);
    const JobConfig o =
        yaml(kMinimalYaml + "model: {tiles: 512}\n", {"model.tiles.overlap=64", "depth.upsample=guided"});
    EXPECT_EQ(o.model.tiles.size, 512);
    EXPECT_EQ(o.model.tiles.overlap, 64);
    EXPECT_EQ(o.depth.upsample.method, DepthUpsample::Guided);
    const JobConfig t =
        toml(lines({"[input]", "path = \"/p/a.####.exr\"", "pixel_aspect = 2.0", "[output]", "path = \"/d/a.####.exr\"",
                    "[model.tiles]", "size = 768", "[depth]", "upsample = \"guided\""}));
    EXPECT_EQ(t.model.tiles.size, 768);
    EXPECT_EQ(t.model.tiles.overlap, 192);
    EXPECT_EQ(*t.input.pixel_aspect, 2.0);
    EXPECT_EQ(t.depth.upsample.method, DepthUpsample::Guided);
    EXPECT_EQ(*aspect_job("ignore").input.pixel_aspect, 1.0);
    EXPECT_FALSE(aspect_job("auto").input.pixel_aspect.has_value());
    // They change what is written: the settings fingerprint sees them.
    EXPECT_NE(output_settings_text(d), output_settings_text(j));
    EXPECT_NE(output_settings_text(d), output_settings_text(aspect_job("2")));
}

TEST(JobConfigErrors, EdgesTilesAndPixelAspect) {
    std::string e = job_error(kMinimalYaml + "depth: {upsample: bicubic}\n", "yaml");
    EXPECT_TRUE(contains(e, "depth.upsample")) << e;
    EXPECT_TRUE(contains(e, "bilinear, edge_hard, guided")) << e;
    e = job_error(kMinimalYaml + "model: {tiles: {size: 256, overlap: 128}}\n", "yaml");
    EXPECT_TRUE(contains(e, "model.tiles.overlap")) << e;
    EXPECT_TRUE(contains(e, "under half the tile size")) << e;
    e = job_error(kMinimalYaml + "model: {tiles: {overlap: 16}}\n", "yaml");
    EXPECT_TRUE(contains(e, "needs size")) << e;
    e = job_error(kMinimalYaml + "model: {tiles: {size: 512, stride: 16}}\n", "yaml");
    EXPECT_TRUE(contains(e, "unknown key 'model.tiles.stride'")) << e;
    e = job_error(kMinimalYaml + "model: {tiles: 16}\n", "yaml");
    EXPECT_TRUE(contains(e, "at least 32")) << e;
    e = aspect_error("-2");
    EXPECT_TRUE(contains(e, "input.pixel_aspect")) << e;
    for (const char* word : {"wide", "anamorphic", "AUTO"}) {  // a word gets every accepted form
        e = aspect_error(word);
        EXPECT_TRUE(
            contains(e, std::string("input.pixel_aspect': expected auto, ignore or a pixel aspect > 0 (2 for a 2:1 "
                                    "anamorphic plate), not '") +
                            word + "'"))
            << e;
    }
    e = job_error(kMinimalYaml + "depth: {guided_epsilon: 0}\n", "yaml");
    EXPECT_TRUE(contains(e, "depth.guided_epsilon")) << e;
    e = job_error(kMinimalYaml + "depth: {edge_threshold: 2}\n", "yaml");
    EXPECT_TRUE(contains(e, "depth.edge_threshold")) << e;
}

// Issue 25's keys: the camera section (Nuke's knobs, fov, focal_px and its older name depth.focal_px, a .chan
// path) and output.passes / passes_type.
TEST(JobConfig, CameraAndPasses) {
    const JobConfig d = yaml(kMinimalYaml);
    EXPECT_FALSE(d.camera.has_focal());
    EXPECT_EQ(d.camera.haperture_mm, 24.576);
    EXPECT_EQ(d.camera.vaperture_mm, 18.672);
    EXPECT_TRUE(d.output.passes.empty());
    EXPECT_EQ(d.output.passes_type, PassPixelType::Float);
    const JobConfig j = yaml(kMinimalYaml + "camera: {focal: 35, haperture: 36, vaperture: 24, chan: track/cam.chan}\n",
                             {"output.passes=[P, N]", "output.passes_type=half"});
    EXPECT_EQ(*j.camera.focal_mm, 35);
    EXPECT_EQ(j.camera.haperture_mm, 36);
    EXPECT_EQ(j.camera.vaperture_mm, 24);
    EXPECT_EQ(fs::path(j.camera.chan).filename(), "cam.chan");
    EXPECT_TRUE(fs::path(j.camera.chan).is_absolute()) << "resolved against the job's folder";
    EXPECT_EQ(j.output.passes, (std::vector<std::string>{"P", "N"}));
    EXPECT_EQ(j.output.passes_type, PassPixelType::Half);
    EXPECT_EQ(*yaml(kMinimalYaml + "camera: {fov: 40}\n").camera.fov_deg, 40);
    EXPECT_EQ(*yaml(kMinimalYaml + "camera: {focal_px: 2450}\n").camera.focal_px, 2450);
    EXPECT_EQ(*yaml(kMinimalYaml + "depth: {focal_px: 2450}\n").camera.focal_px, 2450) << "the older spelling";
    EXPECT_EQ(yaml(kMinimalYaml, {"output.passes=N"}).output.passes, (std::vector<std::string>{"N"}))
        << "a bare name is a list of one";
    // The older spelling fingerprints as it always did.
    EXPECT_EQ(output_settings_text(yaml(kMinimalYaml + "depth: {focal_px: 2450}\n")),
              output_settings_text(yaml(kMinimalYaml + "camera: {focal_px: 2450}\n")));
    EXPECT_NE(output_settings_text(d), output_settings_text(j));
}

TEST(JobConfigErrors, CameraAndPasses) {
    std::string e = job_error(kMinimalYaml + "camera: {focal: 35, fov: 40}\n", "yaml");
    EXPECT_TRUE(contains(e, "the focal length is stated twice (camera.focal and camera.fov)")) << e;
    e = job_error(kMinimalYaml + "camera: {focal_px: 35}\ndepth: {focal_px: 35}\n", "yaml");
    EXPECT_TRUE(contains(e, "is the older name of camera.focal_px")) << e;
    e = job_error(kMinimalYaml + "camera: {fov: 180}\n", "yaml");
    EXPECT_TRUE(contains(e, "camera.fov")) << e;
    e = job_error(kMinimalYaml + "camera: {focal: -35}\n", "yaml");
    EXPECT_TRUE(contains(e, "'camera.focal': must be > 0 (mm)")) << e;
    e = job_error(kMinimalYaml + "camera: {haperture: 0}\n", "yaml");
    EXPECT_TRUE(contains(e, "camera.haperture")) << e;
    e = job_error(kMinimalYaml + "camera: {lens: 35}\n", "yaml");
    EXPECT_TRUE(contains(e, "unknown key 'camera.lens'")) << e;
    e = job_error(kMinimalYaml, "yaml", {"output.passes=[P, P]"});
    EXPECT_TRUE(contains(e, "'P' is listed twice")) << e;
    e = job_error(kMinimalYaml, "yaml", {"output.passes=[P, N.X]"});
    EXPECT_TRUE(contains(e, "'N.X' is not a pass name")) << e;
    e = job_error(kMinimalYaml, "yaml", {"output.passes_type=double"});
    EXPECT_TRUE(contains(e, "output.passes_type")) << e;
}

TEST(JobConfig, ZipLevel) {
    EXPECT_EQ(yaml(kMinimalYaml).output.zip_level, 4);
    const JobConfig j = yaml(kMinimalYaml, {"output.zip_level=01"});
    EXPECT_EQ(j.output.zip_level, 1) << "decimal";
    EXPECT_NE(output_settings_text(j), output_settings_text(yaml(kMinimalYaml))) << "other bytes: other fingerprint";
    std::string e = job_error(kMinimalYaml, "yaml", {"output.zip_level=10"});
    EXPECT_TRUE(contains(e, "output.zip_level")) << e;
    e = job_error(kMinimalYaml, "yaml", {"output.compression=piz", "output.zip_level=1"});
    EXPECT_TRUE(contains(e, "applies to zip and zips compression, not piz")) << e;
}

// ---------------------------------------------------------------------------------------------
// Issue 22 §5: job files as people write them
// ---------------------------------------------------------------------------------------------

namespace {

/// Sets (or, with nullptr, unsets) an environment variable for its lifetime, then puts the old value back.
struct ScopedEnv {
    std::string name;
    std::optional<std::string> old;
    ScopedEnv(const std::string& n, const char* value) : name(n) {
        if (const char* v = std::getenv(n.c_str())) old = v;
        if (value) ::setenv(n.c_str(), value, 1);
        else ::unsetenv(n.c_str());
    }
    ~ScopedEnv() {
        if (old) ::setenv(name.c_str(), old->c_str(), 1);
        else ::unsetenv(name.c_str());
    }
};

/// The environment of the expansion tests: a show, sequence, shot and home.
struct ShotEnv {
    ScopedEnv show{"SHOW", "/shows/abc"}, seq{"SEQ", "sq010"}, shot{"SHOT", "sh010"}, home{"HOME", "/home/artist"},
        models{"DEPTHBATCH_TEST_MODELS", "/studio/models"}, unset{"DEPTHBATCH_TEST_UNSET", nullptr}, f{"F", "frames"},
        foo{"FOO", "foo"};
};

/// Whether `msg` is an error blamed on `flag` ("--set key=value: ...") and not on the job file.
::testing::AssertionResult blames_flag(const std::string& msg, const std::string& flag) {
    if (msg.rfind(flag + ": ", 0) != 0)
        return ::testing::AssertionFailure() << "does not start with '" << flag << ": ': " << msg;
    if (contains(msg, "job.yaml") || contains(msg, "job.toml"))
        return ::testing::AssertionFailure() << "names the job file: " << msg;
    return ::testing::AssertionSuccess();
}

}  // namespace

TEST(JobConfig, PathKeysExpandHomeAndEnvironmentVariables) {
    ShotEnv env;
    const std::string y = lines({
        "input:",
        "  path: $SHOW/${SEQ}/$SHOT/plates/${SHOT}_plate.$F4.exr",
        "output:",
        "  path: ~/renders/$SHOT/depth.####.exr",
        "  preview: {path: '${SHOW}/review/$SHOT.####.jpg'}",
        "model:",
        "  path: $DEPTHBATCH_TEST_MODELS/da2.pt",
        "color:",
        "  config: ${SHOW}/ocio/config.ocio",
        "depth:",
        "  normalize: sequence",
        "  stats_file: $SHOT.stats.json",  // relative once expanded: the job file's folder
        "pipeline:",
        "  summary: ~",  // YAML null: not set (quote it for the home folder)
        "  review: '~/review/${SHOT}.png'",
    });
    const JobConfig j = yaml(y);
    EXPECT_EQ(j.input.path, "/shows/abc/sq010/sh010/plates/sh010_plate.$F4.exr");
    EXPECT_EQ(j.output.path, "/home/artist/renders/sh010/depth.####.exr");
    EXPECT_EQ(j.output.preview.path, "/shows/abc/review/sh010.####.jpg");
    EXPECT_EQ(j.model.path, "/studio/models/da2.pt");
    EXPECT_EQ(j.color.config, "/shows/abc/ocio/config.ocio");
    EXPECT_EQ(j.depth.stats_file, kBase + "/sh010.stats.json");
    EXPECT_EQ(j.pipeline.summary, "");
    EXPECT_EQ(j.pipeline.review, "/home/artist/review/sh010.png");
    // The preview as a scalar, the older pipeline.report, and the same in TOML.
    const JobConfig k = yaml(lines({"input: {path: /p/a.####.exr}", "output:", "  path: /d/d.####.exr",
                                    "  preview: ~/p/$SHOT.####.png", "pipeline: {report: '$SHOW/r.json'}"}));
    EXPECT_EQ(k.output.preview.path, "/home/artist/p/sh010.####.png");
    EXPECT_EQ(k.pipeline.summary, "/shows/abc/r.json");
    const JobConfig t = toml(lines({"[input]", "path = '$SHOW/$SHOT/p.####.exr'", "[output]", "path = \"~/d.$F4.exr\"",
                                    "[pipeline]", "summary = '~'"}));
    EXPECT_EQ(t.input.path, "/shows/abc/sh010/p.####.exr");
    EXPECT_EQ(t.output.path, "/home/artist/d.$F4.exr");
    EXPECT_EQ(t.pipeline.summary, "/home/artist");
}

TEST(JobConfig, FrameTokenDollarAndOtherSpellingsStayAsWritten) {
    ShotEnv env;
    const auto in = [](const std::string& path) {
        return parse_job("input: {path: '" + path + "'}\noutput: {path: /d/d.####.exr}\n", "yaml", "job.yaml", "/b")
            .input.path;
    };
    EXPECT_EQ(in("/p/a.$F.exr"), "/p/a.$F.exr") << "$F before a non-name character is the frame token";
    EXPECT_EQ(in("/p/a.$F4.exr"), "/p/a.$F4.exr");
    EXPECT_EQ(in("/p/a_$F04x.exr"), "/p/a_$F04x.exr") << "$F and digits: the frame token, whatever follows";
    EXPECT_EQ(in("/p/$F"), "/p/$F");
    EXPECT_EQ(in("/p/$FOO/a.$F4.exr"), "/p/foo/a.$F4.exr") << "$FOO is the variable FOO";
    EXPECT_EQ(in("/p/${F}/a.####.exr"), "/p/frames/a.####.exr") << "${F} is the variable F";
    EXPECT_EQ(in("/p/$$SHOT/a.####.exr"), "/p/$SHOT/a.####.exr") << "$$ is a literal $";
    EXPECT_EQ(in("/p/cost$$$$/a.####.exr"), "/p/cost$$/a.####.exr");
    EXPECT_EQ(in("/p/a$1-$-$/b.####.exr"), "/p/a$1-$-$/b.####.exr") << "$ before a non-name character is itself";
    EXPECT_EQ(in("~artist/a.####.exr"), "/b/~artist/a.####.exr") << "~user is not expanded";
    EXPECT_EQ(in("/p/~/a.####.exr"), "/p/~/a.####.exr") << "only a leading ~";
}

TEST(JobConfigErrors, UnsetVariableNamesTheVariableTheKeyAndTheLine) {
    ShotEnv env;
    EXPECT_EQ(job_error(lines({"input:", "  path: /p/a.####.exr",
                               "output:", "  path: $SHOW/$DEPTHBATCH_TEST_UNSET/d.####.exr"}),
                        "yaml"),
              "job.yaml:4: key 'output.path': environment variable DEPTHBATCH_TEST_UNSET is not set (in "
              "'$SHOW/$DEPTHBATCH_TEST_UNSET/d.####.exr'; $$ is a literal $)");
    EXPECT_EQ(job_error(lines({"[input]", "path = '/p/a.####.exr'", "", "[output]", "path = '/d/d.####.exr'", "[color]",
                               "config = '${DEPTHBATCH_TEST_UNSET}/c.ocio'"}),
                        "toml"),
              "job.toml:7: key 'color.config': environment variable DEPTHBATCH_TEST_UNSET is not set (in "
              "'${DEPTHBATCH_TEST_UNSET}/c.ocio'; $$ is a literal $)");
    // Through --set: the flag is named.
    EXPECT_EQ(job_error(kMinimalYaml, "yaml", {"model.path=$DEPTHBATCH_TEST_UNSET/m.pt"}),
              "--set model.path=$DEPTHBATCH_TEST_UNSET/m.pt: key 'model.path': environment variable "
              "DEPTHBATCH_TEST_UNSET is not set (in '$DEPTHBATCH_TEST_UNSET/m.pt'; $$ is a literal $)");
    // ${ that does not close on a name.
    std::string e = job_error(kMinimalYaml + "depth: {stats_file: '${SHOT/s.json'}\n", "yaml");
    EXPECT_EQ(e,
              "job.yaml:5: key 'depth.stats_file': '${SHOT/s.json' in '${SHOT/s.json' is not ${NAME} (NAME: letters, "
              "digits and _, not starting with a digit; $$ is a literal $)");
    e = job_error(kMinimalYaml + "pipeline: {review: '/r/${1SHOT}.png'}\n", "yaml");
    EXPECT_TRUE(contains(e, "job.yaml:5: key 'pipeline.review': '${1SHOT}' in '/r/${1SHOT}.png' is not ${NAME}")) << e;
    e = job_error(kMinimalYaml + "pipeline: {summary: '/r/${}.json'}\n", "yaml");
    EXPECT_TRUE(contains(e, "key 'pipeline.summary': '${}'")) << e;
    // ~ without HOME.
    {
        ScopedEnv no_home("HOME", nullptr);
        EXPECT_EQ(
            job_error(lines({"input:", "  path: ~/p/a.####.exr", "output:", "  path: /d/d.####.exr"}), "yaml"),
            "job.yaml:2: key 'input.path': '~/p/a.####.exr' starts with ~, and environment variable HOME is not set");
    }
    // A variable set to nothing leaves nothing: an empty path is still refused.
    ScopedEnv empty("DEPTHBATCH_TEST_EMPTY", "");
    EXPECT_EQ(job_error(kMinimalYaml, "yaml", {"pipeline.summary=$DEPTHBATCH_TEST_EMPTY"}),
              "--set pipeline.summary=$DEPTHBATCH_TEST_EMPTY: key 'pipeline.summary': path '$DEPTHBATCH_TEST_EMPTY' is "
              "empty once expanded");
}

TEST(JobConfig, SetValuesForPathKeysExpandLikeTheFile) {
    ShotEnv env;
    const fs::path cwd = fs::current_path();
    const JobConfig j = yaml(kMinimalYaml, {"output.path=renders/$SHOT/d.$F4.exr", "model.path=~/m.pt",
                                            "output.preview.path=${SHOT}.####.jpg"});
    EXPECT_EQ(j.output.path, abs_from(cwd, "renders/sh010/d.$F4.exr"));
    EXPECT_EQ(j.model.path, "/home/artist/m.pt");
    EXPECT_EQ(j.output.preview.path, abs_from(cwd, "sh010.####.jpg"));
    // Keys that are not paths keep a $ as it is.
    EXPECT_EQ(yaml(kMinimalYaml, {"input.layer=$SHOT"}).input.layer, "$SHOT");
}

// Issue 32 §3: a flag standing for a path key (--output, --summary: JobOverride::literal) is taken as written: the
// shell that ran the command expanded what it meant to. A folder named with `$SHOT`, `${SEQ}`, `€$HOME`, `~` and an
// unset variable is that folder, relative to the current one; a later --set of the key is YAML and expands again.
TEST(JobConfig, FlagPathsAreTakenAsWritten) {
    ShotEnv env;
    const fs::path cwd = fs::current_path();
    const std::string folder = "shot $SHOT ${SEQ} \xe2\x82\xac$HOME $DEPTHBATCH_TEST_UNSET $$";
    const std::vector<JobOverride> flags = {
        {"output.path=" + folder + "/d.$F4.exr", "--output " + folder + "/d.$F4.exr", true},
        {"pipeline.summary=~/" + folder + "/s.json", "--summary ~/" + folder + "/s.json", true}};
    const JobConfig j = parse_job(kMinimalYaml, "yaml", "job.yaml", kBase, flags);
    EXPECT_EQ(j.output.path, abs_from(cwd, folder + "/d.$F4.exr"));
    EXPECT_EQ(j.pipeline.summary, abs_from(cwd, "~/" + folder + "/s.json")) << "a flag's ~ is no $HOME either";
    // The job file's own path keys still expand, and a --set after the flag follows the job file's rule.
    const JobConfig k = parse_job(kMinimalYaml + "pipeline: {summary: '$SHOT/s.json'}\n", "yaml", "job.yaml", kBase,
                                  {flags[0], {"output.path=$SHOT/d.####.exr", "", false}});
    EXPECT_EQ(k.pipeline.summary, kBase + "/sh010/s.json");
    EXPECT_EQ(k.output.path, abs_from(cwd, "sh010/d.####.exr"));
}

TEST(JobConfigErrors, SecondYamlDocumentNamesItsLine) {
    EXPECT_EQ(job_error(lines({"input:", "  path: /p/a.####.exr", "output:", "  path: /d/d.####.exr", "---",
                               "model:", "  device: cpu"}),
                        "yaml"),
              "job.yaml:5: a second YAML document ('---'): a job file is one document, the rest would be ignored "
              "(merge its keys into the first, or make it a job file of its own)");
    // An explicit first '---', a comment after the marker, '...' ending the first document.
    std::string e = job_error(lines({"---", "input: {path: /p/a.####.exr}", "output: {path: /d/d.####.exr}", "",
                                     "--- # shot 020", "input: {path: /p/b.####.exr}"}),
                              "yaml");
    EXPECT_TRUE(contains(e, "job.yaml:5: a second YAML document")) << e;
    e = job_error(lines({"input: {path: /p/a.####.exr}", "output: {path: /d/d.####.exr}", "...", "---", "# two",
                         "pipeline: {threads: 2}"}),
                  "yaml");
    EXPECT_TRUE(contains(e, "job.yaml:4: a second YAML document")) << e;
    e = job_error(kMinimalYaml + "---\njust text\n", "yaml");
    EXPECT_TRUE(contains(e, "job.yaml:5: a second YAML document")) << e;
    // What adds nothing is fine: a leading '---', a trailing '---' (with a comment), '...'.
    EXPECT_EQ(yaml("---\n" + kMinimalYaml).input.path, "/plates/a.####.exr");
    EXPECT_EQ(yaml(kMinimalYaml + "---\n# end\n").input.path, "/plates/a.####.exr");
    EXPECT_EQ(yaml(kMinimalYaml + "...\n").output.path, "/depth/a_depth.####.exr");
}

TEST(JobConfigErrors, TabInTheIndentationIsNamed) {
    EXPECT_EQ(job_error(lines({"input:", "\tpath: /p/a.####.exr", "output:", "  path: /d/d.####.exr"}), "yaml"),
              "job.yaml:2: a tab character in the indentation; YAML indents with spaces (YAML syntax error: illegal "
              "map value)");
    std::string e = job_error(lines({"input:", "  path: /p/a.####.exr", "output:", "  path: /d/d.####.exr",
                                     "model:", "  device: cpu", " \tbatch: 2"}),
                              "yaml");
    EXPECT_TRUE(contains(e, "job.yaml:7: a tab character in the indentation; YAML indents with spaces")) << e;
    e = job_error(lines({"input:", "  path: /p/a.####.exr", "\tframes: 1-3"}), "yaml");
    EXPECT_TRUE(contains(e, "job.yaml:3: a tab character in the indentation; YAML indents with spaces")) << e;
    // A blank or comment line that starts with a tab inside a section (yaml-cpp refuses it there).
    e = job_error(lines({"input:", "  path: /p/a.####.exr", "\t", "output:", "  path: /d/d.####.exr"}), "yaml");
    EXPECT_TRUE(contains(e, "job.yaml:3: a tab character in the indentation; YAML indents with spaces")) << e;
    e = job_error(lines({"input:", "  path: /p/a.####.exr", "  \t# note", "output:", "  path: /d/d.####.exr"}), "yaml");
    EXPECT_TRUE(contains(e, "job.yaml:3: a tab character in the indentation; YAML indents with spaces")) << e;
    // A tab after the key's colon or before a trailing comment, or at the start of a comment before the
    // first section, is not indentation.
    const JobConfig j = yaml(lines(
        {"\t# job for sh010", "input:", "  path:\t/p/a.####.exr", "output:", "  path: /d/d.####.exr\t# trailing"}));
    EXPECT_EQ(j.input.path, "/p/a.####.exr");
    EXPECT_EQ(j.output.path, "/d/d.####.exr");
    // A syntax error after such a comment, with no tab of its own, is still a plain syntax error on its line.
    e = job_error(lines({"\t# a tab before a comment", "input:", "  path: [/p/a.####.exr", "output: 1"}), "yaml");
    EXPECT_TRUE(contains(e, "YAML syntax error")) << e;
    EXPECT_FALSE(contains(e, "tab character")) << e;
}

TEST(JobConfig, ByteOrderMarkIsDroppedInBothFormats) {
    const std::string bom = "\xEF\xBB\xBF";
    EXPECT_EQ(yaml(bom + kMinimalYaml).input.path, "/plates/a.####.exr");
    const JobConfig t = toml(bom + lines({"[input]", "path = '/p/a.####.exr'", "[output]", "path = '/d/d.####.exr'"}));
    EXPECT_EQ(t.input.path, "/p/a.####.exr");
    EXPECT_EQ(t.output.path, "/d/d.####.exr");
    // Line numbers are the file's.
    std::string e = job_error(bom + lines({"[input]", "path = '/p/a.####.exr'", "fps = 24"}), "toml");
    EXPECT_TRUE(contains(e, "job.toml:3: unknown key 'input.fps'")) << e;
    e = job_error(bom + kMinimalYaml + "model: {batch: x}\n", "yaml");
    EXPECT_TRUE(contains(e, "job.yaml:5: key 'model.batch'")) << e;
    // Only a leading one: a BOM elsewhere in TOML is a character beyond ASCII outside a string.
    e = job_error(lines({"[input]", bom + "path = '/p/a.####.exr'"}), "toml");
    EXPECT_TRUE(contains(e, "job.toml:2: TOML syntax error")) << e;
}

TEST(JobConfigErrors, NulBytesAreNotAJob) {
    EXPECT_EQ(job_error("input:\n  path: /p/a.####.exr\0\n"s, "yaml"),
              "job.yaml: not a job file (a NUL byte on line 2: a binary file, or text saved as UTF-16; job files are "
              "UTF-8 text)");
    // "input:" in UTF-16LE with its BOM.
    std::string utf16 = "\xFF\xFE";
    for (char c : std::string("[input]\n")) utf16 += std::string(1, c) + '\0';
    EXPECT_TRUE(contains(job_error(utf16, "toml"), "job.toml: not a job file (a NUL byte on line 1")) << utf16.size();
}

TEST(JobConfig, LoadJobTakesExtensionsInAnyCase) {
    test::TempDir dir;
    for (const std::string name : {"a.YAML", "b.Yml", "c.yMl", "d.yaml"}) {
        test::write_job(dir / name, kMinimalYaml);
        EXPECT_EQ(load_job((dir / name).string()).input.path, "/plates/a.####.exr") << name;
    }
    for (const std::string name : {"e.TOML", "f.Toml"}) {
        test::write_job(dir / name, lines({"[input]", "path = 'p.####.exr'", "[output]", "path = '/d/d.####.exr'"}));
        EXPECT_EQ(load_job((dir / name).string()).input.path, (dir.path / "p.####.exr").string()) << name;
    }
    const std::string e = test::expect_error<ConfigError>([&] { load_job((dir / "job.json").string()); }, "load_job");
    EXPECT_EQ(e, (dir / "job.json").string() + ": job files end in .yaml, .yml or .toml");
}

TEST(JobConfigErrors, LoadJobRefusesWhatIsNotAJobFileWithoutReadingIt) {
    test::TempDir dir;
    const auto err = [](const fs::path& p) {
        return test::expect_error<ConfigError>([&] { load_job(p.string()); }, "load_job " + p.string());
    };
    // A FIFO: opening it would wait for a writer forever.
    ASSERT_EQ(::mkfifo((dir / "fifo.yaml").c_str(), 0600), 0);
    EXPECT_EQ(err(dir / "fifo.yaml"), (dir / "fifo.yaml").string() + ": not a job file (a FIFO (named pipe))");
    // A device (never ends), through a link with a job's name.
    fs::create_symlink("/dev/zero", dir / "zero.yaml");
    EXPECT_EQ(err(dir / "zero.yaml"), (dir / "zero.yaml").string() + ": not a job file (a character device)");
    fs::create_symlink("/dev/null", dir / "null.toml");
    EXPECT_EQ(err(dir / "null.toml"), (dir / "null.toml").string() + ": not a job file (a character device)");
    // A huge file: refused from its size, never read into memory.
    {
        std::ofstream big(dir / "big.yaml", std::ios::binary);
        big << kMinimalYaml;
        big.seekp((5 << 20) - 1);
        big.put('\n');
    }
    EXPECT_EQ(err(dir / "big.yaml"),
              (dir / "big.yaml").string() + ": not a job file (5242880 bytes; a job file is at most 4 MiB of text)");
    // Just under the limit is read (and is a job, padded with a comment).
    {
        std::ofstream ok(dir / "ok.yaml", std::ios::binary);
        ok << kMinimalYaml << "# " << std::string((4 << 20) - kMinimalYaml.size() - 3, 'x') << "\n";
    }
    EXPECT_EQ(fs::file_size(dir / "ok.yaml"), 4u << 20);
    EXPECT_EQ(load_job((dir / "ok.yaml").string()).input.path, "/plates/a.####.exr");
    // Binary content with a job's name.
    test::write_job(dir / "bin.yml", "\x89PNG\r\n\x1a\n\0\0\0\rIHDR"s);
    EXPECT_EQ(err(dir / "bin.yml"), (dir / "bin.yml").string() +
                                        ": not a job file (a NUL byte on line 3: a binary "
                                        "file, or text saved as UTF-16; job files are UTF-8 text)");
}

TEST(JobConfigErrors, SetErrorsNameTheFlagNotTheJobFile) {
    const std::string y = lines({"input: {path: /p/a.####.exr}", "output:", "  path: /d/d.####.exr",
                                 "  preview: p.####.jpg", "model:", "  batch: 2"});
    EXPECT_EQ(
        job_error(kMinimalYaml, "yaml", {"nosuch.key=1"}),
        "--set nosuch.key=1: unknown section 'nosuch' (allowed: camera, color, depth, input, model, output, pipeline)");
    EXPECT_EQ(job_error(kMinimalYaml, "yaml", {"model.batch=abc"}),
              "--set model.batch=abc: key 'model.batch': expected an integer (decimal digits), got 'abc'");
    EXPECT_EQ(job_error(kMinimalYaml, "yaml", {"output.preview.path="}),
              "--set output.preview.path=: key 'output.preview.path': path is empty");
    EXPECT_EQ(job_error(kMinimalYaml, "yaml", {"output.preview="}),
              "--set output.preview=: key 'output.preview': path is empty");
    EXPECT_EQ(job_error(kMinimalYaml, "yaml", {"model.size.width=4"}),
              "--set model.size.width=4: 'model.size' holds one value, not keys (--set model.size=VALUE)");
    EXPECT_EQ(job_error(kMinimalYaml, "yaml", {"output.preview.format=png"}),
              "--set output.preview.format=png: unknown key 'output.preview.format' (allowed in 'output.preview': "
              "colormap, path, size)");
    EXPECT_EQ(job_error(kMinimalYaml, "yaml", {"model.tiles.overlap=8"}),
              "--set model.tiles.overlap=8: key 'model.tiles': needs size (the tile edge in plate pixels)");
    // Each of these against a job that has the section (and the key): the flag is still the one named.
    for (const auto& [set, what] : std::vector<std::pair<std::string, std::string>>{
             {"model.batch=0", "key 'model.batch': value 0 is out of range [1, 256]"},
             {"model.fps=24", "unknown key 'model.fps' (allowed in 'model': "},
             {"output.preview.size=big", "key 'output.preview.size': expected an integer (decimal digits), got 'big'"},
             {"output.preview.colormap=jet",
              "key 'output.preview.colormap': 'jet' is not one of: inferno, turbo, viridis"},
             {"depth.near=1", "key 'depth.near': depth.near and depth.far go together"},
             {"input.scene=garden", "key 'input.scene': expected indoor, outdoor or unknown, not 'garden'"},
             {"model.device=gpu", "key 'model.device': 'gpu' is not auto, cpu, cuda or cuda:N"},
             {"model.device=cuda:x", "key 'model.device': 'cuda:x' is not auto, cpu, cuda or cuda:N"},
             {"input.frames=10-1", "key 'input.frames'"},
             {"model.size=[640", "key 'model.size': expected an integer (decimal digits), got '[640'"},
             {"pipeline.threads={a: 1}", "key 'pipeline.threads': expected a single value (a string)"}}) {
        const std::string e = job_error(y, "yaml", {set});
        EXPECT_TRUE(blames_flag(e, "--set " + set)) << set;
        EXPECT_TRUE(contains(e, what)) << e;
    }
    // TOML too.
    const std::string e = job_error(lines({"[input]", "path = '/p/a.####.exr'", "[output]", "path = '/d/d.####.exr'"}),
                                    "toml", {"nosuch.key=1"});
    EXPECT_TRUE(blames_flag(e, "--set nosuch.key=1")) << e;
    // The file's own error stays the file's: a section that is not a mapping.
    EXPECT_EQ(job_error(kMinimalYaml + "model: fast\n", "yaml", {"model.batch=2"}),
              "job.yaml:5: section 'model' must be a mapping of keys");
}

// Found by scripts/fuzz (issue 22 §5): on a stray ',' where a document starts, yaml-cpp's LoadAll never
// returned (its parser handed out empty documents at the same place forever), and Load read the file as an
// empty job. Both are a syntax error naming the line.
TEST(JobConfigErrors, StrayCommaWhereAYamlDocumentStartsIsASyntaxError) {
    EXPECT_EQ(job_error(",--\ninput: {path: p.####.exr}\noutput: {pat", "yaml"),
              "job.yaml:1: YAML syntax error: unexpected ',' (a ',' outside [ ] or { }?)");
    EXPECT_EQ(job_error(",\n", "yaml"), "job.yaml:1: YAML syntax error: unexpected ',' (a ',' outside [ ] or { }?)");
    std::string e = job_error(kMinimalYaml + "---\n,\n", "yaml");
    EXPECT_TRUE(contains(e, "job.yaml:6: YAML syntax error: unexpected ','")) << e;
}

// Issue 32 §7: a YAML null given with --set (null, Null, NULL, ~) unsets the key as the same word does in a job
// file, in a YAML job and in a TOML job (which has no null of its own); `--set pipeline.summary=null` wrote a
// summary named "null". A word that only looks null to YAML (a comment) or a flag's literal value stays as written.
TEST(JobConfig, SetToYamlNullUnsetsTheKeyInYamlAndTomlJobs) {
    test::TempDir dir;
    const fs::path yaml = test::write_job(
        dir / "job.yaml", lines({"input:", "  path: /p/a.####.exr", "output:", "  path: /d/d.####.exr",
                                 "  preview: prev/p.####.jpg", "pipeline:", "  summary: s.json", "  review: r.png"}));
    const fs::path toml =
        test::write_job(dir / "job.toml",
                        lines({"[input]", "path = '/p/a.####.exr'", "[output]", "path = '/d/d.####.exr'",
                               "preview = 'prev/p.####.jpg'", "[pipeline]", "summary = 's.json'", "review = 'r.png'"}));
    const fs::path file_null = test::write_job(
        dir / "null.yaml",
        lines({"input:", "  path: /p/a.####.exr", "output:", "  path: /d/d.####.exr", "pipeline:", "  summary: null"}));
    const JobConfig unset_in_file = load_job(file_null.string());
    EXPECT_EQ(unset_in_file.pipeline.summary, "");
    for (const fs::path& job : {yaml, toml}) {
        const JobConfig as_written = load_job(job.string());
        EXPECT_EQ(as_written.pipeline.summary, (dir.path / "s.json").string()) << job;
        EXPECT_EQ(as_written.output.preview.path, (dir.path / "prev/p.####.jpg").string()) << job;
        for (const std::string word : {"null", "Null", "NULL", "~"}) {
            const JobConfig j =
                load_job(job.string(), std::vector<std::string>{"pipeline.summary=" + word, "output.preview=" + word,
                                                                "pipeline.review=" + word});
            EXPECT_EQ(j.pipeline.summary, unset_in_file.pipeline.summary) << job << " " << word;
            EXPECT_EQ(j.pipeline.review, "") << job << " " << word;
            EXPECT_EQ(j.output.preview.path, "") << job << " " << word;
        }
        // Not nulls: a comment-looking word and a mixed-case spelling YAML does not call null stay the paths written.
        const std::string cwd = fs::current_path().string();
        EXPECT_EQ(load_job(job.string(), std::vector<std::string>{"pipeline.summary=#s.json"}).pipeline.summary,
                  cwd + "/#s.json")
            << job;
        EXPECT_EQ(load_job(job.string(), std::vector<std::string>{"pipeline.summary=nULL"}).pipeline.summary,
                  cwd + "/nULL")
            << job;
        // A key that a given section needs cannot be unset alone: the message says so and names the way to unset the
        // section (it said "expected a single value (a string)").
        try {
            load_job(job.string(), std::vector<std::string>{"output.preview.path=null"});
            ADD_FAILURE() << job << ": output.preview.path=null was accepted";
        } catch (const ConfigError& e) {
            EXPECT_EQ(std::string(e.what()),
                      "--set output.preview.path=null: key 'output.preview.path': is null, and a "
                      "value is needed here; to leave out 'output.preview' as a whole, unset it "
                      "(--set output.preview=null)")
                << job;
        }
    }
}

// Issue 41 §5: `stabilize: True` is what a YAML user expects it to be (YAML 1.2 core: true, True, TRUE; YAML 1.1's
// yes/on in its three cases); anything else is refused naming the key.
TEST(JobConfig, BooleansTakeTheSpellingsYamlUsersWrite) {
    const std::string base = "input: {path: a.####.exr}\noutput: {path: d.####.exr}\nmodel: {path: m.pt}\n";
    for (const char* yes : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
        EXPECT_TRUE(yaml(base + "depth: {stabilize: " + yes + "}\n").depth.stabilize) << yes;
    for (const char* no : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
        EXPECT_FALSE(yaml(base + "depth: {stabilize: " + no + "}\n").depth.stabilize) << no;
    const std::string msg = job_error(base + "depth: {stabilize: tRUE}\n", "yaml");
    EXPECT_NE(msg.find("depth.stabilize"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected true or false, got 'tRUE'"), std::string::npos) << msg;
}
