// Issue 43: the camera from the plate. Shots of a ray-cast scene with known cameras (tools/camera_oracle.py: dolly,
// pan with translation, orbit, crane, nodal pan, locked-off) through an oracle any-view model that answers from the
// truth, each window in its own gauge as a real model does: `depthbatch solve` gives the scene's camera; a render uses
// it and puts every pixel's P where the scene is; a stated camera wins; resume follows every input the solve reads;
// farm chunks equal the single-process render; bad input gets its exit code. An exported Depth Anything 3 Small
// (seeded weights) solves through the same path.
#include "support/test_support.h"

#include "depthbatch/camera.h"

#include <OpenImageIO/imagebufalgo.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <mutex>

using namespace depthbatch;
using namespace depthbatch::test;

namespace {

const fs::path kFarmVenv = DEPTHBATCH_SOURCE_DIR "/.venv-farm";

/// One generated shot (tools/camera_oracle.py make), made once per test program and kind.
const fs::path& oracle_shot(const std::string& kind, bool noise = false) {
    static TempDir root;
    static std::map<std::string, fs::path> made;
    static std::mutex mutex;
    const std::lock_guard<std::mutex> lock(mutex);
    const std::string name = kind + (noise ? "-noisy" : "");
    if (!made.count(name)) {
        const fs::path dir = root / name;
        std::vector<std::string> args = {"-m", "tools.camera_oracle", "make", "--shot", kind, "--out", dir.string()};
        if (noise) args.push_back("--noise");
        const RunResult r = run_python(args);
        EXPECT_EQ(r.exit_code, 0) << r.output;
        made[name] = dir;
    }
    return made.at(name);
}

/// A job over a shot's plates (linked into `dir`), writing out/depth.####.exr, solving with the shot's oracle.
fs::path solve_job(const fs::path& dir, const fs::path& shot, const std::string& solve_extra = "",
                   const std::string& extra = "", bool distance_given = true) {
    fs::create_directories(dir / "pl");
    for (const auto& e : fs::directory_iterator(shot))
        if (e.path().extension() == ".png") fs::create_symlink(e.path(), dir / "pl" / e.path().filename());
    const nlohmann::json truth = read_json(shot / "truth.json");
    char distance[64];
    std::snprintf(distance, sizeof distance, "%.17g", truth["median_depth"]["1001"].get<double>());
    return write_job(dir / "job.yaml",
                     "input: {path: pl/plate.####.png, colorspace: sRGB}\n"
                     "output: {path: out/depth.####.exr}\n"
                     "model: {path: " +
                         (shot / "oracle-metric.pt").string() +
                         "}\n"
                         "camera:\n  solve: {model: " +
                         (shot / "oracle-views.pt").string() +
                         (distance_given ? std::string(", distance: ") + distance : std::string()) + solve_extra +
                         "}\n" + extra);
}

using Mat4 = std::array<double, 16>;

Mat4 mul(const Mat4& a, const Mat4& b) {
    Mat4 c{};
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            for (int k = 0; k < 4; ++k) c[i * 4 + j] += a[i * 4 + k] * b[k * 4 + j];
    return c;
}
/// The inverse of a rigid transform (rotation + translation).
Mat4 rigid_inverse(const Mat4& m) {
    Mat4 r{};
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) r[i * 4 + j] = m[j * 4 + i];
        r[i * 4 + 3] = -(m[0 * 4 + i] * m[3] + m[1 * 4 + i] * m[7] + m[2 * 4 + i] * m[11]);
    }
    r[15] = 1;
    return r;
}
double rotation_deg(const Mat4& a, const Mat4& b) {  // |A - B|_F = 2 sqrt(2) sin(angle / 2)
    double s = 0;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) s += std::pow(a[i * 4 + j] - b[i * 4 + j], 2);
    return 2 * std::asin(std::min(1.0, std::sqrt(s / 8))) * 180 / M_PI;
}
double distance(const Mat4& a, const Mat4& b) {
    return std::sqrt(std::pow(a[3] - b[3], 2) + std::pow(a[7] - b[7], 2) + std::pow(a[11] - b[11], 2));
}

