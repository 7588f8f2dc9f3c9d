// depthbatch — is a plate file complete? (plate_integrity.h has the rules per format)
#include "plate_integrity.h"

#include "depthbatch/error.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace depthbatch {
namespace {

/// A file read in pieces by offset; reads past the end give fewer bytes.
struct File {
    std::ifstream in;
    uint64_t size = 0;
    explicit File(const std::string& path) : in(path, std::ios::binary) {
        if (!in) return;
        in.seekg(0, std::ios::end);
        size = static_cast<uint64_t>(in.tellg());
    }
    std::string read(uint64_t offset, uint64_t n) {
        if (offset >= size) return "";
        n = std::min(n, size - offset);
        std::string out(static_cast<size_t>(n), '\0');
        in.clear();
        in.seekg(static_cast<std::streamoff>(offset));
        in.read(out.data(), static_cast<std::streamsize>(n));
        out.resize(static_cast<size_t>(in.gcount()));
        return out;
    }
};

uint64_t le(const std::string& b, size_t at, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(b[at + i]);
    return v;
}
uint64_t be(const std::string& b, size_t at, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = v << 8 | static_cast<unsigned char>(b[at + i]);
    return v;
}

[[noreturn]] void truncated(const std::string& what, uint64_t need, uint64_t size) {
    throw InputError("truncated: " + what + " ends at byte " + std::to_string(need) + " but the file has " +
                     std::to_string(size) + " bytes (a copy cut short?)");
}

// ---- OpenEXR -------------------------------------------------------------------------------------------------

struct ExrPart {
    bool tiled = false;
    int64_t chunk_count = -1;  // the chunkCount attribute, else computed
    int32_t ymin = 0, ymax = -1, xmin = 0, xmax = -1;
    int compression = 0;
    bool has_tiles = false;
    uint32_t tile_w = 0, tile_h = 0;
    int level_mode = 0, round_mode = 0;
};

int lines_per_chunk(int compression) {
    switch (compression) {
    case 0:
    case 1:
    case 2: return 1;  // none, RLE, ZIPS
    case 3:
    case 5: return 16;  // ZIP, PXR24
    case 4:
    case 6:
    case 7:
    case 8: return 32;   // PIZ, B44, B44A, DWAA
    case 9: return 256;  // DWAB
    default: return -1;
    }
}

int64_t level_count(int64_t extent, int round_mode) {
    int64_t n = 1;
    while (extent > 1) {
        extent = round_mode ? (extent + 1) / 2 : extent / 2;
        ++n;
    }
    return n;
}
int64_t level_size(int64_t extent, int level, int round_mode) {
    for (int i = 0; i < level; ++i) extent = round_mode ? (extent + 1) / 2 : extent / 2;
    return std::max<int64_t>(extent, 1);
}

/// The number of chunks (the offset table's length) of a part, or -1 when it cannot be told.
int64_t exr_chunks(const ExrPart& p) {
    if (p.chunk_count >= 0) return p.chunk_count;
    const int64_t w = static_cast<int64_t>(p.xmax) - p.xmin + 1, h = static_cast<int64_t>(p.ymax) - p.ymin + 1;
    if (w <= 0 || h <= 0) return -1;
    if (!p.tiled) {
        const int lines = lines_per_chunk(p.compression);
        return lines > 0 ? (h + lines - 1) / lines : -1;
    }
    if (!p.has_tiles || p.tile_w == 0 || p.tile_h == 0) return -1;
    auto tiles = [&](int64_t ew, int64_t eh) {
        return ((ew + p.tile_w - 1) / p.tile_w) * ((eh + p.tile_h - 1) / p.tile_h);
    };
    int64_t n = 0;
    if (p.level_mode == 0) return tiles(w, h);  // one level
    const int64_t lx = level_count(w, p.round_mode), ly = level_count(h, p.round_mode);
    if (p.level_mode == 1) {  // mipmap
        for (int l = 0; l < std::max(lx, ly); ++l)
            n += tiles(level_size(w, l, p.round_mode), level_size(h, l, p.round_mode));
        return n;
    }
    if (p.level_mode == 2) {  // ripmap
        for (int y = 0; y < ly; ++y)
            for (int x = 0; x < lx; ++x) n += tiles(level_size(w, x, p.round_mode), level_size(h, y, p.round_mode));
        return n;
    }
    return -1;
}

void check_exr(File& f) {
    // Headers of ordinary files fit well inside the first MiB; longer ones are left alone. The tables are read apart.
    const std::string b = f.read(0, std::min<uint64_t>(f.size, 1u << 20));
    if (b.size() < 8 || le(b, 0, 4) != 20000630u) return;
    const uint32_t version = static_cast<uint32_t>(le(b, 4, 4));
    const bool single_tiled = version & 0x200, deep = version & 0x800, multipart = version & 0x1000;
    if (deep) return;
    size_t at = 8;
    std::vector<ExrPart> parts;
    for (;;) {  // headers
        ExrPart part;
        part.tiled = single_tiled;
        for (;;) {  // attributes: name\0 type\0 size value; an empty name ends the header
            const size_t name_end = b.find('\0', at);
            if (name_end == std::string::npos) return;
            const std::string name = b.substr(at, name_end - at);
            at = name_end + 1;
            if (name.empty()) break;
            const size_t type_end = b.find('\0', at);
            if (type_end == std::string::npos || type_end + 5 > b.size()) return;
            const std::string type = b.substr(at, type_end - at);
            at = type_end + 1;
            const uint64_t n = le(b, at, 4);
            at += 4;
            if (n > b.size() - at) return;
            if (name == "dataWindow" && type == "box2i" && n == 16) {
                part.xmin = static_cast<int32_t>(le(b, at, 4)), part.ymin = static_cast<int32_t>(le(b, at + 4, 4));
                part.xmax = static_cast<int32_t>(le(b, at + 8, 4)), part.ymax = static_cast<int32_t>(le(b, at + 12, 4));
            } else if (name == "compression" && n == 1) {
                part.compression = static_cast<unsigned char>(b[at]);
            } else if (name == "chunkCount" && n == 4) {
                part.chunk_count = static_cast<int32_t>(le(b, at, 4));
            } else if (name == "type" && type == "string") {
                const std::string t = b.substr(at, n);
                if (t == "deeptile" || t == "deepscanline") return;
                part.tiled = t == "tiledimage";
            } else if (name == "tiles" && type == "tiledesc" && n == 9) {
                part.has_tiles = true;
                part.tile_w = static_cast<uint32_t>(le(b, at, 4)),
                part.tile_h = static_cast<uint32_t>(le(b, at + 4, 4));
                const unsigned mode = static_cast<unsigned char>(b[at + 8]);
                part.level_mode = mode & 0xf, part.round_mode = (mode >> 4) & 0xf;
            }
            at += n;
        }
        parts.push_back(part);
        if (!multipart) break;
        if (at >= b.size()) return;
        if (b[at] == '\0') {  // the empty header ending the list
            ++at;
            break;
        }
    }
    // Offset tables, one per part in order; then the chunk at the largest offset must end inside the file.
    uint64_t last = 0;
    for (const ExrPart& p : parts) {
        const int64_t n = exr_chunks(p);
        if (n < 0 || n > (1 << 26)) return;
        if (at + 8 * static_cast<uint64_t>(n) > f.size)
            truncated("the chunk offset table", at + 8 * static_cast<uint64_t>(n), f.size);
        const std::string table = f.read(at, 8 * static_cast<uint64_t>(n));
        for (int64_t i = 0; i < n; ++i, at += 8) {
            const uint64_t off = le(table, static_cast<size_t>(8 * i), 8);
            if (off >= f.size) truncated("chunk " + std::to_string(i) + " (offset table)", off, f.size);
            last = std::max(last, off);
        }
    }
    if (last == 0) return;
    // The chunk header: [part number] then y (scanline) or 4 tile coordinates, then the packed data size.
    bool tiled = parts.front().tiled;
    const std::string h = f.read(last, 24);
    size_t p = 0;
    if (multipart) {
        if (h.size() < 4) truncated("the last chunk's header", last + 4, f.size);
        const uint64_t part = le(h, 0, 4);
        if (part >= parts.size()) return;
        tiled = parts[part].tiled;
        p = 4;
    }
    p += tiled ? 16 : 4;
    if (h.size() < p + 4) truncated("the last chunk's header", last + p + 4, f.size);
    const uint64_t end = last + p + 4 + le(h, p, 4);
    if (end > f.size) truncated("the last chunk", end, f.size);
}

// ---- PNG, JPEG ----------------------------------------------------------------------------------------------

void check_png(File& f) {
    uint64_t at = 8;
    for (int guard = 0; guard < (1 << 22); ++guard) {
        const std::string h = f.read(at, 8);
        if (h.size() < 8) truncated("the PNG chunk at byte " + std::to_string(at) + " (no IEND)", at + 8, f.size);
        const uint64_t end = at + 12 + be(h, 0, 4);
        if (end > f.size) truncated("the PNG " + h.substr(4, 4) + " chunk", end, f.size);
        if (h.compare(4, 4, "IEND") == 0) return;
        at = end;
    }
}

void check_jpeg(File& f) {
    const uint64_t n = std::min<uint64_t>(f.size, 256);
    const std::string tail = f.read(f.size - n, n);
    if (tail.find("\xFF\xD9") == std::string::npos)
        throw InputError("truncated: no JPEG end-of-image marker (FFD9) at the end of the file (" +
                         std::to_string(f.size) + " bytes; a copy cut short?)");
}

// ---- DPX, TIFF ----------------------------------------------------------------------------------------------

void check_dpx(File& f) {
    const std::string h = f.read(0, 832);
    if (h.size() < 832) truncated("the DPX header", 832, f.size);
    const bool big = h.compare(0, 4, "SDPX") == 0;
    if (!big && h.compare(0, 4, "XPDS") != 0) return;
    auto u32 = [&](size_t at) { return big ? be(h, at, 4) : le(h, at, 4); };
    auto u16 = [&](size_t at) { return big ? be(h, at, 2) : le(h, at, 2); };
    const uint64_t total = u32(16);
    if (total != 0 && total != 0xffffffffu && total > f.size)
        truncated("the DPX file (its header's file size)", total, f.size);
    const uint64_t width = u32(772), height = u32(776);
    const unsigned descriptor = static_cast<unsigned char>(h[800]), bits = static_cast<unsigned char>(h[803]);
    const uint64_t packing = u16(804), encoding = u16(806), offset = u32(808);
    if (encoding != 0 || offset == 0 || offset == 0xffffffffu || width == 0 || height == 0) return;
    int comps = 0;
    switch (descriptor) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 6:
    case 7:
    case 8: comps = 1; break;
    case 50: comps = 3; break;
    case 51:
    case 52: comps = 4; break;
    default: return;
    }
    uint64_t row = 0;
    const uint64_t values = width * comps;
    if (bits == 8) row = (values + 3) / 4 * 4;
    else if (bits == 16) row = (values * 2 + 3) / 4 * 4;
    else if (bits == 10 && packing != 0) row = (values + 2) / 3 * 4;
    else if (bits == 12 && packing != 0) row = values * 2 + (values * 2) % 4;
    else return;
    if (offset + row * height > f.size) truncated("the DPX image data", offset + row * height, f.size);
}

