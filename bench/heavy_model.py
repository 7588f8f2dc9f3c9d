"""The model-heavy case of bench/run: a TorchScript model that costs what Depth Anything V2 Small costs.

    .venv/bin/python bench/heavy_model.py OUT.pt      # prints one JSON line: path, description

Preferred: the real Depth Anything V2 Small (vits) architecture with seeded random weights, exported
with the project's own exporter (`python -m tools.export depth-anything-v2 --variant vits`): same
graph, same FLOPs, same depthbatch.json contract (relative_inverse_depth, multiple 14, size 518) as the
published checkpoint, without downloading it. Random weights are fine for timing; the depth is
meaningless. When tools/export.py (or its depth-anything-v2 command) is not there, a scripted stack of
3x3 convolutions of similar cost (~27 GFLOP at 924x518) with the same contract is written instead.
"""
import json
import subprocess
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tools.ops import resize  # noqa: E402  (F.interpolate's one operator: tools/ops.py)


class ConvStack(nn.Module):
    """stem 3->64 stride 2, 3 x (64->64 3x3), 64->1, bilinear back to the input size, ReLU."""

    def __init__(self, width: int = 64, layers: int = 3):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, stride=2, padding=1)
        self.body = nn.ModuleList([nn.Conv2d(width, width, 3, padding=1) for _ in range(layers)])
        self.head = nn.Conv2d(width, 1, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[2] % 14 != 0 or x.shape[3] % 14 != 0:
            raise RuntimeError("input height and width must be multiples of 14")
        y = F.relu(self.stem(x))
        for conv in self.body:
            y = F.relu(conv(y))
        y = self.head(y)
        return F.relu(resize(y, size=[x.shape[2], x.shape[3]], mode="bilinear", align_corners=False))


def export_depth_anything(out: Path) -> str:
    from tools.depth_anything_v2 import DepthAnythingV2
    torch.manual_seed(0)
    model = DepthAnythingV2("vits").eval()
    with torch.no_grad():   # the exporter's zero-initialised tokens would be too regular: seed them
        model.pretrained.pos_embed.normal_(0, 0.02)
        model.pretrained.cls_token.normal_(0, 0.02)
        # Random weights give a negative pre-activation everywhere, so the head's final ReLU made every depth 0
        # (a flat frame: normalisation and parity checks meaningless). A non-negative last 1x1 conv over the
        # ReLU'd features with a small positive bias gives positive depth that varies with the image.
        last = model.depth_head.scratch.output_conv2[2]
        last.weight.abs_()
        last.bias.fill_(0.01)
    ckpt = out.with_suffix(".random.pth")
    torch.save(model.state_dict(), ckpt)
    cmd = [sys.executable, "-m", "tools.export", "depth-anything-v2", "--variant", "vits", "--checkpoint", str(ckpt),
           "--out", str(out), "--source", "random weights (bench/heavy_model.py, seed 0): timing only"]
    subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    ckpt.unlink()
    return "Depth Anything V2 Small (vits) architecture, seeded random weights, exported by tools.export"


def export_conv_stack(out: Path) -> str:
    from tools.contract import make_contract, save_scripted
    torch.manual_seed(0)
    scripted = torch.jit.script(ConvStack().eval())
    contract = make_contract("bench-conv-stack", colorspace="sRGB", multiple=14, size_hw=(518, 518),
                             kind="relative_inverse_depth", units="", source="bench/heavy_model.py (random weights)",
                             license="none (timing only)")
    save_scripted(scripted, str(out), contract, torch.rand(1, 3, 140, 224))
    return "scripted 3x3 conv stack (~27 GFLOP at 924x518), random weights (the Depth Anything export unavailable)"


def main() -> int:
    out = Path(sys.argv[1]).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    has_export = (REPO / "tools" / "export.py").exists() and subprocess.run(
        [sys.executable, "-m", "tools.export", "depth-anything-v2", "--help"], cwd=REPO,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    what = None
    if has_export:
        try:
            what = export_depth_anything(out)
        except (subprocess.CalledProcessError, ImportError, RuntimeError) as e:   # another torch, no deps
            print(f"heavy_model: the Depth Anything export failed ({e}); the conv stack stands in", file=sys.stderr)
    if what is None:
        what = export_conv_stack(out)
    print(json.dumps({"path": str(out), "description": what}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