/// The truth's camera of `frame` relative to the shot's first (the solve's world).
Mat4 truth_camera(const nlohmann::json& truth, int frame) {
    const auto get = [&](int f) {
        Mat4 m;
        for (size_t i = 0; i < 16; ++i) m[i] = truth["camera_to_world"][std::to_string(f)][i].get<double>();
        return m;
    };
    return mul(rigid_inverse(get(truth["first"].get<int>())), get(frame));
}

struct PathError {
    double rotation_deg = 0, position = 0;  ///< the worst frame's (position in metres)
};
PathError solved_against_truth(const fs::path& chan, const nlohmann::json& truth) {
    PathError e;
    for (const auto& [frame, sample] : read_chan_file(chan.string())) {
        const Mat4 got = chan_camera_to_world(sample), want = truth_camera(truth, frame);
        e.rotation_deg = std::max(e.rotation_deg, rotation_deg(got, want));
        e.position = std::max(e.position, distance(got, want));
    }
    return e;
}

double median_depth(const nlohmann::json& truth) {
    std::vector<double> d;
    for (const auto& [k, v] : truth["median_depth"].items()) d.push_back(v.get<double>());
    std::nth_element(d.begin(), d.begin() + static_cast<long>(d.size() / 2), d.end());
    return d[d.size() / 2];
}

}  // namespace

// Every camera path, exact oracle: rotation within 0.05 degrees and position within 1e-3 of the path's length (the
// issue's bound; measured: 2e-6 degrees, 3e-7), the focal within 1e-4 (the plate's 35 mm), and the motion said: the
// nodal pan and the locked-off shot are reported as such, every frame short of baseline, the focal not pinned.
TEST(CameraSolve, EveryCameraPathComesBackFromTheExactOracle) {
    for (const std::string kind : {"dolly", "pan_translate", "orbit", "crane", "nodal_pan", "locked_off"}) {
        SCOPED_TRACE(kind);
        const fs::path& shot = oracle_shot(kind);
        TempDir dir;
        const fs::path job = solve_job(dir.path, shot);
        const RunResult r = run_cli({"solve", job.string()});
        ASSERT_EQ(r.exit_code, 0) << r.output;
        const nlohmann::json truth = read_json(shot / "truth.json");
        const PathError e = solved_against_truth(dir / "out/depth.camera.chan", truth);
        const double length = truth["path_length"].get<double>();
        EXPECT_LT(e.rotation_deg, 0.05);
        if (length > 0) EXPECT_LT(e.position, 1e-3 * length);
        EXPECT_LT(e.position, 1e-5 * median_depth(truth));
        const nlohmann::json report = read_json(dir / "out/depth.camera.json");
        EXPECT_NEAR(report["focal"]["columns"].get<double>() / truth["focal_px"].get<double>(), 1, 1e-4);
        EXPECT_NEAR(report["focal"]["mm"].get<double>(), 35, 35e-4);
        const bool still = kind == "nodal_pan" || kind == "locked_off";
        EXPECT_EQ(report["motion"], kind == "nodal_pan" ? "nodal" : kind == "locked_off" ? "locked_off" : "moving");
        EXPECT_EQ(report["focal"]["pinned"], !still);
        EXPECT_EQ(report["short_baseline_frames"], still ? "1001-1024" : "");
        if (still) EXPECT_TRUE(contains(report["focal"]["note"].get<std::string>(), "not pinned"));
        EXPECT_EQ(report["units"], "metres");
        for (const auto& o : report["overlaps"]) EXPECT_LT(o["point_error"].get<double>(), 1e-5) << o.dump();
        EXPECT_LT(report["consistency"][0]["median_error"].get<double>(), 1e-3);
        // The USD camera reads back through USD with the same poses (camera.h's writer is tested there): its layer.
        EXPECT_TRUE(contains(read_bytes(dir / "out/depth.camera.usda"), "def Camera \"camera\""));
    }
}

