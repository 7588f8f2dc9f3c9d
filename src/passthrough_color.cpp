#include "depthbatch/passthrough_color.h"

#include "depthbatch/error.h"

#include <OpenColorIO/OpenColorIO.h>
#include <Imath/half.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace OCIO = OCIO_NAMESPACE;

namespace depthbatch {

struct PassthroughColor::Impl {
    OCIO::ConstCPUProcessorRcPtr forward, backward;
};

PassthroughColor::~PassthroughColor() = default;

int integer_bits(const PlateInfo& plate) {
    const OIIO::ImageSpec& spec = plate.file_spec;
    const OIIO::TypeDesc type = plate.r >= 0 ? spec.channelformat(plate.r) : spec.format;
    if (type.basetype == OIIO::TypeDesc::HALF || type.basetype == OIIO::TypeDesc::FLOAT ||
        type.basetype == OIIO::TypeDesc::DOUBLE)
        return 0;
    return spec.get_int_attribute("oiio:BitsPerSample", static_cast<int>(type.size() * 8));
}

std::shared_ptr<const PassthroughColor> PassthroughColor::create(const std::string& config_path,
                                                                 const std::string& plate_colorspace,
                                                                 PassthroughColorspace mode) {
    std::shared_ptr<PassthroughColor> p(new PassthroughColor());
    p->impl_ = std::make_unique<Impl>();
    p->plate_ = p->written_ = plate_colorspace;
    if (mode == PassthroughColorspace::SceneLinear) {
        if (!std::filesystem::exists(config_path))
            throw ConfigError("OCIO config '" + config_path + "' does not exist");
        try {
            const OCIO::ConstConfigRcPtr config = OCIO::Config::CreateFromFile(config_path.c_str());
            if (!config->hasRole(OCIO::ROLE_SCENE_LINEAR))
                throw ConfigError("output.passthrough_colorspace scene_linear: OCIO config '" + config_path +
                                  "' has no scene_linear role; set output.passthrough_colorspace: plate");
            const auto linear = config->getColorSpace(OCIO::ROLE_SCENE_LINEAR);
            const auto from = config->getColorSpace(plate_colorspace.c_str());
            p->written_ = linear->getName();
            if (from) p->plate_ = from->getName();
            // A data colorspace (raw, non-color) has no scene-linear form: OCIO passes it unchanged, and the header
            // must then say what it is, not claim the linear space.
            if (from && from->isData()) p->written_ = p->plate_;
            const OCIO::ConstProcessorRcPtr fwd =
                config->getProcessor(plate_colorspace.c_str(), OCIO::ROLE_SCENE_LINEAR);
            if (!fwd->isNoOp() && !(from && from->isData())) {
                p->converts_ = true;
                p->impl_->forward = fwd->getDefaultCPUProcessor();
                p->impl_->backward =
                    config->getProcessor(OCIO::ROLE_SCENE_LINEAR, plate_colorspace.c_str())->getDefaultCPUProcessor();
            }
        } catch (const OCIO::Exception& e) {
            throw ConfigError("output.passthrough_colorspace scene_linear: OCIO config '" + config_path +
                              "': cannot convert '" + plate_colorspace + "' to its scene_linear role: " + e.what());
        }
    }
    for (int bits : {8, 10}) p->losses_[bits] = p->half_losses(bits), p->known_[bits] = true;
    return p;
}

void PassthroughColor::apply(float* rgb, size_t pixels) const {
    if (!converts_ || pixels == 0) return;
    OCIO::PackedImageDesc desc(rgb, static_cast<long>(pixels), 1, 3);
    impl_->forward->apply(desc);
}

void PassthroughColor::inverse(float* rgb, size_t pixels) const {
    if (!converts_ || pixels == 0) return;
    OCIO::PackedImageDesc desc(rgb, static_cast<long>(pixels), 1, 3);
    impl_->backward->apply(desc);
}

void PassthroughColor::apply(Plate& plate) const {
    if (!converts_ || plate.r < 0 || plate.g < 0 || plate.b < 0) return;
    const int nin = plate.pixels.nchannels();
    float* px = static_cast<float*>(plate.pixels.localpixels());
    if (!px || plate.pixels.spec().format != OIIO::TypeDesc::FLOAT)
        throw RenderError("passthrough colour: the plate's pixels must be a packed float32 buffer");
    const size_t width = static_cast<size_t>(plate.pixels.spec().width);
    const size_t height = static_cast<size_t>(plate.pixels.spec().height);
    const int ch[3] = {plate.r, plate.g, plate.b};
    // How many of R, G, B each source channel feeds (3 for a grey plate's one channel).
    int uses[3];
    for (int c = 0; c < 3; ++c) uses[c] = static_cast<int>(std::count(ch, ch + 3, ch[c]));
    constexpr size_t kRows = 64;
    std::vector<float> block(width * kRows * 3);
    for (size_t y0 = 0; y0 < height; y0 += kRows) {
        const size_t n = width * std::min(kRows, height - y0);
        float* src = px + y0 * width * static_cast<size_t>(nin);
        for (size_t i = 0; i < n; ++i)
            for (int c = 0; c < 3; ++c) block[3 * i + c] = src[i * nin + ch[c]];
        apply(block.data(), n);
        for (size_t i = 0; i < n; ++i) {
            for (int c = 0; c < 3; ++c)
                if (uses[c] > 1) src[i * nin + ch[c]] = 0.0f;
            for (int c = 0; c < 3; ++c) {
                if (uses[c] > 1) src[i * nin + ch[c]] += block[3 * i + c] / static_cast<float>(uses[c]);
                else src[i * nin + ch[c]] = block[3 * i + c];
            }
        }
    }
}

long PassthroughColor::half_losses(int bits) const {
    if (bits < 1 || bits > 16)
        throw std::invalid_argument("half_losses: bits " + std::to_string(bits) + " is not 1..16");
    if (known_[bits]) return losses_[bits];
    const int codes = 1 << bits, top = codes - 1;
    const float scale = static_cast<float>(top);
    const int others[3] = {0, codes / 2, top};
    // Per code: grey, then each channel against every pair of the other values.
    const size_t per_code = 1 + 3 * 9;
    std::vector<float> rgb(static_cast<size_t>(codes) * per_code * 3);
    std::vector<int> code_of(rgb.size());
    size_t k = 0;
    auto put = [&](const int(&v)[3]) {
        for (int c = 0; c < 3; ++c) {
            rgb[k] = static_cast<float>(v[c]) / scale;  // as the plate reader gives it (plate_reader.cpp)
            code_of[k++] = v[c];
        }
    };
    for (int code = 0; code < codes; ++code) {
        put({code, code, code});
        for (int c = 0; c < 3; ++c)
            for (int a : others)
                for (int b : others) {
                    int v[3];
                    v[c] = code, v[(c + 1) % 3] = a, v[(c + 2) % 3] = b;
                    put(v);
                }
    }
    const size_t pixels = rgb.size() / 3;
    apply(rgb.data(), pixels);
    for (float& v : rgb) v = static_cast<float>(half(v));
    inverse(rgb.data(), pixels);
    std::vector<char> lost(static_cast<size_t>(codes), 0);
    for (size_t i = 0; i < rgb.size(); ++i) {
        const double back = std::nearbyint(static_cast<double>(rgb[i]) * top);
        if (!(back == code_of[i])) lost[static_cast<size_t>(code_of[i])] = 1;
    }
    return static_cast<long>(std::count(lost.begin(), lost.end(), 1));
}

PassthroughType PassthroughColor::pixel_type(PassthroughType asked, const PlateInfo& plate, std::string* why) const {
    if (asked != PassthroughType::Auto) {
        if (why) *why = std::string("output.pixel_type ") + option_name(asked);
        return asked;
    }
    const int bits = integer_bits(plate);
    const std::string conversion = converts_ ? " through '" + plate_ + "' -> '" + written_ + "'" : "";
    if (bits == 0) {
        if (why) *why = "output.pixel_type auto: the plate's own type (half stays half, float stays float)";
        return PassthroughType::Keep;
    }
    if (bits > 10) {
        if (why) *why = "output.pixel_type auto: float (a " + std::to_string(bits) + "-bit plate: half keeps 11 bits)";
        return PassthroughType::Keep;
    }
    const long lost = half_losses(bits);
    if (lost > 0) {
        if (why)
            *why = "output.pixel_type auto: float (half would change " + std::to_string(lost) + " of the " +
                   std::to_string(1 << bits) + " " + std::to_string(bits) + "-bit codes" + conversion + ")";
        return PassthroughType::Float;
    }
    if (why)
        *why = "output.pixel_type auto: half (every " + std::to_string(bits) + "-bit code survives" + conversion +
               " in half)";
    return PassthroughType::Half;
}

}  // namespace depthbatch
