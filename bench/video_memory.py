"""bench/video_memory (issue 24): a video model's memory is bounded by its window, not by the shot.

Renders N = 100 and N = 1000 frames of one small shot (96x64 8-bit PNG plates, a moving gradient) through a tiny
scripted multi-frame model (a 3x3 conv on every frame plus the mean of its window, [B,T,3,H,W] -> [B,T,H,W], the
Video Depth Anything windowing: 32 frames, overlap 10, crossfade 8, scale/shift alignment) at model.size: plate, one
depthbatch process each under /usr/bin/time -v, and prints the peak RSS of each and the ratio 1000/100 (target:
at most 1.05). A benchmark, not a test: it asserts nothing.

    bench/video_memory [--frames 100,1000] [--size 96x64] [--keep DIR]
"""
import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

CONTRACT = {
    "format": 1, "name": "video-bench", "source": "bench/video_memory.py",
    "input": {"colorspace": "sRGB", "multiple": 1, "size": None, "mean": None, "std": None, "frames": 32},
    "output": {"kind": "relative_inverse_depth"},
    "temporal": {"window": 32, "overlap": 10, "keyframes": [0, 12, 24, 25, 26, 27, 28, 29, 30, 31],
                 "crossfade": 8, "align": "scale_shift"},
}


def write_model(path: Path) -> None:
    import torch

    class Video(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.out = torch.nn.Conv2d(8, 1, 3, padding=1)

        def forward(self, x):
            b, t, c, h, w = x.shape
            y = self.out(torch.relu(self.conv(x.flatten(0, 1)))).view(b, t, h, w)
            return torch.nn.functional.softplus(y + 0.5 * y.mean(dim=1, keepdim=True))

    torch.manual_seed(0)
    torch.jit.save(torch.jit.script(Video().eval()), str(path), _extra_files={"depthbatch.json": json.dumps(CONTRACT)})


def write_plates(folder: Path, count: int, width: int, height: int) -> None:
    import numpy as np
    from PIL import Image
    folder.mkdir(parents=True, exist_ok=True)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    for i in range(count):
        path = folder / f"plate.{1001 + i}.png"
        if path.exists():
            continue
        rgb = np.stack([(xx * (c + 1) + 2 * yy + 3 * i) * 0.013 % 1.0 for c in range(3)], axis=-1)
        Image.fromarray((rgb * 255).astype(np.uint8)).save(path)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", default="100,1000", help="shot lengths to compare (the first is the reference)")
    p.add_argument("--size", default="96x64", help="plate width x height")
    p.add_argument("--keep", default=None, help="work folder to keep (default: a temporary one)")
    args = p.parse_args()
    counts = [int(n) for n in args.frames.split(",")]
    width, height = (int(v) for v in args.size.split("x"))
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="depthbatch-video-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    for line in benchlib.machine_lines():
        print("#", line)
    model = work / "video.pt"
    write_model(model)
    write_plates(work / "plates", max(counts), width, height)
    rss = {}
    for n in counts:
        job = benchlib.write_job(work / f"job{n}.yaml", str(work / "plates" / "plate.####.png"),
                                 benchlib.frames_spec(1001, n), str(work / f"out{n}" / "d.####.exr"),
                                 {"model.path": str(model), "model.size": "plate", "output.channels": "depth"})
        r = benchlib.run_depthbatch(job, report=False, measure_rss=True)
        rss[n] = r["max_rss_kb"]
        print(f"{n:5d} frames {width}x{height}: peak RSS {rss[n] / 1024:.1f} MB, wall {r['wall_s']:.1f} s, "
              f"CPU {r['cpu_s']:.1f} s")
        shutil.rmtree(work / f"out{n}", ignore_errors=True)
    ref = counts[0]
    for n in counts[1:]:
        print(f"peak RSS {n}/{ref} frames: {rss[n] / rss[ref]:.3f} (target <= 1.05)")
    print(f"# load average at the end: {benchlib.loadavg()}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
