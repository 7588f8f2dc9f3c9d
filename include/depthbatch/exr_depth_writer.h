// depthbatch — writing one output frame as OpenEXR, atomically.
//
// Channels: R,G,B (and A when the plate has alpha) passed through from the plate, then `depth.Z`
// (float32). Grey plates pass their single channel through as R, G and B so Nuke shows rgba.
// Passthrough channels keep the plate's pixel type when it is half or float; integer plates (8/16-bit
// PNG/JPEG/TIFF/DPX) are written as float so code/255 and code/65535 survive exactly.
// The data window and display window are the plate's; the plate's metadata is copied (minus
// format-specific attributes that would lie about the new file) and ours added under "depthbatch/".
// The file is written to a hidden temporary in the output folder and renamed into place: an interrupted
// or failed write never leaves a partial EXR under the final name.
#pragma once

#include "depthbatch/job_config.h"
#include "depthbatch/plate.h"

#include <OpenImageIO/imagebuf.h>

#include <string>
#include <utility>
#include <vector>

namespace depthbatch {

using Metadata = std::vector<std::pair<std::string, std::string>>;

struct ExrWriteOptions {
    std::string compression = "zip";              ///< zip, zips, piz, dwaa, none
    OverwritePolicy overwrite = OverwritePolicy::Error;
};

/// Write `depth` (1-channel float32, plate.width() x plate.height()) with the plate's passthrough
/// channels to `path`. `metadata` entries are stored as strings under their given names.
/// Throws RenderError (naming the path) if the folder cannot be created or the write fails, and
/// OutputExistsError if `path` exists and the policy is not Overwrite (the existing file is untouched).
void write_depth_exr(const std::string& path, const Plate& plate, const OIIO::ImageBuf& depth,
                     const Metadata& metadata, const ExrWriteOptions& options);

/// The channel names write_depth_exr writes for this plate, in order (e.g. R,G,B,A,depth.Z).
std::vector<std::string> output_channel_names(const Plate& plate);

}  // namespace depthbatch
