"""The reference a user would write: one Python loop, frame after frame, same job as depthbatch.

    .venv/bin/python bench/reference_loop.py --model models/fastdepth-nyu.pt \
        --input 'plates/bedroom/bedroom.####.jpg' --frames 1001-1024 --output '/tmp/ref.####.exr' \
        [--size model|N] [--threads T] [--device cpu|cuda] [--precision fp32|fp16]

Per frame: Pillow reads the plate (8-bit RGB -> float /255, as depthbatch passes it through); torch
F.interpolate (bilinear, antialiased) resizes it to the processing size that depthbatch uses
(model.size "model": the contract's short side, each side rounded to the nearest multiple, long side
capped at 4x; e.g. 960x540 -> 384x224 for FastDepth, 924x518 for Depth Anything at 518); the same
TorchScript model runs under torch.inference_mode; the depth is resized back to the plate size
(bilinear) and written with the OpenEXR package as R, G, B (float) + depth.Z (float32), ZIP compressed,
like depthbatch's default output. An .exr plate (scene-linear, e.g. a half-float RGBA plate) is read with the
OpenEXR package and its R, G, B encoded to sRGB (the model's colour space, as depthbatch's colour stage does).
--precision fp16 (CUDA) runs the module cast to half with a half input, as depthbatch 0.4 does. Prints one JSON line: wall time of the loop (excluding import and
model load), per-stage totals, and the process's own start-to-end time.
"""
import argparse
import json
import os
import sys
import time

T_PROCESS = time.perf_counter()

import numpy as np  # noqa: E402
import OpenEXR  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from PIL import Image  # noqa: E402

from benchlib import processing_size  # noqa: E402  (bench/ is this script's folder)


def frame_list(spec: str):
    out = []
    for part in spec.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def expand(pattern: str, frame: int) -> str:
    n = pattern.count("#")
    return pattern.replace("#" * n, f"{frame:0{n}d}")


def read_exr_srgb(path: str) -> np.ndarray:
    """R, G, B of a scene-linear EXR as float32 [H, W, 3], sRGB-encoded (IEC 61966-2-1) and clipped to [0, 1]."""
    with OpenEXR.File(path, separate_channels=True) as exr:
        ch = exr.channels()
        rgb = np.stack([ch[c].pixels.astype(np.float32) for c in ("R", "G", "B")], axis=-1)
    rgb = np.clip(rgb, 0.0, 1.0)
    return np.where(rgb <= 0.0031308, 12.92 * rgb, 1.055 * np.power(rgb, 1 / 2.4) - 0.055).astype(np.float32)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--input", required=True, help="plate pattern with #### for the frame number")
    p.add_argument("--frames", required=True, help="e.g. 1001-1024")
    p.add_argument("--output", required=True, help="output pattern with ####")
    p.add_argument("--size", default="model", help="'model' (the contract's short side) or N px")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0 = leave torch's default)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--precision", default="fp32", choices=["fp32", "fp16"], help="fp16: the module cast to half")
    a = p.parse_args()

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    extra = {"depthbatch.json": ""}
    model = torch.jit.load(a.model, map_location=device, _extra_files=extra).eval()
    dtype = torch.float16 if a.precision == "fp16" else torch.float32
    if dtype != torch.float32:
        model = model.half()
    contract = json.loads(extra["depthbatch.json"] or "{}")
    multiple = int(contract.get("input", {}).get("multiple", 1))
    size_hw = contract.get("input", {}).get("size", [518, 518])
    short = min(size_hw) if a.size == "model" else int(a.size)

    t = {"read_ms": 0.0, "reformat_ms": 0.0, "infer_ms": 0.0, "restore_ms": 0.0, "write_ms": 0.0}
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    frames = frame_list(a.frames)
    t_loop = time.perf_counter()
    for f in frames:
        t0 = time.perf_counter()
        path = expand(a.input, f)
        if path.lower().endswith(".exr"):
            rgb = read_exr_srgb(path)
        else:
            rgb = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32) / 255.0
        h, w = rgb.shape[:2]
        t1 = time.perf_counter()
        iw, ih = processing_size(w, h, short, multiple)
        x = torch.from_numpy(rgb).permute(2, 0, 1).unsqueeze(0)
        x = F.interpolate(x, size=(ih, iw), mode="bilinear", align_corners=False, antialias=True).clamp_(0, 1)
        x = x.to(device, dtype)
        t2 = time.perf_counter()
        with torch.inference_mode():
            d = model(x)
        if d.dim() == 3:
            d = d.unsqueeze(1)
        d = d.float().cpu()
        t3 = time.perf_counter()
        d = F.interpolate(d, size=(h, w), mode="bilinear", align_corners=False)[0, 0].numpy()
        t4 = time.perf_counter()
        channels = {"R": np.ascontiguousarray(rgb[:, :, 0]), "G": np.ascontiguousarray(rgb[:, :, 1]),
                    "B": np.ascontiguousarray(rgb[:, :, 2]), "depth.Z": np.ascontiguousarray(d, dtype=np.float32)}
        out = expand(a.output, f)
        with OpenEXR.File(header, channels) as exr:
            exr.write(out)
        t5 = time.perf_counter()
        t["read_ms"] += (t1 - t0) * 1e3
        t["reformat_ms"] += (t2 - t1) * 1e3
        t["infer_ms"] += (t3 - t2) * 1e3
        t["restore_ms"] += (t4 - t3) * 1e3
        t["write_ms"] += (t5 - t4) * 1e3
    loop_s = time.perf_counter() - t_loop
    print(json.dumps({"frames": len(frames), "loop_s": loop_s, "process_s": time.perf_counter() - T_PROCESS,
                      "input_size": [iw, ih], "torch_threads": torch.get_num_threads(), "device": str(device),
                      "precision": a.precision,
                      "stage_totals": t}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
