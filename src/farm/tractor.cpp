// Tractor: job.alf (alfscript: a stats Task, then one Task per chunk).
//
// Quoting: an alfscript is Tcl. A command's argv is a Tcl list inside a braced word (RemoteCmd {...}); each
// element is written by tcl_list_element (braced, or backslash-escaped when it holds a brace or a backslash),
// which keeps every byte and never leaves a brace that counts, so no path can end the braced word or run a
// Tcl command. Titles are farm_safe_name'd.
// GPUs: Tractor does not hand GPUs to commands; docs/farm.md "On the farm" says what a studio sets up (a blade profile
// per GPU with its own CUDA_VISIBLE_DEVICES); a GPU job's commands run on `cuda`, the first GPU the blade
// makes visible.
#include "farm/farm_engines.h"

#include "depthbatch/frame_sequence.h"

#include <sstream>

namespace depthbatch::farm {

Files tractor_files(const FarmPlan& plan, const SubmitOptions& o) {
    const auto sets = set_args(plan, o);
    const auto cmd = [&](const std::vector<std::string>& words) {
        std::string out;
        for (const auto& w : words) out += (out.empty() ? "" : " ") + tcl_list_element(w);
        return "RemoteCmd {" + out + "} -service {depthbatch}";
    };
    std::ostringstream a;
    a << "##AlfredToDo 3.0\n"
      << "# depthbatch render of " << comment(o.job_path)
      << " for Tractor: tractor-spool job.alf (written by `depthbatch submit`).\n";
    if (plan.gpus > 0)
        a << "# A GPU job: Tractor does not assign GPUs; each blade slot must see its own GPU (docs/farm.md \"On the "
             "farm\").\n";
    a << "Job -title {depthbatch " << plan.safe_name << "} -serialsubtasks 1 -subtasks {\n";
    if (plan.needs_first_task()) {
        const FirstTask first = first_task(plan, o);
        a << "    Task -title {" << first.title << "} -cmds {\n        " << cmd(first.words) << "\n    }\n";
    }
    a << "    Task -title {frames " << format_frame_spec(plan.frames) << "} -subtasks {\n";
    for (int i = 1; i <= plan.chunks; ++i) {
        const std::string chunk = std::to_string(i) + "/" + std::to_string(plan.chunks);
        a << "        Task -title {chunk " << chunk << ": frames " << chunk_list(plan, i) << "} -cmds {\n            "
          << cmd(render_words(plan, o,
                              {"--chunk", chunk, "--skip-existing", "--summary",  // one per chunk, as Slurm's
                               o.out_dir + "/summaries/" + plan.safe_name + ".chunk-" + std::to_string(i) + ".json"}))
          << "\n        }\n";
    }
    a << "    }\n}\n";
    return {{"job.alf", a.str()}};
}

}  // namespace depthbatch::farm
