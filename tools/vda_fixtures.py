"""Seeded Video Depth Anything checkpoints and the parity fixtures in tests/data/vda.

  python -m tools.vda_fixtures checkpoint --variant vits [--metric] --seed N --out F.pth
      a checkpoint in the OFFICIAL key layout (every key of video_depth_anything_<variant>.pth, with the
      official shapes) whose values follow tools/seeded_weights.py; `tools.export video-depth-anything`
      loads it strictly like a real one. Metric checkpoints have the same keys (the official code builds
      the same network for both), so --metric changes nothing in the file; it is accepted for symmetry.

  python -m tools.vda_fixtures make --official PATH [--out tests/data/vda] [--variants vits,vitb,vitl]
      runs the OFFICIAL code (github DepthAnything/Video-Depth-Anything; PATH is a checkout, or the git
      directory the `fetch` tool leaves, whose HEAD is then extracted to a temporary folder) on seeded
      weights and writes:
        forward/<variant>.npz    input [1,6,3,28,42] RGB in [0,1] (shot frames 1001, 1006, ... 1026) and the official VideoDepthAnything.forward
                                 output [1,6,28,42] (the input ImageNet-normalised as infer_video_depth does)
        forward/fixture.json     seed, official commit, shapes, how it was made
        shot/plate.1001.png ..   70 frames of 8-bit sRGB RGB plates, 28x42 (moving gradient + disc + noise)
        shot/expected.1001.exr ..  the official infer_video_depth output (vits, seeded, fp32=True, CPU,
                                 input_size=28 so nothing is resized): float32 EXRs, one channel `Z`
        shot/fixture.json
        shot_metric/expected.*.exr, fixture.json   the same plates through the same weights with
                                 metric=True (no scale/shift alignment of later windows)
      The official code is never copied into this repository and is not needed by the tests.

Regenerating (the official code wants einops, easydict, opencv and tqdm: install them in a throwaway venv,
never in .venv; torchvision's `Compose` is the only torchvision name it uses, and a stand-in is provided
when torchvision cannot be imported, e.g. PyPI's CUDA wheel against the CPU torch):
  python3 -m venv /tmp/vda-venv
  /tmp/vda-venv/bin/pip install /opt/wheels/torch-2.13.0+cpu-*.whl "numpy<3" opencv-python-headless \\
      einops easydict tqdm OpenEXR pillow          # or torch==2.13.0 from PyPI
  (fetch github DepthAnything/Video-Depth-Anything, or git clone it, to PATH)
  /tmp/vda-venv/bin/python -m tools.vda_fixtures make --official PATH --variants vits,vitb,vitl
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import types
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch

from tools.depth_anything_v2 import IMAGENET_MEAN, IMAGENET_STD, VARIANTS
from tools.seeded_weights import seeded_state_dict
from tools.video_depth_anything import official_shapes

DEFAULT_SEED = 7
FORWARD_T, FORWARD_H, FORWARD_W = 6, 28, 42
SHOT_FRAMES, SHOT_H, SHOT_W, FIRST_FRAME = 70, 28, 42, 1001
OFFICIAL_REPO = "github.com/DepthAnything/Video-Depth-Anything"


def seeded_checkpoint(variant: str, seed: int) -> Dict[str, torch.Tensor]:
    """The seeded state dict of `variant` in the official key layout."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; one of {sorted(VARIANTS)}")
    return seeded_state_dict(official_shapes(variant), seed)


def synthetic_frames(n: int, h: int, w: int, seed: int) -> np.ndarray:
    """[n, h, w, 3] uint8 RGB frames that change from frame to frame (so the temporal path matters): a
    diagonal colour gradient drifting right, a bright disc moving along a curve, a global brightness pulse
    and per-pixel noise (numpy default_rng(seed))."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    frames = np.empty((n, h, w, 3), np.uint8)
    for i in range(n):
        t = i / max(n - 1, 1)
        phase = 2 * np.pi * (xx / w * 1.5 + yy / h * 0.5 - 2.0 * t)
        g = 0.5 + 0.5 * np.sin(phase)
        cx = w * (0.2 + 0.6 * (0.5 + 0.5 * np.sin(2 * np.pi * 1.7 * t)))
        cy = h * (0.25 + 0.5 * t)
        disc = ((xx - cx) ** 2 + (yy - cy) ** 2 <= (0.3 * h) ** 2).astype(np.float64)
        pulse = 0.75 + 0.25 * np.cos(2 * np.pi * 3.0 * t)
        rgb = np.stack([g, 1.0 - g, 0.3 + 0.4 * yy / h], -1) * pulse * 180.0
        rgb += disc[..., None] * np.array([70.0, 60.0, -40.0])
        rgb += rng.normal(0.0, 12.0, size=rgb.shape)
        frames[i] = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
    return frames


def forward_frames(seed: int) -> np.ndarray:
    """The forward clip: every 5th of the first 30 frames of the shot's synthetic sequence (28x42)."""
    return synthetic_frames(SHOT_FRAMES, FORWARD_H, FORWARD_W, seed)[0:5 * FORWARD_T:5]


