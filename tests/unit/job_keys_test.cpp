// Unit tests for include/depthbatch/job_keys.h: the one key table and what is generated from it (the schema,
// the settings fingerprint, the older spellings, --help-job), checked key by key from the table itself.
#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/job_config.h"
#include "depthbatch/job_keys.h"
#include "depthbatch/log.h"
#include "depthbatch/model_contract.h"
#include "support/test_support.h"

#include "job_schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

using namespace depthbatch;
using test::contains;

namespace {

// A job as key -> value (YAML flow text), written as YAML or TOML.
using Keys = std::map<std::string, std::string>;

// Valid with every example of the table set on top of it (set()): the companions some keys need
// (color.hdr view: display and view; depth.near: far; a nested key: its parent's main key), and values that
// differ from every example. normalize sequence makes input.frames part of the fingerprint.
const Keys kBaseJob = {
    {"input.path", "plates/a.####.exr"},
    {"input.frames", "1001-1020"},
    {"output.path", "depth/a.####.exr"},
    {"output.preview.path", "previews/a.####.png"},
    {"model.tiles.size", "512"},
    {"color.display", "sRGB"},
    {"color.view", "Film"},
    {"depth.normalize", "sequence"},
    {"depth.near", "1"},
    {"depth.far", "100"},
};

// `job` with `key` set to `value`: a key replaces its nested keys, a nested key its parent's bare value.
Keys set(Keys job, const std::string& key, const std::string& value) {
    for (auto it = job.begin(); it != job.end();)
        it = it->first.rfind(key + ".", 0) == 0 || key.rfind(it->first + ".", 0) == 0 ? job.erase(it) : std::next(it);
    job[key] = value;
    return job;
}

std::string section_of(const std::string& key) { return key.substr(0, key.find('.')); }
std::string rest_of(const std::string& key) { return key.substr(key.find('.') + 1); }

std::string to_yaml(const Keys& job) {
    // section -> (key -> value), a nested key in a flow mapping of its parent
    std::map<std::string, std::map<std::string, std::string>> sections;
    std::map<std::string, std::map<std::string, std::string>> nested;  // "output.preview" -> {path: ...}
    for (const auto& [key, value] : job) {
        const std::string rest = rest_of(key);
        if (rest.find('.') == std::string::npos) sections[section_of(key)][rest] = value;
        else nested[key.substr(0, key.rfind('.'))][key.substr(key.rfind('.') + 1)] = value;
    }
    for (const auto& [parent, inner] : nested) {
        std::string flow;
        for (const auto& [k, v] : inner) flow += (flow.empty() ? "" : ", ") + k + ": " + v;
        sections[section_of(parent)][rest_of(parent)] = "{" + flow + "}";
    }
    std::string out;
    for (const auto& [section, keys] : sections) {
        out += section + ":\n";
        for (const auto& [k, v] : keys) out += "  " + k + ": " + v + "\n";
    }
    return out;
}

// A YAML flow value as TOML: numbers, booleans and arrays of numbers as they are, anything else a string.
std::string toml_value(const std::string& v) {
    static const std::regex number(R"(^-?\d+(\.\d+)?([eE]-?\d+)?$)");
    if (std::regex_match(v, number) || v == "true" || v == "false" || v.front() == '[') return v;
    return "'" + v + "'";
}

std::string to_toml(const Keys& job) {
    std::map<std::string, std::string> sections;  // dotted keys hold the nested ones: [output] preview.path = ...
    for (const auto& [key, value] : job) sections[section_of(key)] += rest_of(key) + " = " + toml_value(value) + "\n";
    std::string out;
    for (const auto& [section, body] : sections) out += "[" + section + "]\n" + body;
    return out;
}

JobConfig yaml_job(const Keys& job) { return parse_job(to_yaml(job), "yaml", "job.yaml", "/jobs/sh010"); }
JobConfig toml_job(const Keys& job) { return parse_job(to_toml(job), "toml", "job.toml", "/jobs/sh010"); }

// The settings text as depthbatch 0.3 wrote it by hand (output_settings_text + run_job's model.precision line):
// outputs rendered before the key table must stay "same settings".
std::string settings_text_before_the_table(const JobConfig& job) {
    std::ostringstream s;
    s.precision(17);
    const auto& i = job.input;
    const auto& o = job.output;
    const auto& m = job.model;
    const auto& c = job.color;
    const auto& d = job.depth;
    const auto opt = [](const std::optional<double>& v) {
        std::ostringstream t;
        t.precision(17);
        if (v) t << *v;
        else t << "-";
        return t.str();
    };
    s << "input.path=" << i.path << "\ninput.colorspace=" << i.colorspace << "\ninput.part=" << i.part
      << "\ninput.view=" << i.view << "\ninput.layer=" << i.layer << "\ninput.pixel_aspect=" << opt(i.pixel_aspect)
      << "\n";
    if (d.normalize == Normalization::Sequence || d.stabilize)
        s << "input.frames=" << format_frame_spec(i.frames) << "\n";
    s << "output.compression=" << option_name(o.compression) << "\noutput.zip_level=" << o.zip_level
      << "\noutput.channels=" << option_name(o.channels) << "\noutput.existing_depth=" << option_name(o.existing_depth)
      << "\noutput.pixel_type=" << option_name(o.pixel_type);
    // Issue 25's keys: their lines only when a job uses them.
    std::string passes;
    for (const auto& p : o.passes) passes += (passes.empty() ? "" : ",") + p;
    if (!o.passes.empty()) s << "\noutput.passes=" << passes;
    if (!o.passes.empty() || o.passes_type != PassPixelType::Float)
        s << "\noutput.passes_type=" << option_name(o.passes_type);
    s
        // issue 25: a line only for scene_linear (the default since): outputs of before hold the plate's values
        << (o.passthrough_colorspace == PassthroughColorspace::SceneLinear
                ? "\noutput.passthrough_colorspace=scene_linear"
                : "")
        << "\nmodel.path=" << m.path << "\nmodel.size=" << static_cast<int>(m.size.mode) << "," << m.size.short_side_px
        << "," << m.size.width_px << "," << m.size.height_px
        << "\nmodel.contract=" << m.contract.colorspace.value_or("-") << "," << m.contract.multiple.value_or(0) << ","
        << (m.contract.kind ? depth_kind_name(*m.contract.kind) : "-") << "," << m.contract.units.value_or("-") << ","
        << m.contract.width_px.value_or(0) << "," << m.contract.height_px.value_or(0) << ","
        << (m.contract.fixed_size ? (*m.contract.fixed_size ? "fixed" : "any") : "-") << "\n"
        << "model.tiles=" << m.tiles.size << "," << m.tiles.overlap << "\n"
        << "color.config=" << c.config << "\ncolor.hdr=" << option_name(c.hdr) << "\ncolor.display=" << c.display
        << "\ncolor.view=" << c.view << "\ncolor.look=" << c.look << "\n"
        << "depth.kind=" << option_name(d.convention) << "\ndepth.normalize=" << option_name(d.normalize)
        << "\ndepth.near_is=" << d.near_is << "\ndepth.near=" << opt(d.near) << "\ndepth.far=" << opt(d.far)
        << "\ndepth.percentiles=" << d.percentile_low << "," << d.percentile_high
        << "\ndepth.stats_frames=" << d.stats_frames << "\ndepth.stabilize=" << (d.stabilize ? "centred" : "0")
        << "\ndepth.stabilize_window=" << d.stabilize_window() << "\ndepth.focal_px=" << opt(job.camera.focal_px)
        << "\ndepth.upsample=" << option_name(d.upsample.method) << "," << d.upsample.radius_px << ","
        << d.upsample.epsilon << "," << d.upsample.edge_threshold << "\n";
    const CameraSettings& cam = job.camera;
    if (cam.focal_mm) s << "camera.focal=" << opt(cam.focal_mm) << "\n";
    if (cam.focal_mm || cam.haperture_mm != kNukeHaperture_mm) s << "camera.haperture=" << cam.haperture_mm << "\n";
    if (!cam.chan.empty() || cam.vaperture_mm != kNukeVaperture_mm)
        s << "camera.vaperture=" << cam.vaperture_mm << "\n";
    if (cam.fov_deg) s << "camera.fov=" << opt(cam.fov_deg) << "\n";
    if (!cam.chan.empty()) s << "camera.chan=" << cam.chan << "\n";
    const CameraSolveSettings& solve = job.camera_solve;  // issue 43: a line only when a job solves its camera
    if (solve.enabled())
        s << "camera.solve=" << solve.model << "," << solve.window << "," << solve.overlap << ","
          << (solve.zoom ? "zoom" : "prime") << "," << opt(solve.distance_m) << ","
          << (solve.distance_frame ? std::to_string(*solve.distance_frame) : "-") << "," << solve.metric_model << "\n";
    return s.str() + "model.precision=" + option_name(job.model.precision) + "\n";
}

}  // namespace

