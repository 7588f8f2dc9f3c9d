"""Shared helpers of bench/run and bench/flicker (not a test suite; nothing here asserts).

Paths: REPO is the repository root; the binaries come from $DEPTHBATCH_BUILD (default REPO/build):
$DEPTHBATCH_BUILD/depthbatch and $DEPTHBATCH_BUILD/bench/model_floor. Samples: $DEPTHBATCH_SAMPLES
(default REPO/../shared/samples).
"""
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("DEPTHBATCH_BUILD", REPO / "build")).resolve()
SAMPLES = Path(os.environ.get("DEPTHBATCH_SAMPLES", REPO.parent / "shared" / "samples")).resolve()
PYTHON = sys.executable
DEPTHBATCH = BUILD / "depthbatch"
MODEL_FLOOR = BUILD / "bench" / "model_floor"
DEFAULT_MODEL = Path(os.environ.get("DEPTHBATCH_DEFAULT_MODEL", REPO / "models" / "fastdepth-nyu.pt"))
CACHE = Path(os.environ.get("DEPTHBATCH_BENCH_CACHE", REPO / ".cache" / "bench"))
TIME_V = "/usr/bin/time"


def log(*parts) -> None:
    print("#", *parts, file=sys.stderr, flush=True)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def machine_lines() -> List[str]:
    mem = "?"
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        mem = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, AttributeError):
        pass
    import torch
    return [f"machine: nproc {os.cpu_count()}, CPU {cpu_model()}, memory {mem}, {platform.platform()}",
            f"torch {torch.__version__} (Python side), depthbatch {DEPTHBATCH}",
            f"load average at start: {loadavg()} (other processes on this machine skew every number below)"]


def children_cpu_s() -> float:
    """User + system CPU seconds of every finished child process so far (all their threads)."""
    import resource
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def round_to_multiple(x: float, m: int) -> int:
    return max(m, int(math.floor(x / m + 0.5)) * m)


def processing_size(width: int, height: int, short: int, multiple: int):
    """depthbatch's ReformatPlan for model.size N / model: (width, height) of the model input (the contract's short
    side, each side rounded to the nearest multiple, the long side capped at 4x the short one)."""
    scale = short / min(width, height)
    cap = 4.0 * short / max(width, height)
    s = min(scale, max(cap, 0.0))
    return round_to_multiple(width * s, multiple), round_to_multiple(height * s, multiple)


def frames_spec(first: int, count: int) -> str:
    return f"{first}-{first + count - 1}"


def write_job(path: Path, input_pattern: str, frames: str, output_pattern: str,
              settings: Optional[Dict[str, object]] = None) -> Path:
    """A depthbatch job file (YAML). `settings`: dotted job keys -> values (model.size, depth.normalize...)."""
    tree: Dict[str, Dict[str, object]] = {
        "input": {"path": input_pattern, "frames": frames},
        "output": {"path": output_pattern, "overwrite": "overwrite"},
    }
    for key, value in (settings or {}).items():
        section, name = key.split(".", 1)
        tree.setdefault(section, {})[name] = value
    lines = ["# written by bench/ (benchmark job)"]
    for section, keys in tree.items():
        lines.append(f"{section}:")
        for name, value in keys.items():
            lines.append(f"  {name}: {json.dumps(value)}")   # JSON scalars and lists are YAML flow values
    path.write_text("\n".join(lines) + "\n")
    return path


class GpuSampler:
    """nvidia-smi utilization samples (every 200 ms) while a `with` block runs; `times` holds each sample's
    time.monotonic() as it was read."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and shutil.which("nvidia-smi") is not None
        self.samples: List[float] = []
        self.mem: List[float] = []
        self.times: List[float] = []
        self._proc = None
        self._thread = None

    def __enter__(self):
        if self.enabled:
            self._proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits",
                 "-lms", "200"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            self._thread = threading.Thread(target=self._read, daemon=True)
            self._thread.start()
        return self

    def _read(self):
        for line in self._proc.stdout:
            try:
                util, mem = [float(v) for v in line.split(",")[:2]]
            except ValueError:
                continue
            self.samples.append(util)
            self.mem.append(mem)
            self.times.append(time.monotonic())

    def __exit__(self, *exc):
        if self._proc:
            self._proc.terminate()
            self._proc.wait()
            self._thread.join(timeout=2)

    def summary(self) -> str:
        if not self.samples:
            return "no nvidia-smi samples"
        s = sorted(self.samples)
        return (f"GPU utilization over {len(s)} samples: mean {sum(s) / len(s):.0f}%, median {s[len(s) // 2]:.0f}%, "
                f"max {s[-1]:.0f}%; memory used max {max(self.mem):.0f} MiB")


def run_depthbatch(job: Path, args: Optional[List[str]] = None, report: bool = True, measure_rss: bool = False,
                   gpu: Optional[GpuSampler] = None, env: Optional[Dict[str, str]] = None,
                   timeout: Optional[float] = None) -> Dict[str, object]:
    """Run depthbatch JOB --overwrite -q [args]; returns wall_s (the process, start to exit), cpu_s (its CPU
    time, all threads), the pipeline report (pipeline.report JSON) and, with measure_rss, max_rss_kb from
    /usr/bin/time -v. subprocess.TimeoutExpired after `timeout` seconds (the process is killed)."""
    report_path = job.with_suffix(".report.json")
    cmd = [str(DEPTHBATCH), str(job), "--overwrite", "-q"] + list(args or [])
    if report:
        cmd += ["--set", f"pipeline.report={report_path}"]
    rss_file = job.with_suffix(".time.txt")
    if measure_rss:
        cmd = [TIME_V, "-v", "-o", str(rss_file)] + cmd
    full_env = dict(os.environ, **env) if env else None
    cpu0 = children_cpu_s()
    t0 = time.perf_counter()
    if gpu is not None:
        with gpu:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env,
                                  timeout=timeout)
    else:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env,
                              timeout=timeout)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"depthbatch failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    out: Dict[str, object] = {"wall_s": wall, "cpu_s": children_cpu_s() - cpu0, "t_end": time.monotonic(),
                              "stderr": proc.stderr}
    if report and report_path.exists():
        out["report"] = json.loads(report_path.read_text())
    if measure_rss:
        m = re.search(r"Maximum resident set size \(kbytes\):\s*(\d+)", rss_file.read_text())
        out["max_rss_kb"] = int(m.group(1)) if m else None
    return out


def render_depth_only(work: Path, name: str, pattern: str, frames: str, settings: Dict[str, object],
                      model: str) -> Path:
    """Render `pattern` (frames spec) with `model` and job `settings` into work/name/depth.####.exr, depth.Z
    only; return that folder."""
    out = work / name
    job = write_job(work / f"{name}.yaml", pattern, frames, str(out / "depth.####.exr"),
                    {"model.path": model, "output.channels": "depth", **settings})
    run_depthbatch(job, report=False)
    return out


def read_depth(path: Path):
    """depth.Z of an EXR as a float32 numpy array [H, W]."""
    import OpenEXR
    with OpenEXR.File(str(path), separate_channels=True) as f:
        return f.channels()["depth.Z"].pixels.astype("float32", copy=True)


def tempdir(prefix: str) -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix=prefix, dir=os.environ.get("TMPDIR"))
