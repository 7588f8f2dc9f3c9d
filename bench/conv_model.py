"""bench/shapes' plain conv model: two 3x3 convolutions (3 -> 32 -> 1 channels, ReLU between) scripted with
the depthbatch contract (relative inverse depth, sRGB in, input multiple 1: at model.size: plate every plate
size is its own input shape). Seeded weights; what is measured is memory and CPU time, not depth.

    python bench/conv_model.py OUT.pt
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tools.contract import make_contract, save_scripted  # noqa: E402


def main(out: str) -> None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Conv2d(32, 1, 3, padding=1), torch.nn.Softplus()).eval()
    contract = make_contract("conv2-bench", colorspace="sRGB", multiple=1, size_hw=(270, 420),
                             kind="relative_inverse_depth", source="bench/conv_model.py")
    save_scripted(torch.jit.script(net), out, contract, torch.rand(1, 3, 64, 96))


if __name__ == "__main__":
    main(sys.argv[1])