// Every key either writes its value into the fingerprint or says why it does not change an output EXR.
TEST(JobConfigKeys, EveryKeyIsFingerprintedOrSaysWhyNot) {
    std::set<std::string> seen;
    for (const JobKey& k : job_keys()) {
        SCOPED_TRACE(k.key);
        EXPECT_TRUE(seen.insert(k.key).second) << "listed twice";
        EXPECT_NE(k.affects_pixels(), *k.not_pixels != '\0') << "fingerprinted, or a reason why not (one of them)";
        EXPECT_NE(k.value, nullptr);
        EXPECT_NE(*k.doc, '\0');
        EXPECT_NE(*k.example, '\0');
        if (k.affects_stats) EXPECT_TRUE(k.affects_pixels()) << "what changes the statistics changes the pixels";
        if (*k.old_name_of) {
            const JobKey* now = find_job_key(k.old_name_of);
            ASSERT_NE(now, nullptr);
            EXPECT_EQ(std::string(now->fingerprint), k.fingerprint) << "an older name is fingerprinted as its key";
        }
        const std::string key = k.key, parent = key.substr(0, key.rfind('.'));
        if (std::count(key.begin(), key.end(), '.') == 2) {
            const JobKey* p = find_job_key(parent);
            ASSERT_NE(p, nullptr) << "a nested key's parent is in the table";
            EXPECT_TRUE(p->holds_keys());
            EXPECT_TRUE(job_nested_keys().at(parent).count(key.substr(parent.size() + 1)));
        } else {
            EXPECT_TRUE(job_sections().at(section_of(key)).count(rest_of(key)));
        }
    }
    EXPECT_STREQ(job_scalar_form("output.preview"), "path");
    EXPECT_STREQ(job_scalar_form("model.tiles"), "size");
    EXPECT_STREQ(job_scalar_form("model.batch"), "");
}

