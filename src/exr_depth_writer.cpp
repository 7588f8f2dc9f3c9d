#include "depthbatch/exr_depth_writer.h"
#include "exr_depth_writer_pvt.h"

#include "exr_deflate.h"

#include "output/output_guard.h"

#include "depthbatch/error.h"
#include "depthbatch/exr_metadata.h"

#include <OpenImageIO/imagebufalgo.h>
#include <OpenImageIO/imageio.h>
#include <OpenEXR/ImfHeader.h>
#include <OpenEXR/ImfChannelList.h>
#include <OpenEXR/ImfFrameBuffer.h>
#include <OpenEXR/ImfInputFile.h>
#include <OpenEXR/ImfOutputFile.h>
#include <OpenEXR/ImfStringAttribute.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <ctime>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace depthbatch {
namespace {

/// Metadata that describes the source file's encoding (or its texture/multi-view structure), not the
/// image: never copied to our EXR.
bool is_format_attribute(const std::string& name) {
    static const char* prefixes[] = {
        "oiio:", "openexr:", "tiff:", "jpeg:", "png:", "dpx:", "exif:ExifVersion", exr_meta::kPrefix};
    static const char* names[] = {"compression",   "planarconfig", "Orientation", "multiView",
                                  "textureformat", "wrapmodes",    "tile_width",  "tile_height",
                                  "type",          "chunkCount",   "version"};
    for (const char* p : prefixes)
        if (name.rfind(p, 0) == 0) return true;
    for (const char* n : names)
        if (name == n) return true;
    return false;
}

/// "YYYY:MM:DD hh:mm:ss" (the TIFF/EXR DateTime form) of a file's modification time, UTC; "" if unknown.
std::string file_time(const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return "";
    std::tm tm{};
    if (!::gmtime_r(&st.st_mtime, &tm)) return "";
    char text[32];
    std::strftime(text, sizeof text, "%Y:%m:%d %H:%M:%S", &tm);
    return text;
}

std::string join(const std::vector<std::string>& items, const char* sep = ",") {
    std::string s;
    for (size_t i = 0; i < items.size(); ++i) s += (i ? sep : "") + items[i];
    return s;
}

std::vector<std::string> names_of(const PlateInfo& plate, const std::vector<int>& channels) {
    std::vector<std::string> names;
    for (int c : channels) names.push_back(plate.file_spec.channelnames[c]);
    return names;
}

}  // namespace

OIIO::TypeDesc passthrough_type(OIIO::TypeDesc stored, PassthroughType pixel_type) {
    if (pixel_type == PassthroughType::Half) return OIIO::TypeDesc::HALF;
    if (pixel_type == PassthroughType::Float) return OIIO::TypeDesc::FLOAT;
    if (stored.basetype == OIIO::TypeDesc::HALF) return OIIO::TypeDesc::HALF;
    return OIIO::TypeDesc::FLOAT;  // float stays float; integer codes become exact floats
}

namespace {
/// `all` on a multi-view plate writes a multi-view file (multiView kept), so our depth takes the chosen
/// view's name by OpenEXR's convention: depth.Z in the default view, depth.<view>.Z in another.
bool writes_multiview(const PlateInfo& plate, const ExrWriteOptions& options) {
    return options.channels == OutputChannels::All && !plate.views.empty();
}
std::string depth_name(const PlateInfo& plate, const ExrWriteOptions& options) {
    if (writes_multiview(plate, options) && plate.view != plate.views.front()) return "depth." + plate.view + ".Z";
    return "depth.Z";
}
}  // namespace

