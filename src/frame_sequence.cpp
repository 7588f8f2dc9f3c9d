#include "depthbatch/frame_sequence.h"

#include "depthbatch/error.h"
#include "depthbatch/log.h"
#include "depthbatch/plate.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace depthbatch {

namespace {
int to_int(const std::string& text, const std::string& item) {
    try {
        size_t used = 0;
        long v = std::stol(text, &used);
        if (used != text.size() || v < INT_MIN / 2 || v > INT_MAX / 2) throw std::out_of_range(text);
        return static_cast<int>(v);
    } catch (const std::exception&) {
        throw ConfigError("frame spec item '" + item + "': '" + text + "' is not a frame number");
    }
}
}  // namespace

std::vector<int> parse_frame_spec(const std::string& spec) {
    constexpr long long kMaxFrames = 1'000'000;
    static const std::regex item_re(R"(^\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*(?:[xX:]\s*(\d+))?)?\s*$)");
    std::vector<int> frames;  // sorted and made unique at the end
    std::stringstream ss(spec);
    std::string item;
    bool any = false;
    while (std::getline(ss, item, ',')) {
        any = true;
        std::smatch m;
        if (!std::regex_match(item, m, item_re))
            throw ConfigError("frame spec '" + spec + "': cannot read item '" + item +
                              "' (expected N, A-B, A-BxSTEP or A-B:STEP)");
        int first = to_int(m[1], item);
        int last = m[2].matched ? to_int(m[2], item) : first;
        int step = m[3].matched ? to_int(m[3], item) : 1;
        if (last < first) throw ConfigError("frame spec '" + spec + "': range '" + item + "' ends before it starts");
        if (step < 1) throw ConfigError("frame spec '" + spec + "': step in '" + item + "' must be >= 1");
        // A bound on the whole spec, not per item: "1-999999,1-999999x2,..." must not take gigabytes either.
        // A million frames is over eleven hours at 24 fps.
        if ((static_cast<long long>(last) - first) / step + 1 + static_cast<long long>(frames.size()) > kMaxFrames)
            throw ConfigError("frame spec '" + spec + "': range '" + item + "' makes more than " +
                              std::to_string(kMaxFrames) + " frames");
        for (long long f = first; f <= last; f += step) frames.push_back(static_cast<int>(f));
    }
    if (!any || frames.empty()) throw ConfigError("frame spec '" + spec + "' names no frames");
    std::sort(frames.begin(), frames.end());
    frames.erase(std::unique(frames.begin(), frames.end()), frames.end());
    return frames;
}

std::vector<int> chunk_frames(const std::vector<int>& frames, int index, int count) {
    if (count < 1 || index < 1 || index > count)
        throw ConfigError("chunk " + std::to_string(index) + "/" + std::to_string(count) +
                          ": expected I/N with 1 <= I <= N (the I-th of N chunks, counted from 1)");
    const long long n = static_cast<long long>(frames.size());
    const auto begin = static_cast<size_t>(n * (index - 1) / count);
    const auto end = static_cast<size_t>(n * index / count);
    return std::vector<int>(frames.begin() + static_cast<std::ptrdiff_t>(begin),
                            frames.begin() + static_cast<std::ptrdiff_t>(end));
}

std::vector<int> frames_in_range(const std::vector<int>& frames, int first, int last) {
    std::vector<int> out;
    for (int f : frames)
        if (f >= first && f <= last) out.push_back(f);
    return out;
}

std::pair<int, int> parse_frame_range(const std::string& text) {
    // Decimal integers as written ("010" is 10), like every other number the user gives.
    static const std::regex range_re(R"(^\s*(-?\d{1,9})\s*-\s*(-?\d{1,9})\s*$)");
    std::smatch m;
    if (!std::regex_match(text, m, range_re))
        throw ConfigError("--range '" + printable(text) +
                          "': expected FIRST-LAST, e.g. 1001-1010 (an engine's "
                          "<STARTFRAME>-<ENDFRAME>)");
    const std::pair<int, int> range{std::stoi(m[1]), std::stoi(m[2])};
    if (range.second < range.first) throw ConfigError("--range '" + text + "' ends before it starts");
    return range;
}

Chunk parse_chunk(const std::string& text) {
    static const std::regex chunk_re(R"(^\s*(\d{1,9})\s*/\s*(\d{1,9})\s*$)");
    std::smatch m;
    if (!std::regex_match(text, m, chunk_re) || std::stoi(m[1]) < 1 || std::stoi(m[1]) > std::stoi(m[2]))
        throw ConfigError("--chunk '" + printable(text) +
                          "': expected I/N with 1 <= I <= N, e.g. 3/8 (the 3rd "
                          "of 8 chunks; an unset $SLURM_ARRAY_TASK_ID gives '/8')");
    return {std::stoi(m[1]), std::stoi(m[2])};
}

std::string format_frame_spec(const std::vector<int>& frames) {
    std::ostringstream out;
    size_t i = 0;
    while (i < frames.size()) {
        size_t j = i + 1;
        long step = j < frames.size() ? static_cast<long>(frames[j]) - frames[i] : 1;
        while (j < frames.size() && static_cast<long>(frames[j]) - frames[j - 1] == step) ++j;
        if (i) out << ',';
        if (j - i >= 3) {
            out << frames[i] << '-' << frames[j - 1];
            if (step != 1) out << 'x' << step;
            i = j;
        } else {
            out << frames[i];
            ++i;
        }
    }
    return out.str();
}

