// depthbatch — a job as the command line changes it: the render flags (--device, --output, --overwrite,
// --skip-existing, --threads, --summary, --grace, --set) become job-key overrides checked like the job's own keys,
// and --frames / --range / --chunk choose this run's frames (frame_sequence.h parses each).
#pragma once

#include "depthbatch/job_config.h"

#include <string>
#include <vector>

namespace depthbatch {

/// The flags of `depthbatch JOB` and `depthbatch validate JOB` as written ("" = not given).
struct JobFlags {
    std::string frames, device, output_path, chunk, range, summary, grace;
    std::vector<std::string> sets;  ///< --set KEY=VALUE, in order (YAML values)
    bool overwrite = false, skip_existing = false;
    std::string threads;        ///< kept as written and checked by the job reader: "010" is 10, never octal 8
    bool frames_given = false;  ///< --frames was on the command line (even with an empty value)
    bool dry_run = false;       ///< --dry-run: the caller validates instead of rendering (not read here)
};

/// The error text for flag `name` given an empty value (an unset variable in the command): names the flag.
std::string empty_value_error(const std::string& name);

/// The first argument of `argv` (argv[0] is the program) that is a long flag with '=' and nothing after it
/// ("--summary=": an unset variable), without the '='; "" when none. CLI11 would take the next argument as its value
/// (`--summary= --skip-existing` wrote a summary named --skip-existing), so the command line refuses it first.
std::string flag_with_empty_equals(int argc, const char* const* argv);

/// load_job(`job_path`) with `flags` applied: each --set, then each flag standing for a key as an override that
/// names the flag in an error about its value and takes the value as written (a path 'take #2/d.####.exr' is that
/// path). Then this run's frames: render.frames from --frames (parse_frame_spec; ConfigError "--frames: ..."; an
/// empty --frames is "--frames is empty ..."), render.range from --range (parse_frame_range), render.chunk_index
/// and chunk_count from --chunk (parse_chunk). Throws what load_job throws and ConfigError (exit 2) for the flags.
JobConfig load_job_with_flags(const std::string& job_path, const JobFlags& flags);

}  // namespace depthbatch