// Each key set to its example (a value other than the default and the base job's): a key marked as changing
// the pixels changes the fingerprint, any other leaves it as it is. The job reads the same from YAML and TOML,
// and the key was read at all (its value shows in job_settings_text).
TEST(JobConfigKeys, EachKeyChangesTheFingerprintIffItChangesThePixels) {
    for (const JobKey& k : job_keys()) {
        SCOPED_TRACE(std::string(k.key) + "=" + k.example);
        // A key that only means something beside another is compared with a base that has that other one:
        // camera.solve's keys need its model, camera.solve.distance_frame its distance.
        Keys with = kBaseJob;
        const std::string name = k.key;
        if (name.rfind("camera.solve.", 0) == 0 && name != "camera.solve.model")
            with = set(with, "camera.solve.model", "models/v.pt");
        if (name == "camera.solve.distance_frame") with = set(with, "camera.solve.distance", "4");
        const JobConfig base = yaml_job(with);
        const std::string base_fp = output_settings_text(base), base_all = job_settings_text(base);
        const Keys job = set(with, k.key, k.example);
        JobConfig y, t;
        try {
            y = yaml_job(job);
            t = toml_job(job);
        } catch (const ConfigError& e) {
            ADD_FAILURE() << e.what() << "\nYAML:\n" << to_yaml(job) << "TOML:\n" << to_toml(job);
            continue;
        }
        if (k.affects_pixels()) EXPECT_NE(output_settings_text(y), base_fp);
        else EXPECT_EQ(output_settings_text(y), base_fp);
        EXPECT_NE(job_settings_text(y), base_all) << "the key is not read";
        EXPECT_EQ(job_settings_text(y), job_settings_text(t)) << "YAML:\n" << to_yaml(job) << "TOML:\n" << to_toml(job);
        EXPECT_EQ(output_settings_text(y), output_settings_text(t));
        EXPECT_EQ(output_settings_text(y), settings_text_before_the_table(y)) << "the fingerprint text changed";
    }
}