// With noise (1% depth per pixel, 0.02 degrees and 0.1% of the depth per view, 0.3% focal: tools/camera_oracle.py),
// chaining five windows accumulates each link's error. Bound: rotation 0.16 degrees (8 x the per-view noise),
// position 0.6% of the median depth (6 x the per-view translation noise; measured 0.2-0.45% on all six paths),
// focal 0.5% (the per-view focal noise is 0.3%); the overlap residuals and the consistency figure show the noise.
TEST(CameraSolve, NoisyOracleStaysWithinTheStatedBound) {
    for (const std::string kind : {"dolly", "orbit", "nodal_pan"}) {
        SCOPED_TRACE(kind);
        const fs::path& shot = oracle_shot(kind, true);
        TempDir dir;
        const RunResult r = run_cli({"solve", solve_job(dir.path, shot).string()});
        ASSERT_EQ(r.exit_code, 0) << r.output;
        const nlohmann::json truth = read_json(shot / "truth.json");
        const PathError e = solved_against_truth(dir / "out/depth.camera.chan", truth);
        EXPECT_LT(e.rotation_deg, 0.16);
        EXPECT_LT(e.position, 6e-3 * median_depth(truth));
        const nlohmann::json report = read_json(dir / "out/depth.camera.json");
        EXPECT_NEAR(report["focal"]["columns"].get<double>() / truth["focal_px"].get<double>(), 1, 5e-3);
        EXPECT_GT(report["consistency"][0]["median_error"].get<double>(), 1e-3) << "the noise shows";
        EXPECT_LT(report["consistency"][0]["median_error"].get<double>(), 0.03);
        EXPECT_EQ(report["motion"], kind == "nodal_pan" ? "nodal" : "moving");
    }
}

