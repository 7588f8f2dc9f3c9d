// depthbatch — SHA-256 digests (OpenSSL EVP), for model files, job files and settings fingerprints.
#pragma once

#include <string>

namespace depthbatch {

/// SHA-256 of a file as 64 lowercase hex digits. Throws InputError naming the path if it cannot be read.
std::string sha256_file(const std::string& path);

/// SHA-256 of `bytes` as 64 lowercase hex digits.
std::string sha256_text(const std::string& bytes);

}  // namespace depthbatch
