"""Fixture for the C++ integration test tests/integration/depth_anything_test.cpp (run by ctest).

    python tools/tests/da_fixture.py DIR

Writes into DIR:
  da_vits_random.pt   Depth Anything V2 Small, seeded random weights, exported by tools.export (scripted)
  nuke_style.pt       a torch.jit.trace'd wrapper at width 112 x height 84, without depthbatch.json
  plate_exact.1001.png  280x154 8-bit RGB (both sides multiples of 14: no padding at plate size)
  plate_pad.1001.png    285x160 8-bit RGB (padded to 294x168 at plate size)
  expected_exact.f32 / expected_pad.f32   depth computed here by hand: the same TorchScript file run on
      the plate (/255, NCHW), padded by edge replication to the multiple of 14 where needed, the padding
      cropped off again. Raw little-endian float32, row-major H x W.
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tools.depth_anything_v2 import DepthAnythingV2  # noqa: E402


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = DepthAnythingV2("vits").eval()
    with torch.no_grad():
        for p in model.parameters():          # every weight random, so a misplaced pixel shows
            p.normal_(0, 0.02) if p.dim() > 1 else p.uniform_(-0.05, 0.05)
    ckpt = out / "da_vits_random.pth"
    torch.save(model.state_dict(), ckpt)
    subprocess.run([sys.executable, "-m", "tools.export", "depth-anything-v2", "--variant", "vits", "--checkpoint",
                    str(ckpt), "--out", str(out / "da_vits_random.pt"), "--source", "random weights (test)"],
                   cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, "-m", "tools.export", "nuke-style-trace", "--out", str(out / "nuke_style.pt"),
                    "--size", "84", "112"], cwd=REPO, check=True, stdout=subprocess.DEVNULL)

    scripted = torch.jit.load(str(out / "da_vits_random.pt"))
    rng = np.random.default_rng(1)
    for name, (w, h) in {"exact": (280, 154), "pad": (285, 160)}.items():
        yy, xx = np.mgrid[0:h, 0:w]
        rgb = np.stack([(xx * 255 // w), (yy * 255 // h), rng.integers(0, 256, (h, w))], -1).astype(np.uint8)
        Image.fromarray(rgb).save(out / f"plate_{name}.1001.png")
        x = torch.from_numpy(rgb.astype(np.float32) / 255.0).permute(2, 0, 1)[None]
        ph, pw = -(-h // 14) * 14, -(-w // 14) * 14
        x = F.pad(x, (0, pw - w, 0, ph - h), mode="replicate")
        with torch.inference_mode():
            depth = scripted(x)[0, 0, :h, :w].contiguous().numpy().astype("<f4")
        depth.tofile(out / f"expected_{name}.f32")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
