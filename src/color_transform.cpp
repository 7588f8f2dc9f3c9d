#include "depthbatch/color_transform.h"

#include "depthbatch/error.h"
#include "depthbatch/install_layout.h"
#include "depthbatch/log.h"

#include <OpenColorIO/OpenColorIO.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace OCIO = OCIO_NAMESPACE;

namespace depthbatch {
namespace {

/// Values this far outside [0,1] count as out of range (conversion round-off, e.g. 1.0000001, does not).
constexpr float kRangeTolerance = 1e-5f;

/// Common names of the sRGB-encoded (texture) colorspace across configs (ours, the ACES studio/CG
/// configs, older Nuke-style configs). Used for "auto" on integer plates and when a model's contract says
/// "sRGB" and the config spells it another way.
/// A Cineon (printing density) log colorspace, by the names configs give it (ACES 1.x: ADX10; the Nuke default:
/// Cineon; the spi configs: lg10).
const char* const kCineonNames[] = {"Cineon", "cineon", "lg10", "ADX10", "Input - ADX - ADX10", "Cineon Log"};
const char* const kSrgbNames[] = {
    "sRGB", "srgb_tx", "sRGB - Texture", "Utility - sRGB - Texture", "srgb_texture", "Input - Generic - sRGB - Texture",
    "srgb"};

std::string list_colorspaces(const OCIO::ConstConfigRcPtr& config) {
    std::ostringstream s;
    const int n = config->getNumColorSpaces(OCIO::SEARCH_REFERENCE_SPACE_ALL, OCIO::COLORSPACE_ALL);
    for (int i = 0; i < n; ++i)
        s << (i ? ", " : "") << "'"
          << config->getColorSpaceNameByIndex(OCIO::SEARCH_REFERENCE_SPACE_ALL, OCIO::COLORSPACE_ALL, i) << "'";
    s << "; roles:";
    for (int i = 0; i < config->getNumRoles(); ++i) s << " " << config->getRoleName(i);
    return s.str();
}

std::string list_displays(const OCIO::ConstConfigRcPtr& config) {
    std::ostringstream s;
    for (int d = 0; d < config->getNumDisplays(); ++d) {
        const char* display = config->getDisplay(d);
        s << (d ? "; " : "") << "'" << display << "': ";
        for (int v = 0; v < config->getNumViews(display); ++v)
            s << (v ? ", " : "") << "'" << config->getView(display, v) << "'";
    }
    return s.str();
}

OCIO::ConstConfigRcPtr load_config(const std::string& path) {
    if (!std::filesystem::exists(path)) throw ConfigError("OCIO config '" + path + "' does not exist");
    try {
        return OCIO::Config::CreateFromFile(path.c_str());
    } catch (const OCIO::Exception& e) {
        throw ConfigError("OCIO config '" + path + "' cannot be read: " + e.what());
    }
}

bool has_colorspace(const OCIO::ConstConfigRcPtr& config, const std::string& name) {
    return !name.empty() && config->getColorSpace(name.c_str()) != nullptr;  // names, aliases and roles
}

/// `name` if the config knows it; for "sRGB" (as model contracts say) also a common alias of it.
std::string resolve_colorspace(const OCIO::ConstConfigRcPtr& config, const std::string& config_path,
                               const std::string& name, const std::string& what) {
    if (has_colorspace(config, name)) return name;
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "srgb")
        for (const char* alt : kSrgbNames)
            if (has_colorspace(config, alt)) {
                log_info("colour: ", what, " '", name, "' is '", alt, "' in ", config_path);
                return alt;
            }
    throw ConfigError("OCIO config '" + config_path + "' has no colorspace or role '" + name + "' (" + what +
                      "); it has " + list_colorspaces(config));
}

std::string canonical(const OCIO::ConstConfigRcPtr& config, const std::string& name) {
    auto cs = config->getColorSpace(name.c_str());
    return cs ? cs->getName() : name;
}

/// Scene-linear colorspaces a float file can declare: by its EXR `chromaticities` (CIE xy of red, green,
/// blue, white: OpenEXR's attribute, ImfStandardAttributes.h), by its `colorInteropID` (the ASWF Color
/// Interop Forum's identifiers, OpenEXR 3.4), and the names configs give them (our config and the OCIO
/// built-in CG config, the ACES 1.x config, short aliases).
/// Primaries: ITU-R BT.709-6 table 1 (D65 white 0.3127, 0.3290); ACES AP1 (ACEScg): Academy S-2014-004;
/// ACES AP0 (ACES2065-1): SMPTE ST 2065-1; ITU-R BT.2020-2; P3-D65: SMPTE EG 432-1. ACES white 0.32168, 0.33767.
struct LinearSpace {
    const char* words;       ///< for the log
    float xy[8];             ///< rx, ry, gx, gy, bx, by, wx, wy
    const char* interop_id;  ///< Color Interop Forum identifier
    const char* names[4];    ///< config spellings, most common first
};
const LinearSpace kLinearSpaces[] = {
    {"Rec.709 / sRGB primaries",
     {0.640f, 0.330f, 0.300f, 0.600f, 0.150f, 0.060f, 0.3127f, 0.3290f},
     "lin_rec709_scene",
     {"Linear Rec.709 (sRGB)", "lin_rec709", "Utility - Linear - sRGB", "lin_srgb"}},
    {"ACES AP1 primaries (ACEScg)",
     {0.713f, 0.293f, 0.165f, 0.830f, 0.128f, 0.044f, 0.32168f, 0.33767f},
     "lin_ap1_scene",
     {"ACEScg", "lin_ap1", "ACES - ACEScg", nullptr}},
    {"ACES AP0 primaries (ACES2065-1)",
     {0.7347f, 0.2653f, 0.0f, 1.0f, 0.0001f, -0.077f, 0.32168f, 0.33767f},
     "lin_ap0_scene",
     {"ACES2065-1", "lin_ap0", "ACES - ACES2065-1", nullptr}},
    {"Rec.2020 primaries",
     {0.708f, 0.292f, 0.170f, 0.797f, 0.131f, 0.046f, 0.3127f, 0.3290f},
     "lin_rec2020_scene",
     {"Linear Rec.2020", "lin_rec2020", "Utility - Linear - Rec.2020", nullptr}},
    {"P3-D65 primaries",
     {0.680f, 0.320f, 0.265f, 0.690f, 0.150f, 0.060f, 0.3127f, 0.3290f},
     "lin_p3d65_scene",
     {"Linear P3-D65", "lin_p3d65", "Utility - Linear - P3-D65", nullptr}},
};

/// The first of `space`'s names the config knows (canonical), or "".
std::string find_linear_space(const OCIO::ConstConfigRcPtr& config, const LinearSpace& space) {
    if (has_colorspace(config, space.interop_id)) return canonical(config, space.interop_id);
    for (const char* n : space.names)
        if (n && has_colorspace(config, n)) return canonical(config, n);
    return {};
}

/// What a float file says of its own colorspace, for "auto": a name the config knows, from the file's
/// `oiio:ColorSpace` (when more than OIIO's generic "Linear"), `colorInteropID` or `chromaticities`. Returns ""
/// when the file says nothing more than "linear". A declaration the config cannot honour (or cannot read) sets
/// `warning`.
std::string declared_linear_space(const OCIO::ConstConfigRcPtr& config, const std::string& config_path,
                                  const OIIO::ImageSpec& spec, std::string* said, std::string* warning) {
    const std::string tag = spec.get_string_attribute("oiio:ColorSpace");
    std::string lower = tag;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!tag.empty() && lower != "linear" && lower != "scene_linear") {
        if (has_colorspace(config, tag)) {
            *said = "tagged '" + tag + "' (oiio:ColorSpace)";
            return canonical(config, tag);
        }
        *warning =
            "the file is tagged '" + tag + "' (oiio:ColorSpace), which OCIO config '" + config_path + "' does not know";
    }
    const std::string interop = spec.get_string_attribute("colorInteropID");
    if (!interop.empty()) {
        if (has_colorspace(config, interop)) {
            *said = "tagged '" + interop + "' (colorInteropID)";
            return canonical(config, interop);
        }
        for (const LinearSpace& space : kLinearSpaces)
            if (interop == space.interop_id) {
                const std::string name = find_linear_space(config, space);
                if (!name.empty()) {
                    *said = "tagged '" + interop + "' (colorInteropID)";
                    return name;
                }
            }
        if (warning->empty())
            *warning = "the file's colorInteropID is '" + interop + "', which OCIO config '" + config_path +
                       "' has no colorspace for";
    }
    const OIIO::ParamValue* chroma = spec.find_attribute("chromaticities");
    if (!chroma || !warning->empty()) return {};
    if (chroma->type() != OIIO::TypeDesc(OIIO::TypeDesc::FLOAT, 8)) {
        *warning = std::string("the file's chromaticities attribute is ") + chroma->type().c_str() +
                   ", not the 8 floats OpenEXR defines: it says nothing depthbatch can read";
        return {};
    }
    const float* xy = static_cast<const float*>(chroma->data());
    for (const LinearSpace& space : kLinearSpaces) {
        bool match = true;
        for (int i = 0; i < 8; ++i) match = match && std::fabs(xy[i] - space.xy[i]) < 1e-3f;
        if (!match) continue;
        const std::string name = find_linear_space(config, space);
        if (!name.empty()) {
            *said = std::string("chromaticities of ") + space.words;
            return name;
        }
        *warning = std::string("the file's chromaticities are ") + space.words + ", for which OCIO config '" +
                   config_path + "' has no colorspace ('" + space.names[0] + "')";
        return {};
    }
    std::ostringstream o;
    o << "the file's chromaticities (";
    for (int i = 0; i < 8; ++i) o << (i ? (i % 2 ? " " : ", ") : "") << xy[i];
    o << ") are none depthbatch knows (Rec.709, ACES AP0/AP1, Rec.2020, P3-D65)";
    *warning = o.str();
    return {};
}

}  // namespace