// The table writes the fingerprint text depthbatch 0.3 wrote by hand, so outputs made before stay "same settings".
TEST(JobConfigKeys, FingerprintTextIsTheOneBeforeTheTable) {
    for (const Keys& job : {Keys{{"input.path", "/p/a.####.exr"}, {"output.path", "/d/a.####.exr"}}, kBaseJob,
                            set(set(set(kBaseJob, "depth.stabilize", "true"), "depth.focal_px", "1234.5678"),
                                "model.precision", "bf16")}) {
        const JobConfig j = yaml_job(job);
        EXPECT_EQ(output_settings_text(j), settings_text_before_the_table(j)) << to_yaml(job);
        EXPECT_EQ(
            output_settings_text(j, Precision::Fp32),
            settings_text_before_the_table(j).substr(0, settings_text_before_the_table(j).rfind("model.precision=")) +
                "model.precision=fp32\n");
    }
    // Issue 25: outputs of before hold the plate's values as float (the defaults of then); a job asking for just
    // that has their text exactly, and the new defaults (scene_linear, auto) do not.
    const JobConfig old =
        yaml_job(set(set(kBaseJob, "output.passthrough_colorspace", "plate"), "output.pixel_type", "keep"));
    const std::string text = output_settings_text(old);
    EXPECT_EQ(text.find("passthrough"), std::string::npos) << text;
    EXPECT_NE(text.find("output.pixel_type=keep\nmodel.path="), std::string::npos) << text;
    EXPECT_NE(output_settings_text(yaml_job(kBaseJob)).find("output.passthrough_colorspace=scene_linear\n"),
              std::string::npos);
}

