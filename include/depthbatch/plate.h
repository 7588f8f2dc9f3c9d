// depthbatch — reading one plate frame with OpenImageIO.
//
// A Plate keeps every channel of the file's first subimage, mip level 0, as float32 (conversion from
// half and from 8/16-bit integer codes is exact: code/255, code/65535), in the file's data window, with
// the file's spec (data and display windows, channel names and types, metadata) kept for the writer.
#pragma once

#include <OpenImageIO/imagebuf.h>

#include <string>

namespace depthbatch {

struct Plate {
    int frame = 0;
    std::string path;
    OIIO::ImageSpec file_spec;   ///< the spec as stored in the file (native channel formats, metadata)
    OIIO::ImageBuf pixels;       ///< all channels, float32, ROI = the data window
    int r = -1, g = -1, b = -1;  ///< channel indices feeding the model's R,G,B (equal for grey plates)
    int a = -1;                  ///< alpha channel index, -1 if none

    /// Data window size in pixels.
    int width() const { return file_spec.width; }
    int height() const { return file_spec.height; }
};

/// Read frame `frame` from `path`. Throws InputError naming the frame and path when the file is
/// missing, unreadable, truncated or holds something depthbatch cannot use (deep data, no channels).
Plate read_plate(const std::string& path, int frame);

/// The plate's R,G,B as a packed 3-channel float32 ImageBuf over the data window (grey plates are
/// replicated to three channels). Alpha and other channels never reach the model.
OIIO::ImageBuf plate_rgb(const Plate& plate);

}  // namespace depthbatch