struct ColorTransform::Impl {
    OCIO::ConstConfigRcPtr config;
    OCIO::ConstCPUProcessorRcPtr cpu;
};

ColorTransform::~ColorTransform() = default;

std::string ColorTransform::resolve_config_path(const std::string& job_config) {
    if (!job_config.empty()) return job_config;
    if (const char* env = std::getenv("OCIO"); env && *env) return env;
    return find_data_file("ocio/config.ocio").string();
}

namespace {

/// The "auto" decision (ColorTransform::auto_colorspace) with the config loaded; logs nothing: a declaration the
/// config cannot honour goes to `warning`.
std::string decide_auto(const OCIO::ConstConfigRcPtr& config, const std::string& config_path, const PlateInfo& plate,
                        std::string* why, std::string* warning_out) {
    const OIIO::ImageSpec& spec = plate.file_spec;
    const OIIO::TypeDesc type = plate.r >= 0 ? spec.channelformat(plate.r) : spec.format;
    const int bits = spec.get_int_attribute("oiio:BitsPerSample", static_cast<int>(type.size() * 8));
    std::string kind = std::string(type.c_str());
    if (type.basetype != OIIO::TypeDesc::HALF && type.basetype != OIIO::TypeDesc::FLOAT &&
        type.basetype != OIIO::TypeDesc::DOUBLE)
        kind = std::to_string(bits) + "-bit";
    kind += " " + plate.format;
    std::string name, reason;
    // A DPX whose header says Cineon log (transfer "Printing density" or "Logarithmic"): the config's Cineon
    // colorspace, never the compositing_log role (ACEScct is another curve); none there: refused, asking for it.
    const std::string transfer =
        plate.format == "dpx" ? std::string(spec.get_string_attribute("dpx:Transfer")) : std::string();
    if (transfer == "Printing density" || transfer == "Logarithmic") {
        for (const char* alt : kCineonNames)
            if (name.empty() && has_colorspace(config, alt)) name = canonical(config, alt);
        if (name.empty())
            throw ConfigError("input.colorspace auto: " + (plate.path.empty() ? std::string("the plate") : plate.path) +
                              " is a " + kind + " plate whose header says transfer '" + transfer +
                              "' (Cineon log); OCIO "
                              "config '" +
                              config_path + "' has no Cineon colorspace ('" + kCineonNames[0] + "', '" +
                              kCineonNames[1] + "', '" + kCineonNames[2] +
                              "'); set input.colorspace to the plate's colorspace");
        reason = kind + " plate, transfer '" + transfer + "' -> Cineon log";
    } else if (plate.format == "dpx" && config->hasRole(OCIO::ROLE_COMPOSITING_LOG)) {
        name = canonical(config, OCIO::ROLE_COMPOSITING_LOG);
        reason = kind + " plate -> the config's compositing_log role";
    } else if (type.basetype == OIIO::TypeDesc::HALF || type.basetype == OIIO::TypeDesc::FLOAT ||
               type.basetype == OIIO::TypeDesc::DOUBLE) {
        if (!config->hasRole(OCIO::ROLE_SCENE_LINEAR))
            throw ConfigError("input.colorspace auto: OCIO config '" + config_path +
                              "' has no scene_linear role for a " + kind + " plate; set input.colorspace");
        std::string said, warning;
        name = declared_linear_space(config, config_path, spec, &said, &warning);
        if (!name.empty()) {
            reason = kind + " plate " + said + " ->";
        } else {
            name = canonical(config, OCIO::ROLE_SCENE_LINEAR);
            reason = kind + " plate -> the config's scene_linear role";
            if (!warning.empty())
                *warning_out = warning + "; " + (plate.path.empty() ? std::string("the plate") : plate.path) +
                               " is taken as the scene_linear role '" + name +
                               "'; set input.colorspace to its colorspace";
        }
    } else {
        for (const char* alt : kSrgbNames)
            if (name.empty() && has_colorspace(config, alt)) name = canonical(config, alt);
        if (name.empty())
            throw ConfigError("input.colorspace auto: OCIO config '" + config_path +
                              "' has no sRGB-encoded colorspace ('" + kSrgbNames[0] + "', '" + kSrgbNames[1] + "', '" +
                              kSrgbNames[2] + "') for a " + kind + " plate; set input.colorspace");
        reason = kind + " plate -> sRGB encoded";
        if (plate.format == "dpx") reason += " (the config has no compositing_log role)";
    }
    if (why) *why = reason + " '" + name + "'";
    return name;
}

}  // namespace

