#include "depthbatch/exr_depth_writer.h"

#include "depthbatch/error.h"

#include <OpenImageIO/imagebufalgo.h>
#include <OpenImageIO/imageio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace fs = std::filesystem;

namespace depthbatch {
namespace {

/// Metadata that describes the source file's encoding, not the image: never copied to our EXR.
bool is_format_attribute(const std::string& name) {
    static const char* prefixes[] = {"oiio:", "openexr:", "tiff:", "jpeg:", "png:", "dpx:", "exif:ExifVersion",
                                     "compression", "planarconfig", "Orientation", "ImageDescription",
                                     "depthbatch/"};
    for (const char* p : prefixes)
        if (name.rfind(p, 0) == 0) return true;
    return false;
}

bool passthrough_keeps_type(OIIO::TypeDesc t) {
    return t.basetype == OIIO::TypeDesc::HALF || t.basetype == OIIO::TypeDesc::FLOAT;
}

/// Removes the temporary file unless released.
struct TempFile {
    std::string path;
    bool keep = false;
    ~TempFile() {
        if (!keep && !path.empty()) {
            std::error_code ec;
            fs::remove(path, ec);
        }
    }
};

bool same_bytes(const std::string& a, const std::string& b) {
    std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
    if (!fa || !fb) return false;
    return std::equal(std::istreambuf_iterator<char>(fa), std::istreambuf_iterator<char>(),
                      std::istreambuf_iterator<char>(fb), std::istreambuf_iterator<char>());
}

std::string temp_name(const fs::path& final_path) {
    static std::atomic<unsigned> counter{0};
    return (final_path.parent_path() /
            ("." + final_path.filename().string() + "." + std::to_string(::getpid()) + "." +
             std::to_string(counter++) + ".tmp"))
        .string();
}

}  // namespace

std::vector<std::string> output_channel_names(const Plate& plate) {
    std::vector<std::string> names = {"R", "G", "B"};
    if (plate.a >= 0) names.push_back("A");
    names.push_back("depth.Z");
    return names;
}

void write_depth_exr(const std::string& path, const Plate& plate, const OIIO::ImageBuf& depth,
                     const Metadata& metadata, const ExrWriteOptions& options) {
    const OIIO::ImageSpec& in = plate.file_spec;
    if (depth.spec().width != in.width || depth.spec().height != in.height || depth.nchannels() != 1)
        throw RenderError(path + ": depth is " + std::to_string(depth.spec().width) + "x" +
                          std::to_string(depth.spec().height) + ", plate data window is " +
                          std::to_string(in.width) + "x" + std::to_string(in.height));

    // Pixels: passthrough channels then depth, all float32 in memory over the data window.
    std::vector<int> order = {plate.r, plate.g, plate.b};
    if (plate.a >= 0) order.push_back(plate.a);
    const int npass = static_cast<int>(order.size());
    OIIO::ImageBuf pass;
    if (!OIIO::ImageBufAlgo::channels(pass, plate.pixels, npass, order, {}, {}, false, 1))
        throw RenderError(path + ": cannot take passthrough channels: " + pass.geterror());
    OIIO::ImageBuf depth_at_origin = depth;
    {
        OIIO::ImageSpec& ds = depth_at_origin.specmod();
        ds.x = pass.spec().x;
        ds.y = pass.spec().y;
    }
    OIIO::ImageBuf pixels;
    if (!OIIO::ImageBufAlgo::channel_append(pixels, pass, depth_at_origin, {}, 1))
        throw RenderError(path + ": cannot append depth: " + pixels.geterror());

    // Spec: windows from the plate, channel names and per-channel types, metadata.
    OIIO::ImageSpec spec(in.width, in.height, npass + 1, OIIO::TypeDesc::FLOAT);
    spec.x = in.x;
    spec.y = in.y;
    spec.full_x = in.full_x;
    spec.full_y = in.full_y;
    spec.full_width = in.full_width;
    spec.full_height = in.full_height;
    spec.channelnames = output_channel_names(plate);
    spec.alpha_channel = plate.a >= 0 ? 3 : -1;
    spec.z_channel = npass;
    spec.channelformats.clear();
    for (int c = 0; c < npass; ++c) {
        const OIIO::TypeDesc t = in.channelformat(order[c]);
        spec.channelformats.push_back(passthrough_keeps_type(t) ? t : OIIO::TypeDesc(OIIO::TypeDesc::FLOAT));
    }
    spec.channelformats.push_back(OIIO::TypeDesc::FLOAT);
    for (const auto& attr : in.extra_attribs)
        if (!is_format_attribute(attr.name().string())) spec.extra_attribs.push_back(attr);
    spec.attribute("compression", options.compression);
    for (const auto& [key, value] : metadata) spec.attribute(key, value);

    const fs::path final_path(path);
    std::error_code ec;
    if (!final_path.parent_path().empty()) fs::create_directories(final_path.parent_path(), ec);
    if (ec) throw RenderError(path + ": cannot create the output folder: " + ec.message());
    // No existence check here: run_job refuses existing outputs before rendering, and the no-replace
    // link() below catches a file that appeared since (another farm task), comparing bytes.

    TempFile tmp{temp_name(final_path)};
    auto out = OIIO::ImageOutput::create("openexr");
    if (!out) throw RenderError(path + ": no OpenEXR writer: " + OIIO::geterror());
    if (!out->open(tmp.path, spec)) throw RenderError(path + ": cannot write: " + out->geterror());
    const bool wrote = out->write_image(OIIO::TypeDesc::FLOAT, pixels.localpixels());
    const bool closed = out->close();
    if (!wrote || !closed) throw RenderError(path + ": write failed: " + out->geterror());

    if (options.overwrite == OverwritePolicy::Overwrite) {
        fs::rename(tmp.path, final_path, ec);
        if (ec) throw RenderError(path + ": cannot move the finished file into place: " + ec.message());
    } else {
        // link() never replaces: a file that appeared meanwhile (another farm task) is left alone.
        if (::link(tmp.path.c_str(), path.c_str()) != 0) {
            const int err = errno;
            // Two farm tasks whose chunks overlap write the same frame: identical bytes are no conflict.
            if (err == EEXIST && same_bytes(tmp.path, path)) return;
            if (err == EEXIST) throw OutputExistsError(path + ": appeared while rendering (another task?) with "
                                                       "different content; not overwritten");
            throw RenderError(path + ": cannot move the finished file into place: " + std::strerror(err));
        }
    }
}

}  // namespace depthbatch
