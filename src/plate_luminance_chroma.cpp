#include "plate_luminance_chroma.h"

#include "depthbatch/error.h"

#include <OpenEXR/ImfArray.h>
#include <OpenEXR/ImfAttribute.h>
#include <OpenEXR/ImfDoubleAttribute.h>
#include <OpenEXR/ImfFloatAttribute.h>
#include <OpenEXR/ImfHeader.h>
#include <OpenEXR/ImfIntAttribute.h>
#include <OpenEXR/ImfMatrixAttribute.h>
#include <OpenEXR/ImfRgbaFile.h>
#include <OpenEXR/ImfStringAttribute.h>
#include <OpenEXR/ImfVecAttribute.h>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace depthbatch {
namespace {

bool is_exr_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    unsigned char magic[4] = {0, 0, 0, 0};
    f.read(reinterpret_cast<char*>(magic), 4);
    return f && magic[0] == 0x76 && magic[1] == 0x2f && magic[2] == 0x31 && magic[3] == 0x01;
}

/// OpenEXR header attributes -> OIIO metadata, for the files OIIO cannot open (luminance/chroma).
/// OIIO's EXR reader renames a few standard attributes; the same renames are applied here.
void copy_exr_attributes(const Imf::Header& header, OIIO::ImageSpec& spec) {
    static const std::pair<const char*, const char*> renames[] = {
        {"owner", "Copyright"}, {"comments", "ImageDescription"}, {"capDate", "DateTime"}};
    static const char* skipped[] = {"channels", "compression", "dataWindow", "displayWindow", "lineOrder",
                                    "tiles",    "type",        "chunkCount", "version"};
    for (auto it = header.begin(); it != header.end(); ++it) {
        std::string name = it.name();
        if (std::find_if(std::begin(skipped), std::end(skipped), [&](const char* s) { return name == s; }) !=
            std::end(skipped))
            continue;
        for (const auto& [from, to] : renames)
            if (name == from) name = to;
        const Imf::Attribute& a = it.attribute();
        if (auto* s = dynamic_cast<const Imf::StringAttribute*>(&a)) spec.attribute(name, s->value());
        else if (auto* i = dynamic_cast<const Imf::IntAttribute*>(&a)) spec.attribute(name, i->value());
        else if (auto* f = dynamic_cast<const Imf::FloatAttribute*>(&a)) spec.attribute(name, f->value());
        else if (auto* d = dynamic_cast<const Imf::DoubleAttribute*>(&a))
            spec.attribute(name, static_cast<float>(d->value()));
        else if (auto* v = dynamic_cast<const Imf::V2fAttribute*>(&a))
            spec.attribute(name, OIIO::TypeDesc(OIIO::TypeDesc::FLOAT, OIIO::TypeDesc::VEC2), &v->value());
        else if (auto* v = dynamic_cast<const Imf::V2iAttribute*>(&a))
            spec.attribute(name, OIIO::TypeDesc(OIIO::TypeDesc::INT, OIIO::TypeDesc::VEC2), &v->value());
        else if (auto* m = dynamic_cast<const Imf::M44fAttribute*>(&a))
            spec.attribute(name, OIIO::TypeMatrix44, &m->value());
        else if (auto* m = dynamic_cast<const Imf::M33fAttribute*>(&a))
            spec.attribute(name, OIIO::TypeMatrix33, &m->value());
        // other attribute types (chromaticities, keycode, ...) are not carried
    }
}

}  // namespace

bool is_luminance_chroma_exr(const std::string& path) {
    if (!is_exr_file(path)) return false;
    try {
        Imf::RgbaInputFile file(path.c_str());
        return (file.channels() & Imf::WRITE_C) != 0;
    } catch (const std::exception&) {
        return false;
    }
}

/// Luminance/chroma EXR through Imf::RgbaInputFile: header only (pixels = false) or everything.
/// RgbaInputFile reconstructs subsampled chroma and converts YCA to RGBA with the luminance weights of the
/// file's chromaticities (ImfRgbaYca.h: reconstructChromaHoriz/Vert, YCAtoRGBA); a Y-only file gives R=G=B=Y.
void read_luminance_chroma(PlateInfo& info, OIIO::ImageBuf* pixels) {
    Imf::RgbaInputFile file(info.path.c_str());
    const Imf::Header& header = file.header();
    const Imath::Box2i dw = file.dataWindow(), disp = file.displayWindow();
    const bool alpha = (file.channels() & Imf::WRITE_A) != 0;
    const int width = dw.max.x - dw.min.x + 1, height = dw.max.y - dw.min.y + 1;
    OIIO::ImageSpec spec(width, height, alpha ? 4 : 3, OIIO::TypeDesc::HALF);
    spec.x = dw.min.x;
    spec.y = dw.min.y;
    spec.full_x = disp.min.x;
    spec.full_y = disp.min.y;
    spec.full_width = disp.max.x - disp.min.x + 1;
    spec.full_height = disp.max.y - disp.min.y + 1;
    spec.channelnames = alpha ? std::vector<std::string>{"R", "G", "B", "A"} : std::vector<std::string>{"R", "G", "B"};
    spec.alpha_channel = alpha ? 3 : -1;
    copy_exr_attributes(header, spec);
    info.format = "openexr";
    info.file_spec = spec;
    info.luminance_chroma = true;
    info.r = 0, info.g = 1, info.b = 2, info.a = alpha ? 3 : -1;
    info.own_depth.clear();
    info.other_depth.clear();
    if (!pixels) return;

    Imf::Array2D<Imf::Rgba> px(height, width);
    file.setFrameBuffer(&px[0][0] - dw.min.x - static_cast<ptrdiff_t>(dw.min.y) * width, 1, width);
    file.readPixels(dw.min.y, dw.max.y);
    if (!file.isComplete()) throw InputError("the file is incomplete (truncated)");
    OIIO::ImageSpec fs = spec;
    fs.set_format(OIIO::TypeDesc::FLOAT);
    fs.channelformats.clear();
    pixels->reset(fs, OIIO::InitializePixels::No);
    float* out = static_cast<float*>(pixels->localpixels());
    const int nch = spec.nchannels;
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            const Imf::Rgba& p = px[y][x];
            float* o = out + (static_cast<size_t>(y) * width + x) * nch;
            o[0] = p.r;
            o[1] = p.g;
            o[2] = p.b;
            if (alpha) o[3] = p.a;
        }
}

}  // namespace depthbatch
