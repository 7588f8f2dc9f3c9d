// depthbatch — colour conversion of the plate into the model's colorspace, through OpenColorIO only.
//
// The config is, in order: the job's color.config, $OCIO, the config this project ships
// (configs/ocio/config.ocio, written for OCIO 2.1). One CPU processor is built per job and shared
// read-only by all worker threads (OCIO CPU processors are thread-safe for apply()).
#pragma once

#include <OpenImageIO/imagebuf.h>

#include <memory>
#include <string>

namespace depthbatch {

class ColorTransform {
public:
    /// Build the processor `from` -> `to` (names or aliases in the config).
    /// Throws ConfigError naming the config file and the colorspace that does not exist, or OCIO's
    /// message when the config cannot be read.
    static std::shared_ptr<const ColorTransform> create(const std::string& config_path,
                                                        const std::string& from, const std::string& to);

    /// Convert a packed 3-channel float32 RGB buffer in place (any ROI). Values are not clamped.
    void apply(OIIO::ImageBuf& rgb) const;

    bool is_noop() const { return noop_; }
    const std::string& config_path() const { return config_path_; }
    const std::string& from() const { return from_; }
    const std::string& to() const { return to_; }

    /// Resolve which config a job uses: `job_config` if set, else $OCIO, else the shipped one.
    static std::string resolve_config_path(const std::string& job_config);

    /// "auto" colorspace for a plate of this pixel type and format: float/half -> the config's
    /// scene_linear role, integer -> "sRGB" (the sRGB-encoded texture space).
    static std::string auto_colorspace(const OIIO::ImageSpec& spec);

    ~ColorTransform();

private:
    ColorTransform() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    bool noop_ = false;
    std::string config_path_, from_, to_;
};

}  // namespace depthbatch
