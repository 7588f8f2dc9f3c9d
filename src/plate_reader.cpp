#include "depthbatch/plate.h"

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
#include <OpenImageIO/imagebufalgo.h>
#include <OpenImageIO/imageio.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <cstdio>

namespace depthbatch {
namespace {

std::string where(int frame, const std::string& path) {
    return "frame " + std::to_string(frame) + " (" + path + ")";
}

std::vector<std::string> split(const std::string& name) {
    std::vector<std::string> parts;
    std::string::size_type start = 0;
    while (true) {
        const auto dot = name.find('.', start);
        parts.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return parts;
}

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
    std::string s;
    for (size_t i = 0; i < items.size(); ++i) s += (i ? sep : "") + items[i];
    return s;
}

/// A channel name split into its view (by OpenEXR's multi-view rule, ImfMultiView.h viewFromChannelName:
/// the component before the last names the view when it is one of the file's views; otherwise the
/// channel belongs to the default view, views[0]) and its name without the view component.
struct ChannelName {
    std::string view;   ///< "" when the file has no views
    std::string base;   ///< e.g. "R", "Z", "depth.Z", "forward.u"
};
ChannelName parse_channel(const std::string& name, const std::vector<std::string>& views) {
    if (views.empty()) return {"", name};
    std::vector<std::string> c = split(name);
    if (c.size() >= 2 && std::find(views.begin(), views.end(), c[c.size() - 2]) != views.end()) {
        ChannelName n{c[c.size() - 2], ""};
        c.erase(c.end() - 2);
        n.base = join(c, ".");
        return n;
    }
    return {views.front(), name};
}

bool is_depth_name(const std::string& base) { return base == "Z" || base == "depth.Z"; }

bool is_exr_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    unsigned char magic[4] = {0, 0, 0, 0};
    f.read(reinterpret_cast<char*>(magic), 4);
    return f && magic[0] == 0x76 && magic[1] == 0x2f && magic[2] == 0x31 && magic[3] == 0x01;
}

std::vector<std::string> string_array(const OIIO::ImageSpec& spec, const char* name) {
    std::vector<std::string> out;
    const OIIO::ParamValue* p = spec.find_attribute(name);
    if (!p || p->type().basetype != OIIO::TypeDesc::STRING) return out;
    const OIIO::ustring* values = static_cast<const OIIO::ustring*>(p->data());
    const size_t n = p->type().basevalues() * static_cast<size_t>(p->nvalues());
    for (size_t i = 0; i < n; ++i) out.push_back(values[i].string());
    return out;
}

std::string part_name_of(const OIIO::ImageSpec& spec) {
    std::string n = spec.get_string_attribute("oiio:subimagename");
    return n.empty() ? std::string(spec.get_string_attribute("name")) : n;
}

bool parse_index(const std::string& s, int& out) {
    if (s.empty()) return false;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && out >= 0;
}

/// Whether a part has channels an image can be made of (R,G,B or Y), for choosing a part by view.
bool has_colour(const OIIO::ImageSpec& spec) {
    int rgb = 0;
    for (const auto& n : spec.channelnames) {
        const std::string base = split(n).back();
        if (base == "R" || base == "G" || base == "B") ++rgb;
        if (base == "Y") return true;
    }
    return rgb >= 3;
}

std::string list_parts(const std::vector<OIIO::ImageSpec>& specs) {
    std::ostringstream s;
    for (size_t i = 0; i < specs.size(); ++i) {
        s << (i ? ", " : "") << i;
        const std::string name = part_name_of(specs[i]);
        if (!name.empty()) s << " '" << name << "'";
        const std::string view = specs[i].get_string_attribute("view");
        if (!view.empty()) s << " (view " << view << ")";
    }
    return s.str();
}

/// Channel roles for the chosen view. Throws InputError (message without the frame prefix) when the
/// part has nothing to make an image of.
/// A part/view/layer the job asks for that the file lacks (a ConfigError when probing, an InputError per frame).
struct KeyError {
    std::string message;
};
KeyError bad_key(const std::string& message) { return KeyError{message}; }

/// p.r/g/b/a and the depth channels of p.file_spec: bare R,G,B, or input.layer's, or the only layer with
/// R,G,B, or a grey channel. Throws KeyError for an input.layer the file lacks, InputError when nothing fits.
void assign_channels(PlateInfo& p, const std::string& layer) {
    const OIIO::ImageSpec& spec = p.file_spec;
    p.r = p.g = p.b = p.a = -1;
    p.own_depth.clear();
    p.other_depth.clear();
    std::vector<ChannelName> names;
    for (const auto& n : spec.channelnames) names.push_back(parse_channel(n, p.views));
    auto in_view = [&](int c) { return p.views.empty() || names[c].view == p.view; };
    auto find = [&](std::initializer_list<const char*> wanted) {
        for (const char* w : wanted)
            for (int c = 0; c < spec.nchannels; ++c)
                if (in_view(c) && names[c].base == w) return c;
        return -1;
    };
    for (int c = 0; c < spec.nchannels; ++c)
        if (is_depth_name(names[c].base)) (in_view(c) ? p.own_depth : p.other_depth).push_back(c);

    p.a = find({"A", "a", "alpha"});
    if (p.a < 0 && p.views.empty() && spec.alpha_channel >= 0 && spec.alpha_channel < spec.nchannels)
        p.a = spec.alpha_channel;
    if (layer.empty()) {
        p.r = find({"R", "r", "red"});
        p.g = find({"G", "g", "green"});
        p.b = find({"B", "b", "blue"});
        if (p.r >= 0 && p.g >= 0 && p.b >= 0) return;
    }

    // Named layers holding R,G,B (e.g. "rgba.R", "beauty.R", "ViewLayer.DiffCol.R"): input.layer picks one;
    // without it, the only one is used.
    std::vector<std::string> layers;
    for (int c = 0; c < spec.nchannels; ++c) {
        if (!in_view(c)) continue;
        const auto dot = names[c].base.rfind('.');
        if (dot == std::string::npos || names[c].base.substr(dot + 1) != "R") continue;
        const std::string layer = names[c].base.substr(0, dot);
        bool g = false, b = false;
        for (int k = 0; k < spec.nchannels; ++k) {
            if (!in_view(k)) continue;
            g |= names[k].base == layer + ".G";
            b |= names[k].base == layer + ".B";
        }
        if (g && b) layers.push_back(layer);
    }
    if (!layer.empty() && std::find(layers.begin(), layers.end(), layer) == layers.end())
        throw bad_key("input.layer '" + layer + "': no layer of that name holds R,G,B (" +
                      (layers.empty() ? std::string("the file has no such layer") : "layers: " + join(layers)) + ")");
    if (!layer.empty() || layers.size() == 1) {
        const std::string L = layer.empty() ? layers.front() : layer;
        const int bare_a = p.a;
        p.a = -1;
        p.r = find({(L + ".R").c_str()});
        p.g = find({(L + ".G").c_str()});
        p.b = find({(L + ".B").c_str()});
        p.a = find({(L + ".A").c_str()});
        if (p.a < 0) p.a = bare_a;
        return;
    }

    const int y = find({"Y", "y", "L", "gray", "grey"});
    if (y >= 0) {
        p.r = p.g = p.b = y;
        return;
    }
    // Whatever else is left: the view's channels that are neither alpha nor depth.
    std::vector<int> colour;
    for (int c = 0; c < spec.nchannels; ++c)
        if (in_view(c) && c != p.a && !is_depth_name(names[c].base)) colour.push_back(c);
    if (colour.size() == 1 || (colour.size() == 2 && layers.empty())) {
        // grey (+ alpha): WideFloatRange.exr's lone G; of two unnamed channels the first is taken as grey
        p.r = p.g = p.b = colour[0];
    } else if (colour.size() == 3 && layers.empty()) {
        p.r = colour[0], p.g = colour[1], p.b = colour[2];   // three unnamed colour channels
    } else {
        throw InputError("no R,G,B or Y channels to make an image of among " + std::to_string(spec.nchannels) +
                         " channels (" + join(spec.channelnames) + ")" +
                         (layers.size() > 1 ? "; several layers hold R,G,B (" + join(layers) + "): set input.layer "
                                              "to the one the model should see" : ""));
    }
}

/// OpenEXR header attributes -> OIIO metadata, for the files OIIO cannot open (luminance/chroma).
/// OIIO's EXR reader renames a few standard attributes; the same renames are applied here.
void copy_exr_attributes(const Imf::Header& header, OIIO::ImageSpec& spec) {
    static const std::pair<const char*, const char*> renames[] = {
        {"owner", "Copyright"}, {"comments", "ImageDescription"}, {"capDate", "DateTime"}};
    static const char* skipped[] = {"channels", "compression", "dataWindow", "displayWindow", "lineOrder",
                                    "tiles", "type", "chunkCount", "version"};
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
        else if (auto* d = dynamic_cast<const Imf::DoubleAttribute*>(&a)) spec.attribute(name, static_cast<float>(d->value()));
        else if (auto* v = dynamic_cast<const Imf::V2fAttribute*>(&a)) spec.attribute(name, OIIO::TypeDesc(OIIO::TypeDesc::FLOAT, OIIO::TypeDesc::VEC2), &v->value());
        else if (auto* v = dynamic_cast<const Imf::V2iAttribute*>(&a)) spec.attribute(name, OIIO::TypeDesc(OIIO::TypeDesc::INT, OIIO::TypeDesc::VEC2), &v->value());
        else if (auto* m = dynamic_cast<const Imf::M44fAttribute*>(&a)) spec.attribute(name, OIIO::TypeMatrix44, &m->value());
        else if (auto* m = dynamic_cast<const Imf::M33fAttribute*>(&a)) spec.attribute(name, OIIO::TypeMatrix33, &m->value());
        // other attribute types (chromaticities, keycode, ...) are not carried
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

/// Integer codes held in a `container`-bit type -> float code / (2^bits - 1), correctly rounded. Codes of
/// fewer bits than the container (10-bit DPX in uint16) come from OIIO bit-replicated (c << 6 | c >> 4):
/// the code is the top `bits` bits. If any value is not such a replication, the container's full range
/// is used instead (v / 65535), which is what the values then mean.
template <typename T> void to_unit_float(const T* v, size_t n, int container, int bits, float* out) {
    if (bits <= 0 || bits > container) bits = container;
    const int shift = container - bits;
    if (shift > 0) {
        for (size_t i = 0; i < n; ++i) {
            const unsigned code = v[i] >> shift;
            unsigned rep = 0;
            for (int pos = shift; pos > -bits; pos -= bits) rep |= pos >= 0 ? code << pos : code >> -pos;
            if (static_cast<unsigned>(v[i]) != rep) {
                bits = container;
                break;
            }
        }
    }
    const unsigned drop = container - bits;
    const float max = static_cast<float>((1u << bits) - 1u);
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<unsigned>(v[i]) >> drop) / max;
}

bool has_chroma_channels(const OIIO::ImageSpec& spec) {
    bool ry = false, by = false;
    for (const auto& n : spec.channelnames) {
        const std::string base = split(n).back();
        ry |= base == "RY";
        by |= base == "BY";
    }
    return ry && by;
}


/// The header work shared by probe_plate and read_plate. Returns the open OIIO input (null for a
/// luminance/chroma file, which is read through OpenEXR). Errors are thrown without the frame prefix.
/// The part to read: input.part by index or name; with input.view and the default part, the first part of
/// that view that holds colour. Throws KeyError listing the file's parts.
int choose_part(const std::vector<OIIO::ImageSpec>& specs, const JobConfig::Input& job) {
    const int parts = static_cast<int>(specs.size());
    int part = -1;
    if (parse_index(job.part.empty() ? "0" : job.part, part)) {
        if (part >= parts)
            throw bad_key("input.part " + job.part + ": the file has " + std::to_string(parts) +
                          (parts == 1 ? " part" : " parts") + " (" + list_parts(specs) + ")");
        if (!job.view.empty() && parts > 1 && part == 0) {
            part = -1;
            for (int s = 0; s < parts && part < 0; ++s)
                if (specs[s].get_string_attribute("view") == job.view && has_colour(specs[s])) part = s;
            if (part < 0)
                throw bad_key("input.view '" + job.view + "': no part of that view holds R,G,B or Y channels (parts: " +
                              list_parts(specs) + ")");
        }
    } else {
        for (int s = 0; s < parts && part < 0; ++s)
            if (part_name_of(specs[s]) == job.part) part = s;
        if (part < 0) throw bad_key("input.part '" + job.part + "': no part of that name (parts: " + list_parts(specs) + ")");
    }
    return part;
}

/// info.views / info.view: a multi-view part's views (input.view picks one, default the first), or the
/// part's own view attribute. Throws KeyError for a view the file does not have.
void choose_view(PlateInfo& info, const OIIO::ImageSpec& spec, const std::vector<OIIO::ImageSpec>& specs,
                 const JobConfig::Input& job) {
    const int part = info.part;
    info.views = string_array(spec, "multiView");
    const std::string part_view = spec.get_string_attribute("view");
    if (!info.views.empty()) {
        info.view = job.view.empty() ? info.views.front() : job.view;
        if (std::find(info.views.begin(), info.views.end(), info.view) == info.views.end())
            throw bad_key("input.view '" + job.view + "': the file's views are " + join(info.views));
    } else if (!job.view.empty()) {
        if (part_view != job.view)
            throw bad_key("input.view '" + job.view + "': " +
                          (part_view.empty() ? std::string("the file has no views")
                                             : "part " + std::to_string(part) + " is view '" + part_view + "'") +
                          (info.parts > 1 ? " (parts: " + list_parts(specs) + ")" : ""));
        info.view = job.view;
    } else {
        info.view = part_view;
    }
}

std::unique_ptr<OIIO::ImageInput> open_plate_checked(PlateInfo& info, const JobConfig::Input& job) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(info.path, ec)) throw InputError("file not found");

    // Straight (unassociated) alpha stays as stored: OIIO would otherwise premultiply PNG/TIFF colour by
    // alpha on reading, so a pixel with alpha 0 would lose its colour before the model and the passthrough.
    OIIO::ImageSpec config;
    config.attribute("oiio:UnassociatedAlpha", 1);
    auto in = OIIO::ImageInput::open(info.path, &config);
    if (!in) {
        const std::string message = OIIO::geterror();
        // OIIO 2.4 refuses subsampled channels; a luminance/chroma EXR is read through OpenEXR instead.
        if (is_exr_file(info.path)) {
            bool yc = false;
            try {
                Imf::RgbaInputFile file(info.path.c_str());
                yc = (file.channels() & Imf::WRITE_C) != 0;
            } catch (const std::exception&) {
            }
            if (yc) {
                if (job.part != "0" && job.part != "") throw bad_key("input.part '" + job.part + "': the file has one part");
                if (!job.view.empty()) throw bad_key("input.view '" + job.view + "': the file has no views");
                read_luminance_chroma(info, nullptr);
                return nullptr;
            }
        }
        throw InputError("cannot open: " + message);
    }
    info.format = in->format_name();

    // Every part's header. (ImageInput::spec(subimage, level) copies without moving the reader; asking
    // past the last part returns an empty spec and may leave an error message, cleared below.)
    std::vector<OIIO::ImageSpec> specs;
    for (int s = 0;; ++s) {
        OIIO::ImageSpec sp = s == 0 ? in->spec() : in->spec(s, 0);
        if (sp.format == OIIO::TypeUnknown) break;
        specs.push_back(std::move(sp));
    }
    if (specs.empty()) throw InputError("the file holds no image");
    info.parts = static_cast<int>(specs.size());

    const int part = choose_part(specs, job);
    info.part = part;
    const OIIO::ImageSpec& spec = specs[part];
    info.part_name = part_name_of(spec);
    if (spec.deep) throw InputError("deep images are not supported (part " + std::to_string(part) + ")");
    if (spec.nchannels < 1) throw InputError("the image has no channels");
    info.mip_levels = 1;
    for (int w = spec.width, h = spec.height; info.mip_levels < 32; ++info.mip_levels) {
        // (some readers, OIIO 2.4's TIFF one, answer every level with level 0: a level must shrink)
        const OIIO::ImageSpec level = in->spec_dimensions(part, info.mip_levels);
        if (level.format == OIIO::TypeUnknown || (level.width >= w && level.height >= h)) break;
        w = level.width, h = level.height;
    }
    (void)in->geterror();   // the probing past the last part / level above is not an error of the file
    info.file_spec = spec;
    info.unassociated_alpha = spec.get_int_attribute("oiio:UnassociatedAlpha", 0) != 0;

    choose_view(info, spec, specs, job);

    if (info.format == "openexr" && has_chroma_channels(info.file_spec)) {
        if (info.parts > 1 || !info.views.empty())
            throw InputError("luminance/chroma (Y, RY, BY) channels in a multi-part or multi-view file are not supported");
        in.reset();
        read_luminance_chroma(info, nullptr);
        return nullptr;
    }
    assign_channels(info, job.layer);
    return in;
}

