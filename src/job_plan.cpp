// The job's plan (job_context.h): open the job, this run's frames and what exists of them, sequence statistics, the
// frames with their warm-up, the job's metadata; the phases every run goes through (open_run), and validate_job,
// which runs them and stops before the first frame. The plan from the first frame is first_frame_plan.cpp.
#include "job_context.h"
#include "sequence_stats_pvt.h"
#include "job_outputs.h"

#include "depthbatch/log.h"
#include "output/atomic_file.h"

#include "depthbatch/error.h"
#include "depthbatch/install_layout.h"
#include "depthbatch/job_keys.h"
#include "depthbatch/sha256.h"
#include "depthbatch/video_window_stage.h"
#include "depthbatch/exr_metadata.h"

#include <OpenImageIO/strutil.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <map>
#include <set>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace depthbatch {
namespace detail {

/// What --skip-existing compares (depthbatch/settings_sha256): the job's settings (output_settings_text) and the
/// contents of the files they name whose changes change the frames: a camera.chan track, and an OCIO config in force
/// (color.config, else $OCIO) whose contents differ from the shipped one (so a job on the shipped config keeps the
/// fingerprint it had before configs were counted). The shipped config's sha256 is the build's
/// (DEPTHBATCH_SHIPPED_OCIO_SHA256, CMakeLists.txt), not the file found beside the running program: a program that
/// embeds the library fingerprints as the CLI does. A file that cannot be read adds nothing: it fails later, named.
std::string settings_fingerprint(const JobConfig& job, Precision precision) {
    std::string text = output_settings_text(job, precision);
    auto readable = [](const std::string& p) {
        std::error_code ec;
        return !p.empty() && fs::is_regular_file(p, ec);
    };
    if (!job.camera.chan.empty() && readable(job.camera.chan))
        text += "camera.chan sha256 " + sha256_file(job.camera.chan) + "\n";
    const std::string config = ColorTransform::resolve_config_path(job.color.config);
    if (readable(config)) {
        if (const std::string sha = sha256_file(config); sha != DEPTHBATCH_SHIPPED_OCIO_SHA256)
            text += "OCIO config sha256 " + sha + "\n";
    }
    return sha256_text(text);
}

/// Frames, model, colour and a dry run: everything that can fail before a frame is read.
std::unique_ptr<const JobContext> open_job(const JobConfig& job, JobUse use) {
    // load_job makes a job file's paths absolute (against the job file's folder); a path a program sets in code must
    // be absolute too, else it would resolve against whatever folder the program runs in.
    for (const auto& [key, path] : {std::pair<const char*, const std::string&>{"input.path", job.input.path},
                                    std::pair<const char*, const std::string&>{"output.path", job.output.path}})
        if (!path.empty() && !fs::path(path).is_absolute())
            throw ConfigError(std::string(key) + ": '" + path +
                              "' is relative: load_job makes a job file's paths absolute, and a path set in code "
                              "(JobConfig) must be absolute too");
    auto ctx = std::make_unique<JobContext>(job);
    ctx->shot = shot_frames(job.input);
    if (job.input.frames.empty()) {
        if (ctx->shot.empty()) throw InputError("no frames on disk match input.path '" + job.input.path + "'");
        // A hole in a sequence taken from disk (a failed copy, a frame still on its way) is a missing plate, as
        // in a frame list the job gives (shot_frames: the sequence from the first frame found to the last): under
        // pipeline.on_error stop the render stops, under continue the rest render and the stabilizer's or video
        // model's windows across it are marked cut, for --skip-existing to repair once the plate arrives.
        std::vector<int> holes;
        for (int f : ctx->shot)
            if (!fs::is_regular_file(ctx->input.path(f))) holes.push_back(f);
        if (!holes.empty())
            log_warning("input.frames not set: the sequence on disk runs ", format_frame_spec(ctx->shot), " (",
                        ctx->shot.size(), " frames); frames ", format_frame_spec(holes),
                        " are missing from that sequence "
                        "and count as missing plates (set input.frames to render only the frames on disk)");
    }
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    ctx->workers = job.pipeline.threads > 0 ? job.pipeline.threads : static_cast<int>(cores);
    ctx->torch_threads = set_torch_threads(job.model.threads > 0 ? job.model.threads : ctx->workers);

    ctx->model = DepthModel::load(job.model);
    if (use == JobUse::CameraSolve && !ctx->contract().any_view())
        throw ConfigError("camera.solve.model " + ctx->model->path() + " (" + ctx->contract().name +
                          ") is not an any-view model: its depthbatch.json has no views block (a model that gives "
                          "each view's camera: tools/export.py depth-anything-3-views)");
    if (use != JobUse::CameraSolve && ctx->contract().any_view())
        throw ConfigError("model.path " + ctx->model->path() + " (" + ctx->contract().name +
                          ") is an any-view model: it solves a shot's camera (name it in camera.solve.model), it does "
                          "not render depth frames");
    check_model_license(ctx->contract(), ctx->model->path(), job.model.accept_license);
    if (is_non_commercial_license(contract_license(ctx->contract())))
        log_warning("model.accept_license ", job.model.accept_license, ": ", ctx->model->path(), " is licensed ",
                    contract_license(ctx->contract()),
                    ", accepted by this job: its frames are for non-commercial use only (their metadata says so)");
    ctx->loaded = Clock::now();
    ctx->settings_sha256 = settings_fingerprint(job, ctx->model->precision());
    const ModelContract& contract = ctx->contract();
    log_info("model ", ctx->model->path(), " (", contract.name, ", ", depth_kind_name(contract.kind),
             contract.units.empty() ? "" : " in " + contract.units, ", sha256 ", ctx->model->sha256().substr(0, 12),
             ")");
    log_info("device ", describe_device(ctx->model->device_name(), ctx->model->gpu()), " (",
             ctx->model->device_reason(), ")");
    // The training domain a contract states ("domain": "indoor" for FastDepth on NYU) against what the job says the
    // plate shows (input.scene). depthbatch cannot tell an exterior from the pixels: a shot said to be outdoor warns
    // once per job; a shot of unknown scene gets one info line, so the log says what the model knows (issue 26 §4).
    if (const auto d = contract.provenance.find("domain"); d != contract.provenance.end() && d->second == "indoor") {
        const std::string what =
            "model " + contract.name +
            " was trained on indoor scenes only (its contract's domain: "
            "indoor): on an exterior plate its depth is wrong" +
            (contract.kind == DepthKind::MetricDepth ? std::string(" (its metres stay within a "
                                                                   "room's range, e.g. 1-6 m, whatever the distance)")
                                                     : std::string()) +
            "; for other scenes see docs/models.md \"Use your own Depth Anything model\"";
        if (job.input.scene == Scene::Outdoor) log_warning("input.scene outdoor: ", what);
        else if (job.input.scene == Scene::Unknown)
            log_info(what, " (input.scene: indoor or outdoor says what the plate shows)");
    }
    ctx->normalizer.emplace(job.depth, contract.kind);
    ctx->guard = job_output_guard(job, ctx->shot, ctx->model->path());
    if (!job.output.preview.path.empty()) {
        ctx->preview.emplace(job.output.preview.path);  // a pattern without a frame token: ConfigError here
        try {
            ctx->colormap = load_colormap(option_name(job.output.preview.colormap));
        } catch (const Error& e) {  // previews are a convenience: the depth pass renders without them
            log_warning("output.preview: no previews: ", e.what());
            ctx->preview.reset();
        }
    }
    if (contract.multi_frame())
        check_video_model_job(contract, ctx->model->path(),
                              {job.model.tiles.size > 0, job.depth.normalize == Normalization::Sequence,
                               job.output.passes, job.model.batch});
    // The camera solved from the plate, when this render uses it: solved (or said to be due) only after every check
    // below has passed, so that a job with a bad key stops before the solve reads the shot.
    const bool solving = use != JobUse::CameraSolve && camera_solve_in_force(job, contract.reference_focal_px > 0);
    if (!solving && use != JobUse::CameraSolve && job.camera_solve.enabled())
        solved_camera_for_render(*ctx, use);  // says why the solve is not used
    if (!solving && !job.camera.chan.empty()) {
        ctx->chan = read_chan_file(job.camera.chan);
        // The track's contents are settings (settings_fingerprint): a re-delivered .chan renders again under
        // --skip-existing.
        // Where the camera is used, every frame of the shot needs its line: found here, not mid-render.
        if (contract.reference_focal_px > 0 || !job.output.passes.empty()) {  // the camera is used
            std::vector<int> missing;
            for (int f : ctx->shot)
                if (!ctx->chan->count(f)) missing.push_back(f);
            if (!missing.empty())
                throw ConfigError("camera.chan " + job.camera.chan + " has no line for frame" +
                                  (missing.size() > 1 ? "s " : " ") + format_frame_spec(missing) + " of the shot (" +
                                  format_frame_spec(ctx->shot) +
                                  "): the track must cover every frame rendered (or narrow input.frames)");
        }
    }
    const bool chan_fov = ctx->chan && std::all_of(ctx->chan->begin(), ctx->chan->end(),
                                                   [](const auto& kv) { return kv.second.vfov_deg.has_value(); });
    const bool has_focal = job.camera.has_focal() || chan_fov || solving;
    if (contract.reference_focal_px > 0 && !has_focal)
        throw ConfigError("camera.focal_px (older name depth.focal_px): " + ctx->model->path() +
                          " outputs metric depth for a " +
                          std::to_string(static_cast<int>(contract.reference_focal_px)) +
                          " px focal length; set the shot's camera: camera.focal (mm, with camera.haperture), "
                          "camera.fov (horizontal degrees) or camera.focal_px (plate pixels: focal_mm / haperture_mm x "
                          "plate width)");
    ctx->passes = PassPlan(job.output.passes, contract, ctx->model->path(), *ctx->normalizer, has_focal);
    if (solving)
        if (const std::optional<std::string> solved = solved_camera_for_render(*ctx, use)) {
            ctx->chan = read_chan_file(*solved);
            // The solved camera's contents change the frames as a .chan's do (settings_fingerprint): a new solve (a
            // re-delivered plate, other solve settings) renders the frames that use it again under --skip-existing.
            ctx->settings_sha256 =
                sha256_text(ctx->settings_sha256 + "\ncamera.solve chan sha256 " + sha256_file(*solved));
        }
    return ctx;
}

// ---- sequence statistics ------------------------------------------------------------------------

std::string processing_key(const JobContext& ctx, const FirstFramePlan& first) {
    std::ostringstream s;
    s << first.reformat.input_width << "x" << first.reformat.input_height << " " << first.color->from() << "->"
      << first.color->to() << " " << option_name(ctx.job.model.precision);
    // Every key the job table marks as feeding the statistics (job_keys.h: part, view, layer, colour, size...),
    // as a digest: a sidecar made from another layer or colour rule is not reused.
    s << "; settings " << sha256_text(stats_settings_text(ctx.job)).substr(0, 16);
    return s.str();
}

/// The statistics `ctx` wants (identity only: no values) and its sidecar's path; shared by the render and validate.
static std::pair<SequenceStats, std::string> wanted_sequence_stats(const JobContext& ctx, const FirstFramePlan& first) {
    const JobConfig& job = ctx.job;
    SequenceStats want;
    want.model_sha256 = ctx.model->sha256();
    want.input_pattern = job.input.path;
    want.shot_frames = format_frame_spec(ctx.shot);
    want.processing = processing_key(ctx, first);
    want.percentile_low = job.depth.percentile_low;
    want.percentile_high = job.depth.percentile_high;
    // Under on_error: continue a missing plate fails its frame, not the job: sample the frames whose plates exist
    // (and say which were left out). Under stop the sample is the shot's, and a missing one stops the job.
    std::vector<int> sampled_from = ctx.shot;
    if (job.pipeline.on_error == OnError::Continue) {
        std::vector<int> present, absent;
        for (int f : ctx.shot) (fs::is_regular_file(ctx.input.path(f)) ? present : absent).push_back(f);
        if (!absent.empty() && !present.empty()) {
            log_warning("sequence statistics: plates ", format_frame_spec(absent), " are missing; sampling the ",
                        present.size(), " frames that exist (pipeline.on_error: continue)");
            sampled_from = present;
        }
    }
    want.sample_frames = sample_frames(sampled_from, job.depth.stats_frames);
    for (int f : want.sample_frames) want.sample_plates.push_back(plate_identity(ctx.input.path(f)));
    return {want, job_output_path(job, OutputRole::StatsSidecar)};
}

/// recompute_stats_advice for this run: the command names the sidecar when the job file alone names another one
/// (the run's --output or --set moved it), so that `depthbatch stats` recomputes the sidecar this run reads.
static std::string stats_advice(const JobConfig& job) {
    const std::string path = job_output_path(job, OutputRole::StatsSidecar);
    std::string plain;
    try {
        plain =
            job.job_file.empty() ? std::string() : job_output_path(load_job(job.job_file), OutputRole::StatsSidecar);
    } catch (const Error&) {  // the file changed since: name the sidecar, which is right either way
    }
    return recompute_stats_advice(job.job_file, plain == path ? std::string() : path);
}

SequenceStats sequence_stats(const JobContext& ctx, const FirstFramePlan& first, bool recompute) {
    const JobConfig& job = ctx.job;
    auto [want, path] = wanted_sequence_stats(ctx, first);
    log_debug("sequence statistics sidecar ", path, " (", ctx.shot.size(), " frames in the shot)");
    // The raw model output of one sampled frame: read, colour, reformat and infer, as the pipeline does.
    const auto frame_values = [&ctx, &first](int frame) {
        FrameRecord w(0, frame, 0);
        w.write = false;
        w.result.input_path = ctx.input.path(frame);
        prepare(ctx, first, w);
        std::vector<FrameRecord*> one{&w};
        if (!w.failed()) infer(ctx, one);
        if (w.failed()) throw Error(w.result.status, "sequence statistics: " + w.result.message);
        return std::move(w.depth.data);
    };
    return reuse_or_compute_sequence_stats(ctx.guard, path, want, job.output.overwrite == OverwritePolicy::Overwrite,
                                           recompute, stats_advice(job), frame_values);
}

// ---- the phases of run_job, in order --------------------------------------------------------------

/// What --skip-existing compares a frame's recorded inputs with, each read once however many frames name it: the
/// plates' identities now, the sequence statistics sidecar in force.
struct InputsNow {
    const JobContext& ctx;
    std::map<int, std::string> identities;
    std::optional<std::optional<std::string>> stats;  ///< the sidecar's identity (nullopt inside: no sidecar)
    std::string plate(int frame) {
        auto it = identities.find(frame);
        if (it == identities.end()) it = identities.emplace(frame, plate_identity(ctx.input.path(frame))).first;
        return it->second;
    }
    const std::optional<std::string>& stats_identity() {
        if (!stats) {
            const auto have = read_sequence_stats(job_output_path(ctx.job, OutputRole::StatsSidecar));
            stats = have ? std::optional<std::string>(have->identity()) : std::nullopt;
        }
        return *stats;
    }
};

/// Beyond settings and model, the inputs the frame records changed since it was made: its plate was re-delivered
/// (size or modification time differ from depthbatch/plate_identity); its stabilizer window was cut by frames that
/// failed or were missing and whose plates exist now (depthbatch/temporal_context); a plate its stabilizer or video
/// windows read changed (depthbatch/context_plates); the sequence statistics sidecar in force is another than the
/// one it was normalized with (depthbatch/stats_sha256). "" when none did.
std::string why_inputs_changed(InputsNow& now, const std::string& out, int frame) {
    const std::string was = exr_text_attribute(out, exr_meta::kPlateIdentity);
    if (!was.empty()) {  // outputs of depthbatch 0.2 recorded none: nothing to compare
        const std::string is = now.plate(frame);
        if (is != was) return "made from a plate that has changed since (" + was + "; now " + is + ")";
    }
    const std::string cut = exr_text_attribute(out, exr_meta::kTemporalContext);
    if (cut.rfind("cut: ", 0) == 0) {
        std::vector<int> lacked;
        try {
            lacked = parse_frame_spec(cut.substr(5));
        } catch (const ConfigError&) {
            return "stabilized with a cut window (" + cut + ")";
        }
        std::vector<int> back;
        for (int f : lacked)
            if (!now.plate(f).empty()) back.push_back(f);
        if (!back.empty())
            return std::string(now.ctx.job.depth.stabilize ? "stabilized" : "made by video windows") +
                   " without frames " + format_frame_spec(back) + ", whose plates exist now";
    }
    if (const std::string context = exr_text_attribute(out, exr_meta::kContextPlates); !context.empty()) {
        // The frames its context is in the shot as it is now (the shot may have grown since: a plate delivered
        // after the last one, input.frames widened).
        const std::vector<int>& shot = now.ctx.shot;
        const auto at = std::lower_bound(shot.begin(), shot.end(), frame);
        std::vector<int> frames_now;
        if (at != shot.end() && *at == frame)
            for (int p : context_positions(temporal_reach(now.ctx), static_cast<int>(shot.size()),
                                           static_cast<int>(at - shot.begin())))
                frames_now.push_back(shot[static_cast<size_t>(p)]);
        if (std::string why = context_plates_changed(context, frames_now, [&now](int f) { return now.plate(f); });
            !why.empty())
            return why;
    }
    if (const std::string stats = exr_text_attribute(out, exr_meta::kStatsSha256); !stats.empty()) {
        const std::string path = job_output_path(now.ctx.job, OutputRole::StatsSidecar);
        const std::optional<std::string>& in_force = now.stats_identity();
        if (!in_force)
            return "normalized with sequence statistics whose sidecar " + path +
                   " is gone (this run computes it again)";
        if (*in_force != stats)
            return "normalized with other sequence statistics than " + path + " holds now (recomputed since)";
    }
    return "";
}

FrameSelection select_frames(const JobContext& ctx, const std::vector<int>& frames) {
    const JobConfig& job = ctx.job;
    std::vector<std::string> missing, existing, foreign, others;
    FrameSelection sel;
    InputsNow now{ctx, {}, {}};
    const auto identity_now = [&now](int frame) { return now.plate(frame); };
    // A statistics sidecar whose sample plates were re-delivered since is stale: every frame normalized with it
    // would be kept, so it is refused here, before anything is kept or rendered, with the command that fixes it.
    if (job.depth.normalize == Normalization::Sequence && job.output.overwrite == OverwritePolicy::Skip) {
        const std::string path = job_output_path(job, OutputRole::StatsSidecar);
        if (const auto have = read_sequence_stats(path))
            if (const std::vector<int> changed = changed_sample_plates(*have, identity_now); !changed.empty())
                throw OutputExistsError(path + ": the plates of sample frames " + format_frame_spec(changed) +
                                        " have changed since these sequence statistics were taken; " +
                                        stats_advice(job));
    }
    for (int f : frames) {
        const std::string in = ctx.input.path(f), out = ctx.output.path(f);
        if (!fs::is_regular_file(in)) {
            missing.push_back("frame " + std::to_string(f) + ": " + in);
            FrameResult r;
            r.frame = f, r.status = ExitCode::Input, r.input_path = in, r.output_path = out;
            r.message = "frame " + std::to_string(f) + ": plate missing: " + in;
            sel.missing.push_back(r);
            continue;
        }
        std::error_code same_ec;
        if (fs::exists(out) && fs::equivalent(in, out, same_ec))
            throw ConfigError("output.path: frame " + std::to_string(f) + "'s output " + out +
                              " is the plate itself (through a link or another name); refusing to overwrite the plate");
        if (fs::exists(out)) {
            if (job.output.overwrite == OverwritePolicy::Error) existing.push_back(out);
            // A file that is no depth frame is never replaced, whatever the policy: not an OpenEXR file at all,
            // or (to be re-rendered under skip) an EXR that depthbatch did not write.
            if (job.output.overwrite != OverwritePolicy::Error && !kind_marker_holds(out, OutputRole::DepthFrame)) {
                foreign.push_back(out + " (not an OpenEXR file)");
                continue;
            }
            // --overwrite replaces depth frames, never an EXR someone else made (a plate, a comp render) that sits
            // where a frame goes: its readable header has no depthbatch metadata. An empty file holds nothing.
            std::error_code size_ec;
            if (job.output.overwrite == OverwritePolicy::Overwrite && fs::file_size(out, size_ec) > 0 && !size_ec &&
                why_output_is_stale(out, ctx.settings_sha256, ctx.model->sha256())
                        .rfind("not written by depthbatch", 0) == 0) {
                foreign.push_back(out + " (an OpenEXR file depthbatch did not write)");
                continue;
            }
            if (job.output.overwrite == OverwritePolicy::Skip) {
                std::string why = why_output_is_stale(out, ctx.settings_sha256, ctx.model->sha256());
                if (why.rfind("not written by depthbatch", 0) == 0) {
                    foreign.push_back(out + " (an OpenEXR file depthbatch did not write)");
                    continue;
                }
                // A frame made from other plates (another shot's job writing to this folder) is not stale: it is
                // someone else's, refused unless --overwrite.
                if (const std::string source = exr_text_attribute(out, exr_meta::kSource); !source.empty()) {
                    std::error_code ec;
                    const bool same = fs::exists(source, ec)
                                          ? fs::equivalent(source, in, ec)
                                          : fs::path(source).lexically_normal() == fs::path(in).lexically_normal();
                    if (!same) {
                        others.push_back("frame " + std::to_string(f) + ": " + out + " was made from " + source +
                                         ", this job's plate is " + in);
                        continue;
                    }
                }
                if (why.empty()) why = why_inputs_changed(now, out, f);
                if (why.empty()) {
                    sel.skipped.push_back({f, out, "complete, same settings and model"});
                    continue;
                }
                log_info("frame ", f, ": rendering again, the existing ", out, " is ", why);
                sel.rerender[f] = why;
            }
        }
        sel.todo.push_back(f);
    }
    if (!missing.empty() && (job.pipeline.on_error == OnError::Stop || sel.todo.empty()))
        throw InputError(std::to_string(missing.size()) + " of " + std::to_string(frames.size()) +
                         " plate frames are missing:" + list_some(missing));
    if (!missing.empty())
        log_error(missing.size(), " of ", frames.size(),
                  " plate frames are missing (pipeline.on_error: continue "
                  "renders the rest):",
                  list_some(missing));
    if (!foreign.empty())
        throw OutputExistsError(std::to_string(foreign.size()) +
                                " file(s) at output.path are not depthbatch depth "
                                "frames and are never replaced (move them away or choose another output.path):" +
                                list_some(foreign));
    if (!others.empty())
        throw OutputExistsError(std::to_string(others.size()) +
                                " output frame(s) were made from other plates "
                                "(depthbatch/source: another shot's job writing to this output.path); --skip-existing "
                                "never replaces them (choose another output.path, or pass --overwrite):" +
                                list_some(others));
    if (!existing.empty())
        throw OutputExistsError(std::to_string(existing.size()) +
                                " output frames already exist (set "
                                "output.overwrite to skip or overwrite, or pass --skip-existing / --overwrite):" +
                                list_some(existing));
    return sel;
}

/// The output folders can be written before any frame is read (not after the first frames ran); hidden
/// temporaries that killed earlier runs on this host left there are removed. Nothing is created yet: the
/// nearest existing folder must let us create the rest. Throws RenderError.
void sweep_stale_temporaries(const JobContext& ctx, const std::vector<int>& frames) {
    std::map<std::string, std::set<std::string>> owned;  // folder -> the file names of this job's frames there
    for (int f : ctx.shot) {
        const fs::path p(ctx.output.path(f));
        owned[p.parent_path().string()].insert(p.filename().string());
    }
    for (int f : frames) {
        const fs::path p(ctx.output.path(f));
        owned[p.parent_path().string()].insert(p.filename().string());
    }
    for (const auto& [dir, names] : owned) {
        std::error_code ec;
        if (!fs::is_directory(dir.empty() ? "." : dir, ec)) continue;
        if (const int n = detail::remove_stale_temporaries(dir, &names); n > 0)
            log_info("removed ", n, " temporary file(s) of this job's frames left in ", dir.empty() ? "." : dir,
                     " by an interrupted earlier run");
    }
}

void check_output_folders(const JobContext& ctx, const std::vector<int>& todo, bool sweep) {
    const fs::path first_dir = fs::path(ctx.output.path(todo.front())).parent_path();
    if (sweep) sweep_stale_temporaries(ctx, todo);
    for (int f : todo) {
        const fs::path dir = fs::path(ctx.output.path(f)).parent_path();
        fs::path existing = dir.empty() ? fs::path(".") : dir;
        std::error_code ec;
        while (!fs::exists(existing, ec) && existing.has_parent_path() && existing != existing.parent_path())
            existing = existing.parent_path();
        if (!fs::is_directory(existing, ec))
            throw RenderError("output folder " + dir.string() + ": " + existing.string() + " is not a folder");
        // A file really made and removed, as the render will make its temporaries: access(W_OK) says yes to root
        // where the file system still refuses (sysfs, a root-squashed share). What the OS says, once.
        std::string probe = (existing / ".depthbatch-write-check.XXXXXX").string();
        const int fd = ::mkstemp(probe.data());
        if (fd < 0)
            throw RenderError("output folder " + dir.string() + ": cannot write in " + existing.string() + " (" +
                              std::strerror(errno) + ")");
        ::close(fd);
        ::unlink(probe.c_str());
        if (f != todo.front() && dir == first_dir) break;  // one pattern: one folder, checked once
    }
}

/// depth.stabilize_radius R: R frames on each side, a centred window of 2R + 1 frames.
int stabilize_radius(const JobConfig& job) { return job.depth.stabilize_radius; }

TemporalReach temporal_reach(const JobContext& ctx) {
    TemporalReach reach;
    if (ctx.contract().multi_frame()) reach.video = &ctx.contract().temporal;
    if (ctx.job.depth.stabilize) reach.stabilize_radius = stabilize_radius(ctx.job);
    return reach;
}

std::string rerender_reason(const FrameSelection& sel, int frame) {
    const auto it = sel.rerender.find(frame);
    return it == sel.rerender.end() ? std::string() : it->second;
}
std::vector<PlannedFrame> plan_frames(const JobContext& ctx, const FrameSelection& sel, StageChain& chain) {
    const std::vector<int>& todo = sel.todo;
    const int context = chain.context_frames();
    const bool from_start = chain.needs_segment_start();
    std::vector<PlannedFrame> plan;
    if (context <= 0 && !from_start) {
        for (int f : todo) plan.push_back({f, true, rerender_reason(sel, f)});
        return plan;
    }
    const char* why = ctx.contract().multi_frame() ? "the video model's windows" : "depth.stabilize";
    for (int f : todo)
        if (!std::binary_search(ctx.shot.begin(), ctx.shot.end(), f))
            throw ConfigError(std::string(why) + ": frame " + std::to_string(f) + " is not in input.frames (" +
                              format_frame_spec(ctx.shot) + "); they follow the shot's frame order");
    // Warm-up after the last frame (`context`), and before the first: `context` for the centred stabilizer, the shot
    // from its first frame for a video model (its windows align to the shot's first frame: frame i depends on 0..i).
    const auto first = std::lower_bound(ctx.shot.begin(), ctx.shot.end(), todo.front());
    const auto last = std::lower_bound(ctx.shot.begin(), ctx.shot.end(), todo.back());
    // A stage that plans a bounded context itself (a video model's windows for a chunk: video_window_stage.h).
    if (const auto positions =
            chain.plan_partial(static_cast<int>(ctx.shot.size()), static_cast<int>(first - ctx.shot.begin()),
                               static_cast<int>(last - ctx.shot.begin()))) {
        for (int p : *positions) {
            const int f = ctx.shot[static_cast<size_t>(p)];
            plan.push_back({f, std::binary_search(todo.begin(), todo.end(), f), rerender_reason(sel, f)});
        }
        log_info("video model: the windows of frames ", todo.front(), "-", todo.back(), " and their context (",
                 ctx.contract().temporal.align == TemporalWindowing::Align::ScaleShift
                     ? "window 0, which holds the shot's first frame, and " + std::to_string(kRelativeContextWindows) +
                           " windows before, for the scale/shift chain"
                     : std::string("the windows' own inputs"),
                 ctx.job.depth.stabilize
                     ? ", and " + std::to_string(stabilize_radius(ctx.job)) + " frames each side for depth.stabilize"
                     : std::string(),
                 ")");
        log_info(plan.size() - todo.size(), " warm-up frames (inferred, not written)");
        return plan;
    }
    const auto start =
        from_start ? ctx.shot.begin() : first - std::min<std::ptrdiff_t>(context, first - ctx.shot.begin());
    const auto end = last + std::min<std::ptrdiff_t>(context, ctx.shot.end() - 1 - last);
    for (auto it = start; it <= end; ++it)
        plan.push_back({*it, std::binary_search(todo.begin(), todo.end(), *it), rerender_reason(sel, *it)});
    if (ctx.job.depth.stabilize)
        log_info("temporal stabilization: centred window of ", 2 * stabilize_radius(ctx.job) + 1, " frames (",
                 stabilize_radius(ctx.job), " on each side)");
    if (from_start)
        log_info("video model: frames from the shot's first (", *ctx.shot.begin(), ") to ", context,
                 " after the last written");
    log_info(plan.size() - todo.size(), " warm-up frames (inferred, not written)");
    return plan;
}

std::vector<int> check_context_plates(const JobContext& ctx, const std::vector<PlannedFrame>& plan,
                                      const std::vector<int>& own, std::vector<std::string>* messages) {
    std::vector<int> written, missing;
    for (const PlannedFrame& p : plan) {
        if (p.write) written.push_back(p.frame);
        else if (!fs::is_regular_file(ctx.input.path(p.frame)) &&
                 std::find(own.begin(), own.end(), p.frame) == own.end())
            missing.push_back(p.frame);
    }
    if (missing.empty() || written.empty()) return missing;
    const std::string what = ctx.contract().multi_frame() ? "the video windows" : "depth.stabilize's window";
    std::vector<std::string> lines;
    for (int f : missing)
        lines.push_back("frame " + std::to_string(f) + ": plate missing: " + ctx.input.path(f) +
                        " (not a frame of this run: " + what + " of frames " + format_frame_spec(written) +
                        " read it as context)");
    if (ctx.job.pipeline.on_error == OnError::Stop)
        throw InputError(
            std::to_string(missing.size()) + " plate(s) this run reads as context are missing (" + what +
            "; the frames they cut would differ from a whole render):" + list_some(lines) +
            "\n  deliver them, or set pipeline.on_error: continue to render the frames anyway (those whose "
            "windows read them are marked depthbatch/temporal_context, or not written, and the run exits 7)");
    if (messages) *messages = lines;
    return missing;
}

void check_chunk_sizes(const JobContext& ctx, const std::vector<PlannedFrame>& plan) {
    const bool part =
        std::any_of(plan.begin(), plan.end(), [](const PlannedFrame& p) { return !p.write; }) ||
        (!plan.empty() && (plan.front().frame != ctx.shot.front() || plan.back().frame != ctx.shot.back()));
    if (!ctx.contract().multi_frame() || !part) return;
    const JobConfig& job = ctx.job;
    int first = 0, first_w = 0, first_h = 0;
    std::vector<int> written;
    for (const PlannedFrame& p : plan)
        if (p.write) written.push_back(p.frame);
    for (const PlannedFrame& p : plan) {
        const std::string path = ctx.input.path(p.frame);
        if (!fs::is_regular_file(path)) continue;
        const PlateInfo info = probe_plate(path, p.frame, job.input);
        const ReformatPlan rp = ReformatPlan::make(info.width(), info.height(), job.model.size, ctx.contract(),
                                                   pixel_aspect(job, info.file_spec));
        if (first_w == 0) {
            first = p.frame, first_w = rp.input_width, first_h = rp.input_height;
            continue;
        }
        if (rp.input_width == first_w && rp.input_height == first_h) continue;
        const auto size = [](int w, int h) { return std::to_string(w) + "x" + std::to_string(h); };
        throw RenderError("frames " + format_frame_spec(written) +
                          ": the model input size changes inside the video windows that make them (frame " +
                          std::to_string(first) + ": " + size(first_w, first_h) + ", frame " + std::to_string(p.frame) +
                          ": " + size(rp.input_width, rp.input_height) +
                          "; the plate's data window changes size): a run of part of a video shot (--chunk, --frames, "
                          "--skip-existing) runs only its windows, planned at one size; render this shot whole: "
                          "without --chunk or --frames, and with --overwrite rather than --skip-existing (a whole "
                          "render starts the windows afresh at the size change)");
    }
}

SequenceRange sequence_range(const JobContext& ctx, const FirstFramePlan& first) {
    SequenceRange r;
    if (!ctx.normalizer->needs_sequence_range()) return r;
    r.stats = sequence_stats(ctx, first);
    r.range = ctx.normalizer->range_from_percentiles(r.stats.low, r.stats.high);
    return r;
}

/// What every EXR of the job carries in its metadata (per-frame entries are added by finish()).
Metadata job_metadata(const JobContext& ctx, const FirstFramePlan& first, const SequenceRange& seq, Metadata stages) {
    const JobConfig& job = ctx.job;
    Metadata meta = {
        {exr_meta::kVersion, DEPTHBATCH_VERSION},
        {exr_meta::kModel, ctx.contract().name},
        {exr_meta::kModelSha256, ctx.model->sha256()},
        {exr_meta::kSettingsSha256, ctx.settings_sha256},
        {exr_meta::kModelOutputKind, depth_kind_name(ctx.contract().kind)},
        {exr_meta::kDevice, ctx.model->device_name()},
        {exr_meta::kColorspaceIn, first.color->from()},
        {exr_meta::kColorspaceModel, first.color->to()},
    };
    // The model's provenance from its contract: licence, checkpoint and its sha256, training domain (README).
    for (const char* key : {"license", "source", "source_sha256", "variant", "domain"})
        if (const auto it = ctx.contract().provenance.find(key);
            it != ctx.contract().provenance.end() && !it->second.empty())
            meta.push_back({std::string(exr_meta::kModelPrefix) + key, it->second});
    // What the written R, G, B are in (passthrough_color.h), ours and OIIO's name for it (oiio:ColorSpace, read by
    // OIIO-based tools; written through OpenEXR, write_depth_exr).
    if (job.output.channels != OutputChannels::Depth) {
        meta.push_back({exr_meta::kColorspaceRgb, first.passthrough->written()});
        meta.push_back({exr_meta::kOiioColorSpace, first.passthrough->written()});
    }
    if (seq.range) {
        meta.push_back({exr_meta::kStatsSampleFrames, format_frame_spec(seq.stats.sample_frames)});
        meta.push_back({exr_meta::kStatsSha256, seq.stats.identity()});
        meta.push_back({exr_meta::kStatsPercentiles,
                        std::to_string(seq.stats.percentile_low) + "," + std::to_string(seq.stats.percentile_high)});
    }
    // The precision the depth was computed at, where it is not plain fp32 (a CUDA job asking tf32/fp16/bf16; fp16 or
    // bf16 that gave way to fp32 on the first frame says so).
    if (ctx.model->precision() != Precision::Fp32 || first.precision_check) {
        std::string p = option_name(ctx.model->precision());
        if (ctx.model->precision() != job.model.precision)
            p += std::string(" (") + option_name(job.model.precision) +
                 " asked: beyond the tolerance on the first frame)";
        meta.push_back({exr_meta::kPrecision, p});
    }
    if (is_non_commercial_license(contract_license(ctx.contract())))
        meta.push_back({exr_meta::kLicenseAccepted, job.model.accept_license});
    if (job.depth.stabilize) meta.push_back({exr_meta::kStabilizeWindow, std::to_string(job.depth.stabilize_window())});
    for (auto& kv : stages) meta.push_back(std::move(kv));
    if (const std::string camera = describe_camera(job.camera); !camera.empty())
        meta.push_back({exr_meta::kCamera, camera});
    if (!ctx.camera_solve_note.empty()) meta.push_back({exr_meta::kCameraSolve, ctx.camera_solve_note});
    if (ctx.camera_consistency)
        meta.push_back({exr_meta::kCameraConsistency, metadata_number(*ctx.camera_consistency)});
    return meta;
}

/// One frame's log line and its place in the report (called once per finished frame, under a lock).

}  // namespace detail

