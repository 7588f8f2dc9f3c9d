"""bench/gpu-check's body: on a GPU machine that may have no network, report what the machine has, then run
whatever part of the GPU benchmark it can, within a time budget (default 8 minutes), printing the device-busy
fraction of each part that ran. Standard library only: the inventory must work wherever python3 does.

Parts, each run only when the inventory says it can, and only while the budget lasts:
  A  bench/gpu_floor.py with a Python whose torch sees CUDA: the model's forward alone on the GPU (CUDA events,
     fp32 and fp16) and a serial Python loop's device-busy fraction. Needs the default model (models/) or, if it
     is missing, the model-heavy stand-in of bench/heavy_model.py.
  B  depthbatch itself on CUDA: configure and build build-cuda/ against that torch's LibTorch (needs nvcc and
     the Debian -dev packages scripts/setup installs), a smoke render on cuda, then bench/run --device cuda
     --nvidia-smi (FastDepth I/O-heavy case and the model-heavy case; sweep, RSS and start-up skipped), whose
     DEVICE-BUSY line is the inference stage's busy share of the pipeline's wall time.
"""
import argparse
import glob
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parent.parent
T0 = time.monotonic()


def say(*parts) -> None:
    print(*parts, flush=True)


def left(budget: float) -> float:
    return budget - (time.monotonic() - T0)


def run(cmd: List[str], timeout: float, env: Optional[Dict[str, str]] = None, echo: bool = False,
        cwd: Optional[Path] = None) -> Tuple[int, str]:
    """(exit status, stdout+stderr); 124 when killed at `timeout` seconds, 127 when the program is missing."""
    if timeout <= 1:
        return 124, "no time left in the budget"
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                             env=dict(os.environ, **(env or {})), cwd=cwd)
    except (FileNotFoundError, PermissionError) as e:
        return 127, f"{cmd[0]}: {e.strerror}"
    out: List[str] = []

    def pump() -> None:
        assert p.stdout is not None
        for line in p.stdout:
            out.append(line)
            if echo:
                print(line, end="", flush=True)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        reader.join(timeout=5)
        return 124, "".join(out) + f"\n(killed after {timeout:.0f} s: the budget)"
    reader.join(timeout=5)
    return rc, "".join(out)


PROBE = r"""
import json, sys
r = {"python": sys.version.split()[0], "exe": sys.executable, "prefix": sys.prefix}
try:
    import torch, torch.utils
    r["torch"] = torch.__version__
    r["torch_cuda"] = torch.version.cuda
    r["cuda_available"] = torch.cuda.is_available()
    if r["cuda_available"]:
        r["gpu"] = torch.cuda.get_device_name(0)
        r["cudnn"] = torch.backends.cudnn.version()
    r["cmake_prefix"] = torch.utils.cmake_prefix_path
except Exception as e:
    r["torch_error"] = f"{type(e).__name__}: {e}"
for m in ("OpenEXR", "PIL", "transformers"):
    try:
        __import__(m)
        r[m] = True
    except Exception:
        r[m] = False
print(json.dumps(r))
"""

# Headers of what depthbatch builds against (scripts/setup's Debian -dev packages), by package.
DEPS = {
    "libopenimageio-dev": ["OpenImageIO/imageio.h"], "libopencolorio-dev": ["OpenColorIO/OpenColorIO.h"],
    "libopenexr-dev": ["OpenEXR/ImfHeader.h"], "libtbb-dev": ["oneapi/tbb.h", "tbb/tbb.h"],
    "libcli11-dev": ["CLI/CLI.hpp"], "libyaml-cpp-dev": ["yaml-cpp/yaml.h"], "libtomlplusplus-dev": ["toml++/toml.h"],
    "nlohmann-json3-dev": ["nlohmann/json.hpp"], "libssl-dev": ["openssl/sha.h"], "zlib1g-dev": ["zlib.h"],
}


