// depthbatch (internal) — luminance/chroma OpenEXR plates, read through OpenEXR itself.
//
// OIIO 2.4 refuses subsampled channels, so a luminance/chroma EXR (Y, RY, BY, often with 2x2 subsampled chroma)
// is read through Imf::RgbaInputFile, which reconstructs the chroma and converts to RGB with the luminance weights
// of the file's chromaticities (ImfRgbaYca.h: reconstructChromaHoriz/Vert, YCAtoRGBA); a luminance-only (Y) file
// gives R = G = B = Y. The plate is then R,G,B[,A] half channels, with the file's header attributes as OIIO
// metadata (renamed as OIIO's own EXR reader renames them). plate_reader.cpp decides when (plate.h).
#pragma once

#include "depthbatch/plate.h"

#include <OpenImageIO/imagebuf.h>

#include <string>

namespace depthbatch {

/// Whether `path` is an OpenEXR file (by its magic number) whose channels Imf::RgbaInputFile reads as
/// luminance/chroma. False for anything it cannot open.
bool is_luminance_chroma_exr(const std::string& path);

/// Fill `info` (format, file_spec, channel roles R,G,B[,A] = 0,1,2[,3], luminance_chroma) from the file at
/// info.path; with `pixels`, also read every pixel into it as float32 over the data window. Throws InputError
/// for a truncated file, and whatever OpenEXR throws for a file it cannot read (plate_reader adds the frame).
void read_luminance_chroma(PlateInfo& info, OIIO::ImageBuf* pixels);

}  // namespace depthbatch