using namespace detail;

detail::OpenedRun detail::open_run(const JobConfig& job, const std::function<void(const std::string&)>& phase,
                                   bool render) {
    OpenedRun run;
    phase("loading model");
    run.ctx = open_job(job, render ? JobUse::Render : JobUse::Validate);
    run.requested = select_render_frames(job.render, run.ctx->shot);
    run.ctx->guard.preflight(run.requested);
    if (run.requested.empty()) return run;
    phase("checking outputs");
    run.selected = select_frames(*run.ctx, run.requested);
    run.stage = OpenedRun::Stage::NothingToDo;
    if (run.selected.todo.empty()) return run;
    if (render && !run.selected.skipped.empty())
        log_info("skipping ", run.selected.skipped.size(),
                 " frames whose output exists (complete, same settings and model)");
    check_output_folders(*run.ctx, run.selected.todo, render);
    run.first = plan_from_first_frame(*run.ctx, run.selected.todo.front());
    run.stage = OpenedRun::Stage::Planned;
    return run;
}

SequenceStats job_sequence_stats(const JobConfig& job, bool recompute) {
    const auto ctx = open_job(job);
    const FirstFramePlan first = plan_from_first_frame(*ctx, ctx->shot.front());
    return sequence_stats(*ctx, first, recompute);
}

