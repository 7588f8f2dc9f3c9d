#include "depthbatch/farm_submit.h"
#include "depthbatch/depth_model.h"

#include "output_guard.h"
#include "subprocess.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;

namespace depthbatch {
namespace {

std::string trimmed(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    return s.substr(i);
}

/// The --set arguments every task passes on, as separate words.
std::vector<std::string> set_args(const SubmitOptions& o) {
    std::vector<std::string> out;
    for (const auto& s : o.sets) {
        out.push_back("--set");
        out.push_back(s);
    }
    return out;
}

std::string shell_words(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : " ") + shell_quote(w);
    return out;
}

/// A YAML double-quoted scalar (JSON's string syntax is valid YAML).
std::string yaml_string(const std::string& s) { return nlohmann::json(s).dump(); }

void refuse_if(const std::string& what, const std::string& text, const std::string& chars, const char* engine,
               const char* why) {
    if (text.find_first_of(chars) != std::string::npos)
        throw ConfigError(what + " '" + text + "' holds one of \"" + chars + "\", which " + engine + " " + why);
}

std::string chunk_list(const FarmPlan& plan, int i) { return format_frame_spec(chunk_frames(plan.frames, i, plan.chunks)); }

// ---- engines ------------------------------------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> slurm_files(const FarmPlan& plan, const SubmitOptions& o) {
    refuse_if("the submit folder", o.out_dir, " \t\n%", "Slurm", "cannot carry in #SBATCH --output lines");
    const std::string logs = o.out_dir + "/logs";
    auto header = [&](const std::string& name, const std::string& log) {
        std::ostringstream s;
        s << "#!/bin/bash\n"
          << "#SBATCH --job-name=" << name << "\n"
          << "#SBATCH --ntasks=1\n"
          << "#SBATCH --output=" << logs << "/" << log << "\n";
        if (!o.partition.empty()) s << "#SBATCH --partition=" << o.partition << "\n";
        if (o.gpus_per_task > 0) s << "#SBATCH --gpus-per-task=" << o.gpus_per_task << "\n";
        return s.str();
    };
    std::vector<std::pair<std::string, std::string>> files;
    std::vector<std::string> render = {o.executable, o.job_path};
    std::ostringstream r;
    r << header("depthbatch-" + plan.name, plan.name + ".%A_%a.log")
      << "#SBATCH --array=1-" << plan.chunks << "\n"
      << "# depthbatch render of " << o.job_path << ": frames " << format_frame_spec(plan.frames) << " in "
      << plan.chunks << " chunks of up to " << plan.chunk_size << " frames, one array task per chunk.\n"
      << "# Array indices are chunk numbers (1.." << plan.chunks << "), never frame numbers. Written by "
         "`depthbatch submit`.\n"
      << "# A task stopped by scancel or pre-emption gets SIGTERM: depthbatch finishes or abandons its frames\n"
      << "# within pipeline.grace_s (default 20 s, under Slurm's default KillWait of 30 s) and exits 130;\n"
      << "# a requeued task resumes with --skip-existing.\n"
      << "set -euo pipefail\n"
      << "mkdir -p " << shell_quote(o.out_dir + "/summaries") << "\n"
      << "exec " << shell_words(render) << " --chunk \"${SLURM_ARRAY_TASK_ID}/" << plan.chunks << "\" --skip-existing"
      << " --summary " << shell_quote(o.out_dir + "/summaries/" + plan.name + ".chunk-") << "\"${SLURM_ARRAY_TASK_ID}\".json";
    const auto sets = set_args(o);
    if (!sets.empty()) r << " " << shell_words(sets);
    r << "\n";
    if (plan.needs_stats) {
        std::ostringstream st;
        std::vector<std::string> stats = {o.executable, "stats", o.job_path};
        stats.insert(stats.end(), sets.begin(), sets.end());
        st << header("depthbatch-" + plan.name + "-stats", plan.name + ".stats.%j.log")
           << "# depthbatch sequence statistics of " << o.job_path << " (depth.normalize: sequence), computed once\n"
           << "# before the render array, which depends on it (--dependency=afterok).\n"
           << "set -euo pipefail\n"
           << "exec " << shell_words(stats) << "\n";
        files.push_back({"stats.sbatch", st.str()});
    }
    files.push_back({"render.sbatch", r.str()});
    return files;
}