std::vector<OutputChannel> output_channels(const PlateInfo& plate, const ExrWriteOptions& options) {
    const OIIO::ImageSpec& in = plate.file_spec;
    const bool rename = options.existing_depth == ExistingDepth::Rename;
    const std::string ours = depth_name(plate, options);
    std::vector<OutputChannel> out;
    auto pass = [&](const std::string& name, int source) {
        out.push_back({name, source, passthrough_type(in.channelformat(source), options.pixel_type)});
    };
    if (options.channels == OutputChannels::All) {
        for (int c = 0; c < in.nchannels; ++c) {
            // The chosen view's own depth makes way for ours; other views' depth (multi-view) is theirs.
            const bool depth = std::count(plate.own_depth.begin(), plate.own_depth.end(), c) > 0;
            if (!depth) pass(in.channelnames[c], c);
            else if (rename) pass(in.channelnames[c] + "_plate", c);
        }
    } else if (options.channels != OutputChannels::Depth) {  // rgba
        pass("R", plate.r);
        pass("G", plate.g);
        pass("B", plate.b);
        if (plate.a >= 0) pass("A", plate.a);
        if (rename)
            for (int c : plate.own_depth) pass(plate.base_name(c) + "_plate", c);
    }
    // Unique names: a clash (a plate that already has Z_plate, ...) gets a numeric suffix.
    for (size_t i = 0; i < out.size(); ++i) {
        const std::string base = out[i].name;
        for (int n = 2;
             out[i].name == ours ||
             std::any_of(out.begin(), out.begin() + i, [&](const OutputChannel& o) { return o.name == out[i].name; });
             ++n)
            out[i].name = base + std::to_string(n);
    }
    out.push_back({ours, -1, OIIO::TypeDesc::FLOAT});
    return out;
}

std::vector<std::string> output_channel_names(const PlateInfo& plate, const ExrWriteOptions& options) {
    std::vector<std::string> names;
    for (const auto& c : output_channels(plate, options)) names.push_back(c.name);
    return names;
}

namespace {
/// What happens to the plate's own depth channels, in words ("" when the plate has none).
std::string plate_depth_rule(const PlateInfo& plate, const ExrWriteOptions& options) {
    const std::vector<int>& depth = plate.own_depth;
    if (depth.empty()) return "";
    const std::string names = join(names_of(plate, depth));
    if (options.channels == OutputChannels::Depth) return names + " not written (output.channels: depth)";
    if (options.existing_depth != ExistingDepth::Rename) return names + " dropped (output.existing_depth: replace)";
    std::vector<std::string> kept;
    for (const auto& c : output_channels(plate, options))
        if (c.source >= 0 && std::count(depth.begin(), depth.end(), c.source))
            kept.push_back(plate.file_spec.channelnames[c.source] + " -> " + c.name);
    return join(kept, ", ") + " (output.existing_depth: rename)";
}
}  // namespace

std::string describe_output(const PlateInfo& plate, const ExrWriteOptions& options) {
    std::vector<std::string> items;
    for (const auto& c : output_channels(plate, options)) items.push_back(c.name + " " + c.type.c_str());
    std::string s = "output channels " + join(items, ", ") + "; compression " + option_name(options.compression);
    if (options.compression == Compression::Zip || options.compression == Compression::Zips) {
        if (options.zip_level != 4) s += " level " + std::to_string(options.zip_level);
        s += " (" + exr_deflate_codec() + ")";
    }
    const std::string rule = plate_depth_rule(plate, options);
    if (!rule.empty()) s += "; the plate's own depth " + rule + "; " + depth_name(plate, options) + " is ours";
    if (writes_multiview(plate, options))
        s += "; multi-view (" + join(plate.views) + ") kept, the depth is view '" + plate.view + "'";
    return s;
}

