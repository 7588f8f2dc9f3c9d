// depthbatch — the review sheet of a job (`depthbatch review JOB`, `pipeline.review`): a PNG with a contact sheet
// of up to 12 frames spread over the shot (plate thumbnail above its depth, frame numbers) and the per-frame
// 2nd/50th/98th percentiles of depth.Z with the frame-to-frame flicker curve, failed, skipped and missing frames
// marked; and the same as a self-contained HTML page beside it. Made from the files on disk (the EXRs and the
// metadata depthbatch wrote), so it works after a farm render of many chunks.
//
// The sheet is drawn by tools/review.py with matplotlib. The script is found like the model
// (install_layout.h): P/share/depthbatch/tools/review.py beside the executable (in the build tree a link to
// tools/review.py), or in $DEPTHBATCH_TOOLS (a folder holding review.py, or a checkout); no source-tree path is
// compiled in. The Python: $DEPTHBATCH_PYTHON, else the venv this build was configured with (CMake
// DEPTHBATCH_PYTHON) while it exists, else python3 on PATH; it must have matplotlib, numpy, OpenEXR and PIL.
// The script runs by its path with -B and PYTHONDONTWRITEBYTECODE=1 (no __pycache__ anywhere) and says what
// went wrong in one "review: ..." line, which is what the RenderError shows (-v: all it printed, traceback too).
#pragma once

#include "depthbatch/job_config.h"

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace depthbatch {

/// The sheet's two files for `out`: out.png and out.html beside it when `out` ends in .png, the same pair when it
/// ends in .html (any case: "S.PNG" is {S.PNG, S.html}). Any other ending (.jpg, none) is a ConfigError (exit 2)
/// naming `key`: the sheet is always PNG bytes, never in a file whose name says otherwise.
struct ReviewPaths {
    std::string png, html;
};
ReviewPaths review_paths(const std::string& out, const std::string& key);

/// Write the review sheet of `job` to `out` (review_paths: a .png or .html path names the pair; another ending is
/// refused before anything is read or drawn). `summaries`: JSON summaries of the job's
/// runs (run_job.h), whose failed and skipped frames are marked with their reasons. Frames come from
/// input.frames (else the plate frames on disk). Throws RenderError (exit 5) with the script's own one-line
/// message when the sheet cannot be made (no Python, a module missing, the script missing, an unwritable path);
/// nothing is published then, and no temporary is left (beside the sheet, nor the manifest in the temporary folder).
/// Paths that are not UTF-8 (a Latin-1 shot folder) reach the script byte for byte.
/// The sheet goes through the job's output guard (src/output/output_guard.h): `png` and its .html may be neither a
/// plate frame, the job file, the model nor another output of the job, and replace only an earlier review sheet
/// (ConfigError naming `key`, before anything is made). A job none of whose depth frames exist is an InputError
/// (exit 3), nothing written. Returns what the sheet holds, in one line ("22 of 24 frames rendered"), for the
/// caller to show (the library prints nothing of it).
std::string write_review(const JobConfig& job, const std::string& out, const std::vector<std::string>& summaries = {},
                         const std::string& key = "pipeline.review");

/// Where `depthbatch review JOB [--out OUT]` writes, and the name its errors give that choice: `out_flag` resolved
/// against `cwd` with key "review --out"; else the job's pipeline.review ("pipeline.review"); else
/// OUTPUT_FOLDER/JOB.review.png, the job file's stem in the folder of output.path ("review (default path)").
struct ReviewTarget {
    std::string out, key;
};
ReviewTarget review_target(const JobConfig& job, const std::string& out_flag, const std::filesystem::path& cwd);

/// `depthbatch review JOB [--out OUT] [--summary S]...`: the sheet at review_target (its ending checked before
/// anything is read), `summary_flags` resolved against the current folder, then "wrote PNG and HTML (WHAT IT
/// HOLDS)" on `out`. Throws as write_review does.
void run_review(const JobConfig& job, const std::string& out_flag, const std::vector<std::string>& summary_flags,
                std::ostream& out);

/// After a render that was not interrupted, the job's pipeline.review sheet (with its pipeline.summary marked):
/// logs "review: PNG and HTML (WHAT IT HOLDS)", or a warning "pipeline.review: WHY" when it cannot be made (the
/// sheet is a convenience: it never changes the job's exit code). Nothing without pipeline.review. Never throws
/// an Error.
void review_after_render(const JobConfig& job);

}  // namespace depthbatch
