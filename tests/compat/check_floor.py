"""The LibTorch floor check (run by scripts/check-libtorch-floor, which downloads LibTorch 2.4.1 and builds
tests/compat/load_check.cpp against it): the default model and one export of each exporter in tools/ (and bench/'s
model makers) load and run in LibTorch 2.4.1, and compute what this torch (the tools venv's, 2.13) computes.

Each model is exported here with this torch from weights generated from a seed (tools/seeded_weights.py: no
checkpoint is downloaded), then `load_check MODEL SHAPE OUT` loads it with LibTorch 2.4.1 and runs one forward on
the deterministic input load_check.cpp describes; the same input goes through this torch, and the two outputs must
agree within BOUND (relative to the output's largest magnitude: different LibTorch versions may sum in another
order). The default model must be the current exporter's (its contract records exported_by; scripts/setup
re-exports an older one).

  python tests/compat/check_floor.py --load-check BIN --work DIR [--default-model models/fastdepth-nyu.pt]
Exit status 0 when every model passes; 1 otherwise (each failure says which model, and LibTorch's error).
"""
import argparse
import contextlib
import io
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, List, Optional, Tuple

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.contract import EXPORTED_BY, read_contract  # noqa: E402

BOUND = 1e-4   # max |LibTorch 2.4.1 - this torch| / max |this torch|
SEED = 3
DEFAULT = "default model (tools/fastdepth.py)"


def floor_input(shape: Tuple[int, ...]) -> torch.Tensor:
    """load_check.cpp's input: element i = float((i * 7919) % 16381) / 16384, row-major."""
    n = int(np.prod(shape))
    return (torch.arange(n, dtype=torch.int64) * 7919 % 16381).to(torch.float32).div(16384.0).reshape(shape)


def seeded_checkpoint(module_factory: Callable[[], torch.nn.Module], out: Path) -> Path:
    """A state dict with every key and shape of module_factory()'s, values from tools/seeded_weights.py."""
    from tools.depth_anything_v2 import on_meta
    from tools.seeded_weights import seeded_state_dict
    shapes = {k: tuple(v.shape) for k, v in on_meta(module_factory).state_dict().items()}
    torch.save(seeded_state_dict(shapes, SEED), out)
    return out


def export_cli(args: List[str]) -> None:
    from tools.export import main as export_main
    with contextlib.redirect_stdout(io.StringIO()):   # the contract it prints
        status = export_main(args)
    if status != 0:
        raise RuntimeError("python -m tools.export " + " ".join(args) + " failed")


def make_depth_anything_v2(work: Path) -> Path:
    from tools.depth_anything_v2 import DepthAnythingV2
    ckpt = seeded_checkpoint(lambda: DepthAnythingV2("vits"), work / "da2-vits.pth")
    out = work / "da2-vits.pt"
    export_cli(["depth-anything-v2", "--variant", "vits", "--checkpoint", str(ckpt), "--out", str(out)])
    return out


def make_video_depth_anything(work: Path) -> Path:
    from tools.vda_fixtures import seeded_checkpoint as vda_checkpoint
    ckpt = work / "vda-vits.pth"
    torch.save(vda_checkpoint("vits", SEED), ckpt)
    out = work / "vda-vits.pt"
    export_cli(["video-depth-anything", "--variant", "vits", "--checkpoint", str(ckpt), "--out", str(out)])
    return out


def make_depth_anything_3(work: Path) -> Path:
    from tools.depth_anything_3 import DepthAnything3Mono
    ckpt = seeded_checkpoint(lambda: DepthAnything3Mono("vits"), work / "da3-vits.pth")
    out = work / "da3-vits.pt"   # the sky matte too: a tuple output; sky clamp (the quantile) as released
    export_cli(["depth-anything-3", "--model", "mono-large", "--net", "vits", "--sky-matte",
                "--checkpoint", str(ckpt), "--out", str(out)])
    return out


def make_depth_anything_3_views(work: Path) -> Path:
    from tools.depth_anything_3_views import DepthAnything3Views
    ckpt = seeded_checkpoint(lambda: DepthAnything3Views("vits"), work / "da3-views-vits.pth")
    out = work / "da3-views-vits.pt"   # DA3-SMALL any-view: (depth, confidence, extrinsics, intrinsics)
    export_cli(["depth-anything-3-views", "--model", "small", "--checkpoint", str(ckpt), "--out", str(out)])
    return out


def make_nuke_style(work: Path) -> Path:
    out = work / "nuke-style.pt"
    export_cli(["nuke-style-trace", "--out", str(out), "--size", "56", "84", "--inner", "tiny"])
    return out


def make_bench_conv(work: Path) -> Path:
    sys.path.insert(0, str(REPO / "bench"))
    import conv_model
    out = work / "bench-conv.pt"
    conv_model.main(str(out))
    return out


