#include "depthbatch/color_transform.h"

#include "depthbatch/error.h"

#include <OpenColorIO/OpenColorIO.h>

#include <cstdlib>
#include <filesystem>

namespace OCIO = OCIO_NAMESPACE;

namespace depthbatch {

struct ColorTransform::Impl {
    OCIO::ConstCPUProcessorRcPtr cpu;
};

ColorTransform::~ColorTransform() = default;

std::string ColorTransform::resolve_config_path(const std::string& job_config) {
    if (!job_config.empty()) return job_config;
    if (const char* env = std::getenv("OCIO"); env && *env) return env;
    return DEPTHBATCH_SHIPPED_OCIO_CONFIG;
}

std::string ColorTransform::auto_colorspace(const OIIO::ImageSpec& spec) {
    const auto base = spec.format.basetype;
    if (base == OIIO::TypeDesc::HALF || base == OIIO::TypeDesc::FLOAT || base == OIIO::TypeDesc::DOUBLE)
        return "scene_linear";
    return "sRGB";
}

std::shared_ptr<const ColorTransform> ColorTransform::create(const std::string& config_path,
                                                             const std::string& from, const std::string& to) {
    std::shared_ptr<ColorTransform> t(new ColorTransform());
    t->impl_ = std::make_unique<Impl>();
    t->config_path_ = config_path;
    t->from_ = from;
    t->to_ = to;
    try {
        if (!std::filesystem::exists(config_path))
            throw ConfigError("OCIO config '" + config_path + "' does not exist");
        OCIO::ConstConfigRcPtr config = OCIO::Config::CreateFromFile(config_path.c_str());
        for (const std::string& name : {from, to})
            if (!config->getColorSpace(name.c_str()))  // names, aliases and roles
                throw ConfigError("OCIO config '" + config_path + "' has no colorspace or role '" + name + "'");
        OCIO::ConstProcessorRcPtr proc = config->getProcessor(from.c_str(), to.c_str());
        t->noop_ = proc->isNoOp();
        t->impl_->cpu = proc->getDefaultCPUProcessor();
    } catch (const OCIO::Exception& e) {
        throw ConfigError("OCIO config '" + config_path + "': cannot convert '" + from + "' to '" + to +
                          "': " + e.what());
    }
    return t;
}

void ColorTransform::apply(OIIO::ImageBuf& rgb) const {
    if (noop_) return;
    const OIIO::ImageSpec& spec = rgb.spec();
    if (spec.nchannels != 3 || spec.format != OIIO::TypeDesc::FLOAT || !rgb.localpixels())
        throw RenderError("ColorTransform::apply needs a packed float RGB buffer");
    float* data = static_cast<float*>(rgb.localpixels());
    OCIO::PackedImageDesc desc(data, spec.width, spec.height * spec.depth, 3);
    impl_->cpu->apply(desc);
}

}  // namespace depthbatch
