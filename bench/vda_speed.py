"""bench/vda_speed's body (bench/vda_speed sets up the paths, then runs this). See bench/vda_speed.

Video Depth Anything Small on the CPU, the same decoded frames, the same threads, in one run:
  official    the official `VideoDepthAnything.infer_video_depth` (github DepthAnything/Video-Depth-Anything,
              run from a copy given with --official, in the interpreter --official-python, a throwaway venv
              with its dependencies: tools/vda_fixtures.py says how to make one), on frames decoded beforehand,
              fp32=True (the official default on a CPU is bfloat16 autocast; --official-autocast times that),
              then the depth maps written as float32 EXRs (one channel Z, as the official run.py --save_exr)
  depthbatch  `depthbatch JOB` with the exported module (tools.export video-depth-anything): read, colour,
              reformat, windows, restore, write depth.Z EXRs; the whole process, start-up and decoding included
Both process at the same size (model.size N = the official input_size N: short side N, a multiple of 14).
It prints frames/s of each and depthbatch / official. Target (issue 24): >= 1.0.
Weights: --checkpoint (a real video_depth_anything_vits.pth), else a seeded one in the official layout
(tools.vda_fixtures checkpoint): the speed does not depend on the values.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402


def official_half(a: argparse.Namespace) -> int:
    """Runs inside --official-python: prints one JSON line with the timings."""
    sys.path.insert(0, str(B.REPO))
    import numpy as np
    import torch
    from PIL import Image
    from tools.depth_anything_v2 import VARIANTS
    from tools.vda_fixtures import _import_official, _official_tree

    torch.set_num_threads(a.threads)
    src, sha, keep = _official_tree(a.official)
    cls = _import_official(src)
    cfg = VARIANTS["vits"]
    model = cls(encoder="vits", features=cfg["features"], out_channels=list(cfg["out_channels"]), metric=False)
    model.load_state_dict(torch.load(a.checkpoint, map_location="cpu", weights_only=True), strict=True)
    model = model.eval()
    paths = [a.pattern.replace("####", f"{f:04d}") for f in range(a.first, a.last + 1)]
    frames = np.stack([np.asarray(Image.open(p).convert("RGB")) for p in paths])
    t0 = time.perf_counter()
    depths, _ = model.infer_video_depth(frames, 24, input_size=a.size, device="cpu", fp32=not a.official_autocast)
    t1 = time.perf_counter()
    import OpenEXR
    os.makedirs(a.out, exist_ok=True)
    for i, d in enumerate(depths):
        header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
        with OpenEXR.File(header, {"Z": np.ascontiguousarray(d, dtype=np.float32)}) as f:
            f.write(os.path.join(a.out, f"frame_{i:05d}.exr"))
    t2 = time.perf_counter()
    print(json.dumps({"infer_s": t1 - t0, "infer_write_s": t2 - t0, "frames": len(frames), "commit": sha,
                      "shape": list(frames.shape)}))
    if keep is not None:
        keep.cleanup()
    return 0


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(prog="bench/vda_speed")
    p.add_argument("--official", default=os.environ.get("VDA_OFFICIAL", ""),
                   help="checkout (or git directory) of github DepthAnything/Video-Depth-Anything ($VDA_OFFICIAL)")
    p.add_argument("--official-python", default=os.environ.get("VDA_PYTHON", "/tmp/vda-venv/bin/python"),
                   help="interpreter with the official code's dependencies ($VDA_PYTHON, default /tmp/vda-venv)")
    p.add_argument("--checkpoint", default="", help="video_depth_anything_vits.pth (default: a seeded one)")
    p.add_argument("--pattern", default=str(B.SAMPLES / "gtseq/livingroom/livingroom.####.jpg"))
    p.add_argument("--frames", default="1001-1060", help="FIRST-LAST (default 1001-1060: 60 frames, 3 windows)")
    p.add_argument("--size", type=int, default=280, help="processing short side, a multiple of 14 (default 280)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads for both (default: all cores)")
    p.add_argument("--official-autocast", action="store_true",
                   help="official half with its CPU default (bfloat16 autocast) instead of fp32")
    p.add_argument("--skip", default="", help="official,depthbatch: halves to leave out")
    p.add_argument("--official-half", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", default="", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.first, a.last = (int(v) for v in a.frames.split("-"))
    if a.official_half:
        return official_half(a)
    skip = {s for s in a.skip.split(",") if s}
    n = a.last - a.first + 1
    print("depthbatch bench/vda_speed — Video Depth Anything Small on the CPU, official vs depthbatch, one run "
          "(not a test)")
    for line in B.machine_lines():
        print(line)
    print(f"frames {a.frames} ({n}) of {a.pattern}; processing short side {a.size}; threads {a.threads}")
    with B.tempdir("depthbatch-vda-speed-") as tmp:
        work = Path(tmp)
        ck = a.checkpoint
        if not ck:
            ck = str(work / "video_depth_anything_vits.seeded.pth")
            subprocess.run([B.PYTHON, "-m", "tools.vda_fixtures", "checkpoint", "--variant", "vits", "--out", ck],
                           cwd=B.REPO, check=True, stdout=subprocess.DEVNULL)
            print("weights: seeded (tools.vda_fixtures checkpoint), official layout")
        fps = {}
        if "official" not in skip:
            if not a.official:
                print("official: not run (give --official PATH or $VDA_OFFICIAL)")
            else:
                env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
                proc = subprocess.run([a.official_python, str(Path(__file__).resolve()), "--official-half",
                                       "--official", a.official, "--checkpoint", ck, "--pattern", a.pattern,
                                       "--frames", a.frames, "--size", str(a.size), "--threads", str(a.threads),
                                       "--out", str(work / "official")]
                                      + (["--official-autocast"] if a.official_autocast else []),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=B.REPO)
                if proc.returncode != 0:
                    print(f"official: failed (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
                else:
                    r = json.loads(proc.stdout.strip().splitlines()[-1])
                    fps["official"] = n / r["infer_write_s"]
                    print(f"official (commit {r['commit'][:12]}, fp32={not a.official_autocast}): infer "
                          f"{r['infer_s']:.1f} s, + EXR writing {r['infer_write_s']:.1f} s -> "
                          f"{fps['official']:.3f} frames/s ({n / r['infer_s']:.3f} without writing)")
        if "depthbatch" not in skip:
            model = work / "vda-small.pt"
            exp = subprocess.run([B.PYTHON, "-m", "tools.export", "video-depth-anything", "--variant", "vits",
                                  "--checkpoint", ck, "--out", str(model)], cwd=B.REPO, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            if exp.returncode != 0:
                print(f"depthbatch: export failed: {exp.stderr.strip()}")
            elif not B.DEPTHBATCH.exists():
                print(f"depthbatch: not run ({B.DEPTHBATCH} is missing)")
            else:
                job = B.write_job(work / "vda.yaml", a.pattern, a.frames, str(work / "db" / "depth.####.exr"),
                                  {"model.path": str(model), "model.size": a.size, "output.channels": "depth",
                                   "pipeline.threads": a.threads, "model.threads": a.threads,
                                   "model.device": "cpu"})
                try:
                    r = B.run_depthbatch(job)
                    fps["depthbatch"] = n / r["wall_s"]
                    print(f"depthbatch: {r['wall_s']:.1f} s wall (process start to exit, EXR writing included), "
                          f"CPU {r['cpu_s']:.1f} s -> {fps['depthbatch']:.3f} frames/s")
                except RuntimeError as e:
                    print(f"depthbatch: failed: {str(e).splitlines()[0]}")
        if len(fps) == 2:
            print(f"depthbatch / official frames/s: {fps['depthbatch'] / fps['official']:.3f} (target >= 1.0)")
    print(f"load average at end: {B.loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
