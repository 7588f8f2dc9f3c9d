// depthbatch — a job as the command line changes it: see job_flags.h.
#include "depthbatch/job_flags.h"

#include "depthbatch/error.h"
#include "depthbatch/frame_sequence.h"
#include "depthbatch/log.h"

namespace depthbatch {

std::string empty_value_error(const std::string& name) {
    return name + " is given an empty value (an unset variable in the command?): give a value, or leave " + name +
           " out";
}

std::string flag_with_empty_equals(int argc, const char* const* argv) {
    for (int i = 1; i < argc; ++i)
        if (const std::string a = argv[i];
            a.size() > 3 && a.compare(0, 2, "--") == 0 && a.back() == '=' && a.find('=') == a.size() - 1)
            return a.substr(0, a.size() - 1);
    return "";
}

JobConfig load_job_with_flags(const std::string& job_path, const JobFlags& f) {
    std::vector<JobOverride> overrides;
    for (const std::string& s : f.sets) overrides.push_back({s, "", false});
    auto flag = [&](const char* name, const char* key, const std::string& value) {
        overrides.push_back({std::string(key) + "=" + value, std::string(name) + " " + printable(value), true});
    };
    if (!f.device.empty()) flag("--device", "model.device", f.device);
    if (!f.output_path.empty()) flag("--output", "output.path", f.output_path);
    if (f.overwrite) overrides.push_back({"output.overwrite=overwrite", "--overwrite", true});
    if (f.skip_existing) overrides.push_back({"output.overwrite=skip", "--skip-existing", true});
    if (!f.threads.empty()) flag("--threads", "pipeline.threads", f.threads);
    if (!f.summary.empty()) flag("--summary", "pipeline.summary", f.summary);
    if (!f.grace.empty()) flag("--grace", "pipeline.grace_s", f.grace);
    JobConfig job = load_job(job_path, overrides);
    if (f.frames_given && f.frames.find_first_not_of(" \t") == std::string::npos)
        throw ConfigError("--frames is empty (an unset $CHUNK?): give a frame spec such as 1001-1050");
    if (!f.frames.empty()) {
        try {
            job.render.frames = parse_frame_spec(f.frames);
        } catch (const ConfigError& e) {
            throw ConfigError(std::string("--frames: ") + e.what());
        }
    }
    if (!f.range.empty()) job.render.range = parse_frame_range(f.range);
    if (!f.chunk.empty()) {
        const Chunk c = parse_chunk(f.chunk);
        job.render.chunk_index = c.index;
        job.render.chunk_count = c.count;
    }
    return job;
}

}  // namespace depthbatch