std::vector<std::pair<std::string, std::string>> openjd_files(const FarmPlan& plan, const SubmitOptions& o) {
    for (const auto* p : {&o.executable, &o.job_path})
        if (p->find("{{") != std::string::npos)
            throw ConfigError("'" + *p + "' holds \"{{\", which Open Job Description reads as a format string");
    const auto args = [&](std::vector<std::string> words) {
        const auto sets = set_args(o);
        words.insert(words.end(), sets.begin(), sets.end());
        std::string out;
        for (const auto& w : words) out += "          - " + (w.rfind("{{", 0) == 0 ? "'" + w + "'" : yaml_string(w)) + "\n";
        return out;
    };
    std::ostringstream t;
    t << "# depthbatch render of " << o.job_path << " for Open Job Description (AWS Deadline Cloud).\n"
      << "# Check: openjd check job.template.yaml   Run here: openjd run job.template.yaml --step Render\n"
      << "# Written by `depthbatch submit --engine openjd`.\n"
      << "specificationVersion: jobtemplate-2023-09\n"
      << "extensions:\n  - TASK_CHUNKING\n"
      << "name: " << yaml_string("depthbatch " + plan.name) << "\n"
      << "steps:\n";
    if (plan.needs_stats) {
        t << "  - name: SequenceStatistics\n"
          << "    script:\n      actions:\n        onRun:\n"
          << "          command: " << yaml_string(o.executable) << "\n"
          << "          args:\n" << args({"stats", o.job_path});
    }
    t << "  - name: Render\n";
    if (plan.needs_stats) t << "    dependencies:\n      - dependsOn: SequenceStatistics\n";
    t << "    parameterSpace:\n      taskParameterDefinitions:\n"
      << "        - name: Frame\n          type: CHUNK[INT]\n"
      << "          range: " << yaml_string(openjd_range_expression(plan.frames)) << "\n"
      << "          chunks:\n            defaultTaskCount: " << plan.chunk_size << "\n";
    // CONTIGUOUS chunks are START-END and end at every gap, so a job of every other frame would run one frame
    // per task; such a job takes NONCONTIGUOUS chunks ("1001-1015:2"), which --frames reads as they are.
    const bool gaps_everywhere = plan.frames.size() > 1 &&
                                 std::adjacent_find(plan.frames.begin(), plan.frames.end(),
                                                    [](int a, int b) { return b - a == 1; }) == plan.frames.end();
    if (o.target_runtime_s > 0) t << "            targetRuntimeSeconds: " << static_cast<long>(o.target_runtime_s) << "\n";
    t << "            rangeConstraint: " << (gaps_everywhere ? "NONCONTIGUOUS" : "CONTIGUOUS") << "\n"
      << "    script:\n      actions:\n        onRun:\n"
      << "          command: " << yaml_string(o.executable) << "\n"
      << "          args:\n" << args({o.job_path, "--frames", "{{Task.Param.Frame}}", "--skip-existing"});
    return {{"job.template.yaml", t.str()}};
}

