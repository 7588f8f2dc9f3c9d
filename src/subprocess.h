// depthbatch (internal) — running another program and reading what it prints (sbatch, scontrol, the review
// script). posix_spawnp: PATH is searched, no shell, so arguments are never re-parsed.
#pragma once

#include <string>
#include <vector>

namespace depthbatch::detail {

/// Run `argv` with `extra_env` ("NAME=value") added to this environment; return its stdout and stderr together.
/// `status` is its exit code, 128 + N for a signal N, or -1 when it could not be started (the text then says
/// why).
std::string run_capture(const std::vector<std::string>& argv, int& status,
                        const std::vector<std::string>& extra_env = {});

}  // namespace depthbatch::detail
