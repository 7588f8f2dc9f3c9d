// depthbatch — reading one plate frame (OpenImageIO; OpenEXR directly for luminance/chroma files).
//
// What is read (docs/colour.md "Plates and color" is the user-facing copy):
//   * one part (OIIO subimage) of the file: input.part (index or name), default the first; with
//     input.view set, a multi-part file gives the first part of that view holding colour channels;
//   * mip level 0 of tiled / mip-mapped files;
//   * in a single-part multi-view file (multiView attribute), the channels of one view: input.view, default
//     the file's default (first) view, by OpenEXR's naming rule (ImfMultiView.h: a channel belongs to view V
//     when the component before its last is V; channels without a view component belong to the default view);
//   * every channel of that part, as float32 over the data window (conversion is exact: half -> float,
//     integer code -> code/255, code/1023, code/65535); the data window and display window are kept as the
//     file has them (negative origins, overscan, data outside the display window);
//   * luminance/chroma EXRs (Y, RY, BY, often with 2x2 subsampled chroma, which OIIO 2.4 refuses) are read
//     through Imf::RgbaInputFile, which reconstructs the chroma and converts to RGB (ImfRgbaYca.h); a
//     luminance-only (Y) file is grey; 1- and 2-channel plates are grey (+ alpha);
//   * straight (unassociated) alpha, as PNG and some TIFFs store it, is kept as stored: colour is never
//     premultiplied on reading, so alpha never changes what the model sees;
//   * deep files are refused ("deep images are not supported").
#pragma once

#include "depthbatch/option_names.h"

#include <OpenImageIO/imagebuf.h>

#include <optional>
#include <string>
#include <vector>

namespace depthbatch {

enum class Scene { Unknown, Indoor, Outdoor };  ///< input.scene: what the plate shows
/// Scene's job-file spellings (option_names.h: option_name() prints them).
constexpr OptionNames<Scene, 3> option_names(Scene) {
    return {{{Scene::Unknown, "unknown"}, {Scene::Indoor, "indoor"}, {Scene::Outdoor, "outdoor"}}};
}

/// The job's input section (JobConfig::Input): the plate and the shot.
struct InputSettings {
    std::string path;         ///< absolute path pattern
    std::vector<int> frames;  ///< the shot's frames (sorted); empty = take what is on disk
    std::string colorspace = "auto";
    std::string part = "0";              ///< subimage index ("0", "2") or part name
    std::string view;                    ///< multi-view EXR view name; "" = the part as it is
    std::string layer;                   ///< the layer whose R,G,B the model sees ("ViewLayer.DiffCol"); "" = auto
    std::optional<double> pixel_aspect;  ///< the plate's pixel aspect; unset = the file's (1 without one);
                                         ///< "ignore" in the job = 1
    /// input.scene: indoor, outdoor or unknown (what the plate shows; checked against the model contract's
    /// training domain, e.g. FastDepth's "indoor": outdoor with an indoor-only model warns once per job)
    Scene scene = Scene::Unknown;
};

/// Everything about a plate frame except its pixels: which part/view was chosen, its spec, and what each
/// channel is. probe_plate() fills it from the header alone.
struct PlateInfo {
    int frame = 0;
    std::string path;
    std::string format;               ///< OIIO format name: "openexr", "dpx", "tiff", "png", "jpeg", ...
    OIIO::ImageSpec file_spec;        ///< the chosen part, mip level 0, as stored (native channel formats, metadata);
                                      ///< for a luminance/chroma file: the R,G,B[,A] half channels it converts to
    int r = -1, g = -1, b = -1;       ///< channel indices feeding the model's R,G,B (equal for grey plates)
    int a = -1;                       ///< alpha channel index, -1 if none
    std::vector<int> own_depth;       ///< the chosen view's own depth channels (named Z or depth.Z, in a multi-view
                                      ///< file with the view component: left.Z, depth.left.Z)
    std::vector<int> other_depth;     ///< the other views' depth channels (multi-view files)
    int part = 0, parts = 1;          ///< chosen part (subimage) and how many the file has
    std::string part_name;            ///< the part's name ("" if none)
    std::string view;                 ///< the chosen view ("" if the file has none)
    std::vector<std::string> views;   ///< multiView list of a single-part multi-view file (empty otherwise)
    int mip_levels = 1;               ///< levels in the file (level 0 is read)
    bool luminance_chroma = false;    ///< converted from Y/RY/BY by Imf::RgbaInputFile
    bool unassociated_alpha = false;  ///< the file stores straight (not premultiplied) colour, kept as stored

    /// Data window size in pixels.
    int width() const { return file_spec.width; }
    int height() const { return file_spec.height; }
    /// A channel's name without its view component ("left.Z" -> "Z", "forward.left.u" -> "forward.u");
    /// the name itself in a file without views.
    std::string base_name(int channel) const;
    /// One line for the log: format, windows, channels, the part/view chosen and why.
    std::string describe() const;
};

/// A plate frame with its pixels.
struct Plate : PlateInfo {
    OIIO::ImageBuf pixels;  ///< every channel of file_spec, float32, ROI = the data window
};

/// Read the header of frame `frame` at `path` and decide part, view and channel roles as the job's
/// input section says. Throws InputError naming the frame and path when the file is missing, unreadable,
/// deep or has no channels, and ConfigError when input.part / input.view name something the file lacks
/// (the message lists what it has).
PlateInfo probe_plate(const std::string& path, int frame, const InputSettings& input = InputSettings());

/// Read frame `frame` from `path` (as probe_plate, then the pixels). Throws InputError naming the frame and
/// path for everything wrong with the file, including a part/view the job asks for that it lacks.
Plate read_plate(const std::string& path, int frame, const InputSettings& input = InputSettings());

/// What must stay the same across the frames of a shot for one decision to hold for all of them (input.colorspace
/// auto is decided from the first frame, ColorTransform::auto_colorspace): DPX, float or integer colour
/// channels, and the channel names, e.g. "integer colour, channels R,G,B". Frames whose rule class or channels
/// differ give different strings (a float TIFF among 16-bit ones, a PNG named .exr among half EXRs). What a
/// float file declares of its colorspace is compared as ColorTransform::auto_for resolves it, not here.
std::string plate_kind(const PlateInfo& plate);

/// What identifies the plate file as delivered, for `--skip-existing` (an EXR records it as
/// depthbatch/plate_identity; a plate re-delivered in place after its depth was rendered differs): its size in
/// bytes and modification time (nanoseconds), "123456 bytes, modified 1733090000.123456789". "" when the file
/// cannot be stat'ed.
std::string plate_identity(const std::string& path);

/// The plate's R,G,B as a packed 3-channel float32 ImageBuf over the data window (grey plates are
/// replicated to three channels). Alpha and other channels never reach the model. Pixel values are the
/// plate's, untouched (NaN and Inf included: ColorTransform::apply deals with them).
OIIO::ImageBuf plate_rgb(const Plate& plate);

}  // namespace depthbatch
