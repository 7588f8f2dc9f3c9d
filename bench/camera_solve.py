"""bench/camera_solve's body (bench/camera_solve sets up the paths, then runs this). See bench/camera_solve.

`depthbatch solve` (camera.solve: a Depth Anything 3 any-view model) on the CPU, measured in one run; a benchmark,
not a test: it prints numbers and ratios and asserts nothing.

  speed   one shot (default: 24 frames of tools.camera_oracle's dolly at 504x280, DA3-SMALL's processing size, so
          nothing is resized on either side), the same windows of 8 views (overlap 3: the plan depthbatch makes,
          e.g. [0,8) [5,13) [10,18) [15,23) [16,24) for 24 frames), the same threads:
            official    depth_anything_3 0.1.1's DepthAnything3Net (built from its configs/da3-small.yaml) in fp32 on
                        the CPU without autocast, window by window as api.DepthAnything3 would run it: its
                        InputProcessor on the plate files (PNG decode, upper_bound_resize to the longest side,
                        ToTensor, ImageNet normalize; num_workers = --threads) then the model's forward
                        (torch.inference_mode, use_ray_pose False, ref_view_strategy saddle_balanced). Timed: the
                        preprocessing and the forward of every window; not the model build (printed apart), not
                        the output processing (api.py's _convert_to_prediction) nor any file writing.
            depthbatch  the whole `depthbatch solve JOB --overwrite` process with the exported module
                        (tools.export depth-anything-3-views): start, model load, plates read + colour + reformat,
                        windows, chaining, writing .chan/.usda/.json; its wall time split from its log lines'
                        arrival times (start -> "camera solve: N frames in", -> the last window line, -> exit)
          s/frame of each (the minimum of --reps runs) and depthbatch/official, for the whole process and for the
          windows part alone.
  memory  peak RSS (the child's ru_maxrss from wait4) of `depthbatch solve` for --memory-frames (100 and 1,000)
          frames of tiny plates (--memory-size 70x42: a textured strip panning one pixel a frame, numpy + PIL) through
          the same seeded DA3-SMALL exported with input.size = the plate (tools.export's test-only --size), and the
          ratio (target: flat, ~1.0).

Weights: --checkpoint (a real DA3-SMALL model.safetensors) or seeded ones in the official key layout
(tools/seeded_weights.py, seed 0, cam_dec.fc_fov.0.bias + 1 as tools/tests/test_depth_anything_3_views.py); the
speed does not depend on the values. The official half needs depth_anything_3 (pip install --no-deps
depth-anything-3==0.1.1) and addict/omegaconf/einops (tools/requirements.txt); where cv2, torchvision or imageio
(imported by its input processor, not part of tools/requirements.txt) are missing, this script puts minimal
stand-ins in sys.modules: ToTensor and Normalize as torchvision computes them; cv2.resize raises (it is only called
when a plate is not already at the processing size, and the default shot is).
"""
import argparse
import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402

PATCH = 14


# ---------------------------------------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------------------------------------
def solve_windows(count: int, window: int, overlap: int) -> List[Tuple[int, int]]:
    """src/camera_solve.cpp solve_windows: [first, last) view ranges of the shot."""
    if count <= window:
        return [(0, count)]
    out, stride, first = [], window - overlap, 0
    while True:
        if first + window >= count:
            out.append((count - window, count))
            return out
        out.append((first, first + window))
        first += stride


