"""bench/video_chunks (issue 34): a video model's shot rendered whole and in chunks, what the chunks cost.

Renders a 400-frame shot (a slow pan over a sample plate, ../shared/samples/plates/sintel/sintel.1001.png, cropped
and scaled to 96x64 8-bit PNG plates) through the tiny scripted multi-frame model of bench/video_memory (a conv per
frame plus its window's mean; the Video Depth Anything windowing: 32 frames, overlap 10, crossfade 8) as a metric
model (align none) and as a relative one (align scale_shift): once whole, then in 8 chunks (--chunk k/8, one process
each, one after another), then in the chunks `depthbatch submit` makes by default (its --dry-run's array size).
Prints per model and cut: the total CPU time of the chunk processes over the whole render's (target <= 1.3: the
context overhead), the same for the wall time (on a GPU machine: the 8 chunks one after another against the whole
render), the windows the chunks ran against the whole render's (from the log), the largest peak RSS of a chunk
over the whole render's, and the max per-frame deviation |chunked - whole| over every pixel of every frame as a
fraction of the shot's depth span. A benchmark, not a test: it asserts nothing.

    bench/video_chunks [--frames 400] [--chunks 8] [--size 96x64] [--device cpu] [--models A.pt,B.pt] [--keep DIR]

--models: exported video models to measure instead of the tiny ones (e.g. Video Depth Anything Small with seeded
weights: tools/vda_fixtures.py checkpoint, then tools/export.py video-depth-anything [--metric]).
"""
import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
import video_memory  # noqa: E402


def write_model(path: Path, align: str) -> None:
    contract = dict(video_memory.CONTRACT, name=f"video-chunks-{align}", source="bench/video_chunks.py")
    contract["temporal"] = dict(contract["temporal"], align=align)
    if align == "none":
        contract["output"] = {"kind": "metric_depth", "units": "m"}
    saved = video_memory.CONTRACT
    video_memory.CONTRACT = contract
    try:
        video_memory.write_model(path)
    finally:
        video_memory.CONTRACT = saved


def write_pan(folder: Path, sample: Path, count: int, width: int, height: int) -> None:
    """`count` plates: a (2 width) x (2 height) crop of `sample` moving right by one pixel a frame, scaled down."""
    from PIL import Image
    folder.mkdir(parents=True, exist_ok=True)
    src = Image.open(sample).convert("RGB")
    cw, ch = 2 * width, 2 * height
    span = max(1, src.width - cw)
    for i in range(count):
        path = folder / f"plate.{1001 + i}.png"
        if path.exists():
            continue
        x = i % span
        src.crop((x, 0, x + cw, ch)).resize((width, height), Image.BILINEAR).save(path)


def windows_in(log: str) -> int:
    """Windows a render ran, from its log's 'video windows: N window(s)' lines."""
    return sum(int(m.group(1)) for m in re.finditer(r"video windows: (\d+) window\(s\)", log))


def render(job: Path, args, device: str):
    """One depthbatch process: wall, CPU, peak RSS and the windows it ran."""
    cmd = [str(benchlib.DEPTHBATCH), str(job), "--overwrite", "--set", f"model.device={device}"] + list(args)
    time_file = job.with_suffix(".time.txt")
    cpu0 = benchlib.children_cpu_s()
    import time
    t0 = time.perf_counter()
    proc = subprocess.run([benchlib.TIME_V, "-v", "-o", str(time_file)] + cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"depthbatch failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stdout}")
    m = re.search(r"Maximum resident set size \(kbytes\):\s*(\d+)", time_file.read_text())
    return {"wall_s": wall, "cpu_s": benchlib.children_cpu_s() - cpu0, "rss_kb": int(m.group(1)) if m else 0,
            "windows": windows_in(proc.stdout)}


