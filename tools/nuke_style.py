"""Test-model maker: a "Nuke-style" TorchScript file, traced at one fixed size, without depthbatch.json.

Artists make such files for Nuke's CatFileCreator: a module that takes [1,3,H,W] RGB in [0,1], normalises
internally and returns [1,1,H,W], saved by torch.jit.trace at the plate size (so shapes are frozen in the
graph: another input size fails inside the model) and with no contract. depthbatch must take the
missing contract fields from the job and refuse a mismatching input size with a clear error. Nothing
here is needed at render time.

Inner networks (all deterministic for a given seed):
  luma        output = 0.2126 R + 0.7152 G + 0.0722 B of the input (Rec.709 luma weights), computed as a
              1x1 conv on the ImageNet-normalised input whose weights undo the normalisation; lets a C++
              test check pixel values, orientation and channel order exactly
  tiny        a random 3-layer conv net (conv3x3 3->8, ReLU, conv3x3 8->8 stride 2, ReLU, bilinear back,
              conv1x1 8->1, softplus): cheap, positive, image-dependent
  da-v2-small Depth Anything V2 Small with random weights (tools/depth_anything_v2.py, which normalises itself)
  PATH        any TorchScript file taking [N,3,H,W] in [0,1] (e.g. an exported depthbatch model)
The built-in inner nets are traced along with the wrapper (so their shapes freeze too); a PATH model
stays scripted inside, but the wrapper's fixed reshape still pins the input size.
"""
import warnings
from typing import Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tools.depth_anything_v2 import IMAGENET_MEAN, IMAGENET_STD

LUMA_709 = (0.2126, 0.7152, 0.0722)
INNERS = ("luma", "tiny", "da-v2-small")


class Normalize(nn.Module):
    """(x - ImageNet mean) / ImageNet std, per channel; x [N,3,H,W]."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1))

    def forward(self, x: Tensor) -> Tensor:
        return (x - self.mean) / self.std


class LumaNet(nn.Module):
    """Normalised RGB -> Rec.709 luma of the original RGB, [N,1,H,W]."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 1, kernel_size=1)
        w = torch.tensor(LUMA_709) * torch.tensor(IMAGENET_STD)
        b = (torch.tensor(LUMA_709) * torch.tensor(IMAGENET_MEAN)).sum()
        with torch.no_grad():
            self.conv.weight.copy_(w.view(1, 3, 1, 1))
            self.conv.bias.copy_(b.view(1))

    def forward(self, x: Tensor) -> Tensor:
        return self.conv(x)


class TinyNet(nn.Module):
    """Normalised RGB -> positive [N,1,H,W] map; H and W even."""

    def __init__(self, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.conv3 = nn.Conv2d(8, 1, 1)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)

    def forward(self, x: Tensor) -> Tensor:
        h, w = x.shape[2], x.shape[3]
        y = F.relu(self.conv2(F.relu(self.conv1(x))))
        y = F.interpolate(y, size=[h, w], mode="bilinear", align_corners=False)
        return F.softplus(self.conv3(y))


class NukeStyle(nn.Module):
    """[1,3,H,W] RGB in [0,1] -> [1,1,H,W] for the one (H, W) given here.

    The first step reshapes to the fixed [1, 3, H, W] and the last resizes to (H, W), both with Python
    constants, so the traced graph only accepts that size (another size fails inside the model, as
    with many hand-made Nuke files). `normalize` is False when the inner module normalises itself.
    """

    def __init__(self, inner: nn.Module, normalize: bool, size_hw: Tuple[int, int]):
        super().__init__()
        self.normalize = Normalize() if normalize else nn.Identity()
        self.inner = inner
        self.size_hw = (int(size_hw[0]), int(size_hw[1]))

    def forward(self, x: Tensor) -> Tensor:
        h, w = self.size_hw
        y = self.inner(self.normalize(x.reshape(1, 3, h, w)))
        if y.dim() == 3:
            y = y.unsqueeze(1)
        return F.interpolate(y, size=(h, w), mode="bilinear", align_corners=False)


def make(out: str, size_hw: Tuple[int, int], inner: str = "tiny", seed: int = 0) -> Tensor:
    """Trace a NukeStyle module at [1,3,H,W] = size_hw and save it to `out` with no extra files.

    Returns the example input it was traced with. size_hw must suit the inner net (multiples of 14 for
    da-v2-small and for most exported depthbatch models).
    """
    h, w = int(size_hw[0]), int(size_hw[1])
    if inner == "luma":
        module, normalize = LumaNet(), True
    elif inner == "tiny":
        module, normalize = TinyNet(seed), True
    elif inner == "da-v2-small":
        from tools.depth_anything_v2 import DepthAnythingV2
        torch.manual_seed(seed)
        model = DepthAnythingV2("vits").eval()
        with torch.no_grad():  # default init leaves layer-scale at 1 and biases at 0: perturb everything
            g = torch.Generator().manual_seed(seed)
            for p in model.parameters():
                p.add_(torch.randn(p.shape, generator=g) * 0.02)
        module, normalize = model, False
    else:
        module, normalize = torch.jit.load(inner, map_location="cpu"), False
    wrapper = NukeStyle(module, normalize, (h, w)).eval()
    example = torch.rand(1, 3, h, w, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings about frozen sizes: that is the point here
        traced = torch.jit.trace(wrapper, example, check_trace=False)
    traced.save(out)
    reloaded = torch.jit.load(out, map_location="cpu")
    with torch.no_grad():
        diff = (traced(example) - reloaded(example)).abs().max().item()
    if not diff <= 1e-5:
        raise RuntimeError(f"{out}: reloaded traced module differs by {diff}")
    return example


def expected_luma(x: Tensor) -> Tensor:
    """What the `luma` model returns for x [N,3,H,W]: [N,1,H,W]."""
    w = torch.tensor(LUMA_709, dtype=x.dtype).view(1, 3, 1, 1)
    return (x * w).sum(1, keepdim=True)