std::string ColorTransform::auto_colorspace(const PlateInfo& plate, const std::string& config_path, std::string* why) {
    std::string warning;
    const std::string name = decide_auto(load_config(config_path), config_path, plate, why, &warning);
    if (!warning.empty()) log_warning("input.colorspace auto: ", warning);
    return name;
}

std::string ColorTransform::auto_for(const PlateInfo& plate) const {
    std::string warning;
    return decide_auto(impl_->config, config_path_, plate, nullptr, &warning);
}

std::shared_ptr<const ColorTransform> ColorTransform::create(const std::string& config_path, const std::string& from,
                                                             const std::string& to) {
    ColorSettings color;
    color.config = config_path;
    return create(color, from, to, nullptr);
}

std::shared_ptr<const ColorTransform> ColorTransform::create(const ColorSettings& color,
                                                             const std::string& input_colorspace,
                                                             const std::string& model_colorspace,
                                                             const PlateInfo* plate) {
    std::shared_ptr<ColorTransform> t(new ColorTransform());
    t->impl_ = std::make_unique<Impl>();
    t->config_path_ = resolve_config_path(color.config);
    t->hdr_ = color.hdr;
    const OCIO::ConstConfigRcPtr config = load_config(t->config_path_);
    t->impl_->config = config;

    if (input_colorspace == "auto") {
        if (!plate) throw ConfigError("input.colorspace auto needs a plate to decide from");
        std::string why, warning;
        t->from_ = decide_auto(config, t->config_path_, *plate, &why, &warning);  // the config loaded once
        if (!warning.empty()) log_warning("input.colorspace auto: ", warning);
        log_info("input.colorspace auto: ", why, " (set input.colorspace to override)");
    } else {
        t->from_ = resolve_colorspace(config, t->config_path_, input_colorspace, "input.colorspace");
    }
    const std::string model = resolve_colorspace(config, t->config_path_, model_colorspace, "the model's colorspace");

    try {
        OCIO::ConstProcessorRcPtr proc;
        if (t->hdr_ == HdrMode::View) {
            bool display_ok = false, view_ok = false;
            for (int d = 0; d < config->getNumDisplays(); ++d)
                if (color.display == config->getDisplay(d)) display_ok = true;
            if (display_ok)
                for (int v = 0; v < config->getNumViews(color.display.c_str()); ++v)
                    if (color.view == config->getView(color.display.c_str(), v)) view_ok = true;
            if (!display_ok || !view_ok)
                throw ConfigError("color.display '" + color.display + "' / color.view '" + color.view +
                                  "': OCIO config '" + t->config_path_ + "' has no such " +
                                  (display_ok ? "view for that display" : "display") + "; it has " +
                                  list_displays(config));
            if (!color.look.empty()) {
                std::stringstream looks(color.look);
                for (std::string look; std::getline(looks, look, ',');) {
                    while (!look.empty() && (look.front() == ' ' || look.front() == '+' || look.front() == '-'))
                        look.erase(0, 1);
                    while (!look.empty() && look.back() == ' ') look.pop_back();
                    if (!look.empty() && !config->getLook(look.c_str())) {
                        std::string have;
                        for (int i = 0; i < config->getNumLooks(); ++i)
                            have += std::string(i ? ", '" : "'") + config->getLookNameByIndex(i) + "'";
                        throw ConfigError("color.look '" + look + "': OCIO config '" + t->config_path_ +
                                          "' has no such look (" +
                                          (have.empty() ? std::string("it defines none") : "it has " + have) + ")");
                    }
                }
            }
            auto dvt = OCIO::DisplayViewTransform::Create();
            dvt->setSrc(t->from_.c_str());
            dvt->setDisplay(color.display.c_str());
            dvt->setView(color.view.c_str());
            auto pipeline = OCIO::LegacyViewingPipeline::Create();
            pipeline->setDisplayViewTransform(dvt);
            if (!color.look.empty()) {
                pipeline->setLooksOverrideEnabled(true);
                pipeline->setLooksOverride(color.look.c_str());
            }
            proc = pipeline->getProcessor(config);
            t->to_ = color.display + " / " + color.view + (color.look.empty() ? "" : " / " + color.look);
        } else {
            proc = config->getProcessor(t->from_.c_str(), model.c_str());
            t->to_ = model_colorspace;
        }
        t->noop_ = proc->isNoOp();
        t->impl_->cpu = proc->getDefaultCPUProcessor();
    } catch (const OCIO::Exception& e) {
        throw ConfigError("OCIO config '" + t->config_path_ + "': cannot convert '" + t->from_ + "' to '" +
                          (t->hdr_ == HdrMode::View ? color.display + " / " + color.view : model) + "': " + e.what());
    }
    if (t->hdr_ == HdrMode::View)
        log_info("colour: the display/view output (", t->to_, ") is fed to the model as its '", model_colorspace,
                 "' input; choose a display whose encoding matches it");
    log_info(t->description());
    return t;
}