/// open_plate_checked, with part/view problems as ConfigErrors naming the frame (`config_errors`, the
/// probe before rendering) or InputErrors.
std::unique_ptr<OIIO::ImageInput> open_plate(PlateInfo& info, const JobConfig::Input& job, bool config_errors) {
    try {
        return open_plate_checked(info, job);
    } catch (const KeyError& e) {
        if (config_errors) throw ConfigError(where(info.frame, info.path) + ": " + e.message);
        throw InputError(e.message);
    }
}

template <typename Fn> auto with_frame_context(const PlateInfo& info, Fn&& fn) {
    try {
        return fn();
    } catch (const ConfigError&) {
        throw;
    } catch (const Error& e) {
        throw InputError(where(info.frame, info.path) + ": " + e.what());
    } catch (const std::exception& e) {
        throw InputError(where(info.frame, info.path) + ": cannot read: " + e.what());
    }
}

std::string window(int x, int y, int w, int h) {
    return "(" + std::to_string(x) + "," + std::to_string(y) + ")-(" + std::to_string(x + w - 1) + "," +
           std::to_string(y + h - 1) + ")";
}

}  // namespace

std::string PlateInfo::base_name(int channel) const {
    if (channel < 0 || channel >= file_spec.nchannels) return "";
    return parse_channel(file_spec.channelnames[channel], views).base;
}