std::string hide_escaped_marks(const std::string& text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '#' || text[i + 1] == '@'))
            out += text[++i] == '#' ? '\x01' : '\x02';
        else out += text[i];
    }
    return out;
}

std::string restore_escaped_marks(std::string text) {
    for (char& c : text) c = c == '\x01' ? '#' : c == '\x02' ? '@' : c;
    return text;
}

FrameSequence::FrameSequence(const std::string& pattern) : pattern_(pattern) {
    // One token: runs of '#', runs of '@', %0Nd / %d, $FN / $F.
    static const std::regex token_re(R"((#+)|(@+)|%(0?(\d+))?d|\$F(\d*))");
    // Only the file name holds the token: '#' or '@' in a folder name ("/shows/a#b/") is left alone.
    const size_t name_start = pattern.rfind('/') == std::string::npos ? 0 : pattern.rfind('/') + 1;
    // A '#' or '@' of the file name's own is written \# or \@ ("take\#2.####.exr"): held apart while the token is
    // looked for, then put back, literal.
    const std::string name = hide_escaped_marks(pattern.substr(name_start));
    const auto literal = restore_escaped_marks;
    std::vector<std::smatch> tokens(std::sregex_iterator(name.begin(), name.end(), token_re), std::sregex_iterator());
    if (tokens.empty())
        throw ConfigError("path pattern '" + pattern +
                          "' has no frame-number token in its file name (use ####, %04d, $F4 or @@@@)");
    if (tokens.size() > 1)
        throw ConfigError("path pattern '" + pattern +
                          "' has more than one frame-number token (a '#' or '@' that "
                          "belongs to the file name is written \\# or \\@)");
    const std::smatch& m = tokens.front();
    if (m[1].matched) padding_ = static_cast<int>(m[1].length());
    else if (m[2].matched) padding_ = static_cast<int>(m[2].length());
    else if (m[4].matched || (m[5].matched && m[5].length())) {
        // "%0123456789012d" or "$F99999999999" (found by scripts/fuzz: std::stoi threw out_of_range, an
        // "unexpected" exit 5): more than two significant digits is too wide, refused just below.
        const std::string digits = m[4].matched ? m[4].str() : m[5].str();
        const size_t significant = digits.find_first_not_of('0');
        padding_ = significant == std::string::npos ? 0 : digits.size() - significant > 2 ? 99 : std::stoi(digits);
    } else padding_ = 0;
    if (padding_ > 16) throw ConfigError("path pattern '" + pattern + "': padding over 16 digits");
    prefix_ = pattern.substr(0, name_start) + literal(name.substr(0, static_cast<size_t>(m.position())));
    suffix_ = literal(name.substr(static_cast<size_t>(m.position() + m.length())));
}

std::string FrameSequence::path(int frame) const {
    char digits[48];
    std::snprintf(digits, sizeof digits, "%0*d", padding_, frame);
    return prefix_ + digits + suffix_;
}

std::vector<int> FrameSequence::frames_on_disk() const {
    const fs::path pre(prefix_);
    // The token sits in the file name: split the prefix into folder and file-name start.
    fs::path dir = pre.has_filename() ? pre.parent_path() : pre;
    const std::string name_prefix = pre.has_filename() ? pre.filename().string() : std::string();
    if (suffix_.find('/') != std::string::npos) return {};  // token in a folder name: not scanned
    std::vector<int> frames;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir.empty() ? fs::path(".") : dir, ec)) {
        std::error_code file_ec;
        if (!entry.is_regular_file(file_ec)) continue;  // a folder named like a frame is not a frame
        const std::string name = entry.path().filename().string();
        if (name.size() <= name_prefix.size() + suffix_.size()) continue;
        if (name.compare(0, name_prefix.size(), name_prefix) != 0) continue;
        if (name.compare(name.size() - suffix_.size(), suffix_.size(), suffix_) != 0) continue;
        const std::string num = name.substr(name_prefix.size(), name.size() - name_prefix.size() - suffix_.size());
        if (!std::regex_match(num, std::regex(R"(-?\d{1,10})"))) continue;
        long v = std::stol(num);
        if (v < INT_MIN / 2 || v > INT_MAX / 2) continue;
        if (fs::path(path(static_cast<int>(v))).filename().string() != name) continue;
        frames.push_back(static_cast<int>(v));
    }
    std::sort(frames.begin(), frames.end());
    return frames;
}

std::vector<int> sequence_through(const std::vector<int>& found) {
    if (found.size() < 2) return found;
    long long step = 0;
    for (size_t i = 1; i < found.size(); ++i) step = std::gcd(step, static_cast<long long>(found[i]) - found[i - 1]);
    if (step < 1) return found;  // not sorted and unique: nothing to fill
    const long long count = (static_cast<long long>(found.back()) - found.front()) / step + 1;
    constexpr long long kMaxFrames = 1'000'000;
    if (count > kMaxFrames)
        throw ConfigError("input.frames not set: the frames on disk (" + format_frame_spec(found) + ") span " +
                          std::to_string(count) + " frames at step " + std::to_string(step) + ", over " +
                          std::to_string(kMaxFrames) + ": set input.frames to the frames to render");
    std::vector<int> out;
    out.reserve(static_cast<size_t>(count));
    for (long long f = found.front(); f <= found.back(); f += step) out.push_back(static_cast<int>(f));
    return out;
}

std::vector<int> shot_frames(const InputSettings& input) {
    return input.frames.empty() ? sequence_through(FrameSequence(input.path).frames_on_disk()) : input.frames;
}

}  // namespace depthbatch
