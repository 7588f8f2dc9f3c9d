// OpenCue: opencue_submit.py (opencue-pyoutline: a Shell layer with #FRAME_START#/#FRAME_END#, chunked, after a
// one-frame stats layer; serialized with raw commands, use_pycuerun=False).
//
// Quoting, two layers: RQD runs a layer's command through a shell, so the command is one shell line with every
// word in single quotes (shell_quote), and that line is a Python string literal in the script (python_quote).
// pyoutline writes it into the job spec's XML, which cannot hold control bytes other than tab and newline (and
// turns a carriage return into a newline): such a path, or one that is not UTF-8, is refused.
// GPUs: a GPU job's layers ask for FarmPlan::gpus GPUs (the spec's <gpus>, the layer's min_gpus on the cuebot);
// RQD exports the GPUs it booked as CUE_GPU_CORES (a comma-separated list of indices), which the command copies
// to CUDA_VISIBLE_DEVICES before depthbatch starts on `cuda`.
#include "farm/farm_engines.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"

#include <sstream>

namespace depthbatch::farm {
namespace {

/// The shell line RQD runs for `words`.
std::string command_line(const FarmPlan& plan, const std::vector<std::string>& words) {
    std::string out = plan.gpus > 0 ? "if [ -n \"${CUE_GPU_CORES:-}\" ]; then CUDA_VISIBLE_DEVICES=\"$CUE_GPU_CORES\"; "
                                      "export CUDA_VISIBLE_DEVICES; fi; "
                                    : "";
    out += "exec";
    for (const auto& w : words) {
        for (unsigned char c : w)
            if ((c < 0x20 && c != '\t' && c != '\n') || c == '\r')
                throw ConfigError("'" + comment(w) +
                                  "' holds a control character, which OpenCue's XML job spec "
                                  "cannot carry: rename it");
        out += " " + shell_quote(w);
    }
    return out;
}

}  // namespace

Files opencue_files(const FarmPlan& plan, const SubmitOptions& o) {
    const char* engine = "OpenCue";
    // One summary per chunk, as Slurm's: the job's pipeline.summary would be one file every chunk replaces.
    const std::string render = command_line(
        plan, render_words(plan, o,
                           {"--range", "#FRAME_START#-#FRAME_END#", "--skip-existing", "--summary",
                            o.out_dir + "/summaries/" + plan.safe_name + ".frames-#FRAME_START#-#FRAME_END#.json"}));
    const FirstTask first = first_task(plan, o);
    const std::string stats = command_line(plan, first.words);
    const std::string range = format_frame_spec(plan.frames);  // OpenCue's frame sets write steps as "x" too
    const std::string gpus = plan.gpus > 0 ? ", gpus=" + std::to_string(plan.gpus) : "";
    std::ostringstream s;
    s << "#!/usr/bin/env python3\n"
      << "# depthbatch render of " << comment(o.job_path)
      << " for OpenCue (written by `depthbatch submit --engine opencue`).\n"
      << "#   python3 opencue_submit.py          submit to the cuebot of your OpenCue config (opencue-pyoutline)\n"
      << "#   python3 opencue_submit.py --print  print the job spec XML, submit nothing\n"
      << "# Commands run as written (use_pycuerun=False): render nodes need depthbatch, not pyoutline. RQD runs each\n"
      << "# through a shell: every word is in single quotes. Each chunk renders the job's frames from #FRAME_START#\n"
      << "# to #FRAME_END# (--range), so a last chunk that runs past the range's end on an older cuebot renders\n"
      << "# nothing twice.\n";
    if (plan.gpus > 0)
        s << "# GPUs: each task asks for " << plan.gpus
          << " (gpus=, min_gpus on the cuebot); RQD's CUE_GPU_CORES becomes\n"
          << "# CUDA_VISIBLE_DEVICES and depthbatch runs on `cuda`.\n";
    s << "import sys\n\nimport outline\nimport outline.cuerun\nfrom outline.modules.shell import Shell, "
         "ShellCommand\n\n\n"
      << "def build():\n"
      << "    ol = outline.Outline(" << python_quote("depthbatch-" + plan.safe_name, engine)
      << ", frame_range=" << python_quote(range, engine) << ")\n"
      << "    render = Shell(\"render\", command=" << python_quote(render, engine) << ",\n"
      << "                   range=" << python_quote(range, engine) << ", chunk=" << plan.chunk_size << gpus << ")\n";
    if (plan.needs_first_task())
        s << "    stats = ShellCommand(\"" << first.stem << "\", command=" << python_quote(stats, engine) << gpus
          << ")   # one frame, before any chunk\n"
          << "    ol.add_layer(stats)\n";
    s << "    ol.add_layer(render)\n";
    if (plan.needs_first_task())
        s << "    render.depend_all(stats)   # layer on layer: every chunk waits for the " << first.title << "\n";
    s << "    return ol\n\n\n"
      << "if __name__ == \"__main__\":\n"
      << "    launcher = outline.cuerun.OutlineLauncher(build())\n"
      << "    if \"--print\" in sys.argv[1:]:\n"
      << "        print(launcher.serialize(use_pycuerun=False))\n"
      << "    else:\n"
      << "        print(\"submitted\", launcher.launch(use_pycuerun=False))\n";
    return {{"opencue_submit.py", s.str()}};
}

}  // namespace depthbatch::farm
