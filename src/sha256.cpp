#include "depthbatch/sha256.h"

#include "depthbatch/error.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

namespace depthbatch {
namespace {
/// Feeds a digest; `feed(update)` calls update(data, size) for each piece of input.
template <class Feed> std::string digest_hex(Feed feed) {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
    feed([&ctx](const char* data, size_t size) { EVP_DigestUpdate(ctx.get(), data, size); });
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx.get(), digest, &len);
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < len; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 15];
    }
    return out;
}
}  // namespace

std::string sha256_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open to hash");
    return digest_hex([&in](auto update) {
        std::vector<char> buf(1 << 20);
        while (in) {
            in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
            if (in.gcount() > 0) update(buf.data(), static_cast<size_t>(in.gcount()));
        }
    });
}

std::string sha256_text(const std::string& bytes) {
    return digest_hex([&bytes](auto update) { update(bytes.data(), bytes.size()); });
}

}  // namespace depthbatch
