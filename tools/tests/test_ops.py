"""tools/ops.py `resize` is F.interpolate, bit for bit, for every way the exporters resize, eager and scripted;
scripted, it calls the one upsample operator (so the saved file loads in LibTorch 2.4: tools/libtorch_floor.py).

The cases are the exporters' calls:
  FastDepth decoder      nearest, scale_factor 2.0                                   tools/fastdepth.py
  DINOv2 pos_embed       bicubic, scale_factor ((h0 + 0.1) / 37, (w0 + 0.1) / 37)     tools/depth_anything_v2.py
                         bicubic, size (h0, w0) (--pos-embed-interp hf)
  DPT fusion / upsample  bilinear, size, align_corners=True                          (also DA3, VDA)
  bench conv stack       bilinear, size, align_corners=False                         bench/heavy_model.py
"""
from typing import List, Optional

import pytest
import torch
import torch.nn.functional as F

from tools.libtorch_floor import file_ops
from tools.ops import resize

SIZES_IN = [(7, 7), (7, 9), (13, 6), (37, 37), (1, 5)]


def _x(c: int, h: int, w: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(2, c, h, w, generator=torch.Generator().manual_seed(seed + 31 * h + w))


def _cases():
    for h, w in SIZES_IN:
        yield "nearest", dict(scale=[2.0, 2.0]), dict(scale_factor=2.0, mode="nearest"), (h, w)
        for th, tw in [(2 * h, 2 * w), (h + 3, w + 1), (max(1, h // 2), max(1, w // 3)), (518, 392)]:
            yield ("bilinear-ac", dict(size=[th, tw], mode="bilinear", align_corners=True),
                   dict(size=[th, tw], mode="bilinear", align_corners=True), (h, w))
            yield ("bilinear", dict(size=[th, tw], mode="bilinear", align_corners=False),
                   dict(size=[th, tw], mode="bilinear", align_corners=False), (h, w))
    for h0, w0 in [(37, 37), (5, 7), (66, 37), (20, 28), (74, 132)]:   # patch grids of 518x518, 70x98, ...
        scale = [(float(h0) + 0.1) / 37.0, (float(w0) + 0.1) / 37.0]
        yield ("bicubic-scale", dict(scale=scale, mode="bicubic", align_corners=False),
               dict(scale_factor=scale, mode="bicubic", align_corners=False), (37, 37))
        yield ("bicubic-size", dict(size=[h0, w0], mode="bicubic", align_corners=False),
               dict(size=[h0, w0], mode="bicubic", align_corners=False), (37, 37))


CASES = list(_cases())


class Resize(torch.nn.Module):
    def __init__(self, size: Optional[List[int]], scale: Optional[List[float]], mode: str, align_corners: bool):
        super().__init__()
        self.size, self.scale, self.mode, self.align_corners = size, scale, mode, align_corners

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return resize(x, self.size, self.scale, self.mode, self.align_corners)


@pytest.mark.parametrize("name,ours,theirs,hw", CASES, ids=[f"{c[0]}-{c[3]}-{i}" for i, c in enumerate(CASES)])
def test_resize_is_interpolate_bit_for_bit(name, ours, theirs, hw):
    x = _x(16, *hw)
    want = F.interpolate(x, **theirs)
    got = resize(x, **ours)
    assert got.shape == want.shape and torch.equal(got, want), name
    kw = {**dict(size=None, scale=None, mode="nearest", align_corners=False), **ours}
    scripted = torch.jit.script(Resize(kw["size"], kw["scale"], kw["mode"], kw["align_corners"]))
    assert torch.equal(scripted(x), want), name + " (scripted)"


def test_scripted_resize_calls_one_upsample_operator_per_mode():
    ops = set(file_ops(torch.jit.script(Resize([8, 8], None, "bilinear", True))))
    upsample = {op for op in ops if "upsample" in op or "interpolate" in op}
    assert upsample == {"aten::upsample_nearest2d.vec", "aten::upsample_bilinear2d.vec",
                        "aten::upsample_bicubic2d.vec"}, upsample


def test_bad_arguments_are_refused():
    x = torch.zeros(1, 1, 4, 4)
    for kwargs in (dict(), dict(size=[2, 2], scale=[2.0, 2.0]), dict(size=[2]), dict(scale=[2.0]),
                   dict(size=[2, 2], mode="area"), dict(size=[2, 2], mode="nearest", align_corners=True)):
        with pytest.raises(ValueError):
            resize(x, **kwargs)
    with pytest.raises(ValueError):
        resize(torch.zeros(1, 4, 4), size=[2, 2])