def seeded_checkpoint(path: Path) -> None:
    """DA3-SMALL seeded weights in the hub layout ("model." + DepthAnything3Net keys), as the parity tests make them."""
    from safetensors.torch import save_file
    sys.path.insert(0, str(B.REPO))
    from tools.seeded_weights import seeded_state_dict
    try:
        from depth_anything_3.cfg import create_object, load_config
        from depth_anything_3.registry import MODEL_REGISTRY
        ref = create_object(load_config(MODEL_REGISTRY["da3-small"]))
        shapes = {"model." + k: tuple(v.shape) for k, v in ref.state_dict().items()}
    except ImportError:   # the exporter's own module has the official keys (test_state_dict_keys_match_official)
        from tools.depth_anything_3_views import DepthAnything3Views
        shapes = {k: tuple(v.shape) for k, v in DepthAnything3Views("vits").state_dict().items()}
    sd = seeded_state_dict(shapes, 0)
    sd["model.cam_dec.fc_fov.0.bias"] = sd["model.cam_dec.fc_fov.0.bias"] + 1.0
    save_file({k: v.contiguous() for k, v in sd.items()}, str(path))


def export(checkpoint: Path, out: Path, size_hw: Optional[Tuple[int, int]]) -> None:
    cmd = [B.PYTHON, "-m", "tools.export", "depth-anything-3-views", "--model", "small", "--checkpoint",
           str(checkpoint), "--out", str(out)]
    if size_hw:
        cmd += ["--size", str(size_hw[0]), str(size_hw[1])]
    p = subprocess.run(cmd, cwd=B.REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"export failed: {p.stderr.strip()}")


def write_solve_job(path: Path, plates: str, frames: int, out: Path, model: Path, threads: int, window: int,
                    overlap: int) -> Path:
    path.write_text(
        "# written by bench/camera_solve (benchmark job)\n"
        f"input: {{path: {json.dumps(plates)}, frames: {B.frames_spec(1001, frames)}, colorspace: sRGB}}\n"
        f"output: {{path: {json.dumps(str(out / 'depth.####.exr'))}}}\n"
        f"model: {{threads: {threads}}}\n"
        f"pipeline: {{threads: {threads}}}\n"
        "camera:\n"
        f"  solve: {{model: {json.dumps(str(model))}, window: {window}, overlap: {overlap}, distance: 5.0}}\n")
    return path