// The fingerprint text of two jobs that set nearly every key, pinned as literal text (issue 33 §4): however the
// settings are arranged in code, an output made before keeps its settings_sha256 (--skip-existing renders
// nothing again). An odd depth.stabilize_window (older name, R = W / 2) keeps its line as written.
TEST(JobConfigKeys, FingerprintTextOfFullJobsIsPinned) {
    const std::string full = R"(input:
  path: /p/a.####.exr
  frames: 1001-1010
  colorspace: ACEScg
  part: 1
  view: left
  layer: ViewLayer.DiffCol
  pixel_aspect: 2
  scene: outdoor
output:
  path: /d/a.####.exr
  overwrite: skip
  compression: zips
  zip_level: 9
  channels: all
  existing_depth: rename
  pixel_type: half
  passes: [P, N, sky]
  passes_type: half
  preview: {path: /v/p.####.jpg, colormap: inferno, size: 480}
model:
  path: /m/x.pt
  device: cuda:1
  size: [640, 480]
  colorspace: ACEScg
  multiple: 32
  kind: metric_depth
  units: m
  input_size: [640, 480]
  fixed_size: true
  precision: bf16
  batch: 4
  tiles: {size: 1024, overlap: 64}
color:
  config: /o/c.ocio
  hdr: view
  display: sRGB
  view: Film
  look: Neutral
depth:
  convention: metric
  near: 0.5
  far: 50
  percentiles: [5, 95]
  stats_frames: 32
  stabilize: true
  stabilize_window: 9
  upsample: guided
  guided_radius: 8
  guided_epsilon: 0.01
  edge_threshold: 0.2
camera:
  focal: 35
  haperture: 36
  vaperture: 24
  chan: /c/shot.chan
)";
    const std::string normalized = R"(input: {path: /p/b.%04d.exr, frames: 1-20x2, pixel_aspect: ignore}
output: {path: /d/b.%04d.exr, passthrough_colorspace: plate, compression: piz}
model: {size: 518, tiles: 512}
depth: {normalize: fixed, near_is: 1, near: 1.25, far: 100.5, stabilize: true, stabilize_radius: 3, focal_px: 1234.5678}
camera: {vaperture: 20.25}
)";
    const JobConfig a = parse_job(full, "yaml", "full.yaml", "/jobs/sh010");
    EXPECT_EQ(output_settings_text(a),
              "input.path=/p/a.####.exr\n"
              "input.colorspace=ACEScg\n"
              "input.part=1\n"
              "input.view=left\n"
              "input.layer=ViewLayer.DiffCol\n"
              "input.pixel_aspect=2\n"
              "input.frames=1001-1010\n"
              "output.compression=zips\n"
              "output.zip_level=9\n"
              "output.channels=all\n"
              "output.existing_depth=rename\n"
              "output.pixel_type=half\n"
              "output.passes=P,N,sky\n"
              "output.passes_type=half\n"
              "output.passthrough_colorspace=scene_linear\n"
              "model.path=/m/x.pt\n"
              "model.size=3,0,640,480\n"
              "model.contract=ACEScg,32,metric_depth,m,640,480,fixed\n"
              "model.tiles=1024,64\n"
              "color.config=/o/c.ocio\n"
              "color.hdr=view\n"
              "color.display=sRGB\n"
              "color.view=Film\n"
              "color.look=Neutral\n"
              "depth.kind=metric\n"
              "depth.normalize=raw\n"
              "depth.near_is=0\n"
              "depth.near=0.5\n"
              "depth.far=50\n"
              "depth.percentiles=5,95\n"
              "depth.stats_frames=32\n"
              "depth.stabilize=centred\n"
              "depth.stabilize_window=9\n"
              "depth.focal_px=-\n"
              "depth.upsample=guided,8,0.01,0.20000000000000001\n"
              "camera.focal=35\n"
              "camera.haperture=36\n"
              "camera.vaperture=24\n"
              "camera.chan=/c/shot.chan\n"
              "model.precision=bf16\n");
    EXPECT_EQ(output_settings_text(a, Precision::Fp32).substr(output_settings_text(a).rfind("model.precision=")),
              "model.precision=fp32\n");
    const JobConfig b = parse_job(normalized, "yaml", "norm.yaml", "/jobs/sh010");
    EXPECT_EQ(output_settings_text(b),
              "input.path=/p/b.%04d.exr\n"
              "input.colorspace=auto\n"
              "input.part=0\n"
              "input.view=\n"
              "input.layer=\n"
              "input.pixel_aspect=1\n"
              "input.frames=1-19x2\n"
              "output.compression=piz\n"
              "output.zip_level=4\n"
              "output.channels=rgba\n"
              "output.existing_depth=replace\n"
              "output.pixel_type=auto\n"
              "model.path=default\n"
              "model.size=1,518,0,0\n"
              "model.contract=-,0,-,-,0,0,-\n"
              "model.tiles=512,128\n"
              "color.config=\n"
              "color.hdr=clamp\n"
              "color.display=\n"
              "color.view=\n"
              "color.look=\n"
              "depth.kind=normalized\n"
              "depth.normalize=fixed\n"
              "depth.near_is=1\n"
              "depth.near=1.25\n"
              "depth.far=100.5\n"
              "depth.percentiles=2,98\n"
              "depth.stats_frames=16\n"
              "depth.stabilize=centred\n"
              "depth.stabilize_window=6\n"
              "depth.focal_px=1234.5678\n"
              "depth.upsample=bilinear,0,0.0001,0.050000000000000003\n"
              "camera.vaperture=20.25\n"
              "model.precision=fp32\n");
}

// The statistics settings: what sequence statistics depend on, not how the depth reaches the plate.
TEST(JobConfigKeys, StatsSettingsTextFollowsTheStatsKeys) {
    const std::string base = stats_settings_text(yaml_job(kBaseJob));
    EXPECT_NE(stats_settings_text(yaml_job(set(kBaseJob, "depth.percentiles", "[5, 95]"))), base);
    EXPECT_NE(stats_settings_text(yaml_job(set(kBaseJob, "input.layer", "L"))), base);
    EXPECT_EQ(stats_settings_text(yaml_job(set(kBaseJob, "depth.upsample", "guided"))), base);
    EXPECT_EQ(stats_settings_text(yaml_job(set(kBaseJob, "output.compression", "piz"))), base);
}