def make_bench_heavy(work: Path) -> Path:
    """bench/heavy_model.py's fallback conv stack (its preferred model is the Depth Anything V2 export above)."""
    sys.path.insert(0, str(REPO / "bench"))
    import heavy_model
    out = work / "bench-heavy.pt"
    heavy_model.export_conv_stack(out)
    return out


def run_case(name: str, path: Path, shape: Tuple[int, ...], load_check: str, work: Path) -> Optional[str]:
    """None when `path` loads and runs in the floor LibTorch and agrees with this torch; else what went wrong."""
    out = work / (path.stem + ".floor.f32")
    shape_arg = ",".join(str(s) for s in shape)
    t0 = time.monotonic()
    r = subprocess.run([load_check, str(path), shape_arg, str(out)], capture_output=True, text=True, timeout=300)
    took = time.monotonic() - t0
    if r.returncode != 0:
        return f"LibTorch floor run failed (exit {r.returncode}):\n{r.stderr.strip()}"
    floor_line = r.stdout.strip().splitlines()[-1]
    model = torch.jit.load(str(path), map_location="cpu")
    with torch.inference_mode():
        y = model(floor_input(shape))
    y = (y[0] if isinstance(y, (tuple, list)) else y).to(torch.float32)
    a = np.fromfile(out, dtype=np.float32)
    if a.size != y.numel():
        return f"the floor output has {a.size} values, this torch's {list(y.shape)}"
    ref = y.numpy().reshape(-1)
    scale = float(np.abs(ref).max())
    diff = float(np.abs(a - ref).max()) / max(scale, 1e-12)
    verdict = "ok" if diff <= BOUND else "FAIL"
    print(f"  {verdict:4} {name:34} [{shape_arg}] -> {list(y.shape)}  max|2.4.1 - {torch.__version__}| / max|y| = "
          f"{diff:.2e} (bound {BOUND:g}); floor {took:.1f} s: {floor_line}")
    return None if diff <= BOUND else f"outputs differ by {diff:.3g} of the output's range (bound {BOUND:g})"


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--load-check", required=True, help="tests/compat/load_check.cpp built against LibTorch 2.4.1")
    p.add_argument("--work", required=True, type=Path, help="a folder for the exports (written, not cleaned)")
    p.add_argument("--default-model", type=Path, default=REPO / "models" / "fastdepth-nyu.pt")
    a = p.parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    version = subprocess.run([a.load_check, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"LibTorch floor check: LibTorch {version} (load_check) against torch {torch.__version__} (exports)")

    failures: List[str] = []
    failed = set()
    cases = []
    if not a.default_model.exists():
        failures.append(f"default model {a.default_model}: missing (scripts/setup prepares it)")
        failed.add(DEFAULT)
    elif EXPORTED_BY not in read_contract(str(a.default_model)):
        failures.append(f"default model {a.default_model}: made by an exporter older than the LibTorch floor check "
                        f"(its contract has no {EXPORTED_BY}); `python -m tools.fastdepth prepare` (scripts/setup) "
                        f"makes it again")
        failed.add(DEFAULT)
    cases.append((DEFAULT, lambda w: a.default_model, (1, 3, 224, 224)))
    cases += [
        ("depth-anything-v2 vits (seeded)", make_depth_anything_v2, (1, 3, 70, 98)),
        ("video-depth-anything vits (seeded)", make_video_depth_anything, (1, 3, 3, 28, 42)),
        ("depth-anything-3 vits+sky (seeded)", make_depth_anything_3, (1, 3, 70, 98)),
        ("depth-anything-3-views small (seeded)", make_depth_anything_3_views, (1, 3, 3, 42, 70)),
        ("nuke-style-trace tiny", make_nuke_style, (1, 3, 56, 84)),
        ("bench/conv_model.py", make_bench_conv, (1, 3, 32, 48)),
        ("bench/heavy_model.py conv stack", make_bench_heavy, (1, 3, 56, 84)),
    ]
    for name, make, shape in cases:
        t0 = time.monotonic()
        try:
            path = Path(make(a.work))
        except Exception as e:  # noqa: BLE001 - an export that fails (e.g. the static op check): one line, go on
            failures.append(f"{name}: the export failed: {type(e).__name__}: {e}")
            failed.add(name)
            continue
        made = time.monotonic() - t0
        if made > 0.5:
            print(f"  made {path.name} in {made:.1f} s")
        problem = run_case(name, path, shape, a.load_check, a.work)
        if problem:
            failures.append(f"{name} ({path}): {problem}")
            failed.add(name)
    for f in failures:
        print(f"FAIL {f}", file=sys.stderr)
    print(f"LibTorch floor check: {len(cases) - len(failed)} of {len(cases)} models passed"
          if failures else f"LibTorch floor check: all {len(cases)} models load and run in LibTorch {version}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
