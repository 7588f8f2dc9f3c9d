// depthbatch — the review sheet from the command line and after a render: see review.h.
#include "depthbatch/review.h"

#include "job_outputs.h"

#include "depthbatch/error.h"
#include "depthbatch/install_layout.h"
#include "depthbatch/log.h"

namespace depthbatch {

namespace fs = std::filesystem;

ReviewTarget review_target(const JobConfig& job, const std::string& out_flag, const fs::path& cwd) {
    if (!out_flag.empty()) return {resolve_user_path(cwd, out_flag), "review --out"};
    if (!job.pipeline.review.empty()) return {job.pipeline.review, "pipeline.review"};
    return {default_review_path(job), "review (default path)"};
}

void run_review(const JobConfig& job, const std::string& out_flag, const std::vector<std::string>& summary_flags,
                std::ostream& out) {
    const ReviewTarget target = review_target(job, out_flag, fs::current_path());
    const ReviewPaths sheet = review_paths(target.out, target.key);  // .png or .html, refused before anything is read
    std::vector<std::string> summaries;
    for (const auto& s : summary_flags) summaries.push_back(resolve_user_path(fs::current_path(), s));
    const std::string held = write_review(job, target.out, summaries, target.key);
    out << "wrote " << sheet.png << " and " << sheet.html << " (" << held << ")\n";
}

void review_after_render(const JobConfig& job) {
    if (job.pipeline.review.empty()) return;
    try {  // the sheet is a convenience: it never changes the job's exit code
        std::vector<std::string> summaries;
        if (!job.pipeline.summary.empty()) summaries.push_back(job.pipeline.summary);
        const std::string held = write_review(job, job.pipeline.review, summaries);
        const ReviewPaths sheet = review_paths(job.pipeline.review, "pipeline.review");
        log_info("review: ", sheet.png, " and ", sheet.html, " (", held, ")");
    } catch (const Error& e) {
        log_warning("pipeline.review: ", e.what());
    }
}

}  // namespace depthbatch
