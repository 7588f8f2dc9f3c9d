"""Single-operator stand-ins for torch.nn.functional helpers, for modules that are scripted (torch.jit.script).

Why: scripting a module that calls `F.interpolate` compiles F.interpolate's whole Python body into the saved
file, every branch of it, and the body of the torch that exports names every resize operator that torch has.
torch 2.13's names `aten::_upsample_lanczos2d_aa`, which LibTorch 2.11 and older do not have, so they refuse the
file at load time even though the module only ever upsamples "nearest". depthbatch supports LibTorch 2.4 and newer
(docs/models.md "Models", "Which LibTorch loads a model"): a scripted module must call only operators LibTorch 2.4 has.

`resize` calls exactly the operator F.interpolate calls for the same arguments on a 4-D tensor (the `.vec`
overloads, which take either an output size or per-axis scale factors), so its output is bit-identical to
F.interpolate's (tools/tests/test_ops.py checks every mode, size and scale the exporters use) and the saved code
names that one operator. tools/libtorch_floor.py checks every export for operators newer than the floor.
"""
from typing import List, Optional

import torch
from torch import Tensor


def resize(x: Tensor, size: Optional[List[int]] = None, scale: Optional[List[float]] = None,
           mode: str = "nearest", align_corners: bool = False) -> Tensor:
    """F.interpolate(x, size=size, scale_factor=scale, mode=mode, align_corners=align_corners) for x [N,C,H,W].

    size: the output [height, width] in px; or scale: [height factor, width factor] (the output is
    floor(H * factor) x floor(W * factor), and the sampling follows the factors, as F.interpolate with
    scale_factor and recompute_scale_factor unset). Exactly one of the two.
    mode: "nearest" (aten::upsample_nearest2d.vec; align_corners must be False, as F.interpolate refuses it),
    "bilinear" (aten::upsample_bilinear2d.vec) or "bicubic" (aten::upsample_bicubic2d.vec). No antialias.
    Raises ValueError (RuntimeError once scripted) on anything else.
    """
    if x.dim() != 4:
        raise ValueError("resize takes a 4-D tensor [N, C, H, W]")
    if size is None and scale is None:
        raise ValueError("resize needs a size or a scale")
    if size is not None and scale is not None:
        raise ValueError("resize takes a size or a scale, not both")
    if size is not None and len(size) != 2:
        raise ValueError("resize size must be [height, width]")
    if scale is not None and len(scale) != 2:
        raise ValueError("resize scale must be [height factor, width factor]")
    if mode == "nearest":
        if align_corners:
            raise ValueError("align_corners is for the bilinear and bicubic modes only")
        return torch._C._nn.upsample_nearest2d(x, size, scale)
    if mode == "bilinear":
        return torch._C._nn.upsample_bilinear2d(x, size, align_corners, scale)
    if mode == "bicubic":
        return torch._C._nn.upsample_bicubic2d(x, size, align_corners, scale)
    raise ValueError("resize mode must be nearest, bilinear or bicubic, not " + mode)