std::string deadline_arguments(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) {
        const bool quote = w.empty() || w.find_first_of(" \t") != std::string::npos;
        out += (out.empty() ? "" : " ") + (quote ? "\"" + w + "\"" : w);
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> deadline_files(const FarmPlan& plan, const SubmitOptions& o) {
    for (const auto* p : {&o.executable, &o.job_path}) refuse_if("path", *p, "\"\n", "Deadline", "cannot quote in Arguments");
    for (const auto& s : o.sets) refuse_if("--set", s, "\"\n", "Deadline", "cannot quote in Arguments");
    const auto sets = set_args(o);
    std::vector<std::pair<std::string, std::string>> files;
    const std::string out_dir = fs::path(plan.output_path).parent_path().string();
    std::ostringstream ji, pi;
    ji << "Plugin=CommandLine\n"
       << "Name=depthbatch " << plan.name << "\n"
       << "Comment=depth pass of " << o.job_path << "\n"
       << "Frames=" << format_frame_spec(plan.frames) << "\n"
       << "ChunkSize=" << plan.chunk_size << "\n"
       << "OutputDirectory0=" << out_dir << "\n"
       << "OutputFilename0=" << fs::path(plan.output_path).filename().string() << "\n";
    std::vector<std::string> words = {o.job_path, "--range", "<STARTFRAME>-<ENDFRAME>", "--skip-existing"};
    words.insert(words.end(), sets.begin(), sets.end());
    pi << "Executable=" << o.executable << "\n"
       << "Arguments=" << deadline_arguments(words) << "\n"
       << "Shell=default\nShellExecute=False\nSingleFramesOnly=False\n";
    std::ostringstream submit;
    submit << "#!/bin/bash\n"
           << "# Submit the depthbatch render of " << o.job_path << " to Deadline 10 (written by `depthbatch submit`).\n"
           << "set -euo pipefail\ncd \"$(dirname \"$0\")\"\n";
    if (plan.needs_stats) {
        std::ostringstream sji, spi;
        sji << "Plugin=CommandLine\nName=depthbatch " << plan.name << " sequence statistics\nFrames=0\nChunkSize=1\n";
        std::vector<std::string> stats = {"stats", o.job_path};
        stats.insert(stats.end(), sets.begin(), sets.end());
        spi << "Executable=" << o.executable << "\nArguments=" << deadline_arguments(stats)
            << "\nShell=default\nShellExecute=False\nSingleFramesOnly=False\n";
        files.push_back({"stats_job_info.job", sji.str()});
        files.push_back({"stats_plugin_info.job", spi.str()});
        submit << "stats=$(deadlinecommand stats_job_info.job stats_plugin_info.job | sed -n 's/^JobID=//p')\n"
               << "[ -n \"$stats\" ] || { echo 'depthbatch: the statistics job was not accepted' >&2; exit 1; }\n"
               << "{ cat job_info.job; echo \"JobDependencies=$stats\"; } > job_info.submitted.job\n"
               << "deadlinecommand job_info.submitted.job plugin_info.job\n";
    } else {
        submit << "deadlinecommand job_info.job plugin_info.job\n";
    }
    files.push_back({"job_info.job", ji.str()});
    files.push_back({"plugin_info.job", pi.str()});
    files.push_back({"submit.sh", submit.str()});
    return files;
}

std::string python_string(const std::string& s) { return nlohmann::json(s).dump(); }   // valid Python too

std::vector<std::pair<std::string, std::string>> opencue_files(const FarmPlan& plan, const SubmitOptions& o) {
    const auto list = [](const std::vector<std::string>& words) {
        std::string out = "[";
        for (size_t i = 0; i < words.size(); ++i) out += (i ? ", " : "") + python_string(words[i]);
        return out + "]";
    };
    const auto sets = set_args(o);
    std::vector<std::string> render = {o.executable, o.job_path, "--range", "#FRAME_START#-#FRAME_END#", "--skip-existing"};
    render.insert(render.end(), sets.begin(), sets.end());
    std::vector<std::string> stats = {o.executable, "stats", o.job_path};
    stats.insert(stats.end(), sets.begin(), sets.end());
    const std::string range = format_frame_spec(plan.frames);   // OpenCue's frame sets write steps as "x" too
    std::ostringstream s;
    s << "#!/usr/bin/env python3\n"
      << "# depthbatch render of " << o.job_path << " for OpenCue (written by `depthbatch submit --engine opencue`).\n"
      << "#   python3 opencue_submit.py          submit to the cuebot of your OpenCue config (opencue-pyoutline)\n"
      << "#   python3 opencue_submit.py --print  print the job spec XML, submit nothing\n"
      << "# Commands run as written (use_pycuerun=False): render nodes need depthbatch, not pyoutline. Each chunk\n"
      << "# renders the job's frames from #FRAME_START# to #FRAME_END# (--range), so a last chunk that runs past\n"
      << "# the range's end on an older cuebot renders nothing twice.\n"
      << "import sys\n\nimport outline\nimport outline.cuerun\nfrom outline.modules.shell import Shell, ShellCommand\n\n\n"
      << "def build():\n"
      << "    ol = outline.Outline(" << python_string("depthbatch-" + plan.name) << ", frame_range=" << python_string(range) << ")\n"
      << "    render = Shell(\"render\", command=" << list(render) << ",\n"
      << "                   range=" << python_string(range) << ", chunk=" << plan.chunk_size << ")\n";
    if (plan.needs_stats)
        s << "    stats = ShellCommand(\"stats\", command=" << list(stats) << ")   # one frame, before any chunk\n"
          << "    ol.add_layer(stats)\n";
    s << "    ol.add_layer(render)\n";
    if (plan.needs_stats) s << "    render.depend_all(stats)   # layer on layer: every chunk waits for the statistics\n";
    s << "    return ol\n\n\n"
      << "if __name__ == \"__main__\":\n"
      << "    launcher = outline.cuerun.OutlineLauncher(build())\n"
      << "    if \"--print\" in sys.argv[1:]:\n"
      << "        print(launcher.serialize(use_pycuerun=False))\n"
      << "    else:\n"
      << "        print(\"submitted\", launcher.launch(use_pycuerun=False))\n";
    return {{"opencue_submit.py", s.str()}};
}

std::string tcl_word(const std::string& s) { return "{" + s + "}"; }

std::vector<std::pair<std::string, std::string>> tractor_files(const FarmPlan& plan, const SubmitOptions& o) {
    for (const auto* p : {&o.executable, &o.job_path})
        refuse_if("path", *p, "{}\\\n", "Tractor's alfscript (Tcl)", "cannot carry inside a braced word");
    for (const auto& st : o.sets) refuse_if("--set", st, "{}\\\n", "Tractor's alfscript (Tcl)", "cannot carry inside a braced word");
    const auto sets = set_args(o);
    const auto cmd = [&](std::vector<std::string> words) {
        words.insert(words.end(), sets.begin(), sets.end());
        std::string out;
        for (const auto& w : words) out += (out.empty() ? "" : " ") + tcl_word(w);
        return "RemoteCmd {" + out + "} -service {depthbatch}";
    };
    std::ostringstream a;
    a << "##AlfredToDo 3.0\n"
      << "# depthbatch render of " << o.job_path << " for Tractor: tractor-spool job.alf (written by `depthbatch submit`).\n"
      << "Job -title " << tcl_word("depthbatch " + plan.name) << " -serialsubtasks 1 -subtasks {\n";
    if (plan.needs_stats)
        a << "    Task -title {sequence statistics} -cmds {\n        " << cmd({o.executable, "stats", o.job_path}) << "\n    }\n";
    a << "    Task -title {frames " << format_frame_spec(plan.frames) << "} -subtasks {\n";
    for (int i = 1; i <= plan.chunks; ++i) {
        const std::string chunk = std::to_string(i) + "/" + std::to_string(plan.chunks);
        a << "        Task -title {chunk " << chunk << ": frames " << chunk_list(plan, i) << "} -cmds {\n            "
          << cmd({o.executable, o.job_path, "--chunk", chunk, "--skip-existing"}) << "\n        }\n";
    }
    a << "    }\n}\n";
    return {{"job.alf", a.str()}};
}

}  // namespace

