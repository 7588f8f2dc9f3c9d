// A job's camera solve (camera_solve.h; docs/camera-solve.md): the plates read, coloured and reformatted as a render
// does, the any-view model run over windows, the windows chained, the scale set, and the .chan, .usda and report
// written through the job's output guard. Also what a render asks of it: the solved camera, up to date.
#include "job_context.h"
#include "job_outputs.h"

#include "depthbatch/camera.h"
#include "depthbatch/camera_solve.h"
#include "depthbatch/color_transform.h"
#include "depthbatch/error.h"
#include "depthbatch/exr_metadata.h"
#include "depthbatch/log.h"
#include "depthbatch/sha256.h"

#include <nlohmann/json.hpp>
#include <OpenImageIO/imagebuf.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace depthbatch {
namespace detail {
namespace {

constexpr const char* kReportWhat = "depthbatch camera solve";
constexpr double kUsdFps = 24;  ///< USD's timeCodesPerSecond: time codes are frame numbers, the rate is a label
constexpr int kMetricSampleFrames = 8;

std::string number(double v) {
    std::ostringstream s;
    s.precision(17);
    s << v;
    return s.str();
}

std::string sha_or_none(const std::string& path) {
    std::error_code ec;
    return !path.empty() && fs::is_regular_file(path, ec) ? sha256_file(path) : std::string("none");
}

/// The metric model that sets a solve's scale: camera.solve.metric_model; else, without camera.solve.distance, the
/// render's own model when its depth is metric (its metres then agree with the camera: world-space P lines up);
/// "" when the camera stays in the any-view model's units.
std::string scale_model(const JobConfig& job) {
    const CameraSolveSettings& s = job.camera_solve;
    if (!s.metric_model.empty()) return s.metric_model;
    if (s.distance_m) return "";
    const std::string render = job.model.path == "default" ? DepthModel::default_model_path() : job.model.path;
    try {
        if (const auto c = DepthModel::embedded_contract(render);
            c && c->kind == DepthKind::MetricDepth && !c->any_view())
            return render;
    } catch (const Error&) {  // a model that cannot be read fails where it is loaded, named there
    }
    return "";
}

/// Everything a solve reads, one line each: its identity is their digest. A re-delivered plate of any frame, another
/// model file, other solve settings or another colour rule make another solve.
std::vector<std::string> solve_inputs(const JobConfig& job, const std::vector<int>& shot) {
    const CameraSolveSettings& s = job.camera_solve;
    std::vector<std::string> lines = {
        "model sha256 " + sha_or_none(s.model),
        "scale model sha256 " +
            [&] {
                const std::string m = scale_model(job);
                return m.empty() ? std::string("none") : sha_or_none(m);
            }(),
        "window " + std::to_string(s.window) + " overlap " + std::to_string(s.overlap) + (s.zoom ? " zoom" : " prime"),
        "distance " + (s.distance_m ? number(*s.distance_m) : std::string("-")) + " at " +
            (s.distance_frame ? std::to_string(*s.distance_frame) : std::string("first")),
        "apertures " + number(job.camera.haperture_mm) + " " + number(job.camera.vaperture_mm),
        "input " + job.input.path + " colorspace " + job.input.colorspace + " part " + job.input.part + " view " +
            job.input.view + " layer " + job.input.layer + " pixel_aspect " +
            (job.input.pixel_aspect ? number(*job.input.pixel_aspect) : std::string("auto")),
        "OCIO config sha256 " + sha_or_none(ColorTransform::resolve_config_path(job.color.config)),
        "shot " + format_frame_spec(shot),
    };
    const FrameSequence plates(job.input.path);
    for (int f : shot) lines.push_back("plate " + std::to_string(f) + " " + plate_identity(plates.path(f)));
    return lines;
}

std::string inputs_sha256(const std::vector<std::string>& lines) {
    std::string text;
    for (const std::string& l : lines) text += l + "\n";
    return sha256_text(text);
}

std::optional<nlohmann::json> read_report(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    try {
        nlohmann::json j = nlohmann::json::parse(in);
        if (j.is_object() && j.value("what", std::string()).rfind(kReportWhat, 0) == 0) return j;
    } catch (const nlohmann::json::exception&) {}
    return std::nullopt;
}

/// "" when the files at `files` are the solve of `identity`; else why not.
std::string why_stale(const CameraSolveFiles& files, const std::string& identity) {
    const auto report = read_report(files.report);
    if (!report) return fs::exists(files.report) ? files.report + " is not a camera solve report" : "not solved yet";
    if (report->value("inputs_sha256", std::string()) != identity)
        return "its inputs changed since (a plate, the model, the solve settings or the colour rule)";
    if (sha_or_none(files.chan) != report->value("chan_sha256", std::string()))
        return files.chan + " is missing or is not the one the report names";
    if (!fs::is_regular_file(files.usda)) return files.usda + " is missing";
    return "";
}

/// The job a solve's model is opened with: the plates as `job` reads them (input, colour), the model at `model_path`
/// with the job's device, threads and accepted licence, default depth settings, nothing else rendered (no passes, no
/// previews), the camera's film back only.
JobConfig job_for_model(const JobConfig& job, const std::string& model_path) {
    JobConfig v = job;
    v.model = ModelSettings{};
    v.model.path = model_path;
    v.model.device = job.model.device;
    v.model.threads = job.model.threads;
    v.model.accept_license = job.model.accept_license;
    v.depth = DepthSettings{};
    v.output.passes.clear();
    v.output.preview.path.clear();
    v.camera = CameraSettings{};
    v.camera.haperture_mm = job.camera.haperture_mm, v.camera.vaperture_mm = job.camera.vaperture_mm;
    return v;
}

/// A frame prepared (read, colour, reformat) as the render prepares it; Error naming the frame when it fails.
FrameRecord prepared(const JobContext& ctx, const FirstFramePlan& first, int frame) {
    FrameRecord w(0, frame, 0);
    w.write = false;
    w.result.input_path = ctx.input.path(frame);
    prepare(ctx, first, w);
    if (w.failed())
        throw Error(w.result.status, "camera solve: frame " + std::to_string(frame) + ": " + w.result.message);
    return w;
}

/// The scale from a metric model (camera.solve.metric_model) run at the solved focal length: the ratio of its median
/// depth to the path's, per sample frame, their median.
double metric_scale(const JobConfig& job, const std::string& model, const CameraPath& path, std::string& source) {
    const char* key = job.camera_solve.metric_model.empty() ? "model.path" : "camera.solve.metric_model";
    if (const auto c = DepthModel::embedded_contract(model); c && c->any_view())
        throw ConfigError(std::string(key) + " " + model + " (" + c->name +
                          ") is an any-view model; the scale needs a metric depth model (DA3METRIC-LARGE)");
    JobConfig m = job_for_model(job, model);
    m.camera.focal_px = path.focal_columns;  // its metres at the solved focal
    m.camera_solve = CameraSolveSettings{};
    const auto ctx = open_job(m, JobUse::Validate);
    if (ctx->contract().kind != DepthKind::MetricDepth)
        throw ConfigError(std::string(key) + " " + ctx->model->path() + " (" + ctx->contract().name + ") gives " +
                          depth_kind_name(ctx->contract().kind) + ", not metric depth");
    std::vector<int> frames;
    for (const auto& [f, s] : path.frames) frames.push_back(f);
    std::vector<int> sample;
    const size_t n = std::min<size_t>(kMetricSampleFrames, frames.size());
    for (size_t i = 0; i < n; ++i) sample.push_back(frames[n > 1 ? i * (frames.size() - 1) / (n - 1) : 0]);
    const FirstFramePlan first = plan_from_first_frame(*ctx, sample.front());
    std::vector<double> ratios;
    for (int f : sample) {
        FrameRecord w = prepared(*ctx, first, f);
        std::vector<FrameRecord*> one{&w};
        infer(*ctx, one);
        if (w.failed())
            throw Error(w.result.status,
                        "camera solve: metric model, frame " + std::to_string(f) + ": " + w.result.message);
        std::vector<float> d;
        for (float v : w.depth.data)
            if (v > 0 && std::isfinite(v)) d.push_back(v);
        if (d.empty() || !(path.frames.at(f).median_depth > 0)) continue;
        std::nth_element(d.begin(), d.begin() + static_cast<long>(d.size() / 2), d.end());
        ratios.push_back(d[d.size() / 2] / path.frames.at(f).median_depth);
    }
    if (ratios.empty())
        throw RenderError(std::string(key) + " " + ctx->model->path() + ": no positive depth on frames " +
                          format_frame_spec(sample));
    std::nth_element(ratios.begin(), ratios.begin() + static_cast<long>(ratios.size() / 2), ratios.end());
    source = std::string(key) + " " + ctx->contract().name + " at the solved focal, median of frames " +
             format_frame_spec(sample);
    return ratios[ratios.size() / 2];
}

/// The consistency figure a solve is judged by: the worst of its frame distances (k = 1 flatters a drifting camera).
double worst_consistency(const CameraPath& path) {
    double worst = 0;
    for (const Consistency& c : path.consistency) worst = std::max(worst, c.median_error);
    return worst;
}

/// What a solve's figures say against trusting it (each also a warning in the log): a consistency figure over 5%,
/// windows that disagree on a shared camera by more than 2 degrees or on their points by more than 5% of the depth.
std::vector<std::string> solve_warnings(const CameraPath& path) {
    std::vector<std::string> w;
    if (const double c = worst_consistency(path); c > 0.05)
        w.push_back("consistency " + number(std::round(c * 1000) / 10) +
                    "%: the camera and the depth it came with disagree; projections will slide");
    for (const OverlapResidual& o : path.overlaps)
        if (o.rotation_deg > 2 || o.point_error > 0.05)
            w.push_back("windows " + std::to_string(o.window) + " and " + std::to_string(o.window + 1) +
                        " (from frame " + std::to_string(o.first_frame) + ") disagree: " +
                        number(std::round(o.rotation_deg * 10) / 10) + " degrees on a shared camera, points " +
                        number(std::round(o.point_error * 1000) / 10) + "% of their depth apart");
    return w;
}

nlohmann::ordered_json report_json(const CameraPath& path, const JobContext& ctx, const CameraSolveFiles& files,
                                   const std::vector<std::string>& inputs, const std::string& chan_sha, int window,
                                   int overlap, int windows, double display_width) {
    const JobConfig& job = ctx.job;
    const double mm = path.focal_columns * job.camera.haperture_mm / display_width;
    using json = nlohmann::ordered_json;
    json overlaps = json::array();
    for (const OverlapResidual& o : path.overlaps)
        overlaps.push_back({{"window", o.window},
                            {"first_frame", o.first_frame},
                            {"shared_frames", o.shared},
                            {"points", o.points},
                            {"point_error", o.point_error},
                            {"rotation_deg", o.rotation_deg},
                            {"centre_error", o.centre_error},
                            {"scale", o.scale}});
    json consistency = json::array();
    for (const Consistency& c : path.consistency)
        consistency.push_back({{"k", c.k}, {"median_error", c.median_error}, {"samples", c.samples}});
    json frames = json::object();
    for (const auto& [f, s] : path.frames)
        frames[std::to_string(f)] = {{"focal_columns", s.focal_columns},
                                     {"model_focal_columns", s.model_focal_columns},
                                     {"baseline", s.baseline},
                                     {"median_depth", s.median_depth},
                                     {"window", s.window}};
    const std::string pinned_note =
        path.focal_pinned()
            ? "pinned by the camera's own motion (parallax between the frames of each window)"
            : std::string("not pinned: the shot is ") + camera_motion_name(path.motion) +
                  (path.motion == CameraMotion::Moving ? " but most frames have too short a baseline" : "") +
                  ", so nothing in the plate measures the focal length; it is the model's reading of single pictures. "
                  "Check it against the lens sheet and set camera.focal if you know it";
    return {
        {"what", std::string(kReportWhat) + ": the camera solved from the plate by an any-view model (estimated)"},
        {"format", 1},
        {"inputs_sha256", inputs_sha256(inputs)},
        {"chan", files.chan},
        {"chan_sha256", chan_sha},
        {"usda", files.usda},
        {"model",
         {{"path", ctx.model->path()},
          {"name", ctx.contract().name},
          {"sha256", ctx.model->sha256()},
          {"pose", ctx.contract().views.pose},
          {"license", contract_license(ctx.contract())}}},
        {"frames", format_frame_spec(ctx.shot)},
        {"window", window},
        {"overlap", overlap},
        {"windows", windows},
        {"focal",
         {{"columns", path.focal_columns},
          {"mm", mm},
          {"haperture_mm", job.camera.haperture_mm},
          {"spread", path.focal_spread},
          {"p05_columns", path.focal_low},
          {"p95_columns", path.focal_high},
          {"zoom", path.zoom},
          {"pinned", path.focal_pinned()},
          {"note", pinned_note}}},
        {"motion", camera_motion_name(path.motion)},
        {"travel", path.travel},
        {"turn_deg", path.turn_deg},
        {"path_length", path.path_length},
        {"short_baseline_frames", format_frame_spec(path.short_baseline)},
        {"scale", path.scale_source.empty() ? json(nullptr)
                                            : json{{"metres_per_unit", path.scale}, {"source", path.scale_source}}},
        {"units", path.scale_source.empty() ? "the model's (no scale: set camera.solve.distance or "
                                              "camera.solve.metric_model for metres)"
                                            : "metres"},
        {"overlaps", overlaps},
        {"consistency", consistency},
        {"consistency_worst", worst_consistency(path)},
        {"warnings", solve_warnings(path)},
        {"per_frame", frames},
        {"inputs", inputs},
    };
}

/// The three files of a solve, each written to its temporary and published in order (.chan, .usda, report), once
/// all three paths have been checked (OutputGuard::open: a file of another kind there stops the solve before any
/// is written).
void write_solve_files(const OutputGuard& guard, const std::vector<std::pair<std::string, std::string>>& files) {
    std::vector<Publication> opened;
    for (const auto& [path, text] : files) opened.push_back(guard.open(path, OutputRole::CameraSolve));
    for (size_t i = 0; i < files.size(); ++i) {
        std::ofstream f(opened[i].temp_path(), std::ios::binary);
        f << files[i].second;
        if (!f) throw RenderError(files[i].first + ": cannot write the camera solve");
    }
    for (Publication& p : opened) p.publish(true);
}

}  // namespace

CameraSolveFiles camera_solve_files(const JobConfig& job) {
    const std::vector<std::string> paths = job_output_paths(job, OutputRole::CameraSolve);  // job_outputs.cpp's row
    if (paths.size() != 3) return {};
    return {paths[0], paths[1], paths[2]};
}

/// The solve itself (job_camera_solve when it is due).
CameraSolveRun solve_now(const JobConfig& job, const CameraSolveFiles& files) {
    const JobConfig v = job_for_model(job, job.camera_solve.model);
    const auto ctx = open_job(v, JobUse::CameraSolve);
    const std::vector<int>& shot = ctx->shot;
    std::vector<int> missing;
    for (int f : shot)
        if (!fs::is_regular_file(ctx->input.path(f))) missing.push_back(f);
    if (!missing.empty())
        throw InputError("camera solve: plates " + format_frame_spec(missing) + " of the shot (" +
                         format_frame_spec(shot) + ") are missing: the camera is solved over the whole shot");
    const std::vector<std::string> inputs = solve_inputs(job, shot);
    const ViewsContract& views = ctx->contract().views;
    int window = job.camera_solve.window > 0 ? job.camera_solve.window : views.window;
    if (window > ctx->contract().frames) {
        log_warning("camera.solve.window ", window, ": ", ctx->model->path(), " takes at most ", ctx->contract().frames,
                    " views a forward (its input.frames): windows of ", ctx->contract().frames);
        window = ctx->contract().frames;
    }
    const int overlap = job.camera_solve.overlap > 0 ? job.camera_solve.overlap : std::min(views.overlap, window - 1);
    std::vector<std::pair<int, int>> plan;
    try {
        plan = solve_windows(static_cast<int>(shot.size()), window, overlap);
    } catch (const std::invalid_argument& e) {
        throw ConfigError(std::string("camera.solve: ") + e.what());
    }
    int confidence = -1;
    for (size_t i = 0; i < ctx->contract().extra_outputs.size(); ++i)
        if (ctx->contract().extra_outputs[i].name == "confidence") confidence = static_cast<int>(i);
    const FirstFramePlan first = plan_from_first_frame(*ctx, shot.front());
    log_info("camera solve: ", shot.size(), " frames in ", plan.size(), plan.size() == 1 ? " window" : " windows",
             " of ", std::min<size_t>(static_cast<size_t>(window), shot.size()), " frames (consecutive ones share ",
             overlap, ") with ", ctx->contract().name);
    CameraPathBuilder builder(job.camera_solve.zoom);
    std::map<int, FrameRecord> held;  // the frames the next window shares
    // The display window's width: the .chan's vfov and the focal in mm are through the film back over it (camera.h).
    const double display_width =
        probe_plate(ctx->input.path(shot.front()), shot.front(), job.input).file_spec.full_width;
    for (size_t k = 0; k < plan.size(); ++k) {
        std::map<int, FrameRecord> here;
        for (int p = plan[k].first; p < plan[k].second; ++p) {
            const int f = shot[static_cast<size_t>(p)];
            auto it = held.find(f);
            FrameRecord w = it != held.end() ? std::move(it->second) : prepared(*ctx, first, f);
            if (w.plan.plate_width != first.reformat.plate_width || w.plan.plate_height != first.reformat.plate_height)
                throw InputError(
                    "camera solve: frame " + std::to_string(f) + " is " + std::to_string(w.plan.plate_width) + "x" +
                    std::to_string(w.plan.plate_height) + " but frame " + std::to_string(first.frame) + " is " +
                    std::to_string(first.reformat.plate_width) + "x" + std::to_string(first.reformat.plate_height) +
                    ": one camera is solved for one plate size (solve each size as a shot of its own: "
                    "input.frames)");
            here.emplace(f, std::move(w));
        }
        std::vector<const ModelInput*> inputs_of;
        for (const auto& [f, w] : here) inputs_of.push_back(&w.input);
        std::vector<ViewOutput> out;
        try {
            out = ctx->model->infer_views(inputs_of);
        } catch (const RenderError& e) {
            throw ModelError(e.what());
        }
        std::vector<SolveView> views_of;
        size_t i = 0;
        for (const auto& [f, w] : here) {
            SolveView s;
            s.frame = f;
            s.view = std::move(out[i++]);
            s.columns_per_px = static_cast<double>(w.plan.plate_width) / w.plan.scaled_width;
            s.rows_per_px = static_cast<double>(w.plan.plate_height) / w.plan.scaled_height;
            s.pixel_aspect = w.plan.pixel_aspect;
            s.confidence = confidence;
            views_of.push_back(std::move(s));
        }
        try {
            builder.add_window(std::move(views_of));
        } catch (const std::invalid_argument& e) {
            throw RenderError(std::string("camera solve: ") + e.what());
        }
        log_info("camera solve: window ", k + 1, "/", plan.size(), " (frames ",
                 shot[static_cast<size_t>(plan[k].first)], "-", shot[static_cast<size_t>(plan[k].second - 1)], ")");
        held.clear();
        if (k + 1 < plan.size())
            for (int p = plan[k + 1].first; p < plan[k].second; ++p) {
                const int f = shot[static_cast<size_t>(p)];
                held.emplace(f, std::move(here.at(f)));
            }
    }
    CameraPath path = builder.finish();
    if (job.camera_solve.distance_m) {
        const int at = job.camera_solve.distance_frame.value_or(shot.front());
        const auto f = path.frames.find(at);
        if (f == path.frames.end())
            throw ConfigError("camera.solve.distance_frame " + std::to_string(at) + " is not a frame of the shot (" +
                              format_frame_spec(shot) + ")");
        if (!(f->second.median_depth > 0))
            throw RenderError("camera.solve.distance: frame " + std::to_string(at) +
                              " has no confident depth to measure");
        path.scale_to(*job.camera_solve.distance_m / f->second.median_depth,
                      "camera.solve.distance " + number(*job.camera_solve.distance_m) +
                          " m: the median depth at frame " + std::to_string(at));
    } else if (const std::string model = scale_model(job); !model.empty()) {
        std::string source;
        const double k = metric_scale(job, model, path, source);
        path.scale_to(k, source);
    } else {
        log_warning(
            "camera solve: no scale (camera.solve.distance or camera.solve.metric_model): the camera and the "
            "world-space passes are in the model's units, not metres");
    }
    // The files: the .chan first (an existing one is replaced only while the old report still names it), the .usda,
    // then the report that names them.
    ChanFile chan;
    std::map<int, UsdCameraFrame> usd;
    for (const auto& [f, s] : path.frames) {
        const double focal_mm = s.focal_columns * job.camera.haperture_mm / display_width;
        const double vfov = 2 * std::atan(job.camera.vaperture_mm / (2 * focal_mm)) * 180 / 3.14159265358979323846;
        chan[f] = chan_sample_from_camera_to_world(s.camera_to_world, vfov);
        usd[f] = UsdCameraFrame{s.camera_to_world, focal_mm};
    }
    const std::string chan_text_now = chan_text(chan);
    const nlohmann::ordered_json report = report_json(path, *ctx, files, inputs, sha256_text(chan_text_now), window,
                                                      overlap, static_cast<int>(plan.size()), display_width);
    write_solve_files(ctx->guard,
                      {{files.chan, chan_text_now},
                       {files.usda, usd_camera_text(usd, job.camera.haperture_mm, job.camera.vaperture_mm, kUsdFps)},
                       {files.report, report.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"}});
    CameraSolveRun run;
    run.chan = files.chan, run.usda = files.usda, run.report = files.report;
    std::ostringstream s;
    s << "focal " << std::lround(path.focal_columns) << " px ("
      << metadata_number(std::round(report["focal"]["mm"].get<double>() * 100) / 100) << " mm, spread "
      << std::round(path.focal_spread * 1000) / 10 << "%" << (path.focal_pinned() ? "" : ", not pinned") << "), "
      << camera_motion_name(path.motion) << ", " << (path.scale_source.empty() ? std::string("model units") : "metres")
      << ", consistency " << metadata_number(std::round(worst_consistency(path) * 10000) / 100) << "%";
    run.summary = s.str();
    for (const std::string& w : solve_warnings(path)) log_warning("camera solve: ", w);
    log_info("camera solve: ", run.summary, "; wrote ", files.chan, ", ", files.usda, ", ", files.report);
    return run;
}

std::optional<std::string> solved_camera_for_render(JobContext& ctx, JobUse use) {
    const JobConfig& job = ctx.job;
    if (!job.camera_solve.enabled()) return std::nullopt;
    if (!camera_solve_in_force(job, ctx.contract().reference_focal_px > 0)) {
        if (!job.camera.chan.empty() || job.camera.has_focal())
            log_info("camera.solve: the job's own camera (", describe_camera(job.camera),
                     ") is used; the solved camera is not (a stated camera always wins)");
        else
            log_info(
                "camera.solve: nothing this render writes uses a camera (no output.passes, no focal-dependent "
                "model)");
        return std::nullopt;
    }
    const CameraSolveFiles files = camera_solve_files(job);
    const std::string why = why_stale(files, inputs_sha256(solve_inputs(job, ctx.shot)));
    if (!why.empty()) {
        if (use == JobUse::Validate) {
            // What the solve would stop on, found now: its model (an any-view model) and every plate of the shot.
            const auto c = DepthModel::embedded_contract(job.camera_solve.model);  // ModelError for no model
            if (!c || !c->any_view())
                throw ConfigError("camera.solve.model " + job.camera_solve.model +
                                  " is not an any-view model: its depthbatch.json has no views block");
            std::vector<int> missing;
            for (int f : ctx.shot)
                if (!fs::is_regular_file(ctx.input.path(f))) missing.push_back(f);
            if (!missing.empty())
                throw InputError("camera solve: plates " + format_frame_spec(missing) + " of the shot (" +
                                 format_frame_spec(ctx.shot) +
                                 ") are missing: the camera is solved over the whole shot");
            ctx.camera_solve_note = "due: " + why;
            log_info("camera.solve: the camera will be solved before the render (", why, ")");
            return std::nullopt;
        }
        log_info("camera.solve: solving the camera first (", why, ")");
        solve_now(job, files);
    }
    const auto report = read_report(files.report);
    if (!report) throw RenderError(files.report + ": the camera solve report cannot be read");
    const auto& focal = (*report)["focal"];
    std::ostringstream note;
    note << "estimated: solved from the plate by " << (*report)["model"].value("name", std::string()) << " (sha256 "
         << (*report)["model"].value("sha256", std::string()).substr(0, 12) << "): focal "
         << number(focal.value("columns", 0.0)) << " px"
         << (focal.value("pinned", false) ? "" : " (not pinned by parallax)") << ", motion "
         << report->value("motion", std::string()) << ", "
         << ((*report)["scale"].is_null() ? std::string("model units")
                                          : "metres from " + (*report)["scale"].value("source", std::string()))
         << "; " << files.chan;
    ctx.camera_solve_note = note.str();
    if ((*report)["scale"].is_null())
        log_warning("camera.solve: ", files.chan,
                    " is in the any-view model's units, not metres (no camera.solve.distance or metric model): "
                    "world-space P and metric depth will not line up");
    for (const auto& w : (*report)["warnings"]) log_warning("camera.solve: ", w.get<std::string>());
    const auto& c = (*report)["consistency"];
    if (c.is_array() && !c.empty()) ctx.camera_consistency = report->value("consistency_worst", 0.0);
    log_info("camera.solve: using ", files.chan, " (", ctx.camera_solve_note, ")");
    return files.chan;
}

}  // namespace detail

bool camera_solve_in_force(const JobConfig& job, bool focal_dependent) {
    return job.camera_solve.enabled() && job.camera.chan.empty() && !job.camera.has_focal() &&
           (focal_dependent || !job.output.passes.empty());
}

namespace detail {

std::optional<double> rendered_camera_consistency(const JobContext& ctx, const FirstFramePlan& first,
                                                  const std::vector<int>& written) {
    if (ctx.camera_solve_note.empty() || !ctx.chan || !ctx.normalizer || !ctx.normalizer->metres()) return std::nullopt;
    // Pairs of written frames k shot positions apart, up to 16 a k spread over the shot: k = 1, and k = 12 (or the
    // shot's length), where a scale that disagrees with the depth's metres shows (at k = 1 the baseline is short).
    const int far = std::min<int>(12, static_cast<int>(ctx.shot.size()) - 1);
    std::vector<std::pair<int, int>> pairs;
    for (int k : {1, far}) {
        if (k < 1 || (k == far && far == 1 && !pairs.empty())) continue;
        std::vector<std::pair<int, int>> of_k;
        for (size_t i = 0; i + static_cast<size_t>(k) < ctx.shot.size(); ++i)
            if (std::binary_search(written.begin(), written.end(), ctx.shot[i]) &&
                std::binary_search(written.begin(), written.end(), ctx.shot[i + static_cast<size_t>(k)]))
                of_k.emplace_back(ctx.shot[i], ctx.shot[i + static_cast<size_t>(k)]);
        constexpr size_t kPairs = 16;
        for (size_t i = 0; i < std::min(kPairs, of_k.size()); ++i)
            pairs.push_back(of_k[of_k.size() <= kPairs ? i : i * (of_k.size() - 1) / (kPairs - 1)]);
    }
    if (pairs.empty()) return std::nullopt;
    struct Frame {
        PlateCamera camera;
        int width = 0, height = 0;
        std::vector<float> depth;
    };
    const auto load = [&](int f) -> std::optional<Frame> {
        try {
            OIIO::ImageBuf buf(ctx.output.path(f));
            if (!buf.read(0, 0, true, OIIO::TypeDesc::FLOAT)) return std::nullopt;
            const OIIO::ImageSpec& s = buf.spec();
            const int z = s.channelindex("depth.Z");
            const auto sample = ctx.chan->find(f);
            if (z < 0 || sample == ctx.chan->end()) return std::nullopt;
            Frame out;
            out.camera = make_plate_camera(
                ctx.job.camera,
                PlateWindows{s.x, s.y, s.width, s.height, s.full_x, s.full_y, s.full_width, s.full_height},
                first.reformat.pixel_aspect, &sample->second);
            out.width = s.width, out.height = s.height;
            out.depth.resize(static_cast<size_t>(s.width) * s.height);
            buf.get_pixels(OIIO::ROI(s.x, s.x + s.width, s.y, s.y + s.height, 0, 1, z, z + 1), OIIO::TypeDesc::FLOAT,
                           out.depth.data());
            return out;
        } catch (const std::exception&) {
            return std::nullopt;
        }
    };
    std::map<int, std::vector<double>> errors_of;  // by frame distance
    std::map<int, std::optional<Frame>> loaded;    // each frame read once
    const auto get = [&](int f) -> const std::optional<Frame>& {
        auto it = loaded.find(f);
        if (it == loaded.end()) it = loaded.emplace(f, load(f)).first;
        return it->second;
    };
    for (const auto& [fa, fb] : pairs) {
        const std::optional<Frame>& a = get(fa);
        const std::optional<Frame>& b = get(fb);
        if (!a || !b) continue;
        std::vector<double>& errors =
            errors_of[static_cast<int>(std::lower_bound(ctx.shot.begin(), ctx.shot.end(), fb) -
                                       std::lower_bound(ctx.shot.begin(), ctx.shot.end(), fa))];
        const auto& ma = a->camera.camera_to_world;
        const auto& mb = b->camera.camera_to_world;
        const int step = std::max(1, std::max(a->width, a->height) / 64);
        for (int j = step / 2; j < a->height; j += step)
            for (int i = step / 2; i < a->width; i += step) {
                const double d = a->depth[static_cast<size_t>(j) * a->width + i];
                if (!(d > 0) || !std::isfinite(d)) continue;
                double r[3];
                a->camera.ray(i, j, r);
                const double c[3] = {r[0] * d, r[1] * d, r[2] * d};
                double w[3];
                for (int k = 0; k < 3; ++k)
                    w[k] = ma[k * 4] * c[0] + ma[k * 4 + 1] * c[1] + ma[k * 4 + 2] * c[2] + ma[k * 4 + 3];
                // Into frame b's camera: the transpose of its rotation, after its translation.
                double q[3];
                for (int k = 0; k < 3; ++k)
                    q[k] = mb[k] * (w[0] - mb[3]) + mb[4 + k] * (w[1] - mb[7]) + mb[8 + k] * (w[2] - mb[11]);
                const double zb = -q[2];
                if (!(zb > 0)) continue;
                const PlateCamera& cb = b->camera;
                const long ib = std::lround(cb.cx + cb.fx * q[0] / zb - 0.5 - cb.data_x);
                const long jb = std::lround(cb.cy - cb.fy * q[1] / zb - 0.5 - cb.data_y);
                if (ib < 0 || jb < 0 || ib >= b->width || jb >= b->height) continue;
                // Frame b's own point at that pixel (its depth, its camera) against frame a's: the same surface point
                // when camera and depth agree. Their distance, not only the depths': a scale error moving the camera
                // along a wall changes no depth but shifts the point.
                const double db = b->depth[static_cast<size_t>(jb) * b->width + ib];
                if (!(db > 0) || !std::isfinite(db)) continue;
                double rb[3];
                cb.ray(static_cast<double>(ib), static_cast<double>(jb), rb);
                double gap = 0;
                for (int k = 0; k < 3; ++k) {
                    const double pb = mb[k * 4] * rb[0] * db + mb[k * 4 + 1] * rb[1] * db + mb[k * 4 + 2] * rb[2] * db +
                                      mb[k * 4 + 3];
                    gap += (pb - w[k]) * (pb - w[k]);
                }
                errors.push_back(std::sqrt(gap) / d);
            }
    }
    std::optional<double> worst;
    std::string figures;
    for (auto& [k, errors] : errors_of) {
        if (errors.empty()) continue;
        std::nth_element(errors.begin(), errors.begin() + static_cast<long>(errors.size() / 2), errors.end());
        const double median = errors[errors.size() / 2];
        worst = std::max(worst.value_or(0.0), median);
        figures += (figures.empty() ? "" : ", ") + metadata_number(std::round(median * 10000) / 100) + "% at " +
                   std::to_string(k) + (k == 1 ? " frame" : " frames");
    }
    if (!worst) return std::nullopt;
    const double median = *worst;
    if (median > 0.02)  // the oracle's 1% depth noise gives about 1%; a distance 36% off on a dolly gives 2.6%
        log_warning("camera.solve: the depth this render wrote and the solved camera disagree (", figures,
                    ": the median distance between each pixel's P and the P of the frame that many frames on where it "
                    "projects, over its depth): world-space P will slide. "
                    "Is the scale right? (camera.solve.distance; leave it unset to take the render model's metres)");
    else
        log_info("camera.solve: the depth this render wrote agrees with the solved camera (", figures,
                 ": the median distance between each pixel's P and the P of the frame that many frames on where it "
                 "projects, over its depth)");
    return median;
}

}  // namespace detail

CameraSolveRun job_camera_solve(const JobConfig& job, bool recompute) {
    if (!job.camera_solve.enabled())
        throw ConfigError(job.job_file + ": camera.solve.model is not set (the any-view model that solves the camera)");
    const detail::CameraSolveFiles files = detail::camera_solve_files(job);
    if (!recompute) {
        const std::string why =
            detail::why_stale(files, detail::inputs_sha256(detail::solve_inputs(job, shot_frames(job.input))));
        if (why.empty()) {
            CameraSolveRun run;
            run.chan = files.chan, run.usda = files.usda, run.report = files.report;
            run.reused = true;
            run.summary = "up to date";
            log_info("camera solve: ", files.chan, " is up to date (its report's inputs match the job)");
            return run;
        }
        log_info("camera solve: ", why);
    }
    return detail::solve_now(job, files);
}

}  // namespace depthbatch