std::string PlateInfo::describe() const {
    const OIIO::ImageSpec& s = file_spec;
    std::ostringstream d;
    d << format << " " << s.width << "x" << s.height;
    std::vector<std::string> types;
    for (int c = 0; c < s.nchannels; ++c) {
        const std::string t = s.channelformat(c).c_str();
        if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
    }
    d << " " << join(types, "/") << ", " << s.nchannels << (s.nchannels == 1 ? " channel" : " channels");
    if (luminance_chroma) d << " (luminance/chroma, converted to RGB by OpenEXR)";
    d << "; data window " << window(s.x, s.y, s.width, s.height) << ", display window "
      << window(s.full_x, s.full_y, s.full_width, s.full_height);
    if (parts > 1) {
        d << "; part " << part;
        if (!part_name.empty()) d << " '" << part_name << "'";
        d << " of " << parts << " (set input.part / input.view for another)";
    }
    if (!views.empty()) d << "; view '" << view << "' of " << join(views) << (view == views.front() ? " (default view)" : "");
    else if (!view.empty()) d << "; view '" << view << "'";
    if (mip_levels > 1) d << "; mip level 0 of " << mip_levels;
    if (s.tile_width > 0) d << "; tiled " << s.tile_width << "x" << s.tile_height;
    auto name = [&](int c) { return c >= 0 && c < s.nchannels ? s.channelnames[c] : std::string("-"); };
    d << "; model R,G,B <- " << name(r) << "," << name(g) << "," << name(b);
    if (a >= 0) d << ", alpha " << name(a) << (unassociated_alpha ? " (straight, kept as stored)" : "");
    if (!own_depth.empty()) {
        std::vector<std::string> z;
        for (int c : own_depth) z.push_back(name(c));
        d << ", own depth " << join(z);
    }
    return d.str();
}