FarmEngine farm_engine_from_name(const std::string& name) {
    for (FarmEngine e : {FarmEngine::Slurm, FarmEngine::OpenJD, FarmEngine::Deadline, FarmEngine::OpenCue, FarmEngine::Tractor})
        if (name == farm_engine_name(e)) return e;
    throw ConfigError("--engine '" + name + "' is not one of: slurm, openjd, deadline, opencue, tractor");
}

const char* farm_engine_name(FarmEngine engine) {
    switch (engine) {
    case FarmEngine::Slurm: return "slurm";
    case FarmEngine::OpenJD: return "openjd";
    case FarmEngine::Deadline: return "deadline";
    case FarmEngine::OpenCue: return "opencue";
    case FarmEngine::Tractor: return "tractor";
    }
    return "?";
}

std::string shell_quote(const std::string& text) {
    std::string out = "'";
    for (char ch : text) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return out + "'";
}

std::string openjd_range_expression(const std::vector<int>& frames) {
    std::string s = format_frame_spec(frames);
    std::replace(s.begin(), s.end(), 'x', ':');
    return s;
}

FarmPlan plan_farm_job(const JobConfig& job, const SubmitOptions& o) {
    if (o.chunk_size < 1) throw ConfigError("--chunk-size must be at least 1 frame");
    FarmPlan plan;
    plan.name = fs::path(o.job_path).stem().string();
    plan.output_path = job.output.path;
    plan.frames = shot_frames(job.input);
    if (plan.frames.empty()) throw InputError("no frames on disk match input.path '" + job.input.path + "'");
    plan.needs_stats = job.depth.normalize == Normalization::Sequence;
    const long n = static_cast<long>(plan.frames.size());
    plan.chunk_size = static_cast<int>(std::min<long>(o.chunk_size, n));
    plan.chunks = static_cast<int>((n + plan.chunk_size - 1) / plan.chunk_size);
    // A video model's frames depend on every frame before them (README "Video models"): the shot is one task.
    if (const int frames = model_input_frames(job.model.path); frames > 1 && plan.chunks > 1) {
        plan.note = "video model (input.frames " + std::to_string(frames) + "): one task for the shot's " + std::to_string(n) +
                    " frames, not " + std::to_string(plan.chunks) + " chunks (each frame depends on the frames before it)";
        plan.chunk_size = static_cast<int>(n), plan.chunks = 1;
    }
    // Slurm refuses array indices >= MaxArraySize; ours run 1..chunks.
    if (o.engine == FarmEngine::Slurm && o.max_array_size > 1 && plan.chunks > o.max_array_size - 1) {
        const long most = o.max_array_size - 1;
        const int fitted = static_cast<int>((n + most - 1) / most);
        plan.note = std::to_string(plan.chunks) + " chunks of " + std::to_string(plan.chunk_size) + " frames need array "
                    "indices up to " + std::to_string(plan.chunks) + ", but this cluster's MaxArraySize is " +
                    std::to_string(o.max_array_size) + " (indices 0-" + std::to_string(most) + "): using chunks of " +
                    std::to_string(fitted) + " frames (" + std::to_string((n + fitted - 1) / fitted) + " chunks)";
        plan.chunk_size = fitted;
        plan.chunks = static_cast<int>((n + fitted - 1) / fitted);
    }
    return plan;
}