# ---------------------------------------------------------------------------------------------------
# The official code (only `make` imports it)
# ---------------------------------------------------------------------------------------------------
def _official_tree(path: str) -> Tuple[str, str, Optional[tempfile.TemporaryDirectory]]:
    """(source folder, commit sha, temporary dir to keep alive) for a checkout or a bare git directory."""
    path = os.path.abspath(path)
    if os.path.isdir(os.path.join(path, "video_depth_anything")):
        try:
            sha = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True,
                                 check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            sha = "unknown (not a git checkout)"
        return path, sha, None
    sha = subprocess.run(["git", "--git-dir", path, "rev-parse", "HEAD"], capture_output=True, text=True,
                         check=True).stdout.strip()
    tmp = tempfile.TemporaryDirectory(prefix="vda-official-")
    archive = subprocess.run(["git", "--git-dir", path, "archive", "HEAD"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", tmp.name], input=archive, check=True)
    return tmp.name, sha, tmp


def _import_official(src: str):
    try:
        import torchvision.transforms  # noqa: F401
    except Exception:  # only `Compose` is used: apply the transforms in order
        class Compose:
            def __init__(self, transforms):
                self.transforms = list(transforms)

            def __call__(self, x):
                for t in self.transforms:
                    x = t(x)
                return x
        tv = types.ModuleType("torchvision")
        tvt = types.ModuleType("torchvision.transforms")
        tvt.Compose = Compose
        tv.transforms = tvt
        sys.modules["torchvision"] = tv
        sys.modules["torchvision.transforms"] = tvt
    sys.path.insert(0, src)
    from video_depth_anything.video_depth import VideoDepthAnything  # type: ignore
    return VideoDepthAnything


def _official_model(cls, variant: str, metric: bool, sd: Dict[str, torch.Tensor]):
    cfg = VARIANTS[variant]
    model = cls(encoder=variant, features=cfg["features"], out_channels=list(cfg["out_channels"]), metric=metric)
    own = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    ours = {k: tuple(v.shape) for k, v in sd.items()}
    if own != ours:
        raise SystemExit(f"official {variant} keys differ from tools/video_depth_anything.py: "
                         f"missing {sorted(set(own) - set(ours))[:5]}, extra {sorted(set(ours) - set(own))[:5]}, "
                         f"shapes {[k for k in own if k in ours and own[k] != ours[k]][:5]}")
    model.load_state_dict(sd, strict=True)
    return model.eval()


def _write_exr_z(path: str, z: np.ndarray) -> None:
    import OpenEXR
    z = np.ascontiguousarray(z, dtype=np.float32)
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    with OpenEXR.File(header, {"Z": z}) as f:
        f.write(path)


def _write_png(path: str, rgb: np.ndarray) -> None:
    from PIL import Image
    Image.fromarray(rgb, "RGB").save(path, optimize=True)


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(float(np.abs(b).max()), 1e-12))


def make(official: str, out: str, variants: List[str], seed: int) -> None:
    src, sha, keep = _official_tree(official)
    cls = _import_official(src)
    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    regen = f"/tmp/vda-venv/bin/python -m tools.vda_fixtures make --official PATH --variants {','.join(variants)}"
    common = {"official_repository": OFFICIAL_REPO, "official_commit": sha, "seed": seed,
              "weights": "tools/seeded_weights.py rule on the official keys and shapes "
                         "(python -m tools.vda_fixtures checkpoint --variant V --seed SEED --out F.pth)",
              "regenerate": regen + " (see tools/vda_fixtures.py)"}

    # forward/ ----------------------------------------------------------------------------------------
    fwd_dir = os.path.join(out, "forward")
    os.makedirs(fwd_dir, exist_ok=True)
    clip = forward_frames(seed)
    x = torch.from_numpy(clip.astype(np.float32) / 255.0).permute(0, 3, 1, 2).unsqueeze(0).contiguous()
    mean = torch.tensor(IMAGENET_MEAN).view(1, 1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 1, 3, 1, 1)
    meta: Dict[str, Any] = dict(common, what="official VideoDepthAnything.forward (fp32, CPU, no_grad) on "
                                "(input - ImageNet mean) / std; the exported module normalises inside",
                                input="[1,T,3,H,W] float32 RGB in [0,1] (8-bit values / 255)",
                                output="[1,T,H,W] float32", variants={})
    fwd_models = {}
    for variant in variants:
        sd = seeded_checkpoint(variant, seed)
        model = _official_model(cls, variant, False, sd)
        with torch.no_grad():
            y = model((x - mean) / std)
        np.savez_compressed(os.path.join(fwd_dir, f"{variant}.npz"), input=x.numpy(), output=y.numpy())
        meta["variants"][variant] = {"file": f"{variant}.npz", "input_shape": list(x.shape),
                                     "output_shape": list(y.shape), "positive_fraction": float((y > 0).float().mean()),
                                     "output_max": float(y.max())}
        print(f"forward {variant}: {tuple(y.shape)}, max {float(y.max()):.4g}, "
              f"{100 * float((y > 0).float().mean()):.0f}% > 0", flush=True)
        if variant == "vits":
            fwd_models[variant] = sd
        del model, sd
    with open(os.path.join(fwd_dir, "fixture.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)

    # shot/ and shot_metric/ --------------------------------------------------------------------------
    import cv2
    frames = synthetic_frames(SHOT_FRAMES, SHOT_H, SHOT_W, seed)
    same = cv2.resize(frames[0], (SHOT_W, SHOT_H), interpolation=cv2.INTER_CUBIC)
    if not np.array_equal(same, frames[0]):
        raise SystemExit("cv2.resize at the same size is not the identity: the shot would be resized")
    sd = fwd_models.get("vits") or seeded_checkpoint("vits", seed)
    shot_dir = os.path.join(out, "shot")
    os.makedirs(shot_dir, exist_ok=True)
    for i, rgb in enumerate(frames):
        _write_png(os.path.join(shot_dir, f"plate.{FIRST_FRAME + i}.png"), rgb)
    for metric, sub in ((False, "shot"), (True, "shot_metric")):
        model = _official_model(cls, "vits", metric, sd)
        depths, _ = model.infer_video_depth(frames, 24, input_size=min(SHOT_H, SHOT_W), device="cpu", fp32=True)
        depths = np.asarray(depths, dtype=np.float32)
        d = os.path.join(out, sub)
        os.makedirs(d, exist_ok=True)
        for i, z in enumerate(depths):
            _write_exr_z(os.path.join(d, f"expected.{FIRST_FRAME + i}.exr"), z)
        span = float(depths.max() - depths.min())
        smeta = dict(common, variant="vits", metric=metric,
                     frames=[FIRST_FRAME, FIRST_FRAME + SHOT_FRAMES - 1], height=SHOT_H, width=SHOT_W,
                     plates=("plate.####.png" if sub == "shot" else "../shot/plate.####.png")
                     + ": 8-bit sRGB RGB, no resize anywhere (the processing size is the plate size)",
                     expected="expected.####.exr: float32, one channel Z, the official infer_video_depth output",
                     how=f"official VideoDepthAnything(encoder='vits', metric={metric}).infer_video_depth(frames "
                         f"uint8 [70,28,42,3], 24, input_size=28, device='cpu', fp32=True); windows of 32 at "
                         f"stride 22 (4 windows, the tail padded with the last frame)",
                     depth_min=float(depths.min()), depth_max=float(depths.max()),
                     positive_fraction=float((depths > 0).mean()))
        with open(os.path.join(d, "fixture.json"), "w") as f:
            json.dump(smeta, f, indent=1, sort_keys=True)
        print(f"{sub}: {depths.shape}, min {depths.min():.4g}, max {depths.max():.4g}, span {span:.4g}", flush=True)
    if keep is not None:
        keep.cleanup()


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.vda_fixtures", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("checkpoint", help="a seeded checkpoint in the official key layout")
    c.add_argument("--variant", required=True, choices=sorted(VARIANTS))
    c.add_argument("--metric", action="store_true", help="(same keys as relative; accepted for symmetry)")
    c.add_argument("--seed", type=int, default=DEFAULT_SEED)
    c.add_argument("--out", required=True)
    m = sub.add_parser("make", help="run the official code on seeded weights and write tests/data/vda")
    m.add_argument("--official", required=True, help="checkout (or git directory) of the official repository")
    m.add_argument("--out", default=os.path.join("tests", "data", "vda"))
    m.add_argument("--variants", default="vits", help="comma-separated, e.g. vits,vitb,vitl (shot: vits)")
    m.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = p.parse_args(argv)
    if args.command == "checkpoint":
        sd = seeded_checkpoint(args.variant, args.seed)
        torch.save(sd, args.out)
        digest = hashlib.sha256(open(args.out, "rb").read()).hexdigest()
        print(f"wrote {args.out}: {len(sd)} keys, seed {args.seed}, sha256 {digest}")
        return 0
    variants = [v for v in args.variants.split(",") if v]
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        p.error(f"unknown variant(s) {bad}")
    make(args.official, args.out, variants, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