// A render with world-space P and the metric oracle uses the solved camera: every pixel's P is the scene's point
// (relative to the first camera) within 1e-4 of its distance; the EXR and the summary say the camera is estimated,
// by which model, with the consistency figure. --skip-existing then keeps every frame.
TEST(CameraSolve, ARenderPutsEveryPixelWhereTheSceneIs) {
    const fs::path& shot = oracle_shot("crane");
    TempDir dir;
    const fs::path job = solve_job(dir.path, shot, "", "pipeline: {summary: summary.json}\n");
    RunResult r = run_cli({job.string(), "--set", "output.passes=[P]"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "camera.solve: solving the camera first (not solved yet)")) << r.output;
    const nlohmann::json truth = read_json(shot / "truth.json");
    const int w = truth["width"], h = truth["height"];
    const double f = truth["focal_px"];
    double worst = 0;
    for (int frame = 1001; frame <= 1024; frame += 7) {
        const OIIO::ImageBuf exr = read_image(dir / ("out/depth." + std::to_string(frame) + ".exr"));
        const int px = channel_index(exr, "P.X"), dz = channel_index(exr, "depth.Z");
        ASSERT_GE(px, 0);
        const std::vector<float> depth = read_f32(shot / ("depth." + std::to_string(frame) + ".bin"));
        const Mat4 cam = truth_camera(truth, frame);
        for (int y = 0; y < h; y += 3)
            for (int x = 0; x < w; x += 3) {
                const double d = depth[static_cast<size_t>(y) * w + x];
                const double c[3] = {((x + 0.5) - w / 2.0) / f * d, (h / 2.0 - (y + 0.5)) / f * d, -d};
                double p[3], err = 0;
                for (int i = 0; i < 3; ++i)
                    p[i] = cam[i * 4] * c[0] + cam[i * 4 + 1] * c[1] + cam[i * 4 + 2] * c[2] + cam[i * 4 + 3];
                for (int i = 0; i < 3; ++i) err += std::pow(exr.getchannel(x, y, 0, px + i) - p[i], 2);
                EXPECT_NEAR(exr.getchannel(x, y, 0, dz), d, 1e-5 * d);
                worst = std::max(worst, std::sqrt(err) / std::sqrt(c[0] * c[0] + c[1] * c[1] + d * d));
            }
    }
    EXPECT_LT(worst, 1e-4);
    // The .usda, read by a real USD library (usd-core), holds the .chan's cameras and focal lengths.
    const std::string script =
        "import json, sys\n"
        "from pxr import Usd, UsdGeom, Gf\n"
        "stage = Usd.Stage.Open(sys.argv[1])\n"
        "cam = UsdGeom.Camera.Get(stage, '/shot/camera')\n"
        "out = {}\n"
        "for t in range(int(stage.GetStartTimeCode()), int(stage.GetEndTimeCode()) + 1):\n"
        "    m = cam.ComputeLocalToWorldTransform(Usd.TimeCode(t))\n"
        "    g = cam.GetCamera(Usd.TimeCode(t))\n"
        "    out[str(t)] = {'m': [[m[r][c] for c in range(4)] for r in range(4)],\n"
        "                   'vfov': g.GetFieldOfView(Gf.Camera.FOVVertical)}\n"
        "print(json.dumps(out))\n";
    write_file(dir / "read.py", script);
    const RunResult usd = run_python({(dir / "read.py").string(), (dir / "out/depth.camera.usda").string()});
    ASSERT_EQ(usd.exit_code, 0) << usd.output;
    const nlohmann::json frames = nlohmann::json::parse(usd.output.substr(usd.output.find('{')));
    const ChanFile chan = read_chan_file((dir / "out/depth.camera.chan").string());
    ASSERT_EQ(frames.size(), chan.size());
    for (const auto& [frame, sample] : chan) {
        const auto m = chan_camera_to_world(sample);
        const auto& got = frames.at(std::to_string(frame));
        for (int row = 0; row < 4; ++row)  // USD's row-vector matrix: [r][c] is the column-vector one's [c][r]
            for (int col = 0; col < 4; ++col)
                EXPECT_NEAR(got["m"][row][col].get<double>(), m[col * 4 + row], 1e-6) << frame;
        EXPECT_NEAR(got["vfov"].get<double>(), *sample.vfov_deg, 1e-4) << frame;
    }
    const OIIO::ImageSpec spec = file_spec(dir / "out/depth.1010.exr");
    const std::string note = spec.get_string_attribute("depthbatch/camera_solve");
    EXPECT_EQ(note.rfind("estimated: solved from the plate by camera-oracle-crane", 0), 0u) << note;
    EXPECT_TRUE(contains(note, "metres from camera.solve.distance")) << note;
    EXPECT_LT(std::stod(spec.get_string_attribute("depthbatch/camera_consistency")), 1e-3);
    const nlohmann::json summary = read_json(dir / "summary.json");
    EXPECT_EQ(summary["camera_solve"]["note"], note);
    EXPECT_LT(summary["camera_solve"]["consistency"].get<double>(), 1e-3);
    r = run_cli({job.string(), "--set", "output.passes=[P]", "--skip-existing"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "0 rendered, 24 skipped")) << r.output;
}

