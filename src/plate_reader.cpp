#include "depthbatch/plate.h"

#include "depthbatch/error.h"

#include <OpenImageIO/imagebufalgo.h>
#include <OpenImageIO/imageio.h>

#include <filesystem>

namespace depthbatch {
namespace {

std::string where(int frame, const std::string& path) {
    return "frame " + std::to_string(frame) + " (" + path + ")";
}

int find_channel(const OIIO::ImageSpec& spec, std::initializer_list<const char*> names) {
    for (const char* name : names)
        for (int c = 0; c < spec.nchannels; ++c)
            if (spec.channelnames[c] == name) return c;
    return -1;
}

}  // namespace

Plate read_plate(const std::string& path, int frame) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw InputError(where(frame, path) + ": file not found");
    Plate plate;
    plate.frame = frame;
    plate.path = path;

    auto input = OIIO::ImageInput::open(path);
    if (!input) throw InputError(where(frame, path) + ": cannot open: " + OIIO::geterror());
    plate.file_spec = input->spec();
    const OIIO::ImageSpec& spec = plate.file_spec;
    if (spec.deep) throw InputError(where(frame, path) + ": deep images are not supported");
    if (spec.nchannels < 1) throw InputError(where(frame, path) + ": the image has no channels");

    // Subimage 0, mip level 0, every channel, converted to float32 over the data window.
    OIIO::ImageSpec float_spec = spec;
    float_spec.set_format(OIIO::TypeDesc::FLOAT);
    float_spec.channelformats.clear();
    plate.pixels.reset(float_spec, OIIO::InitializePixels::No);
    const bool ok = input->read_image(0, 0, 0, spec.nchannels, OIIO::TypeDesc::FLOAT, plate.pixels.localpixels());
    // Strict: a decoder that recovers from damage still reports it (libjpeg's "Premature end of JPEG
    // file" on a truncated JPEG returns success with grey pixels): any message means a bad frame.
    const std::string message = input->geterror();
    if (!ok || !message.empty())
        throw InputError(where(frame, path) + ": cannot read pixels: " + (message.empty() ? "unknown error" : message));
    input->close();

    plate.r = find_channel(spec, {"R", "r", "red"});
    plate.g = find_channel(spec, {"G", "g", "green"});
    plate.b = find_channel(spec, {"B", "b", "blue"});
    plate.a = spec.alpha_channel >= 0 ? spec.alpha_channel : find_channel(spec, {"A", "a", "alpha"});
    if (plate.r < 0 || plate.g < 0 || plate.b < 0) {
        const int y = find_channel(spec, {"Y", "y", "L", "gray", "grey"});
        if (y >= 0) {
            plate.r = plate.g = plate.b = y;
        } else if (spec.nchannels >= 3 && plate.a != 0 && plate.a != 1 && plate.a != 2) {
            plate.r = 0, plate.g = 1, plate.b = 2;   // three unnamed colour channels
        } else if (spec.nchannels <= 2) {
            plate.r = plate.g = plate.b = (plate.a == 0 ? 1 : 0);   // grey (+ alpha)
        } else {
            throw InputError(where(frame, path) + ": no R,G,B or Y channels among " +
                             std::to_string(spec.nchannels) + " channels");
        }
    }
    return plate;
}

OIIO::ImageBuf plate_rgb(const Plate& plate) {
    const int order[3] = {plate.r, plate.g, plate.b};
    OIIO::ImageBuf rgb;
    if (!OIIO::ImageBufAlgo::channels(rgb, plate.pixels, 3, order, {}, {}, false, 1))
        throw InputError(where(plate.frame, plate.path) + ": cannot take R,G,B: " + rgb.geterror());
    return rgb;
}

}  // namespace depthbatch