def run_solve(job: Path) -> Dict[str, object]:
    """`depthbatch solve JOB --overwrite` with its log streamed: wall time, CPU, peak RSS (wait4 of the child), the
    arrival time of each output line (relative to the start)."""
    cmd = [str(B.DEPTHBATCH), "solve", str(job), "--overwrite"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    lines: List[Tuple[float, str]] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append((time.perf_counter() - t0, line.rstrip("\n")))
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = "\n".join(text for _, text in lines[-8:])
        raise RuntimeError(f"depthbatch solve failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    out: Dict[str, object] = {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "max_rss_kb": ru.ru_maxrss,
                              "lines": lines}
    start = [t for t, text in lines if "camera solve: " in text and " frames in " in text]
    wins = [t for t, text in lines if "camera solve: window " in text]
    if start and wins:
        out["split"] = {"load_s": start[0], "windows_s": wins[-1] - start[0], "tail_s": wall - wins[-1],
                        "windows": len(wins)}
    plan = [text.split("(frames ", 1)[1].rstrip(")") for _, text in lines if "camera solve: window " in text]
    out["plan"] = plan
    summary = [text for _, text in lines if text.startswith("camera ")]
    out["summary"] = summary[0] if summary else ""
    return out


# ---------------------------------------------------------------------------------------------------------------
# Official half (runs in a child process of its own: --official-half)
# ---------------------------------------------------------------------------------------------------------------
def stub_missing_modules() -> List[str]:
    """Stand-ins for the input processor's imports that tools/requirements.txt does not install (module doc)."""
    import importlib
    import numpy as np
    import torch
    stubbed = []
    try:
        importlib.import_module("cv2")
    except ImportError:
        cv2 = types.ModuleType("cv2")
        cv2.INTER_CUBIC, cv2.INTER_AREA = 2, 3

        def resize(*_a, **_k):
            raise NotImplementedError("bench/camera_solve's cv2 stand-in: the plates must be at the processing size "
                                      "(install opencv-python-headless to time a resize)")
        cv2.resize = resize
        sys.modules["cv2"] = cv2
        stubbed.append("cv2")
    try:
        importlib.import_module("torchvision.transforms")
    except ImportError:
        tv = types.ModuleType("torchvision")
        tr = types.ModuleType("torchvision.transforms")

        class ToTensor:   # torchvision.transforms.functional.to_tensor for a PIL RGB image
            def __call__(self, pic):
                a = torch.from_numpy(np.array(pic, np.uint8, copy=True))
                return a.permute(2, 0, 1).contiguous().to(torch.float32).div(255)

        class Normalize:  # torchvision.transforms.functional.normalize (not in place)
            def __init__(self, mean, std):
                self.mean = torch.as_tensor(mean, dtype=torch.float32).view(-1, 1, 1)
                self.std = torch.as_tensor(std, dtype=torch.float32).view(-1, 1, 1)

            def __call__(self, t):
                return t.sub(self.mean).div(self.std)

        class CenterCrop:
            def __init__(self, *_a):
                raise NotImplementedError("bench/camera_solve's torchvision stand-in: views of different sizes")

        tr.ToTensor, tr.Normalize, tr.CenterCrop = ToTensor, Normalize, CenterCrop
        tv.transforms = tr
        sys.modules["torchvision"], sys.modules["torchvision.transforms"] = tv, tr
        stubbed.append("torchvision")
    try:
        importlib.import_module("imageio")
    except ImportError:
        sys.modules["imageio"] = types.ModuleType("imageio")   # parallel_utils: only its image-saving helper uses it
        stubbed.append("imageio")
    return stubbed


def official_half(a: argparse.Namespace) -> int:
    import logging
    import torch
    torch.set_num_threads(a.threads)
    stubbed = stub_missing_modules()
    from depth_anything_3.cfg import create_object, load_config
    from depth_anything_3.registry import MODEL_REGISTRY
    from depth_anything_3.utils.io.input_processor import InputProcessor
    from safetensors.torch import load_file
    logging.disable(logging.INFO)
    t0 = time.perf_counter()
    model = create_object(load_config(MODEL_REGISTRY["da3-small"])).eval()
    sd = load_file(a.checkpoint)
    model.load_state_dict({k[len("model."):] if k.startswith("model.") else k: v for k, v in sd.items()}, strict=True)
    load_s = time.perf_counter() - t0
    paths = [a.pattern.replace("####", f"{f:04d}") for f in range(a.first, a.last + 1)]
    plan = solve_windows(len(paths), a.window, a.overlap)
    proc = InputProcessor()
    reps = []
    for _ in range(a.reps):
        pre = fwd = 0.0
        shape = None
        c0 = time.process_time()
        for first, last in plan:
            t1 = time.perf_counter()
            imgs, _, _ = proc(paths[first:last], None, None, a.process_res, "upper_bound_resize",
                              num_workers=a.threads)
            t2 = time.perf_counter()
            with torch.inference_mode():
                out = model(imgs[None] if imgs.dim() == 4 else imgs, None, None, [], False, False, "saddle_balanced")
            t3 = time.perf_counter()
            shape = list(out["depth"].shape)
            pre += t2 - t1
            fwd += t3 - t2
        reps.append({"pre_s": pre, "forward_s": fwd, "total_s": pre + fwd, "shape": shape,
                     "cpu_s": time.process_time() - c0})
    floor = []
    if a.exported:   # the exported module (depthbatch's) from Python: the same windows, forward alone
        import numpy as np
        from PIL import Image
        scripted = torch.jit.load(a.exported, map_location="cpu").eval()
        views = [torch.from_numpy(np.asarray(Image.open(p).convert("RGB"), np.float32) / 255).permute(2, 0, 1)
                 for p in paths]
        for _ in range(a.reps):
            t1, c1 = time.perf_counter(), time.process_time()
            for first, last in plan:
                with torch.inference_mode():
                    scripted(torch.stack(views[first:last])[None])
            floor.append((time.perf_counter() - t1, time.process_time() - c1))
    print(json.dumps({"load_s": load_s, "reps": reps, "plan": plan, "threads": torch.get_num_threads(),
                      "stubbed": stubbed, "input_shape": list(imgs.shape), "exported_forward_s": floor}))
    return 0


# ---------------------------------------------------------------------------------------------------------------
# Parts
# ---------------------------------------------------------------------------------------------------------------
def speed(a: argparse.Namespace, work: Path, ck: Path) -> None:
    width, height = (int(v) for v in a.size.split("x"))
    if width % PATCH or height % PATCH:
        print(f"speed: --size {a.size}: both sides must be multiples of {PATCH} (no resize on either side)")
        return
    n = a.frames
    plates = Path(a.plates) if a.plates else work / f"dolly{n}-{width}x{height}"
    pattern = str(plates / "plate.####.png")
    if not a.plates and not (plates / f"plate.{1000 + n}.png").exists():
        t = time.perf_counter()
        subprocess.run([B.PYTHON, "-m", "tools.camera_oracle", "make", "--shot", "dolly", "--out", str(plates),
                        "--frames", str(n), "--width", str(width), "--height", str(height)], cwd=B.REPO, check=True,
                       stdout=subprocess.DEVNULL)
        B.log(f"oracle dolly {n} frames {width}x{height} in {time.perf_counter() - t:.0f} s")
    # the contract's input.size is [H, W] = the plate: with the default 504x280 that is DEFAULT_SIZE_HW, no --size
    model = work / f"da3-small-views-{height}x{width}.pt"
    if not model.exists():
        export(ck, model, None if (height, width) == (280, 504) else (height, width))
    plan = solve_windows(n, a.window, a.overlap)
    print(f"\n## speed: {n} frames {width}x{height} (oracle dolly), windows of {a.window} (overlap {a.overlap}): "
          + " ".join(f"[{f},{l})" for f, l in plan) + f"; threads {a.threads} both; min of {a.reps}")
    official = None
    if "official" not in a.skip:
        env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads))
        p = subprocess.run([B.PYTHON, str(Path(__file__).resolve()), "--official-half", "--checkpoint", str(ck),
                            "--pattern", pattern, "--first", "1001", "--last", str(1000 + n), "--window",
                            str(a.window), "--overlap", str(a.overlap), "--threads", str(a.threads), "--reps",
                            str(a.reps), "--process-res", str(max(width, height)), "--exported", str(model)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=B.REPO)
        if p.returncode != 0:
            print(f"official: failed (exit {p.returncode}): {p.stderr.strip().splitlines()[-3:]}")
        else:
            official = json.loads(p.stdout.strip().splitlines()[-1])
            best = min(official["reps"], key=lambda r: r["total_s"])
            stand_ins = f", stand-ins: {','.join(official['stubbed'])}" if official["stubbed"] else ""
            print(f"official (depth_anything_3 0.1.1, fp32, torch threads {official['threads']}, input "
                  f"{official['input_shape']}{stand_ins}): model build + load {official['load_s']:.1f} s "
                  "(not timed below)")
            for r in official["reps"]:
                print(f"  run: preprocessing {r['pre_s']:.2f} s + forward {r['forward_s']:.2f} s = "
                      f"{r['total_s']:.2f} s; CPU {r['cpu_s']:.1f} s")
            print(f"  best: {best['total_s']:.2f} s -> {best['total_s'] / n:.3f} s/frame "
                  f"(forward alone {best['forward_s'] / n:.3f} s/frame)")
            if official["exported_forward_s"]:
                fl = min(w for w, _ in official["exported_forward_s"])
                print(f"exported module (depthbatch's .pt) from Python, the same windows, forward alone: runs "
                      + ", ".join(f"{w:.2f} s (CPU {c:.1f} s)" for w, c in official["exported_forward_s"])
                      + f" -> {fl / n:.3f} s/frame ({fl / best['forward_s']:.3f}x the official forward: the export "
                      "skips the head's auxiliary ray chain, which the official forward always runs)")
    db = None
    if "depthbatch" not in a.skip:
        job = write_solve_job(work / "speed.yaml", pattern, n, work / "speed-out", model, a.threads, a.window,
                              a.overlap)
        runs = []
        for _ in range(a.reps):
            try:
                runs.append(run_solve(job))
            except RuntimeError as e:
                print(f"depthbatch: {e}")
                break
        if runs:
            print(f"depthbatch solve ({B.DEPTHBATCH}; pipeline.threads = model.threads = {a.threads}; windows "
                  f"{', '.join(runs[0]['plan'])}): {runs[0]['summary']}")
            for r in runs:
                s = r.get("split")
                split = (f" = start + model load {s['load_s']:.2f} + windows {s['windows_s']:.2f} + "
                         f"write/exit {s['tail_s']:.2f}") if s else ""
                print(f"  run: wall {r['wall_s']:.2f} s{split}; CPU {r['cpu_s']:.1f} s; peak RSS "
                      f"{r['max_rss_kb'] / 1024:.0f} MB")
            best = min(runs, key=lambda r: r["wall_s"])
            wbest = min((r["split"]["windows_s"] for r in runs if "split" in r), default=None)
            db = {"wall": best["wall_s"], "windows": wbest, "cpu": min(r["cpu_s"] for r in runs)}
            print(f"  best: {best['wall_s']:.2f} s -> {best['wall_s'] / n:.3f} s/frame (whole process)"
                  + (f"; windows part {wbest:.2f} s -> {wbest / n:.3f} s/frame" if wbest else ""))
    if official and db:
        best = min(official["reps"], key=lambda r: r["total_s"])
        print(f"depthbatch / official s/frame: whole process {db['wall'] / best['total_s']:.3f}"
              + (f", windows part alone {db['windows'] / best['total_s']:.3f}" if db["windows"] else "")
              + " (< 1: depthbatch faster)")
        print(f"depthbatch / official CPU seconds (less sensitive to other load; min of each): "
              f"{db['cpu'] / min(r['cpu_s'] for r in official['reps']):.3f} (depthbatch's whole process)")


def write_memory_plates(folder: Path, count: int, width: int, height: int) -> None:
    import numpy as np
    from PIL import Image
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    coarse = rng.random((height // 4 + 2, (width + count) // 4 + 2, 3))
    strip = np.kron(coarse, np.ones((4, 4, 1)))[:height]           # blocky texture: features at every scale
    yy = np.arange(height)[:, None, None] / height
    for i in range(count):
        path = folder / f"plate.{1001 + i}.png"
        if path.exists():
            continue
        rgb = 0.7 * strip[:, i:i + width] + 0.3 * yy
        Image.fromarray((np.clip(rgb, 0, 1) * 255).astype(np.uint8)).save(path)


def memory(a: argparse.Namespace, work: Path, ck: Path) -> None:
    width, height = (int(v) for v in a.memory_size.split("x"))
    counts = [int(v) for v in a.memory_frames.split(",")]
    plates = work / f"pan-{width}x{height}"
    t = time.perf_counter()
    write_memory_plates(plates, max(counts), width, height)
    B.log(f"{max(counts)} plates {width}x{height} in {time.perf_counter() - t:.1f} s")
    model = work / f"da3-small-views-{height}x{width}.pt"
    if not model.exists():
        export(ck, model, (height, width))
    print(f"\n## memory: {'/'.join(map(str, counts))} frames of {width}x{height} plates (a panning texture), "
          f"DA3-SMALL seeded exported at input.size [{height}, {width}], windows of {a.window} (overlap "
          f"{a.overlap}), threads {a.threads}")
    rss = {}
    for n in counts:
        job = write_solve_job(work / f"mem{n}.yaml", str(plates / "plate.####.png"), n, work / f"mem{n}-out",
                              model, a.threads, a.window, a.overlap)
        try:
            r = run_solve(job)
        except RuntimeError as e:
            print(f"{n:5d} frames: {e}")
            continue
        rss[n] = r["max_rss_kb"]
        s = r.get("split", {})
        print(f"{n:5d} frames: peak RSS {rss[n] / 1024:.1f} MB, wall {r['wall_s']:.1f} s (windows "
              f"{s.get('windows', '?')}: {s.get('windows_s', float('nan')):.1f} s), CPU {r['cpu_s']:.1f} s; "
              f"{r['summary']}")
    ref = counts[0]
    for n in counts[1:]:
        if n in rss and ref in rss:
            print(f"peak RSS {n}/{ref} frames: {rss[n] / rss[ref]:.3f} (target: flat, ~1.0)")


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(prog="bench/camera_solve")
    p.add_argument("--checkpoint", default="", help="DA3-SMALL model.safetensors (default: seeded weights)")
    p.add_argument("--frames", type=int, default=24, help="speed: frames of the oracle dolly (default 24)")
    p.add_argument("--size", default="504x280", help="speed: plate WxH = the processing size (default 504x280)")
    p.add_argument("--plates", default="", help="speed: a folder of plate.1001.png... to use instead of the oracle")
    p.add_argument("--threads", type=int, default=2, help="threads for both sides (default 2)")
    p.add_argument("--reps", type=int, default=2, help="speed: runs of each side, the minimum is kept (default 2)")
    p.add_argument("--window", type=int, default=8)
    p.add_argument("--overlap", type=int, default=3)
    p.add_argument("--memory-frames", default="100,1000", help="memory: shot lengths (the first is the reference)")
    p.add_argument("--memory-size", default="70x42", help="memory: plate WxH = processing size (multiples of 14)")
    p.add_argument("--skip", default="", help="speed,memory,official,depthbatch: parts to leave out")
    p.add_argument("--keep", default="", help="work folder to keep (plates, models, jobs); default a temporary one")
    p.add_argument("--official-half", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--pattern", default="", help=argparse.SUPPRESS)
    p.add_argument("--first", type=int, default=1001, help=argparse.SUPPRESS)
    p.add_argument("--last", type=int, default=1024, help=argparse.SUPPRESS)
    p.add_argument("--process-res", type=int, default=504, help=argparse.SUPPRESS)
    p.add_argument("--exported", default="", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.skip = {s for s in a.skip.split(",") if s}
    if a.official_half:
        return official_half(a)
    if not B.DEPTHBATCH.exists():
        print(f"bench/camera_solve: {B.DEPTHBATCH} is missing (set DEPTHBATCH_BUILD)")
        return 2
    print("depthbatch bench/camera_solve — camera.solve with DA3-SMALL on the CPU, one run (not a test)")
    for line in B.machine_lines():
        print(line)
    commit = subprocess.run(["git", "-C", str(B.REPO), "log", "-1", "--format=%h"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True).stdout.strip()
    print(f"repository commit {commit or '?'} (the depthbatch binary is whatever {B.BUILD} holds)")
    ctx = B.tempdir("depthbatch-camera-solve-") if not a.keep else None
    work = Path(a.keep) if a.keep else Path(ctx.name)
    work.mkdir(parents=True, exist_ok=True)
    ck = Path(a.checkpoint) if a.checkpoint else work / "da3-small.seeded.safetensors"
    if not ck.exists():
        seeded_checkpoint(ck)
        print("weights: seeded (tools/seeded_weights.py, seed 0, fc_fov bias + 1), official key layout")
    if "speed" not in a.skip:
        speed(a, work, ck)
    if "memory" not in a.skip:
        memory(a, work, ck)
    print(f"\nload average at end: {B.loadavg()}")
    if ctx is not None:
        ctx.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