std::string plate_kind(const PlateInfo& plate) {
    // What ColorTransform::auto_colorspace reads: DPX or not, float or integer colour channels; and the channels.
    const OIIO::ImageSpec& spec = plate.file_spec;
    const OIIO::TypeDesc type = plate.r >= 0 ? spec.channelformat(plate.r) : spec.format;
    const bool real = type.basetype == OIIO::TypeDesc::HALF || type.basetype == OIIO::TypeDesc::FLOAT ||
                      type.basetype == OIIO::TypeDesc::DOUBLE;
    std::string names;
    for (int c = 0; c < spec.nchannels; ++c) names += std::string(c ? "," : "") + std::string(spec.channel_name(c));
    return std::string(plate.format == "dpx" ? "DPX" : real ? "float" : "integer") + " colour, channels " + names;
}

std::string plate_identity(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return "";
    char mtime[64];
    std::snprintf(mtime, sizeof mtime, "%lld.%09ld", static_cast<long long>(st.st_mtim.tv_sec), static_cast<long>(st.st_mtim.tv_nsec));
    return std::to_string(static_cast<long long>(st.st_size)) + " bytes, modified " + mtime;
}

PlateInfo probe_plate(const std::string& path, int frame, const JobConfig::Input& input) {
    PlateInfo info;
    info.frame = frame;
    info.path = path;
    with_frame_context(info, [&] { return open_plate(info, input, true); });
    return info;
}

