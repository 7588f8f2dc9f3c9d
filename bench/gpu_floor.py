"""GPU floor of a TorchScript depth model, for bench/gpu-check: what the device alone does, and how busy a plain
serial Python loop keeps it. Runs with any Python whose torch sees CUDA (no numpy, no OpenEXR needed).

    python3 bench/gpu_floor.py --model models/fastdepth-nyu.pt [--plate 960x540] [--iters 50] [--frames 24]
                               [--samples ../shared/samples] [--size model|N] [--precisions fp32,fp16]
                               [--no-loop]

Prints `gpu_floor key=value ...` lines:
  forward   the model alone at the processing size depthbatch picks for the plate (model.size "model"):
            median ms per forward by CUDA events, fp32 and fp16, cudnn.benchmark on (as depthbatch); fp16 is the
            module cast to half with a half input (as depthbatch 0.4 runs it; autocast when the cast module fails:
            cast=autocast on the line). A video model (contract input.frames T > 1) gets one window [1,T,3,H,W]
            per forward; ms_per_frame divides it by the frames a window adds (T - temporal.overlap), which is
            what a long shot costs a frame
  loop      a serial loop per frame: the bedroom JPEG (Pillow; synthetic frames if Pillow or the samples are
            missing), antialiased resize on the CPU, pinned non-blocking copy in, forward, copy out, resize back;
            device_busy = GPU time of the forwards (CUDA events) / wall time of the loop
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from benchlib import processing_size  # bench/ is this script's folder; benchlib needs only the standard library


class Span:
    """GPU time of the work queued between start() and stop(): CUDA events; wall clock on the CPU."""

    def __init__(self, cuda: bool):
        self.cuda = cuda
        if cuda:
            self.a, self.b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def start(self):
        if self.cuda:
            self.a.record()
        else:
            self.t = time.perf_counter()
        return self

    def stop(self):
        if self.cuda:
            self.b.record()
        else:
            self.ms_cpu = (time.perf_counter() - self.t) * 1e3
        return self

    def ms(self) -> float:
        if self.cuda:
            self.b.synchronize()
            return self.a.elapsed_time(self.b)
        return self.ms_cpu


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--plate", default="960x540")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--frames", type=int, default=24)
    p.add_argument("--samples", default=str(Path(__file__).resolve().parent.parent.parent / "shared" / "samples"))
    p.add_argument("--size", default="model", help="'model' (the contract's short side) or N px")
    p.add_argument("--precisions", default="fp32,fp16", help="comma list of fp32, fp16 (CUDA only)")
    p.add_argument("--no-loop", action="store_true", help="the forwards alone, no serial loop")
    p.add_argument("--cpu-dry-run", action="store_true",
                   help="run every step on the CPU with wall-clock timers (to check this script without a GPU)")
    a = p.parse_args()
    cuda = not a.cpu_dry_run
    if cuda and not torch.cuda.is_available():
        print("gpu_floor: torch.cuda.is_available() is False", file=sys.stderr)
        return 2
    dev = torch.device("cuda" if cuda else "cpu")
    torch.backends.cudnn.benchmark = True
    extra = {"depthbatch.json": ""}
    model = torch.jit.load(a.model, map_location=dev, _extra_files=extra).eval()
    contract = json.loads(extra["depthbatch.json"] or "{}")
    multiple = int(contract.get("input", {}).get("multiple", 1))
    short = min(contract.get("input", {}).get("size", [518, 518])) if a.size == "model" else int(a.size)
    frames_in = int(contract.get("input", {}).get("frames", 1) or 1)
    overlap = int((contract.get("temporal") or {}).get("overlap", 0)) if frames_in > 1 else 0
    new_frames = max(frames_in - overlap, 1)
    pw, ph = (int(v) for v in a.plate.split("x"))
    iw, ih = processing_size(pw, ph, short, multiple)
    name = Path(a.model).name

    x = torch.rand(1, frames_in, 3, ih, iw, device=dev) if frames_in > 1 else torch.rand(1, 3, ih, iw, device=dev)
    gpu_name = torch.cuda.get_device_name(0).replace(" ", "_") if cuda else "cpu-dry-run"
    for precision in [p for p in a.precisions.split(",") if p and (cuda or p == "fp32")]:
        run, xin, cast = model, x, "none"
        if precision == "fp16":
            try:   # the module cast to half, as depthbatch runs it; autocast when that module cannot run
                import copy
                run, xin, cast = copy.deepcopy(model).half(), x.half(), "module"
                with torch.inference_mode():
                    run(xin)
            except Exception:   # noqa: BLE001  (a float32 constant inside the scripted code)
                run, xin, cast = model, x, "autocast"
        times = []
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.float16, enabled=cast == "autocast"):
            for i in range(a.iters + 3):
                span = Span(cuda).start()
                run(xin)
                t = span.stop().ms()
                if i >= 3:
                    times.append(t)
        med = statistics.median(times)
        print(f"gpu_floor forward model={name} input={iw}x{ih} precision={precision} cast={cast} "
              f"median_ms={med:.3f} min_ms={min(times):.3f} frames_per_forward={frames_in} new_frames={new_frames} "
              f"ms_per_frame={med / new_frames:.3f} iters={a.iters} device={gpu_name}", flush=True)
    if a.no_loop or frames_in > 1:
        return 0

    frames = []
    source = "synthetic"
    try:
        from PIL import Image
        plates = sorted((Path(a.samples) / "plates" / "bedroom").glob("bedroom.*.jpg"))[: a.frames]
        if plates:
            frames = [lambda f=f: Image.open(f).convert("RGB") for f in plates]
            source = f"{len(plates)} bedroom JPEGs"
    except ImportError:
        pass
    if not frames:
        frames = [None] * a.frames
    staging = torch.empty(1, 3, ih, iw)
    if cuda:
        staging = staging.pin_memory()
    spans = []
    t0 = time.perf_counter()
    with torch.inference_mode():
        for load in frames:
            if load is None:
                rgb = torch.rand(ph, pw, 3)
            else:
                img = load()
                rgb = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).view(img.height, img.width, 3)
                rgb = rgb.float() / 255.0
            src = rgb.permute(2, 0, 1).unsqueeze(0)
            staging.copy_(F.interpolate(src, size=(ih, iw), mode="bilinear", align_corners=False, antialias=True))
            xd = staging.to(dev, non_blocking=True)
            span = Span(cuda).start()
            d = model(xd)
            spans.append(span.stop())
            d = d.float().reshape(1, 1, d.shape[-2], d.shape[-1]).cpu()
            F.interpolate(d, size=(src.shape[2], src.shape[3]), mode="bilinear", align_corners=False)
    if cuda:
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    gpu_ms = sum(s.ms() for s in spans)
    print(f"gpu_floor loop model={name} frames={len(frames)} source={source.replace(' ', '_')} wall_s={wall:.3f} "
          f"frames_per_s={len(frames) / wall:.1f} gpu_ms={gpu_ms:.1f} device_busy={gpu_ms / 1e3 / wall:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