std::vector<std::pair<std::string, std::string>> farm_job_files(const FarmPlan& plan, const SubmitOptions& o) {
    switch (o.engine) {
    case FarmEngine::Slurm: return slurm_files(plan, o);
    case FarmEngine::OpenJD: return openjd_files(plan, o);
    case FarmEngine::Deadline: return deadline_files(plan, o);
    case FarmEngine::OpenCue: return opencue_files(plan, o);
    case FarmEngine::Tractor: return tractor_files(plan, o);
    }
    return {};
}

std::vector<std::string> write_farm_files(const JobConfig& job, const std::vector<std::pair<std::string, std::string>>& files,
                                          const SubmitOptions& o) {
    const fs::path dir(o.out_dir);
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
        throw ConfigError("submit --out: " + o.out_dir + " exists and is not a folder");
    const std::vector<int> shot = shot_frames(job.input);
    const std::string model = job.model.path == "default" ? "" : job.model.path;
    const OutputGuard guard = OutputGuard::for_job(job, shot, model);
    // Every file is checked before the first is written: a refusal leaves the folder as it was.
    for (const auto& [name, text] : files) guard.check((dir / name).string(), OutputRole::FarmFile, "submit --out");
    guard.check((dir / output_marker::farm_manifest).string(), OutputRole::FarmFile, "submit --out");
    fs::create_directories(dir, ec);
    if (ec) throw RenderError("submit --out: cannot create " + o.out_dir + ": " + ec.message());
    if (o.engine == FarmEngine::Slurm) fs::create_directories(dir / "logs", ec);
    // The manifest first (listing what this submit writes), so that every file below is of its kind.
    std::string manifest = "# files written by depthbatch submit; a later submit replaces only these\n";
    std::set<std::string> names;
    {
        std::ifstream in(dir / output_marker::farm_manifest);
        for (std::string line; std::getline(in, line);)
            if (!line.empty() && line[0] != '#') names.insert(line);
    }
    for (const auto& f : files) names.insert(f.first);
    names.insert(output_marker::farm_manifest);
    for (const auto& n : names) manifest += n + "\n";
    std::vector<std::pair<std::string, std::string>> all = {{output_marker::farm_manifest, manifest}};
    all.insert(all.end(), files.begin(), files.end());
    std::vector<std::string> written;
    for (const auto& [name, text] : all) {
        const fs::path p = dir / name;
        Publication pub = Publication::open(p.string(), OutputRole::FarmFile, "submit --out");
        {
            std::ofstream out(pub.temp_path());
            out << text;
            out.close();
            if (!out) throw RenderError(p.string() + ": cannot write");
        }
        if (p.extension() == ".sbatch" || p.extension() == ".sh")
            fs::permissions(pub.temp_path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                                 fs::perms::others_read | fs::perms::others_exec);
        pub.publish(true);
        if (name != output_marker::farm_manifest) written.push_back(p.string());
    }
    return written;
}

