// libFuzzer target: the model contract (depthbatch.json inside a TorchScript file). Either a ModelContract
// that passes validation or a ModelError naming the model; anything else is a bug.
#include "depthbatch/error.h"
#include "depthbatch/model_contract.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        depthbatch::parse_model_contract(std::string(reinterpret_cast<const char*>(data), size), "fuzz.pt");
    } catch (const depthbatch::ModelError&) {
    }
    return 0;
}