namespace {

/// The file's channels: the plate's passthrough and depth.Z (output_channels), then the passes (output.passes) after
/// depth.Z, each never under a taken name (source -2 - i: extra[i]). Throws RenderError naming `path`.
std::vector<OutputChannel> channels_with_passes(const Plate& plate, const ExrWriteOptions& options,
                                                const std::vector<ExtraChannel>& extra, const std::string& path) {
    std::vector<OutputChannel> channels = output_channels(plate, options);
    for (const ExtraChannel& e : extra) {  // passes (output.passes) after depth.Z: never under a taken name
        for (const OutputChannel& c : channels)
            if (c.name == e.name)
                throw RenderError(path + ": channel " + e.name + " is written twice (a plate channel of that name?)");
        channels.push_back({e.name, -2 - static_cast<int>(&e - extra.data()), e.type});
    }
    return channels;
}

/// The pixels: the output channels, float32 in memory over the data window, interleaved (exact for every source
/// type: half and integer codes are exactly representable; the file stores each channel in its own type).
/// Throws RenderError naming `path` when the plate or depth is not a packed float32 buffer or a source is missing.
std::vector<float> interleaved_pixels(const Plate& plate, const OIIO::ImageBuf& depth,
                                      const std::vector<OutputChannel>& channels,
                                      const std::vector<ExtraChannel>& extra, const std::string& path) {
    const OIIO::ImageSpec& in = plate.file_spec;
    const int nout = static_cast<int>(channels.size());
    const int nin = plate.pixels.nchannels();
    if (!plate.pixels.localpixels() || plate.pixels.spec().format != OIIO::TypeDesc::FLOAT || !depth.localpixels() ||
        depth.spec().format != OIIO::TypeDesc::FLOAT)
        throw RenderError(path + ": plate pixels and depth must be packed float32 buffers");
    const size_t npixels = static_cast<size_t>(in.width) * in.height;
    std::vector<float> pixels(npixels * nout);
    const float* src = static_cast<const float*>(plate.pixels.localpixels());
    const float* z = static_cast<const float*>(depth.localpixels());
    for (int k = 0; k < nout; ++k) {
        const int s = channels[k].source;
        if (s >= nin) throw RenderError(path + ": plate channel " + std::to_string(s) + " does not exist");
        const float* e = s <= -2 ? extra[static_cast<size_t>(-2 - s)].data : nullptr;
        for (size_t i = 0; i < npixels; ++i) pixels[i * nout + k] = e ? e[i] : s < 0 ? z[i] : src[i * nin + s];
    }
    return pixels;
}

/// The file's spec: windows from the plate, channel names and per-channel types, the plate's own metadata, ours.
/// `metadata` entries named "oiio:" go to `exr_only` (OIIO's OpenEXR writer drops them; write_exr_file adds them).
OIIO::ImageSpec exr_spec(const Plate& plate, const ExrWriteOptions& options, const std::vector<OutputChannel>& channels,
                         const Metadata& metadata, Metadata& exr_only) {
    const OIIO::ImageSpec& in = plate.file_spec;
    const int nout = static_cast<int>(channels.size());
    OIIO::ImageSpec spec(in.width, in.height, nout, OIIO::TypeDesc::FLOAT);
    spec.x = in.x;
    spec.y = in.y;
    spec.full_x = in.full_x;
    spec.full_y = in.full_y;
    spec.full_width = in.full_width;
    spec.full_height = in.full_height;
    spec.channelformats.clear();
    spec.alpha_channel = spec.z_channel = -1;
    for (int k = 0; k < nout; ++k) {
        spec.channelnames[k] = channels[k].name;
        spec.channelformats.push_back(channels[k].type);
        if (channels[k].name == "A") spec.alpha_channel = k;
        if (channels[k].source == -1) spec.z_channel = k;
    }
    for (const auto& attr : in.extra_attribs)
        if (!is_format_attribute(attr.name().string())) spec.extra_attribs.push_back(attr);
    if (writes_multiview(plate, options)) {
        if (const OIIO::ParamValue* mv = in.find_attribute("multiView")) spec.extra_attribs.push_back(*mv);
    } else if (!plate.view.empty()) {
        spec.attribute("view", plate.view);
    }
    // OIIO stamps the current time as capDate when there is no DateTime: the same frame rendered twice
    // (overlapping farm chunks) would then differ. Without the plate's own DateTime, the plate file's
    // modification time (UTC) stands in, so a frame's bytes depend only on its inputs.
    if (spec.get_string_attribute("DateTime").empty()) spec.attribute("DateTime", file_time(plate.path));
    // OIIO passes "zip:N" on to OpenEXR's zipCompressionLevel (OpenEXR 3.1.3+); the file says "zip" either way.
    const bool zip = options.compression == Compression::Zip || options.compression == Compression::Zips;
    spec.attribute("compression", std::string(option_name(options.compression)) +
                                      (zip && options.zip_level != 4 ? ":" + std::to_string(options.zip_level) : ""));
    if (plate.parts > 1)
        spec.attribute(exr_meta::kPlatePart,
                       std::to_string(plate.part) + (plate.part_name.empty() ? "" : " " + plate.part_name));
    if (!plate.view.empty()) spec.attribute(exr_meta::kPlateView, plate.view);
    if (const std::string rule = plate_depth_rule(plate, options); !rule.empty())
        spec.attribute(exr_meta::kPlateDepth, rule);
    if (plate.unassociated_alpha && plate.a >= 0 && options.channels != OutputChannels::Depth)
        spec.attribute(exr_meta::kAlpha, "unassociated: colour as stored in the plate, not premultiplied by A");
    // "oiio:" names (oiio:ColorSpace) are dropped by OIIO's OpenEXR writer: OpenEXR writes those below.
    for (const auto& [key, value] : metadata)
        if (key.rfind("oiio:", 0) == 0) exr_only.push_back({key, value});
        else spec.attribute(key, value);
    return spec;
}

/// Write `pixels` under `spec` into the publication's temporary (not published yet). With attributes only OpenEXR
/// writes (`exr_only`), OIIO writes a staging file first (the publication's scratch: same folder, hidden, removed
/// in any case) and OpenEXR copies its compressed pixels unchanged under the fuller header into the temporary.
/// Throws RenderError naming the final path, with what the OS said.
void write_exr_file(Publication& pub, const OIIO::ImageSpec& spec, const std::vector<float>& pixels,
                    const Metadata& exr_only) {
    const std::string& path = pub.final_path();
    const bool staged = !exr_only.empty();
    const std::string oiio_path = staged ? pub.scratch_path() : pub.temp_path();
    auto out = OIIO::ImageOutput::create("openexr");
    if (!out) throw RenderError(path + ": no OpenEXR writer: " + library_error_line(OIIO::geterror()));
    // What the OS said (No space left on device, Permission denied, Read-only file system): OIIO's own
    // message is often only "File output failed".
    // Only the errors a write itself meets: errno may also hold a leftover of a harmless probe inside OIIO.
    // OIIO's message and the OS's reason, the reason once (OIIO's open error already holds it: "(Permission denied)").
    const auto with_os_error = [&](const std::string& oiio) {
        const int e = errno;
        const bool write_error =
            e == ENOSPC || e == EDQUOT || e == EACCES || e == EPERM || e == EROFS || e == EIO || e == EFBIG;
        const std::string reason = std::strerror(e);
        const std::string line = library_error_line(oiio);
        return write_error && line.find(reason) == std::string::npos ? line + " (" + reason + ")" : line;
    };
    errno = 0;
    if (!out->open(oiio_path, spec)) throw RenderError(path + ": cannot write: " + with_os_error(out->geterror()));
    const bool wrote = out->write_image(OIIO::TypeDesc::FLOAT, pixels.data());
    const std::string write_error = wrote ? "" : with_os_error(out->geterror());
    const bool closed = out->close();
    if (!wrote || !closed)
        throw RenderError(path + ": write failed: " + (wrote ? with_os_error(out->geterror()) : write_error));
    if (staged) {
        try {
            Imf::InputFile in_file(pub.scratch_path().c_str());
            Imf::Header header = in_file.header();
            for (const auto& [key, value] : exr_only) header.insert(key, Imf::StringAttribute(value));
            Imf::OutputFile out_file(pub.temp_path().c_str(), header);
            out_file.copyPixels(in_file);
        } catch (const std::exception& e) {
            throw RenderError(path + ": write failed: " + e.what());
        }
    }
}

}  // namespace

