"""bench/skip-check (issue 41 §1): what recording a frame's inputs costs. A 4,000-frame shot rendered through a
tiny scripted video model (the Video Depth Anything windowing, relative: each frame's depthbatch/context_plates
names window 0, the context windows and its own) and, beside it, the same shot through the same model frame by
frame (no context), then `depthbatch JOB --skip-existing` over each finished shot (every frame kept: the check
alone, plus the process start and the model load). Prints the bytes the record adds to a frame, the seconds of each
check (minimum of --reps runs) and their ratio; then one plate touched, and how many frames the check sends back to
render (a dry run). A benchmark, not a test: it asserts nothing.

    bench/skip-check [--frames 4000] [--reps 3] [--keep DIR]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
import video_memory  # noqa: E402  (its tiny video model and plates)


def skip_check_s(job: Path, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        proc = subprocess.run([str(benchlib.DEPTHBATCH), str(job), "--skip-existing", "-q"], capture_output=True, text=True)
        best = min(best, time.perf_counter() - t0)
        if proc.returncode != 0:
            raise RuntimeError(f"depthbatch failed (exit {proc.returncode}): {proc.stdout}{proc.stderr}")
    return best


def attribute_bytes(exr: Path, name: str) -> int:
    out = subprocess.run(["oiiotool", "--info", "-v", str(exr)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith(name + ":"):
            return len(line.split(":", 1)[1].strip().strip('"'))
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=4000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--keep", default=None, help="work folder to keep (default: a temporary one)")
    args = p.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="depthbatch-skip-check-"))
    work.mkdir(parents=True, exist_ok=True)
    for line in benchlib.machine_lines():
        print("#", line)
    model = work / "video.pt"
    video_memory.write_model(model)
    video_memory.write_plates(work / "plates", args.frames, 32, 24)
    frames = benchlib.frames_spec(1001, args.frames)
    jobs = {}
    for name, settings in (("video", {"model.path": str(model)}),
                           ("frame by frame", {"model.path": "default", "model.size": 32})):
        job = benchlib.write_job(work / f"{name.replace(' ', '_')}.yaml", str(work / "plates" / "plate.####.png"), frames,
                                 str(work / name.replace(" ", "_") / "d.####.exr"),
                                 {**settings, "output.channels": "depth"})
        t0 = time.perf_counter()
        benchlib.run_depthbatch(job, report=False)
        print(f"{name}: {args.frames} frames rendered in {time.perf_counter() - t0:.1f} s")
        jobs[name] = job
    mid = 1001 + args.frames // 2
    exr = work / "video" / f"d.{mid}.exr"
    print(f"depthbatch/context_plates of frame {mid}: {attribute_bytes(exr, 'depthbatch/context_plates')} bytes "
          f"(plate_identity: {attribute_bytes(exr, 'depthbatch/plate_identity')} bytes)")
    times = {name: skip_check_s(job, args.reps) for name, job in jobs.items()}
    for name, s in times.items():
        print(f"--skip-existing over the finished shot, {name}: {s:.2f} s (min of {args.reps}; process start and "
              f"model load included)")
    print(f"ratio video / frame by frame: {times['video'] / times['frame by frame']:.2f}")
    os.utime(work / "plates" / f"plate.{mid}.png")
    proc = subprocess.run([str(benchlib.DEPTHBATCH), str(jobs["video"]), "--skip-existing", "--dry-run"],
                          capture_output=True, text=True)
    line = next((l for l in proc.stdout.splitlines() if l.startswith("frames")), proc.stdout[-300:])
    print(f"plate {mid} touched, video shot: {line.strip()}")
    for line in benchlib.machine_lines():
        print("#", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
