// depthbatch (internal) — depth_preview.h's writer: the preview written into a Publication.
// What the public header cannot say: these functions write through the job's output guard (src/output/), whose
// types are not part of the public API (docs/code-map.md).
#pragma once

#include "output/output_guard.h"

#include "depthbatch/depth_preview.h"

#include <string>

namespace depthbatch {

/// Write `depth` (1 channel float, depth.Z as written, any size) as an 8-bit RGB preview into `out` (a
/// Publication of OutputRole::Preview that OutputGuard::open made; its final path's extension picks the format,
/// and messages name it), then publish it: resized so
/// its long side is `size` px (never enlarged), each value's position between far (t = 0) and near (t = 1)
/// coloured by `map`, non-finite values black, and a legend strip below the image: the colour bar with
/// "near <value> <units>" at its near end and "far <value> <units>" at its far end, and `caption` (e.g. the
/// frame number), on as many lines as they need (legend_layout). Written atomically. Throws RenderError naming
/// the path when it cannot be written. A `size` above the long side writes the depth's own size (run_job warns).
void write_depth_preview(Publication& out, const OIIO::ImageBuf& depth, const PreviewRange& range, const Colormap& map,
                         int size, const std::string& caption);

}  // namespace depthbatch