ValidationResult validate_job(const JobConfig& job, bool deep) {
    ValidationResult v;
    const auto line = [&v](const std::string& key, const std::string& value) {
        v.plan.push_back(key + std::string(key.size() < 11 ? 11 - key.size() : 1, ' ') + value);
    };
    OpenedRun run = open_run(
        job, [](const std::string&) {}, false);
    const std::unique_ptr<const JobContext>& ctx = run.ctx;
    const ModelContract& c = ctx->contract();
    line("job", job.job_file.empty() ? "(built in code)" : job.job_file);
    line("model", ctx->model->path() + " (" + c.name + ", " + depth_kind_name(c.kind) + ", sha256 " +
                      ctx->model->sha256().substr(0, 12) + ")");
    line("device",
         describe_device(ctx->model->device_name(), ctx->model->gpu()) + " (" + ctx->model->device_reason() + ")");
    line("shot", std::to_string(ctx->shot.size()) + " frames (" + format_frame_spec(ctx->shot) + ")");
    if (!ctx->camera_solve_note.empty()) line("camera", ctx->camera_solve_note);
    if (run.stage == OpenedRun::Stage::Empty) {
        line("frames", "none: this run's share of the job is empty (nothing to do)");
        return v;
    }
    const FrameSelection& sel = run.selected;
    for (const FrameResult& r : sel.missing) v.warnings.push_back(r.message);
    if (!sel.missing.empty()) v.exit_code = ExitCode::Partial;
    line(
        "frames",
        std::to_string(sel.todo.size()) + " to render (" + (sel.todo.empty() ? "none" : format_frame_spec(sel.todo)) +
            ")" +
            (sel.skipped.empty() ? "" : ", " + std::to_string(sel.skipped.size()) + " kept (complete, same settings)") +
            (sel.rerender.empty() ? "" : ", " + std::to_string(sel.rerender.size()) + " to render again"));
    if (run.stage == OpenedRun::Stage::NothingToDo) return v;
    const FirstFramePlan& first = *run.first;
    // Every plate of the run: there, its header readable, of the kind the first frame decided.
    std::vector<int> plates = sel.todo;
    if (job.depth.stabilize || c.multi_frame()) {
        plates.clear();
        StageChain chain = make_stage_chain(*ctx);
        const std::vector<PlannedFrame> plan = plan_frames(*ctx, sel, chain);
        for (const PlannedFrame& p : plan) plates.push_back(p.frame);
        // Context plates (a chunk's warm-up), as the render checks them: exit 3 under stop, Partial under continue.
        std::vector<std::string> context_lines;
        if (!check_context_plates(*ctx, plan, run.requested, &context_lines).empty()) v.exit_code = ExitCode::Partial;
        check_chunk_sizes(*ctx, plan);
        for (const std::string& l : context_lines) v.warnings.push_back(l);
    }
    for (int f : plates) {
        const std::string path = ctx->input.path(f);
        if (!fs::is_regular_file(path)) continue;  // missing plates: reported by select_frames above
        try {
            if (deep)
                check_auto_kind(*ctx, first, read_plate(path, f, job.input));  // every pixel decoded, as the render
            else check_auto_kind(*ctx, first, probe_plate(path, f, job.input));
        } catch (const InputError& e) {
            // As the render: under on_error: stop the frame stops it (exit 3), under continue it fails alone (7).
            if (job.pipeline.on_error == OnError::Stop) throw;
            v.warnings.push_back(e.what());
            v.exit_code = ExitCode::Partial;
        }
    }
    line("plates", std::to_string(plates.size()) + (deep ? " decoded in full: " : " checked: ") + first.kind.text());
    // One forward at the processing size (the dry run above used a small one).
    const ReformatPlan& fp = first.reformat;
    ModelInput probe;
    probe.width = fp.input_width, probe.height = fp.input_height;
    probe.chw.assign(static_cast<size_t>(3) * probe.width * probe.height, 0.5f);
    const auto t0 = Clock::now();
    try {
        ctx->model->infer({&probe});
    } catch (const RenderError& e) {
        throw ModelError(e.what());
    }
    line("forward", "one pass at the processing size " + std::to_string(fp.input_width) + "x" +
                        std::to_string(fp.input_height) + ": " + std::to_string(std::lround(ms_since(t0))) + " ms");
    line("reformat", std::to_string(fp.plate_width) + "x" + std::to_string(fp.plate_height) + " -> model input " +
                         std::to_string(fp.input_width) + "x" + std::to_string(fp.input_height) +
                         ", depth back at plate size (" + option_name(job.depth.upsample.method) + ")");
    line("depth", std::string("depth.Z ") + option_name(job.depth.convention) + ", normalize " +
                      option_name(job.depth.normalize) + (job.depth.stabilize ? ", stabilized" : ""));
    line("output", job.output.path + " (" + option_name(job.output.channels) + ", " +
                       option_name(job.output.compression) + ", overwrite " + option_name(job.output.overwrite) + ")");
    if (const std::string passes = ctx->passes.describe(describe_camera(job.camera), job.output.passes_type);
        !passes.empty())
        line("passes", passes);
    if (!job.output.preview.path.empty()) line("previews", job.output.preview.path);
    if (!job.pipeline.summary.empty()) line("summary", job.pipeline.summary);
    if (job.depth.normalize == Normalization::Sequence) {
        // The render's identity check of an existing sidecar (its OutputExistsError, exit 6, for another job's).
        const auto [want, path] = wanted_sequence_stats(*ctx, first);
        std::string state = " (computed by the render)";
        if (const auto have = read_sequence_stats(path)) {
            const std::string diff = have->mismatch(want);
            if (diff.empty()) state = " (exists, made for this job: reused)";
            else if (job.output.overwrite != OverwritePolicy::Overwrite)
                throw OutputExistsError(path + ": sequence statistics made for another job (" + diff + " differs); " +
                                        stats_advice(job));
            else state = " (made for another job: " + diff + " differs; recomputed, --overwrite)";
        }
        line("stats", path + state);
    }
    if (!job.pipeline.review.empty()) line("review", job.pipeline.review);
    return v;
}

}  // namespace depthbatch