void write_depth_exr(Publication& pub, const Plate& plate, const OIIO::ImageBuf& depth, const Metadata& metadata,
                     const ExrWriteOptions& options, const std::vector<ExtraChannel>& extra) {
    const std::string& path = pub.final_path();
    const OIIO::ImageSpec& in = plate.file_spec;
    if (depth.spec().width != in.width || depth.spec().height != in.height || depth.nchannels() != 1)
        throw RenderError(path + ": depth is " + std::to_string(depth.spec().width) + "x" +
                          std::to_string(depth.spec().height) + ", plate data window is " + std::to_string(in.width) +
                          "x" + std::to_string(in.height));

    const std::vector<OutputChannel> channels = channels_with_passes(plate, options, extra, path);
    const std::vector<float> pixels = interleaved_pixels(plate, depth, channels, extra, path);
    Metadata exr_only;
    const OIIO::ImageSpec spec = exr_spec(plate, options, channels, metadata, exr_only);
    // The folder exists (the guard's open made it). No existence check here: run_job refuses existing outputs
    // before rendering, and the no-replace link() below catches a file that appeared since (another farm task),
    // comparing bytes.
    write_exr_file(pub, spec, pixels, exr_only);
    // Two farm tasks whose chunks overlap write the same frame: identical bytes are no conflict.
    if (pub.publish(options.overwrite == OverwritePolicy::Overwrite) == detail::TempFile::Result::Exists)
        throw OutputExistsError(path +
                                ": appeared while rendering (another task?) with different content; "
                                "not overwritten");
}

