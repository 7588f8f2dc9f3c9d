// depthbatch (internal) — does a plate file hold every byte its header promises? A cheap check on headers and
// tables (no pixel is decoded), shared by probe_plate (so `depthbatch validate` predicts a truncated plate) and
// read_plate (so the render names the same cause).
#pragma once

#include <string>

namespace depthbatch {

/// Checks that the file at `path` is not cut short. The format is told by the file's first bytes (OpenEXR, PNG,
/// JPEG, DPX, TIFF; others are not checked, nor is an empty or unreadable file: the decoder reports those):
///   openexr  every chunk offset table entry of every part lies inside the file, and the chunk at the largest
///            offset (its header's data size) ends inside it;
///   png      the chunks, walked by their lengths, reach IEND inside the file;
///   jpeg     the end-of-image marker FFD9 is among the file's last 256 bytes (trailing padding allowed);
///   dpx      the header's total file size and the first image element's data (offset + the size its width,
///            height, descriptor, bit depth and packing imply) fit in the file;
///   tiff     every strip/tile of the first IFD (offsets + byte counts) ends inside the file.
/// Headers it cannot parse are left to the decoder (no error here). Throws InputError("truncated: ...") naming
/// what is missing (no frame/path prefix: the callers add it).
void check_plate_complete(const std::string& path);

}  // namespace depthbatch