int slurm_max_array_size() {
    int status = 0;
    const std::string out = detail::run_capture({"scontrol", "show", "config"}, status);
    if (status != 0) return 0;
    static const std::regex re(R"(MaxArraySize\s*=\s*(\d+))");
    std::smatch m;
    if (!std::regex_search(out, m, re)) return 0;
    return std::stoi(m[1]);
}

std::pair<std::string, std::string> slurm_submit(const FarmPlan& plan, const SubmitOptions& o) {
    const auto sbatch = [](std::vector<std::string> argv) {
        int status = 0;
        const std::string out = trimmed(detail::run_capture(argv, status));
        if (status != 0 || out.empty() || out.find_first_not_of("0123456789;") != std::string::npos)
            throw RenderError("sbatch " + argv.back() + " failed (exit " + std::to_string(status) + "): " + out);
        return out.substr(0, out.find(';'));   // --parsable: "jobid" or "jobid;cluster"
    };
    std::string stats_id;
    if (plan.needs_stats) stats_id = sbatch({"sbatch", "--parsable", o.out_dir + "/stats.sbatch"});
    std::vector<std::string> argv = {"sbatch", "--parsable"};
    if (!stats_id.empty()) {
        argv.push_back("--dependency=afterok:" + stats_id);
        argv.push_back("--kill-on-invalid-dep=yes");
    }
    argv.push_back(o.out_dir + "/render.sbatch");
    return {stats_id, sbatch(argv)};
}

}  // namespace depthbatch