std::string ColorTransform::description() const {
    std::ostringstream s;
    s << "colour '" << from_ << "' -> '" << to_ << "'";
    if (hdr_ == HdrMode::View) s << " (color.hdr view: display/view transform, then clamped into 0-1)";
    else s << " (color.hdr clamp: converted, then values outside 0-1 clamped)";
    if (noop_) s << ", no-op";
    s << "; config " << config_path_;
    return s.str();
}

void ColorTransform::convert(OIIO::ImageBuf& rgb) const {
    if (noop_) return;
    const OIIO::ImageSpec& spec = rgb.spec();
    if (spec.nchannels != 3 || spec.format != OIIO::TypeDesc::FLOAT || !rgb.localpixels())
        throw RenderError("ColorTransform: the colour stage needs a packed float RGB buffer");
    float* data = static_cast<float*>(rgb.localpixels());
    OCIO::PackedImageDesc desc(data, spec.width, static_cast<long>(spec.height) * spec.depth, 3);
    impl_->cpu->apply(desc);
}

PixelStats ColorTransform::apply(OIIO::ImageBuf& rgb) const {
    const OIIO::ImageSpec& spec = rgb.spec();
    if (spec.nchannels != 3 || spec.format != OIIO::TypeDesc::FLOAT || !rgb.localpixels())
        throw RenderError("ColorTransform: the colour stage needs a packed float RGB buffer");
    float* data = static_cast<float*>(rgb.localpixels());
    const size_t pixels = static_cast<size_t>(spec.width) * spec.height * spec.depth;
    PixelStats stats;
    for (size_t i = 0; i < pixels; ++i) {
        float* p = data + 3 * i;
        bool bad = false;
        for (int c = 0; c < 3; ++c)
            if (!std::isfinite(p[c])) {
                p[c] = 0.0f;
                bad = true;
            }
        stats.nonfinite += bad;
    }
    convert(rgb);
    for (size_t i = 0; i < pixels; ++i) {
        float* p = data + 3 * i;
        bool out = false;
        for (int c = 0; c < 3; ++c) {
            float v = p[c];
            if (std::isnan(v)) {  // conversion overflow (e.g. 1e38 through a matrix)
                v = 0.0f;
                out = true;
            } else if (v < 0.0f) {
                out |= v < -kRangeTolerance;
                v = 0.0f;
            } else if (v > 1.0f) {
                out |= v > 1.0f + kRangeTolerance;
                v = 1.0f;
            }
            p[c] = v;
        }
        stats.out_of_range += out;
    }
    return stats;
}

}  // namespace depthbatch
