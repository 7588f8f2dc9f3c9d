// depthbatch — reading one plate frame (plate.h has what is read): the file, its parts, mip levels and pixels
// through OIIO here; which part, view and channels are what in plate_channels.h (rules on headers alone);
// luminance/chroma EXRs through OpenEXR in plate_luminance_chroma.h.
#include "depthbatch/plate.h"

#include "plate_channels.h"
#include "plate_integrity.h"
#include "plate_luminance_chroma.h"

#include "depthbatch/error.h"

#include <OpenImageIO/imagebufalgo.h>
#include <OpenImageIO/imageio.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <sys/stat.h>

namespace depthbatch {
namespace {

std::string where(int frame, const std::string& path) { return "frame " + std::to_string(frame) + " (" + path + ")"; }

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

/// The header work shared by probe_plate and read_plate: the part (choose_part), its checks and mip levels, the
/// view (choose_view) and the channel roles (assign_channels), or the luminance/chroma path. Returns the open
/// OIIO input (null for a luminance/chroma file, which is read through OpenEXR). Errors are thrown without the
/// frame prefix: ConfigError for a part/view/layer the job asks for that the file lacks, InputError otherwise.
std::unique_ptr<OIIO::ImageInput> open_plate_checked(PlateInfo& info, const InputSettings& job) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(info.path, ec)) throw InputError("file not found");

    // Straight (unassociated) alpha stays as stored: OIIO would otherwise premultiply PNG/TIFF colour by
    // alpha on reading, so a pixel with alpha 0 would lose its colour before the model and the passthrough.
    // A file cut short is refused on its header and tables alone, here (so validate predicts it) as in the read.
    check_plate_complete(info.path);

    OIIO::ImageSpec config;
    config.attribute("oiio:UnassociatedAlpha", 1);
    auto in = OIIO::ImageInput::open(info.path, &config);
    if (!in) {
        const std::string message = library_error_line(OIIO::geterror());
        // OIIO 2.4 refuses subsampled channels; a luminance/chroma EXR is read through OpenEXR instead.
        if (is_luminance_chroma_exr(info.path)) {
            if (job.part != "0" && job.part != "")
                throw ConfigError("input.part '" + job.part + "': the file has one part");
            if (!job.view.empty()) throw ConfigError("input.view '" + job.view + "': the file has no views");
            read_luminance_chroma(info, nullptr);
            return nullptr;
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
    (void)in->geterror();  // the probing past the last part / level above is not an error of the file
    info.file_spec = spec;
    info.unassociated_alpha = spec.get_int_attribute("oiio:UnassociatedAlpha", 0) != 0;

    ViewChoice views = choose_view(specs, part, job.view);
    info.views = std::move(views.views);
    info.view = std::move(views.view);

    if (info.format == "openexr" && has_chroma_channels(info.file_spec)) {
        if (info.parts > 1 || !info.views.empty())
            throw InputError(
                "luminance/chroma (Y, RY, BY) channels in a multi-part or multi-view file are not supported");
        in.reset();
        read_luminance_chroma(info, nullptr);
        return nullptr;
    }
    ChannelRoles roles = assign_channels(info.file_spec, info.views, info.view, job.layer);
    info.r = roles.r, info.g = roles.g, info.b = roles.b, info.a = roles.a;
    info.own_depth = std::move(roles.own_depth);
    info.other_depth = std::move(roles.other_depth);
    return in;
}

/// open_plate_checked, with part/view problems as ConfigErrors naming the frame (`config_errors`, the
/// probe before rendering) or InputErrors.
std::unique_ptr<OIIO::ImageInput> open_plate(PlateInfo& info, const InputSettings& job, bool config_errors) {
    try {
        return open_plate_checked(info, job);
    } catch (const ConfigError& e) {
        if (config_errors) throw ConfigError(where(info.frame, info.path) + ": " + e.what());
        throw InputError(e.what());
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
    d << " " << join_names(types, "/") << ", " << s.nchannels << (s.nchannels == 1 ? " channel" : " channels");
    if (luminance_chroma) d << " (luminance/chroma, converted to RGB by OpenEXR)";
    d << "; data window " << window(s.x, s.y, s.width, s.height) << ", display window "
      << window(s.full_x, s.full_y, s.full_width, s.full_height);
    if (parts > 1) {
        d << "; part " << part;
        if (!part_name.empty()) d << " '" << part_name << "'";
        d << " of " << parts << " (set input.part / input.view for another)";
    }
    if (!views.empty())
        d << "; view '" << view << "' of " << join_names(views) << (view == views.front() ? " (default view)" : "");
    else if (!view.empty()) d << "; view '" << view << "'";
    if (mip_levels > 1) d << "; mip level 0 of " << mip_levels;
    if (s.tile_width > 0) d << "; tiled " << s.tile_width << "x" << s.tile_height;
    auto name = [&](int c) { return c >= 0 && c < s.nchannels ? s.channelnames[c] : std::string("-"); };
    d << "; model R,G,B <- " << name(r) << "," << name(g) << "," << name(b);
    if (a >= 0) d << ", alpha " << name(a) << (unassociated_alpha ? " (straight, kept as stored)" : "");
    if (!own_depth.empty()) {
        std::vector<std::string> z;
        for (int c : own_depth) z.push_back(name(c));
        d << ", own depth " << join_names(z);
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
    std::snprintf(mtime, sizeof mtime, "%lld.%09ld", static_cast<long long>(st.st_mtim.tv_sec),
                  static_cast<long>(st.st_mtim.tv_nsec));
    return std::to_string(static_cast<long long>(st.st_size)) + " bytes, modified " + mtime;
}

PlateInfo probe_plate(const std::string& path, int frame, const InputSettings& input) {
    PlateInfo info;
    info.frame = frame;
    info.path = path;
    with_frame_context(info, [&] { return open_plate(info, input, true); });
    return info;
}

Plate read_plate(const std::string& path, int frame, const InputSettings& input) {
    Plate plate;
    plate.frame = frame;
    plate.path = path;
    with_frame_context(plate, [&] {
        std::unique_ptr<OIIO::ImageInput> in = open_plate(plate, input, false);
        if (!in) {  // luminance/chroma through OpenEXR
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
        const std::string message = library_error_line(in->geterror());
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
        throw InputError(where(plate.frame, plate.path) + ": cannot take R,G,B: " + library_error_line(rgb.geterror()));
    return rgb;
}

}  // namespace depthbatch