void check_tiff(File& f) {
    const std::string h = f.read(0, 8);
    if (h.size() < 8) return;
    const bool little = h.compare(0, 2, "II") == 0;
    if (!little && h.compare(0, 2, "MM") != 0) return;
    auto num = [&](const std::string& s, size_t at, int n) { return little ? le(s, at, n) : be(s, at, n); };
    if (num(h, 2, 2) != 42) return;  // BigTIFF (43) is left to the decoder
    const uint64_t ifd = num(h, 4, 4);
    const std::string cnt = f.read(ifd, 2);
    if (cnt.size() < 2) truncated("the TIFF directory", ifd + 2, f.size);
    const uint64_t entries = num(cnt, 0, 2);
    const std::string d = f.read(ifd + 2, entries * 12);
    if (d.size() < entries * 12) truncated("the TIFF directory", ifd + 2 + entries * 12, f.size);
    auto values = [&](size_t e) -> std::optional<std::vector<uint64_t>> {
        const uint64_t type = num(d, e + 2, 2), count = num(d, e + 4, 4);
        const int size = type == 3 ? 2 : type == 4 ? 4 : 0;
        if (size == 0 || count > (1u << 24)) return std::nullopt;
        std::string raw = count * size <= 4 ? d.substr(e + 8, 4) : f.read(num(d, e + 8, 4), count * size);
        if (raw.size() < count * size) truncated("a TIFF strip table", num(d, e + 8, 4) + count * size, f.size);
        std::vector<uint64_t> v(count);
        for (uint64_t i = 0; i < count; ++i) v[i] = num(raw, i * size, size);
        return v;
    };
    std::optional<std::vector<uint64_t>> offsets, counts;
    for (uint64_t i = 0; i < entries; ++i) {
        const uint64_t tag = num(d, i * 12, 2);
        if (tag == 273 || tag == 324) offsets = values(i * 12);
        if (tag == 279 || tag == 325) counts = values(i * 12);
    }
    if (!offsets || !counts || offsets->size() != counts->size()) return;
    for (size_t i = 0; i < offsets->size(); ++i) {
        const uint64_t end = (*offsets)[i] + (*counts)[i];
        if (end > f.size) truncated("TIFF strip/tile " + std::to_string(i), end, f.size);
    }
}

}  // namespace

void check_plate_complete(const std::string& path) {
    File f(path);
    if (!f.in) return;  // the decoder reports an unreadable file
    const std::string m = f.read(0, 8);
    std::string format;
    if (m.size() >= 4 && le(m, 0, 4) == 20000630u) format = "openexr";
    else if (m.size() == 8 && m == "\x89PNG\r\n\x1a\n") format = "png";
    else if (m.size() >= 3 && m.compare(0, 3, "\xFF\xD8\xFF") == 0) format = "jpeg";
    else if (m.size() >= 4 && (m.compare(0, 4, "SDPX") == 0 || m.compare(0, 4, "XPDS") == 0)) format = "dpx";
    else if (m.size() >= 4 && (m.compare(0, 4, "II*\0", 4) == 0 || m.compare(0, 4, "MM\0*", 4) == 0)) format = "tiff";
    if (format == "openexr") check_exr(f);
    else if (format == "png") check_png(f);
    else if (format == "jpeg") check_jpeg(f);
    else if (format == "dpx") check_dpx(f);
    else if (format == "tiff") check_tiff(f);
}

}  // namespace depthbatch
