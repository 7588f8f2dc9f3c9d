// load_check: loads a TorchScript model file with the LibTorch it is built against and runs one forward pass.
// Built by scripts/check-libtorch-floor against the oldest LibTorch depthbatch supports (2.4.1, from its PyPI
// wheel: headers + libtorch_cpu.so + libc10.so only), never by the project's CMake build. See docs/models.md "Models",
// "Which LibTorch loads a model".
//
//   load_check MODEL N,3,H,W [OUT.f32]   load MODEL (with its depthbatch.json), run one forward on the input below,
//                                        print the output's shape and checksums; OUT.f32: also write the first
//                                        output, float32 little-endian, row-major
//   load_check --version                 print this LibTorch's version (TORCH_VERSION)
//   load_check --ops                     print every operator this LibTorch registers, one `ns::name.overload` a
//                                        line, sorted (tools/libtorch_2_4_ops.txt is made from it)
//
// The input: element i (row-major over the shape, any rank: [N,3,H,W] or [B,T,3,H,W]) is
// float((i * 7919) % 16381) / 16384 (in [0, 1), exact in float32), so tools/check_libtorch_floor.py can build the same tensor in Python.
// Exit status: 0 on success; 1 when loading or the forward fails (the error's text on stderr); 2 on bad arguments.
#include <ATen/ATen.h>
#include <torch/csrc/jit/runtime/operator.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

std::vector<int64_t> parse_shape(const std::string& text) {
    std::vector<int64_t> shape;
    std::stringstream in(text);
    std::string part;
    while (std::getline(in, part, ',')) {
        char* end = nullptr;
        const long long v = std::strtoll(part.c_str(), &end, 10);
        if (part.empty() || *end != '\0' || v < 1 || v > 1 << 16) return {};
        shape.push_back(v);
    }
    return shape;
}

std::string shape_text(const at::Tensor& t) {
    std::string s = "[";
    for (int64_t d = 0; d < t.dim(); ++d) s += (d ? "," : "") + std::to_string(t.size(d));
    return s + "]";
}

void report(const std::string& what, const at::Tensor& t, const std::string& out_path) {
    const at::Tensor f = t.to(at::kFloat).contiguous();
    const double sum = f.to(at::kDouble).sum().item<double>();
    const double abs_sum = f.to(at::kDouble).abs().sum().item<double>();
    std::printf("%s %s sum=%.9g abs_sum=%.9g finite=%s\n", what.c_str(), shape_text(f).c_str(), sum, abs_sum,
                at::isfinite(f).all().item<bool>() ? "yes" : "no");
    if (!out_path.empty()) {
        std::ofstream out(out_path, std::ios::binary);
        out.write(static_cast<const char*>(f.data_ptr()), static_cast<std::streamsize>(f.numel() * sizeof(float)));
        if (!out) throw std::runtime_error("cannot write " + out_path);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "--version") {
        std::printf("%s\n", TORCH_VERSION);
        return 0;
    }
    if (argc == 2 && std::string(argv[1]) == "--ops") {
        std::set<std::string> names;
        for (const auto& op : torch::jit::getAllOperators()) {
            const auto& schema = op->schema();
            names.insert(schema.name() + (schema.overload_name().empty() ? "" : "." + schema.overload_name()));
        }
        for (const auto& n : names) std::printf("%s\n", n.c_str());
        return 0;
    }
    if (argc < 3 || argc > 4) {
        std::fprintf(stderr, "usage: load_check MODEL N,3,H,W [OUT.f32] | --version | --ops\n");
        return 2;
    }
    const std::string path = argv[1], out_path = argc == 4 ? argv[3] : "";
    const std::vector<int64_t> shape = parse_shape(argv[2]);
    if (shape.size() < 4) {
        std::fprintf(stderr, "load_check: bad shape %s (e.g. 1,3,224,224 or 1,2,3,28,28)\n", argv[2]);
        return 2;
    }
    try {
        std::unordered_map<std::string, std::string> extra{{"depthbatch.json", ""}};
        torch::jit::Module module = torch::jit::load(path, at::kCPU, extra);
        module.eval();
        int64_t numel = 1;
        for (const int64_t d : shape) numel *= d;
        // Exact in float32 whatever the kernels do (a power-of-two divisor): the Python side makes the same tensor.
        const at::Tensor x =
            at::arange(numel, at::kLong).mul(7919).remainder(16381).to(at::kFloat).div(16384.0).reshape(shape);
        c10::InferenceMode guard;
        const c10::IValue y = module.forward({x});
        std::printf("libtorch %s loaded %s (depthbatch.json: %zu bytes)\n", TORCH_VERSION, path.c_str(),
                    extra["depthbatch.json"].size());
        if (y.isTensor()) {
            report("output", y.toTensor(), out_path);
        } else if (y.isTuple()) {
            const auto& elems = y.toTupleRef().elements();
            for (size_t i = 0; i < elems.size(); ++i) {
                if (!elems[i].isTensor())
                    throw std::runtime_error("output tuple element " + std::to_string(i) + " is not a tensor");
                report("output[" + std::to_string(i) + "]", elems[i].toTensor(), i == 0 ? out_path : "");
            }
        } else {
            throw std::runtime_error("the model returned a " + y.tagKind() + ", not a tensor or a tuple");
        }
    } catch (const std::exception& e) {  // c10::Error, torch::jit::ErrorReport, std::runtime_error
        std::fprintf(stderr, "load_check: libtorch %s: %s: %s\n", TORCH_VERSION, path.c_str(), e.what());
        return 1;
    }
    return 0;
}
