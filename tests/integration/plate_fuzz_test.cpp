// Issue 13, plate fuzz: damaged plate files (truncated, bit-flipped, zero-filled at seeded random offsets) of
// every format depthbatch reads. Each run ends with exit 0 and a complete EXR of finite depth, or exit 3
// naming the frame and leaving no file; never a crash, a hang, an "unexpected" error or a partial EXR.
// DEPTHBATCH_PLATE_FUZZ=N sets the variants per file (default 6, 36 runs; scripts/plate-fuzz runs 50 each).
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>

using namespace depthbatch::test;

namespace {

std::string mutate(std::string bytes, std::mt19937& rng, int kind, std::string* what) {
    std::uniform_int_distribution<size_t> offset(16, bytes.size() - 1);
    if (kind == 0) {
        const size_t at = offset(rng);
        *what = "truncated at " + std::to_string(at);
        bytes.resize(at);
    } else if (kind == 1) {
        const int flips = std::uniform_int_distribution<int>(1, 16)(rng);
        *what = std::to_string(flips) + " bits flipped at";
        for (int i = 0; i < flips; ++i) {
            const size_t at = offset(rng);
            bytes[at] = static_cast<char>(bytes[at] ^ (1 << std::uniform_int_distribution<int>(0, 7)(rng)));
            *what += " " + std::to_string(at);
        }
    } else {
        const size_t at = offset(rng);
        const size_t n = std::min(bytes.size() - at, std::uniform_int_distribution<size_t>(1, 4096)(rng));
        *what = "zero-filled " + std::to_string(n) + " bytes at " + std::to_string(at);
        std::fill(bytes.begin() + static_cast<long>(at), bytes.begin() + static_cast<long>(at + n), '\0');
    }
    return bytes;
}

}  // namespace

TEST(PlateFuzz, DamagedPlatesRenderOrFailCleanly) {
    const char* env = std::getenv("DEPTHBATCH_PLATE_FUZZ");
    const int variants = env && *env ? std::atoi(env) : 6;
    const std::vector<fs::path> files = {
        samples_dir() / "exr/t08.exr",                      // half RGBA, windows
        samples_dir() / "exr/BrightRingsNanInf.exr",        // NaN/Inf
        samples_dir() / "exr/flower-rgb-contig-16.tif",     // 16-bit TIFF
        samples_dir() / "exr/dpx_nuke_10bits_rgb.dpx",      // 10-bit DPX
        samples_dir() / "plates/sintel/sintel.1001.png",    // 8-bit PNG
        samples_dir() / "plates/bedroom/bedroom.1001.jpg",  // JPEG
    };
    TempDir dir;
    write_p_mean(dir / "pmean.pt");
    int rendered = 0, refused = 0;
    for (const fs::path& file : files) {
        const std::string original = read_bytes(file);
        ASSERT_GT(original.size(), 64u) << file;
        std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>{}(file.filename().string())));
        const std::string ext = file.extension().string();
        for (int v = 0; v < variants; ++v) {
            std::string what;
            const std::string damaged = mutate(original, rng, v % 3, &what);
            const fs::path case_dir = dir / (file.stem().string() + "-" + std::to_string(v));
            fs::create_directories(case_dir);
            write_file(case_dir / ("p.1001" + ext), damaged);
            const fs::path job = write_job(case_dir / "job.yaml", "input: {path: p.####" + ext +
                                                                      "}\n"
                                                                      "model: {path: '" +
                                                                      (dir / "pmean.pt").string() +
                                                                      "', size: plate}\n"
                                                                      "output: {path: out/d.####.exr}\n");
            SCOPED_TRACE(file.filename().string() + " " + what);
            const auto r = run_program("timeout", {"120", DEPTHBATCH_BIN, job.string(), "-q"});
            const std::vector<std::string> out = list_dir(case_dir / "out");
            if (r.exit_code == 0) {
                ++rendered;
                ASSERT_EQ(out, (std::vector<std::string>{"d.1001.exr"})) << r.output;
                size_t bad = 0;
                for (float d : depth_values(case_dir / "out/d.1001.exr")) bad += !std::isfinite(d);
                EXPECT_EQ(bad, 0u) << "non-finite depth written";
            } else {
                ++refused;
                EXPECT_EQ(r.exit_code, exit_status(ExitCode::Input))
                    << r.output;  // 124: hung; 134/139 (-1 here): crashed; 5: unexpected
                EXPECT_TRUE(r.output.find("frame 1001") != std::string::npos ||
                            r.output.find("p.1001" + ext) != std::string::npos)
                    << r.output;
                EXPECT_TRUE(out.empty()) << "a refused frame leaves nothing";
            }
        }
    }
    std::cout << "plate fuzz: " << rendered << " damaged plates rendered, " << refused << " refused with exit 3\n";
}