def include_dirs() -> List[Path]:
    dirs = [Path("/usr/include"), Path("/usr/local/include")]
    for prefix in os.environ.get("CMAKE_PREFIX_PATH", "").split(":"):
        if prefix:
            dirs.append(Path(prefix) / "include")
    return dirs


def find_limited(roots: List[str], pattern: str, depth: int, limit_s: float = 10.0) -> List[str]:
    """Files named like `pattern` (glob on the name) under roots, at most `depth` folders down."""
    import fnmatch
    found, t_end = [], time.monotonic() + limit_s
    for root in roots:
        root = os.path.expanduser(root)
        if not os.path.isdir(root):
            continue
        base = root.rstrip("/").count("/")
        for d, subdirs, files in os.walk(root):
            if time.monotonic() > t_end:
                return found
            if d.count("/") - base >= depth:
                subdirs[:] = []
            subdirs[:] = [s for s in subdirs if s not in ("proc", "sys", "dev", ".git", "node_modules")]
            found += [os.path.join(d, f) for f in files if fnmatch.fnmatch(f, pattern)]
    return found


def inventory(python_candidates: List[str]) -> Dict[str, object]:
    inv: Dict[str, object] = {}
    mem = "?"
    try:
        kb = int(next(l for l in open("/proc/meminfo") if l.startswith("MemTotal")).split()[1])
        mem = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    say(f"machine: {platform.node()}, {os.cpu_count()} CPUs, {mem}, {platform.platform()}")

    rc, out = run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,utilization.gpu",
                   "--format=csv,noheader"], 30)
    inv["nvidia_smi"] = rc == 0
    say(f"nvidia-smi: {out.strip() if rc == 0 else 'not usable (' + out.strip().splitlines()[-1] + ')' if out.strip() else 'not found'}")

    nvcc = shutil.which("nvcc") or next(iter(sorted(glob.glob("/usr/local/cuda*/bin/nvcc"))), None)
    inv["nvcc"] = nvcc
    if nvcc:
        rc, out = run([nvcc, "--version"], 30)
        say(f"nvcc: {nvcc}: {out.strip().splitlines()[-1] if out.strip() else '?'}")
    else:
        say("nvcc: not found (a CUDA LibTorch's CMake config needs the CUDA toolkit: part B cannot build)")

    pythons = []
    seen = set()
    for c in python_candidates:
        exe = shutil.which(c) if os.path.sep not in c else (c if os.access(c, os.X_OK) else None)
        if not exe:
            continue
        rc, out = run([exe, "-c", PROBE], 90)
        if rc != 0:
            say(f"python {exe}: probe failed: {out.strip().splitlines()[-1] if out.strip() else rc}")
            continue
        import json
        r = json.loads(out.strip().splitlines()[-1])
        if r["prefix"] in seen:   # the same environment by another name (a venv's python is a link to its base)
            continue
        seen.add(r["prefix"])
        pythons.append(r)
        if "torch" in r:
            say(f"python {exe} ({r['python']}): torch {r['torch']}, CUDA {r['torch_cuda']}, "
                f"cuda available: {r['cuda_available']}" + (f" ({r.get('gpu')}, cuDNN {r.get('cudnn')})" if r['cuda_available'] else "")
                + f"; OpenEXR module {'yes' if r['OpenEXR'] else 'no'}, Pillow {'yes' if r['PIL'] else 'no'}")
        else:
            say(f"python {exe} ({r['python']}): no torch ({r.get('torch_error', '?')})")
    inv["pythons"] = pythons

    wheels = find_limited(["~/.cache/pip", "/root", "/opt", "/tmp", str(REPO / ".whl"), "/work"], "torch-*.whl", 4)
    say("torch wheels on disk: " + (", ".join(wheels[:6]) if wheels else "none found (~/.cache/pip, /root, /opt, /tmp, .whl, /work)"))
    libtorch = find_limited(["/opt", "/usr/local", "/root", str(REPO)], "TorchConfig.cmake", 7)
    say("LibTorch CMake configs on disk: " + (", ".join(libtorch[:6]) if libtorch else "none beside the Pythons' torch"))

    missing = []
    for pkg, headers in DEPS.items():
        if not any((d / h).exists() for d in include_dirs() for h in headers):
            missing.append(pkg)
    inv["missing_deps"] = missing
    say("depthbatch's build dependencies: " + ("all headers found" if not missing else
        "missing " + ", ".join(missing) + " (Debian/Ubuntu packages; scripts/setup installs them where apt works)"))

    model = Path(os.environ.get("DEPTHBATCH_DEFAULT_MODEL", REPO / "models" / "fastdepth-nyu.pt"))
    inv["model"] = model if model.exists() else None
    say(f"default model: {model if model.exists() else 'missing: ' + str(model) + ' (scripts/setup prepares it; carry models/)'}")
    samples = Path(os.environ.get("DEPTHBATCH_SAMPLES", REPO.parent / "shared" / "samples"))
    plate = samples / "plates" / "bedroom" / "bedroom.1001.jpg"
    inv["samples"] = samples if plate.exists() else None
    say(f"samples: {samples if plate.exists() else 'missing: ' + str(plate) + ' (set DEPTHBATCH_SAMPLES)'}")
    return inv


