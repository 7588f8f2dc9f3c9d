// depthbatch (internal) — which part, view and channels of a plate are what, decided from headers alone.
//
// Pure rules: every function here takes in-memory OIIO::ImageSpecs (one per part of the file) and the job's input
// section and reads no file. plate_reader.cpp (probe_plate, read_plate) calls them in this order: choose_part,
// then its own checks of the chosen part (deep, no channels, mip levels), choose_view, the luminance/chroma test
// (has_chroma_channels), assign_channels. docs/colour.md "Plates and color" ("What is read") is the user's copy.
//
//   part     input.part by index or by name, default 0. With input.view set and the default part in a multi-part
//            file, the first part whose `view` attribute is input.view and that holds R,G,B or Y.
//   view     a part with a `multiView` attribute (a single-part multi-view file) has views: input.view picks
//            one, default the first (the default view). By OpenEXR's naming rule (ImfMultiView.h
//            viewFromChannelName) a channel belongs to view V when the component before its last is V
//            ("left.R", "depth.left.Z"); channels without a view component belong to the default view. A part
//            without multiView is the view its `view` attribute names ("" when it has none).
//   colour   the view's bare R,G,B (also r/red, g/green, b/blue); else input.layer's L.R, L.G, L.B, or the only
//            layer holding all three ("ViewLayer.Combined.R"); else a grey channel (Y, y, L, gray, grey); else
//            what is left that is neither alpha nor depth: one channel, or the first of two, is grey; three
//            are R,G,B in order. Anything else is an InputError (several layers: "set input.layer").
//   alpha    the view's A (a, alpha); with a layer, the layer's L.A, else the bare one; in a file without views,
//            also OIIO's alpha_channel.
//   depth    channels named Z or depth.Z once the view component is taken out: the chosen view's are its own
//            depth, every other view's are "other" depth.
//
// A part, view or layer the job asks for that the file lacks is a ConfigError whose message lists what the file
// has ("input.part 12: the file has 10 parts (0 'rgba_right' (view right), ...)"), without the frame: plate_reader
// adds "frame N (path): " when probing, and turns it into an InputError for a frame read during the render.
#pragma once

#include "depthbatch/plate.h"

#include <OpenImageIO/imageio.h>

#include <string>
#include <vector>

namespace depthbatch {

/// "a.b.c" -> {"a", "b", "c"}; a name without a dot is one component.
std::vector<std::string> split_channel_name(const std::string& name);

/// `items` joined with `sep`.
std::string join_names(const std::vector<std::string>& items, const char* sep = ", ");

/// A channel name split into its view and its name without the view component.
struct ChannelName {
    std::string view;  ///< "" when the file has no views
    std::string base;  ///< e.g. "R", "Z", "depth.Z", "forward.u"
};
/// `name` by OpenEXR's multi-view rule: the component before the last names the view when it is one of
/// `views`; otherwise the channel belongs to the default view, views[0]. Without views: {"", name}.
ChannelName parse_channel(const std::string& name, const std::vector<std::string>& views);

/// A depth channel's base name: "Z" or "depth.Z".
bool is_depth_name(const std::string& base);

/// The part's name: OIIO's oiio:subimagename, else its `name` attribute ("" if none).
std::string part_name_of(const OIIO::ImageSpec& spec);

/// "0 'rgba_right' (view right), 1 'depth_right' (view right), ..." for messages.
std::string list_parts(const std::vector<OIIO::ImageSpec>& specs);

/// Whether a part has channels an image can be made of (R,G,B or Y, in any layer or view), for choosing a part
/// by view.
bool has_colour(const OIIO::ImageSpec& spec);

/// Whether the channels are OpenEXR luminance/chroma (RY and BY, in any layer or view).
bool has_chroma_channels(const OIIO::ImageSpec& spec);

/// The part to read (see the top of this file). `specs`: every part's header, at least one. Throws ConfigError
/// listing the file's parts for an input.part it lacks, or an input.view none of whose parts holds colour.
int choose_part(const std::vector<OIIO::ImageSpec>& specs, const InputSettings& job);

/// The views of part `part` and the one chosen.
struct ViewChoice {
    std::vector<std::string> views;  ///< the part's multiView list (empty unless single-part multi-view)
    std::string view;                ///< the chosen view; "" when the part has none
};
/// The views of specs[part] and the chosen one (input.view, default the first view or the part's own view
/// attribute). Throws ConfigError for an input.view the part does not have (naming its views, or its own view
/// and the file's parts).
ViewChoice choose_view(const std::vector<OIIO::ImageSpec>& specs, int part, const std::string& job_view);

/// What each channel of a part feeds (indices into the spec's channels, -1 for none).
struct ChannelRoles {
    int r = -1, g = -1, b = -1;    ///< the model's R,G,B (all three equal for a grey plate)
    int a = -1;                    ///< alpha
    std::vector<int> own_depth;    ///< the chosen view's depth channels (Z, depth.Z, left.Z, depth.left.Z)
    std::vector<int> other_depth;  ///< the other views' depth channels
};
/// The roles of `spec`'s channels for view `view` of `views` (ViewChoice; both empty for a file without views)
/// and input.layer `layer` ("" = none). Throws ConfigError for a `layer` no layer of that view holds R,G,B in
/// (listing the layers that do), InputError (without the frame) when nothing makes an image.
ChannelRoles assign_channels(const OIIO::ImageSpec& spec, const std::vector<std::string>& views,
                             const std::string& view, const std::string& layer);

}  // namespace depthbatch