def deviation(whole: Path, part: Path, first: int, count: int) -> float:
    import numpy as np
    lo, hi, worst = np.inf, -np.inf, 0.0
    for f in range(first, first + count):
        a = benchlib.read_depth(whole / f"d.{f}.exr")
        b = benchlib.read_depth(part / f"d.{f}.exr")
        lo, hi = min(lo, float(a.min())), max(hi, float(a.max()))
        worst = max(worst, float(np.abs(a.astype(np.float64) - b).max()))
    return worst / (hi - lo) if hi > lo else worst


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=400)
    p.add_argument("--chunks", type=int, default=8)
    p.add_argument("--size", default="96x64", help="plate width x height")
    p.add_argument("--device", default="cpu", help="model.device (cuda on a GPU machine)")
    p.add_argument("--sample", default=str(benchlib.SAMPLES / "plates/sintel/sintel.1001.png"), help="the plate the pan crosses")
    p.add_argument("--models", default="", help="comma-separated exported video models (default: the tiny ones)")
    p.add_argument("--keep", default=None, help="work folder to keep (default: a temporary one)")
    args = p.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="depthbatch-video-chunks-"))
    work.mkdir(parents=True, exist_ok=True)
    for line in benchlib.machine_lines():
        print("#", line)
    write_pan(work / "plates", Path(args.sample), args.frames, width, height)
    frames = benchlib.frames_spec(1001, args.frames)
    print(f"# {args.frames} frames {width}x{height} (a pan over {Path(args.sample).name}), device {args.device}")
    models = []
    if args.models:
        for i, path in enumerate(args.models.split(",")):
            models.append((f"m{i}", Path(path).resolve(), Path(path).name))
    else:
        for align in ("none", "scale_shift"):
            write_model(work / f"video-{align}.pt", align)
            kind = "metric (align none)" if align == "none" else "relative (align scale_shift)"
            models.append((align, work / f"video-{align}.pt", kind))
    for align, model, kind in models:
        settings = {"model.path": str(model), "model.size": "plate", "output.channels": "depth"}
        whole_dir = work / f"{align}-whole"
        job = benchlib.write_job(work / f"{align}.yaml", str(work / "plates" / "plate.####.png"), frames,
                                 str(whole_dir / "d.####.exr"), settings)
        whole = render(job, [], args.device)
        sub = subprocess.run([str(benchlib.DEPTHBATCH), "submit", str(job), "--engine", "slurm", "--dry-run"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        m = re.search(r"#SBATCH --array=1-(\d+)", sub.stdout)
        default_chunks = int(m.group(1)) if m else 1
        print(f"{kind}: whole render: {whole['windows']} windows, CPU {whole['cpu_s']:.1f} s, wall {whole['wall_s']:.1f} s, "
              f"peak RSS {whole['rss_kb'] / 1024:.1f} MB")
        cuts = [(args.chunks, f"{args.chunks} chunks")]
        if default_chunks not in (1, args.chunks):
            cuts.append((default_chunks, f"submit's default ({default_chunks} chunks)"))
        elif default_chunks == 1:
            print(f"{kind}: submit's default chunk size: the whole shot as one task (no multiple of 22 frames within 1.3x)")
        for n, label in cuts:
            out = work / f"{align}-{n}"
            runs = [render(job, ["--chunk", f"{k}/{n}", "--set", f"output.path={out / 'd.####.exr'}"], args.device)
                    for k in range(1, n + 1)]
            cpu = sum(r["cpu_s"] for r in runs)
            wall = sum(r["wall_s"] for r in runs)
            win = sum(r["windows"] for r in runs)
            rss = max(r["rss_kb"] for r in runs)
            dev = deviation(whole_dir, out, 1001, args.frames)
            print(f"{kind}: {label} of ~{args.frames // n} frames: CPU {cpu:.1f} s = {cpu / whole['cpu_s']:.2f}x the whole "
                  f"render's (target <= 1.3), wall one after another {wall:.1f} s = {wall / whole['wall_s']:.2f}x, windows "
                  f"{win} = {win / whole['windows']:.2f}x, peak RSS of a chunk {rss / whole['rss_kb']:.3f}x, max per-frame "
                  f"deviation {dev:.2e} of the depth span")
    print(f"# load average at the end: {benchlib.loadavg()}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
