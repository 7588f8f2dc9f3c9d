// depthbatch — a model described for a person (`depthbatch info MODEL`): the file and its digest, the contract
// (input colorspace, size rules, what the output is, a video model's clips and windowing, a metric model's
// reference focal length, extra outputs), the parameter count, the kind of module and the torch that exported
// it. One "label        value" line each, the label padded to 13 columns; the lines and their order are what
// docs/models.md shows and scripts may read, so they change only with the docs.
#pragma once

#include "depthbatch/depth_model.h"

#include <ostream>
#include <string>

namespace depthbatch {

/// Write the description of the loaded `model` to `out`: "model", "sha256", "name", "contract" (embedded
/// depthbatch.json, or none), "input" (RGB [0,1] in its colorspace, multiple, a traced or fixed size), for a
/// multi-frame model "frames" and "temporal" (window, overlap, stride, keyframes, crossfade, align), "output" (the
/// depth kind and units, or that the job must state model.kind; max_scale), "focal" for a metric model with a
/// reference focal length, one "extra output" line per extra output, "parameters", "module" (traced or scripted),
/// "exported by" (the contract's exported_by.torch and this LibTorch) and the contract's provenance entries.
/// Throws only what `out` throws.
void describe_model(std::ostream& out, const DepthModel& model);

/// Load the model file at `model_path` on the CPU ("default": DepthModel::default_model_path()) and describe it
/// as above. A file without a depthbatch.json is still described (loaded as relative inverse depth: its size if
/// traced, its parameters; "contract none (from job keys)"). Throws ModelError (exit 4) for a file that cannot
/// be loaded, as DepthModel::load does.
void describe_model(std::ostream& out, const std::string& model_path);

}  // namespace depthbatch