def main() -> int:
    p = argparse.ArgumentParser(prog="bench/gpu-check")
    p.add_argument("--budget", type=float, default=float(os.environ.get("GPU_CHECK_BUDGET_S", 480)),
                   help="seconds for everything (default 480: 8 minutes)")
    p.add_argument("--build", default=os.environ.get("DEPTHBATCH_BUILD", str(REPO / "build-cuda")))
    p.add_argument("--only", default="", help="A or B: run that part alone")
    p.add_argument("--cpu-dry-run", action="store_true",
                   help="check this script without a GPU: parts A and B on the CPU with the first Python that has torch")
    a = p.parse_args()
    device = "cpu" if a.cpu_dry_run else "cuda"
    budget = a.budget
    say(f"== bench/gpu-check: budget {budget:.0f} s ==")
    candidates = [c for c in [os.environ.get("PYTHON"), str(REPO / ".venv" / "bin" / "python"), "python3",
                              "/opt/torch/.venv/bin/python3", "python"] if c]
    inv = inventory(candidates)
    cuda_py = next((r for r in inv["pythons"] if r.get("cuda_available") or (a.cpu_dry_run and "torch" in r)),
                   None)  # type: ignore[union-attr]
    ran, skipped = [], []
    say(f"-- inventory took {time.monotonic() - T0:.0f} s")

    # ---- part A: the model on the GPU from Python ---------------------------------------------------
    if a.only not in ("", "A"):
        skipped.append("A (--only)")
    elif not cuda_py:
        skipped.append("A: no Python whose torch sees a CUDA GPU")
    else:
        model = inv["model"]
        if model is None:
            stand_in = REPO / ".cache" / "bench" / "heavy-dav2s.pt"
            if not stand_in.exists():
                stand_in.parent.mkdir(parents=True, exist_ok=True)
                say("A: no default model; exporting the model-heavy stand-in (bench/heavy_model.py)")
                run([cuda_py["exe"], str(REPO / "bench" / "heavy_model.py"), str(stand_in)], min(150, left(budget) - 60),
                    echo=True)
            model = stand_in if stand_in.exists() else None
        if model is None:
            skipped.append("A: no model (default model missing, stand-in export failed)")
        else:
            say(f"-- A: bench/gpu_floor.py with {cuda_py['exe']} on {model}")
            args = [cuda_py["exe"], str(REPO / "bench" / "gpu_floor.py"), "--model", str(model)]
            if a.cpu_dry_run:
                args += ["--cpu-dry-run", "--iters", "5", "--frames", "6"]
            if inv["samples"]:
                args += ["--samples", str(inv["samples"])]
            rc, out = run(args, min(150, left(budget) - 30), echo=True)
            (ran if rc == 0 else skipped).append("A" if rc == 0 else f"A: exit {rc}")
            for line in out.splitlines():
                if line.startswith("gpu_floor loop") and "device_busy=" in line:
                    say(f"DEVICE-BUSY (serial Python loop, CUDA events): {line.split('device_busy=')[1].split()[0]}")

    # ---- part B: depthbatch on CUDA ----------------------------------------------------------------
    why = None
    if a.only not in ("", "B"):
        why = "--only"
    elif not cuda_py:
        why = "no Python whose torch sees a CUDA GPU (its LibTorch is the one to build against)"
    elif not inv["nvcc"] and not a.cpu_dry_run:
        why = "no CUDA toolkit (nvcc)"
    elif inv["missing_deps"]:
        why = "missing build dependencies: " + ", ".join(inv["missing_deps"])  # type: ignore[arg-type]
    elif inv["model"] is None or inv["samples"] is None:
        why = "the default model or the samples are missing"
    elif left(budget) < 150:
        why = f"only {left(budget):.0f} s of the budget left"
    if why:
        skipped.append("B: " + why)
    else:
        build = Path(a.build)
        torch_dir = Path(cuda_py["cmake_prefix"]) / "Torch"
        env = {"PATH": str(Path(inv["nvcc"]).parent) + os.pathsep + os.environ.get("PATH", "")} if inv["nvcc"] else {}
        say(f"-- B: configure and build {build} against {torch_dir}")
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        rc, out = run(["cmake", "-S", str(REPO), "-B", str(build), *gen, "-DCMAKE_BUILD_TYPE=Release",
                       f"-DTorch_DIR={torch_dir}", f"-DDEPTHBATCH_PYTHON={cuda_py['exe']}",
                       "-DDEPTHBATCH_BUILD_TESTS=OFF", "-DDEPTHBATCH_BUILD_BENCH=ON"], min(120, left(budget) - 120), env)
        if rc == 0:
            rc, out = run(["cmake", "--build", str(build), "--target", "depthbatch", "model_floor", "stages",
                           "-j", str(os.cpu_count() or 2)], left(budget) - 90, env)
        if rc != 0:
            say("\n".join(out.strip().splitlines()[-15:]))
            skipped.append(f"B: the build failed (exit {rc})")
        else:
            import tempfile
            with tempfile.TemporaryDirectory() as smoke:
                job = Path(smoke) / "job.yaml"
                job.write_text(f'input:\n  path: "{inv["samples"]}/plates/bedroom/bedroom.####.jpg"\n'
                               f'  frames: "1001-1002"\noutput:\n  path: "{smoke}/out/depth.####.exr"\n')
                rc, out = run([str(build / "depthbatch"), str(job), "--device", device], min(120, left(budget) - 60))
            say("smoke render: " + "; ".join(l.split("info: ", 1)[-1] for l in out.splitlines()
                                             if "device" in l or "cuDNN" in l or "error" in l))
            if rc != 0:
                skipped.append(f"B: the smoke render on {device} failed (exit {rc})")
        if rc == 0:
            benv = {"DEPTHBATCH_BUILD": str(build), "PYTHON": cuda_py["exe"],
                    "DEPTHBATCH_SAMPLES": str(inv["samples"])}
            say(f"-- B: bench/run --device {device} (sweep, RSS and start-up skipped)")
            rc, out = run([str(REPO / "bench" / "run"), "--device", device, "--reps", "1",
                           "--heavy-frames", "12", "--skip", "sweep,rss,startup,stages"]
                          + ([] if a.cpu_dry_run else ["--nvidia-smi"]), left(budget) - 5, benv, echo=True)
            (ran if rc == 0 else skipped).append("B" if rc == 0 else f"B: bench/run exit {rc}")

    say(f"== GPU-CHECK SUMMARY: ran {', '.join(ran) or 'nothing on a GPU'}; skipped: {'; '.join(skipped) or 'none'}; "
        f"{time.monotonic() - T0:.0f} s of {budget:.0f} ==")
    return 0 if ran or not cuda_py else 1


if __name__ == "__main__":
    sys.exit(main())