std::string exr_text_attribute(const std::string& path, const std::string& name) {
    try {
        Imf::InputFile in(path.c_str());
        const auto* a = in.header().findTypedAttribute<Imf::StringAttribute>(name);
        return a ? a->value() : std::string();
    } catch (const std::exception&) {
        return "";
    }
}

std::string why_output_is_stale(const std::string& path, const std::string& settings_sha256,
                                const std::string& model_sha256) {
    try {
        Imf::InputFile in(path.c_str());
        if (!in.isComplete()) return "incomplete (pixel data missing: truncated, or still being written)";
        // isComplete() trusts the chunk offset table, which a file cut short after it was written still holds
        // whole. depthbatch writes scanlines in increasing order, so the last chunk lies at the end of the
        // file: decoding the last scanline of depth.Z reads it and fails for any truncation.
        const Imath::Box2i dw = in.header().dataWindow();
        if (in.header().channels().findChannel("depth.Z")) {
            std::vector<float> row(static_cast<size_t>(dw.max.x - dw.min.x + 1));
            Imf::FrameBuffer fb;
            fb.insert("depth.Z",
                      Imf::Slice(Imf::FLOAT, reinterpret_cast<char*>(row.data() - dw.min.x), sizeof(float), 0));
            in.setFrameBuffer(fb);
            try {
                in.readPixels(dw.max.y, dw.max.y);
            } catch (const std::exception&) {
                return "incomplete (its last scanlines cannot be read: truncated)";
            }
        }
        const auto text = [&in](const char* name) -> std::string {
            const auto* a = in.header().findTypedAttribute<Imf::StringAttribute>(name);
            return a ? a->value() : std::string();
        };
        if (text(exr_meta::kVersion).empty()) return "not written by depthbatch (no depthbatch metadata)";
        const std::string settings = text(exr_meta::kSettingsSha256);
        if (settings.empty())
            return "written by depthbatch " + text(exr_meta::kVersion) + ", which recorded no settings fingerprint";
        if (text(exr_meta::kModelSha256) != model_sha256)
            return "written by another model (sha256 " + text(exr_meta::kModelSha256).substr(0, 12) + ", this job's " +
                   model_sha256.substr(0, 12) + ")";
        if (settings != settings_sha256) return "written with other job settings (depthbatch/settings_sha256 differs)";
        return "";
    } catch (const std::exception& e) {
        return std::string("not a readable OpenEXR file (") + e.what() + ")";
    }
}

}  // namespace depthbatch
