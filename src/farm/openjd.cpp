// Open Job Description (jobtemplate-2023-09 + TASK_CHUNKING): job.template.yaml.
//
// Quoting: every string is a YAML double-quoted scalar (yaml_quote). Strings in a template are also OpenJD
// format strings, where "{{" opens an expression with no escape; so the executable and the job file are STRING
// job parameters (Depthbatch, JobFile: a parameter's value is never interpolated; PATH parameters would refuse
// absolute defaults), used as {{Param.Depthbatch}} and {{Param.JobFile}}, and a --set holding "{{" becomes a
// STRING parameter of its own (Set1, Set2, ...). `openjd run -p JobFile=...` points a run at another copy.
// GPUs: a GPU job's steps carry hostRequirements amount.worker.gpu (min = FarmPlan::gpus), so only workers
// with GPUs take them; the task runs on `cuda`, the first GPU its worker sees (CUDA_VISIBLE_DEVICES where the
// host sets one per worker).
#include "farm/farm_engines.h"

#include "depthbatch/frame_sequence.h"

#include <algorithm>
#include <sstream>

namespace depthbatch::farm {

Files openjd_files(const FarmPlan& plan, const SubmitOptions& o) {
    const char* engine = "Open Job Description";
    std::vector<std::pair<std::string, std::string>> string_params;  // name, value
    const auto sets = set_args(plan, o);
    std::vector<std::string> set_refs;
    for (const auto& s : sets) {
        if (s.find("{{") == std::string::npos) {
            set_refs.push_back(s);
            continue;
        }
        const std::string name = "Set" + std::to_string(string_params.size() + 1);
        string_params.push_back({name, s});
        set_refs.push_back("{{Param." + name + "}}");
    }
    const auto args = [&](std::vector<std::string> words) {
        words.insert(words.end(), set_refs.begin(), set_refs.end());
        std::string out;
        for (const auto& w : words) out += "          - " + yaml_quote(w, engine) + "\n";
        return out;
    };
    const std::string gpus = plan.gpus > 0
                                 ? "    hostRequirements:\n      amounts:\n        - name: amount.worker.gpu\n"
                                   "          min: " +
                                       std::to_string(plan.gpus) + "\n"
                                 : "";
    std::ostringstream t;
    t << "# depthbatch render of " << comment(o.job_path) << " for Open Job Description (AWS Deadline Cloud).\n"
      << "# Check: openjd check job.template.yaml   Run here: openjd run job.template.yaml --step Render\n"
      << "# Written by `depthbatch submit --engine openjd`.\n"
      << "specificationVersion: jobtemplate-2023-09\n"
      << "extensions:\n  - TASK_CHUNKING\n"
      << "name: " << yaml_quote("depthbatch " + plan.safe_name, engine) << "\n"
      << "parameterDefinitions:\n"
      << "  - name: Depthbatch\n    type: STRING\n"
      << "    description: \"The depthbatch executable on the workers\"\n"
      << "    default: " << yaml_quote(o.executable, engine) << "\n"
      << "  - name: JobFile\n    type: STRING\n"
      << "    description: \"The depthbatch job file\"\n"
      << "    default: " << yaml_quote(o.job_path, engine) << "\n";
    for (const auto& [name, value] : string_params)
        t << "  - name: " << name << "\n    type: STRING\n    default: " << yaml_quote(value, engine) << "\n";
    t << "steps:\n";
    const FirstTask first = first_task(plan, o);
    if (plan.needs_first_task()) {
        t << "  - name: " << first.name << "\n"
          << gpus << "    script:\n      actions:\n        onRun:\n"
          << "          command: \"{{Param.Depthbatch}}\"\n"
          << "          args:\n"
          << args({first.verb, "{{Param.JobFile}}"});
    }
    t << "  - name: Render\n";
    if (plan.needs_first_task()) t << "    dependencies:\n      - dependsOn: " << first.name << "\n";
    t << gpus << "    parameterSpace:\n      taskParameterDefinitions:\n"
      << "        - name: Frame\n          type: CHUNK[INT]\n"
      << "          range: " << yaml_quote(openjd_range_expression(plan.frames), engine) << "\n"
      << "          chunks:\n            defaultTaskCount: " << plan.chunk_size << "\n";
    // CONTIGUOUS chunks are START-END and end at every gap, so a job of every other frame would run one frame
    // per task; such a job takes NONCONTIGUOUS chunks ("1001-1015:2"), which --frames reads as they are.
    const bool gaps_everywhere =
        plan.frames.size() > 1 && std::adjacent_find(plan.frames.begin(), plan.frames.end(),
                                                     [](int a, int b) { return b - a == 1; }) == plan.frames.end();
    if (o.target_runtime_s > 0)
        t << "            targetRuntimeSeconds: " << static_cast<long>(o.target_runtime_s) << "\n";
    t << "            rangeConstraint: " << (gaps_everywhere ? "NONCONTIGUOUS" : "CONTIGUOUS") << "\n"
      << "    script:\n      actions:\n        onRun:\n"
      << "          command: \"{{Param.Depthbatch}}\"\n"
      << "          args:\n"
      << args({"{{Param.JobFile}}", "--frames", "{{Task.Param.Frame}}", "--skip-existing"});
    return {{"job.template.yaml", t.str()}};
}

}  // namespace depthbatch::farm