// depth.kind and depth.stabilize_window are the older names of depth.convention and depth.stabilize_radius.
TEST(JobConfigKeys, OlderNamesStillWorkAndWarnOnce) {
    std::ostringstream log;
    set_log_stream(&log);
    const Keys min = {{"input.path", "/p/a.####.exr"}, {"output.path", "/d/a.####.exr"}};
    const JobConfig kind = yaml_job(set(min, "depth.kind", "inverse"));
    const JobConfig convention = yaml_job(set(min, "depth.convention", "inverse"));
    EXPECT_EQ(kind.depth.convention, DepthConvention::Inverse);
    EXPECT_EQ(output_settings_text(kind), output_settings_text(convention));
    yaml_job(set(min, "depth.kind", "metric"));  // warned once a process
    const JobConfig window = yaml_job(set(min, "depth.stabilize_window", "12"));
    const JobConfig radius = yaml_job(set(min, "depth.stabilize_radius", "6"));
    EXPECT_EQ(window.depth.stabilize_radius, 6) << "the window W is R = W / 2 frames on each side";
    EXPECT_EQ(radius.depth.stabilize_radius, 6);
    EXPECT_EQ(radius.depth.stabilize_window(), 12) << "the fingerprint writes the window 2R";
    EXPECT_EQ(output_settings_text(window), output_settings_text(radius));
    const JobConfig odd = yaml_job(set(min, "depth.stabilize_window", "9"));
    EXPECT_EQ(odd.depth.stabilize_radius, 4);
    EXPECT_EQ(odd.depth.stabilize_window(), 9) << "an odd window keeps its fingerprint line";
    EXPECT_EQ(yaml_job(set(min, "depth.stabilize_window", "1")).depth.stabilize_radius, 1) << "at least 1";
    set_log_stream(nullptr);
    const std::string warnings = log.str();
    // (once a process: another test may have warned first)
    EXPECT_LE(std::count(warnings.begin(), warnings.end(), '\n'), 2) << warnings;
    if (!warnings.empty()) EXPECT_TRUE(contains(warnings, "use depth.")) << warnings;
    EXPECT_TRUE(warnings.find("'depth.kind' is deprecated: use depth.convention") ==
                warnings.rfind("'depth.kind' is deprecated"))
        << warnings;

    const auto both = [&](const std::string& a, const std::string& b, const std::string& v) {
        return test::expect_error<ConfigError>([&] { yaml_job(set(set(min, a, v), b, v)); }, a + " and " + b);
    };
    std::string msg = both("depth.kind", "depth.convention", "raw");
    EXPECT_TRUE(contains(msg, "'depth.kind': is the older name of depth.convention: set one of them")) << msg;
    msg = both("depth.stabilize_window", "depth.stabilize_radius", "4");
    EXPECT_TRUE(contains(msg, "'depth.stabilize_window': is the older name of depth.stabilize_radius")) << msg;
    msg = test::expect_error<ConfigError>([&] { yaml_job(set(min, "depth.stabilize_radius", "0")); }, "radius 0");
    EXPECT_TRUE(contains(msg, "depth.stabilize_radius")) << msg;
    // An error about the convention names the key the job wrote.
    msg = test::expect_error<ConfigError>([&] { yaml_job(set(min, "depth.convention", "normalized")); }, "normalized");
    EXPECT_TRUE(contains(msg, "'depth.convention'")) << msg;
}

// --help-job lists every key with its default (docs/jobs.md's table is job_keys_markdown(): Docs.JobKeyTableIsTheCodesTable).
TEST(JobConfigKeys, HelpJobNamesEveryKey) {
    const std::string help = job_keys_help();
    for (const JobKey& k : job_keys()) EXPECT_TRUE(contains(help, std::string(k.key) + " ")) << k.key;
}