// Without a distance, the render's own metric model sets the scale (its metres and the camera then agree): the
// camera comes out in metres, and validate says whether the solve is due or in force.
TEST(CameraSolve, TheRendersMetricModelSetsTheScaleWhenNoneIsGiven) {
    const fs::path& shot = oracle_shot("dolly");
    TempDir dir;
    const fs::path job = solve_job(dir.path, shot, "", "", false);
    RunResult r = run_cli({"validate", job.string(), "--set", "output.passes=[P]"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "camera     due: not solved yet")) << r.output;
    r = run_cli({"solve", job.string(), "--set", "output.passes=[P]"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json report = read_json(dir / "out/depth.camera.json");
    EXPECT_EQ(report["units"], "metres");
    EXPECT_TRUE(contains(report["scale"]["source"].get<std::string>(), "model.path camera-oracle-metric-dolly"));
    EXPECT_NEAR(report["scale"]["metres_per_unit"].get<double>(), 1 / 0.3, 1e-4) << "the first window's gauge";
    const nlohmann::json truth = read_json(shot / "truth.json");
    EXPECT_LT(solved_against_truth(dir / "out/depth.camera.chan", truth).position, 1e-5);
    r = run_cli({"validate", job.string(), "--set", "output.passes=[P]"});
    EXPECT_TRUE(contains(r.output, "camera     estimated: solved from the plate by camera-oracle-dolly")) << r.output;
    // The render checks what it wrote against the camera: P of each frame against the P of the frame k on where it
    // projects. With the model's own metres they agree; with a distance 36% short the dolly's P slides, said.
    r = run_cli({job.string(), "--set", "output.passes=[P]", "--summary", (dir / "s1.json").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_LT(read_json(dir / "s1.json")["camera_solve"]["render_consistency"].get<double>(), 0.005);
    EXPECT_FALSE(contains(r.output, "disagree")) << r.output;
    r = run_cli({job.string(), "--set", "output.passes=[P]", "--set", "camera.solve.distance=4.5", "--overwrite",
                 "--summary", (dir / "s2.json").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_GT(read_json(dir / "s2.json")["camera_solve"]["render_consistency"].get<double>(), 0.02);
    EXPECT_TRUE(contains(r.output, "the depth this render wrote and the solved camera disagree")) << r.output;
}

// A focal-dependent metric model (as DA3METRIC: metres = raw x focal_px / 300) renders at the solved focal length
// with no camera stated: a constant raw 1 comes out as the solved focal (in the model's pixels) / 300 metres.
TEST(CameraSolve, AFocalDependentModelRendersAtTheSolvedFocal) {
    const fs::path& shot = oracle_shot("orbit");
    TempDir dir;
    const fs::path model = write_probe_model(
        dir / "focal.pt", "def forward(self, x):\n    return x[:, 0:1, :, :] * 0.0 + 1.0\n",
        R"({"format": 1, "name": "probe-focal", "input": {"colorspace": "sRGB", "multiple": 14, "size": null,
 "fixed_size": false, "mean": null, "std": null}, "output": {"kind": "metric_depth", "units": "m",
 "reference_focal_px": 300}, "license": "MIT"})");
    const fs::path job = solve_job(dir.path, shot);
    const RunResult r = run_cli({job.string(), "--set", "model.path=" + model.string(), "--frames", "1001-1003"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "solving the camera first")) << r.output;
    const double focal = read_json(dir / "out/depth.camera.json")["focal"]["columns"].get<double>();
    EXPECT_NEAR(focal, read_json(shot / "truth.json")["focal_px"].get<double>(), 1e-3);
    // The probe's processing size is 518 rows (924x518 for the 224x126 plate): the focal in its pixels, / 300.
    const OIIO::ImageSpec spec = file_spec(dir / "out/depth.1002.exr");
    EXPECT_NEAR(std::stod(spec.get_string_attribute("depthbatch/focal_px")), focal, 1e-3);
    const double processing = std::stod(spec.get_string_attribute("depthbatch/processing_focal_px"));
    EXPECT_NEAR(processing, focal * 924 / 224, 0.01 * focal);
    EXPECT_NEAR(depth_at(dir / "out/depth.1002.exr", 100, 60), processing / 300, 1e-5 * processing);
    EXPECT_TRUE(contains(spec.get_string_attribute("depthbatch/camera_solve"), "estimated"));
}

// A stated focal or .chan always wins: the log says so and nothing is solved.
TEST(CameraSolve, AStatedCameraWinsAndTheLogSaysSo) {
    const fs::path& shot = oracle_shot("dolly");
    TempDir dir;
    const fs::path job = solve_job(dir.path, shot);
    const RunResult r = run_cli({job.string(), "--set", "output.passes=[P]", "--set", "camera.focal=35"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "camera.solve: the job's own camera (focal 35 mm")) << r.output;
    EXPECT_FALSE(fs::exists(dir / "out/depth.camera.chan"));
    EXPECT_EQ(file_spec(dir / "out/depth.1001.exr").get_string_attribute("depthbatch/camera_solve"), "");
}

// Resume follows every input the solve reads. A plate touched (re-delivered, same pixels): the camera is solved again
// and comes out the same, so only that frame renders again. Other solve settings (another distance): solved again,
// every frame renders again. Another model file: the same. Nothing changed: the solve is reused, nothing renders.
TEST(CameraSolve, ResumeFollowsEveryInputOfTheSolve) {
    const fs::path& shot = oracle_shot("pan_translate");
    TempDir dir;
    const fs::path job = solve_job(dir.path, shot);
    const std::vector<std::string> passes = {"--set", "output.passes=[P]", "--skip-existing"};
    const auto render = [&](const std::vector<std::string>& more = {}) {
        std::vector<std::string> args = {job.string()};
        args.insert(args.end(), passes.begin(), passes.end());
        args.insert(args.end(), more.begin(), more.end());
        return run_cli(args);
    };
    RunResult r = render();
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string chan = read_bytes(dir / "out/depth.camera.chan");
    r = render();
    EXPECT_FALSE(contains(r.output, "solving the camera")) << r.output;
    EXPECT_TRUE(contains(r.output, "0 rendered, 24 skipped")) << r.output;
    // The plate re-delivered: a copy in place of the link (another file: its identity changes).
    const fs::path plate = dir / "pl/plate.1010.png";
    fs::remove(plate);
    fs::copy_file(shot / "plate.1010.png", plate);
    r = render();
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "solving the camera first (its inputs changed")) << r.output;
    EXPECT_EQ(read_bytes(dir / "out/depth.camera.chan"), chan) << "the same plates give the same camera";
    EXPECT_TRUE(contains(r.output, "1 rendered, 23 skipped")) << r.output;
    // Another scale: another camera, every frame again.
    r = render({"--set", "camera.solve.distance=5"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "solving the camera first")) << r.output;
    EXPECT_NE(read_bytes(dir / "out/depth.camera.chan"), chan);
    EXPECT_TRUE(contains(r.output, "24 rendered, 0 skipped")) << r.output;
    // The solve's model replaced by the noisy one: solved again, every frame again.
    r = render({"--set", "camera.solve.distance=5", "--set",
                "camera.solve.model=" + (oracle_shot("pan_translate", true) / "oracle-views.pt").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "solving the camera first")) << r.output;
    EXPECT_TRUE(contains(r.output, "24 rendered, 0 skipped")) << r.output;
    // `depthbatch solve` on an up-to-date job does nothing; --overwrite solves again to the same bytes.
    const std::string now = read_bytes(dir / "out/depth.camera.chan");
    r = run_cli({"solve", job.string(), "--set", "camera.solve.distance=5", "--set",
                 "camera.solve.model=" + (oracle_shot("pan_translate", true) / "oracle-views.pt").string()});
    EXPECT_TRUE(contains(r.output, "is up to date")) << r.output;
    r = run_cli({"solve", job.string(), "--overwrite", "--set", "camera.solve.distance=5", "--set",
                 "camera.solve.model=" + (oracle_shot("pan_translate", true) / "oracle-views.pt").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(read_bytes(dir / "out/depth.camera.chan"), now);
}

// On the farm the solve is a task before the chunks (Open Job Description run here, the other engines' files in
// farm_submit_test): the chunks render what a single process renders, and a requeued solve redoes only itself.
TEST(CameraSolve, ChunksOnTheFarmEqualTheSingleProcessRender) {
    if (!fs::exists(kFarmVenv / "bin/openjd"))
        GTEST_SKIP() << "openjd-cli is not installed (scripts/setup: .venv-farm)";
    const fs::path& shot = oracle_shot("orbit");
    TempDir whole, farm;
    const std::string passes = "output: {path: out/depth.####.exr, passes: [P]}\n";
    fs::path job = solve_job(whole.path, shot);
    ASSERT_EQ(run_cli({job.string(), "--set", "output.passes=[P]"}).exit_code, 0);
    job = solve_job(farm.path, shot);
    RunResult r = run_cli({"submit", job.string(), "--engine", "openjd", "--chunk-size", "10", "--out",
                           (farm / "farm").string(), "--set", "output.passes=[P]"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "after one camera solve task")) << r.output;
    r = run_program(kFarmVenv / "bin/openjd", {"run", (farm / "farm/job.template.yaml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "camera solve: window 5/5")) << "the CameraSolve step solved";
    EXPECT_FALSE(contains(r.output, "solving the camera first")) << "no chunk solved again";
    EXPECT_EQ(read_bytes(farm / "out/depth.camera.chan"), read_bytes(whole / "out/depth.camera.chan"));
    for (int f = 1001; f <= 1024; ++f) {
        const std::string name = "out/depth." + std::to_string(f) + ".exr";
        const OIIO::ImageBuf a = read_image(whole / name), b = read_image(farm / name);
        ASSERT_EQ(a.nchannels(), b.nchannels());
        OIIO::ImageBufAlgo::CompareResults c = OIIO::ImageBufAlgo::compare(a, b, 0, 0);
        EXPECT_EQ(c.maxerror, 0) << name;
    }
    // The solve requeued: it finds its files up to date; the chunks then keep every frame.
    r = run_cli({"solve", job.string(), "--set", "output.passes=[P]"});
    EXPECT_TRUE(contains(r.output, "is up to date")) << r.output;
    r = run_cli({job.string(), "--set", "output.passes=[P]", "--chunk", "2/3", "--skip-existing"});
    EXPECT_TRUE(contains(r.output, "0 rendered")) << r.output;
}

// Bad input: each refused with its exit code, naming what is wrong, before anything is written.
TEST(CameraSolve, BadInputIsRefusedWithItsExitCode) {
    const fs::path& shot = oracle_shot("dolly");
    TempDir dir;
    const fs::path job = solve_job(dir.path, shot);
    // An any-view model as the render's model.
    RunResult r = run_cli({job.string(), "--set", "model.path=" + (shot / "oracle-views.pt").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "is an any-view model: it solves a shot's camera")) << r.output;
    // A depth model as the solve's.
    r = run_cli({"solve", job.string(), "--set", "camera.solve.model=" + (shot / "oracle-metric.pt").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "is not an any-view model")) << r.output;
    // Keys that contradict.
    r = run_cli({"solve", job.string(), "--set", "camera.solve.window=4", "--set", "camera.solve.overlap=4"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "camera.solve.overlap")) << r.output;
    r = run_cli({"solve", job.string(), "--set", "camera.solve.metric_model=" + (shot / "oracle-metric.pt").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    // A plate missing: the whole shot is solved, so the solve says which.
    fs::remove(dir / "pl/plate.1012.png");
    r = run_cli({"solve", job.string(), "--set", "input.frames=1001-1024"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_TRUE(contains(r.output, "plates 1012 of the shot")) << r.output;
    EXPECT_FALSE(fs::exists(dir / "out/depth.camera.chan"));
    // validate checks what the solve would stop on when it is due: the whole shot's plates, whatever --frames says.
    r = run_cli({"validate", job.string(), "--set", "output.passes=[P]", "--set", "input.frames=1001-1024", "--frames",
                 "1001-1005"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_TRUE(contains(r.output, "plates 1012 of the shot")) << r.output;
    // A file of our name that is not ours is never replaced.
    fs::create_symlink(shot / "plate.1012.png", dir / "pl/plate.1012.png");
    fs::create_directories(dir / "out");
    write_file(dir / "out/depth.camera.chan", "1001 0 0 0 0 0 0\n");
    r = run_cli({"solve", job.string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_EQ(read_bytes(dir / "out/depth.camera.chan"), "1001 0 0 0 0 0 0\n");
    // ... nor written beside a foreign file of the three: all three are checked before any is written.
    fs::remove(dir / "out/depth.camera.chan");
    write_file(dir / "out/depth.camera.usda", "#usda 1.0\n");
    r = run_cli({"solve", job.string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_FALSE(fs::exists(dir / "out/depth.camera.chan"));
    EXPECT_FALSE(fs::exists(dir / "out/depth.camera.json"));
    fs::remove(dir / "out/depth.camera.usda");
    // A metric model that is an any-view model, named by its key.
    r = run_cli({"solve", job.string(), "--set", "camera.solve.distance=null", "--set",
                 "camera.solve.metric_model=" + (shot / "oracle-views.pt").string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_TRUE(contains(r.output, "camera.solve.metric_model " + (shot / "oracle-views.pt").string())) << r.output;
    // Plates that change size: one camera for one plate size.
    fs::remove(dir / "pl/plate.1020.png");
    ASSERT_EQ(run_program("oiiotool", {(shot / "plate.1020.png").string(), "--resize", "448x252", "-o",
                                       (dir / "pl/plate.1020.png").string()})
                  .exit_code,
              0);
    r = run_cli({"solve", job.string()});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input)) << r.output;
    EXPECT_TRUE(contains(r.output, "frame 1020 is 448x252 but frame 1001 is 224x126")) << r.output;
    // A job with a bad key stops before the solve reads anything.
    r = run_cli({job.string(), "--set", "output.passes=[P]", "--set", "depth.convention=normalized", "--set",
                 "depth.normalize=sequence"});
    EXPECT_EQ(r.exit_code, exit_status(ExitCode::Config)) << r.output;
    EXPECT_FALSE(contains(r.output, "camera solve: window")) << r.output;
}

// An exported Depth Anything 3 Small (seeded weights in the official layout, tools/export.py
// depth-anything-3-views at a small size) runs through the same solve: its windows' cameras chain, the files are
// written, and the report names the model and its camera head.
TEST(CameraSolve, AnExportedDepthAnything3SmallSolvesAShot) {
    const fs::path& shot = oracle_shot("dolly");
    TempDir dir;
    const RunResult made = run_python(
        {"-c",
         "import sys, torch\n"
         "from tools.depth_anything_3_views import DepthAnything3Views\n"
         "from tools.seeded_weights import seeded_state_dict\n"
         "m = DepthAnything3Views('vits')\n"
         "sd = seeded_state_dict({'model.' + k: tuple(v.shape) for k, v in m.model.state_dict().items()}, 0)\n"
         "sd['model.cam_dec.fc_fov.0.bias'] += 1  # a field of view away from 0 (the parity test does the same)\n"
         "torch.save(sd, sys.argv[1])\n",
         (dir / "seeded.pth").string()});
    if (made.exit_code != 0) GTEST_SKIP() << "no seeded DA3 checkpoint: " << made.output;
    RunResult r =
        run_python({"-m", "tools.export", "depth-anything-3-views", "--model", "small", "--checkpoint",
                    (dir / "seeded.pth").string(), "--out", (dir / "da3s.pt").string(), "--size", "56", "98"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path job = solve_job(dir.path, shot, ", window: 6, overlap: 2");
    r = run_cli({"solve", job.string(), "--set", "camera.solve.model=" + (dir / "da3s.pt").string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json report = read_json(dir / "out/depth.camera.json");
    EXPECT_EQ(report["model"]["name"], "depth-anything-3-small-views");
    EXPECT_EQ(report["model"]["pose"], "camera_head");
    EXPECT_EQ(report["windows"], 6);  // 24 frames in windows of 6 sharing 2: 0-5, 4-9, ..., 16-21, 18-23
    EXPECT_EQ(read_chan_file((dir / "out/depth.camera.chan").string()).size(), 24u);
}