Plate read_plate(const std::string& path, int frame, const JobConfig::Input& input) {
    Plate plate;
    plate.frame = frame;
    plate.path = path;
    with_frame_context(plate, [&] {
        std::unique_ptr<OIIO::ImageInput> in = open_plate(plate, input, false);
        if (!in) {   // luminance/chroma through OpenEXR
            read_luminance_chroma(plate, &plate.pixels);
            return 0;
        }
        // The chosen part, mip level 0, every channel, converted to float32 over the data window.
        const OIIO::ImageSpec& spec = plate.file_spec;
        OIIO::ImageSpec float_spec = spec;
        float_spec.set_format(OIIO::TypeDesc::FLOAT);
        float_spec.channelformats.clear();
        float_spec.tile_width = float_spec.tile_height = float_spec.tile_depth = 0;
        plate.pixels.reset(float_spec, OIIO::InitializePixels::No);
        float* dst = static_cast<float*>(plate.pixels.localpixels());
        const size_t nvalues = static_cast<size_t>(spec.width) * spec.height * spec.depth * spec.nchannels;
        const auto base = spec.format.basetype;
        bool ok;
        if (spec.channelformats.empty() && (base == OIIO::TypeDesc::UINT8 || base == OIIO::TypeDesc::UINT16)) {
            // Integer codes: read them as stored and divide exactly ourselves (OIIO multiplies by a
            // reciprocal, 1 ulp off code/255 at times, and gives 10/12-bit codes as 16-bit bit-replicated
            // values, i.e. 512/1023 would arrive as 32800/65535).
            if (base == OIIO::TypeDesc::UINT8) {
                std::vector<uint8_t> codes(nvalues);
                ok = in->read_image(plate.part, 0, 0, spec.nchannels, OIIO::TypeDesc::UINT8, codes.data());
                to_unit_float(codes.data(), nvalues, 8, spec.get_int_attribute("oiio:BitsPerSample", 8), dst);
            } else {
                std::vector<uint16_t> codes(nvalues);
                ok = in->read_image(plate.part, 0, 0, spec.nchannels, OIIO::TypeDesc::UINT16, codes.data());
                to_unit_float(codes.data(), nvalues, 16, spec.get_int_attribute("oiio:BitsPerSample", 16), dst);
            }
        } else {
            ok = in->read_image(plate.part, 0, 0, spec.nchannels, OIIO::TypeDesc::FLOAT, dst);
        }
        // Strict: a decoder that recovers from damage still reports it (libjpeg's "Premature end of JPEG
        // file" on a truncated JPEG returns success with grey pixels): any message means a bad frame.
        const std::string message = in->geterror();
        if (!ok || !message.empty())
            throw InputError("cannot read pixels: " + (message.empty() ? std::string("unknown error") : message));
        in->close();
        return 0;
    });
    return plate;
}

OIIO::ImageBuf plate_rgb(const Plate& plate) {
    const int order[3] = {plate.r, plate.g, plate.b};
    // Allocated here without the zero fill ImageBufAlgo would give a fresh buffer (a pass over the whole frame
    // through OIIO's iterators): channels() overwrites every pixel.
    OIIO::ImageSpec spec = plate.pixels.spec();
    spec.nchannels = 3;
    spec.channelnames = {"R", "G", "B"};
    spec.channelformats.clear();
    spec.alpha_channel = spec.z_channel = -1;
    spec.set_format(OIIO::TypeDesc::FLOAT);
    OIIO::ImageBuf rgb(spec, OIIO::InitializePixels::No);
    if (!OIIO::ImageBufAlgo::channels(rgb, plate.pixels, 3, order, {}, {}, false, 1))
        throw InputError(where(plate.frame, plate.path) + ": cannot take R,G,B: " + rgb.geterror());
    return rgb;
}

}  // namespace depthbatch
