// depthbatch (internal) — what `depthbatch review` runs: the script and the Python (include/depthbatch/review.h),
// and the line of what it printed that a failure shows. Apart from src/review.cpp for the unit tests.
#pragma once

#include <filesystem>
#include <string>

namespace depthbatch::detail {

/// review.py: in `tools_env` ($DEPTHBATCH_TOOLS: a folder holding review.py, or a checkout holding
/// tools/review.py) when it is not empty, else the data folder's tools/review.py beside the executable
/// (install_layout.h: P/share/depthbatch/tools/review.py; in the build tree a link into the source tree).
/// RenderError naming where it was looked for when there is none.
std::filesystem::path find_review_script(const std::string& tools_env);

struct ReviewPython {
    std::string exe;
    std::string origin;  ///< how it was chosen, for messages: "$DEPTHBATCH_PYTHON", "the tools venv", "python3 on PATH"
};

/// `python_env` ($DEPTHBATCH_PYTHON) when it is not empty, else `configured` (the venv this build was configured
/// with) while it exists, else the first executable python3 in `path` ($PATH). RenderError naming the modules
/// review needs and DEPTHBATCH_PYTHON when there is none. Which modules the chosen one lacks, review.py says.
ReviewPython find_review_python(const std::string& python_env, const std::string& configured, const std::string& path);

/// The line of `said` that tells what went wrong: the last "review: " line (review.py's own, without that
/// prefix; `from_script` true), else the last non-blank line (Python could not start, or died before review.py
/// could speak). "" when nothing was said.
std::string last_meaningful_line(const std::string& said, bool& from_script);

}  // namespace depthbatch::detail
