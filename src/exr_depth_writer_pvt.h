// depthbatch (internal) — exr_depth_writer.h's writer: the EXR frame written into a Publication.
// What the public header cannot say: these functions write through the job's output guard (src/output/), whose
// types are not part of the public API (docs/code-map.md).
#pragma once

#include "output/output_guard.h"

#include "depthbatch/exr_depth_writer.h"

#include <vector>

namespace depthbatch {

/// Write `depth` (1-channel float32, plate.width() x plate.height()) with the plate's passthrough
/// channels into `out` (a Publication of OutputRole::DepthFrame that OutputGuard::open made: written to its
/// temporary, linked into place; messages name its final path), then the `extra` channels in their order. `metadata` entries are stored as strings
/// under their given names; "oiio:" names (oiio:ColorSpace), which OIIO 2.4's OpenEXR writer drops, are added by
/// OpenEXR itself (Imf::OutputFile::copyPixels from a hidden staging file: the pixels are not recompressed).
/// Throws RenderError (naming the path) if the write fails, or an extra channel's name is already taken, and
/// OutputExistsError if the final path exists (with other bytes) and the policy is not Overwrite (the existing
/// file is untouched).
void write_depth_exr(Publication& out, const Plate& plate, const OIIO::ImageBuf& depth, const Metadata& metadata,
                     const ExrWriteOptions& options, const std::vector<ExtraChannel>& extra = {});

}  // namespace depthbatch
