"""bench/gpu-check's arithmetic, apart from anything that runs: the cases it measures, the issue-31 §5 targets and
how each is checked, the time budget (what may still start, what is skipped and why), the numbers taken from a
depthbatch summary and nvidia-smi samples, and the markdown table. Standard library only, so that
tools/tests/test_gpu_check.py tests it with real values and no GPU, torch or build.

A result row is a dict (gpu_check.py fills it; every key optional):
  model, plate, precision, frames        the case ("fastdepth", "dav2s", "vdas"; "bedroom", "exr2k"; fp32/fp16)
  db_fps          depthbatch frames / render_s (the summary's rendering time: without process start, model load
                  and planning, like the Python loop's loop_s)
  db_wall_s       the whole depthbatch process, start to exit
  precision_in_force   the summary's inference.precision (fp16 may give way to fp32 on the first frame)
  loop_fps, loop_frames   bench/reference_loop.py on the same plate (fewer frames: its rate is flat)
  floor_fps, floor_ms     the model's forwards alone on one thread (model_floor --pipelined / gpu_floor.py)
  gpu_util        mean nvidia-smi utilization.gpu (%) over the rendering interval
  busy            the inference stage's busy time / render_s (the summary's infer_busy_ms)
  gpu_mem_mib     the largest nvidia-smi memory.used (MiB) while depthbatch ran, less the reading before it
  stages_ms       per-frame ms of read, color, reformat, infer, restore, write (summed over worker threads)
  workers         TBB worker threads of the job
  first_frame_s   the summary's first_frame_s (first frame written, counted from the model load)
  skipped         {"depthbatch"|"loop"|"floor": reason}
"""
import math
import time
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

MODELS = {   # key -> (label, kind of model, default frames/s guess on an H200 for the budget before any is measured)
    "fastdepth": ("FastDepth", "single", 20.0),
    "dav2s": ("DA-V2-S (seeded)", "single", 8.0),
    "vdas": ("VDA-S (seeded)", "video", 6.0),
}
PLATES = {   # key -> (label, width, height, cost factor against the bedroom plate for the budget guesses)
    "bedroom": ("bedroom 960x540 JPEG", 960, 540, 1.0),
    "exr2k": ("2K half EXR 2048x1152", 2048, 1152, 2.5),
}
PRECISIONS = ("fp32", "fp16")
STAGES = ("read", "color", "reformat", "infer", "restore", "write")
CPU_STAGES = ("read", "color", "reformat", "restore", "write")

# issue 31 §5 targets (on an H200-class GPU)
LOOP_SPEEDUP = 10.0        # FastDepth: depthbatch >= 10x the serial Python loop
FLOOR_SHARE = 0.8          # DA-V2-S: >= 0.8 of min(model floor, CPU stages' capacity)
VDA_FPS = 30.0             # VDA-S: >= 30 frames/s
BUSY = 0.90                # GPU busy >= 90% on the model-bound case
FIRST_FRAME_S = 2.0        # first frame <= 2 s after the model load


class Budget:
    """Seconds left of `total`, less `reserve` kept for the table and the tarball. `clock` is injectable (tests)."""

    def __init__(self, total: float, reserve: float = 15.0, clock: Callable[[], float] = time.monotonic):
        self.total, self.reserve, self.clock = float(total), float(reserve), clock
        self.t0 = clock()

    def elapsed(self) -> float:
        return self.clock() - self.t0

    def left(self) -> float:
        """Seconds a step may still use (the reserve excluded); may be negative."""
        return self.total - self.reserve - self.elapsed()

    def allows(self, estimate_s: float) -> Tuple[bool, str]:
        """(True, "") when a step estimated at `estimate_s` fits what is left, else (False, the reason to print)."""
        left = self.left()
        if estimate_s <= left:
            return True, ""
        return False, f"skipped: needs ~{estimate_s:.0f} s, {max(left, 0):.0f} s of the budget left"

    def timeout(self, cap: Optional[float] = None) -> float:
        """The most a step started now may run: what is left, at most `cap`."""
        left = max(self.left(), 0.0)
        return min(left, cap) if cap is not None else left


def guess_fps(model: str, plate: str, measured: Dict[Tuple[str, str], float]) -> float:
    """Frames/s to expect of depthbatch on (model, plate): measured on that pair, else on the model's other plate
    scaled by the plates' cost factors, else MODELS' guess scaled likewise."""
    if measured.get((model, plate)):
        return measured[(model, plate)]
    for (m, p), fps in measured.items():
        if m == model and fps:
            return fps * PLATES[p][3] / PLATES[plate][3]
    return MODELS[model][2] / PLATES[plate][3]


def estimate_depthbatch_s(model: str, plate: str, frames: int, measured: Dict[Tuple[str, str], float],
                          start_s: float = 8.0) -> float:
    """A depthbatch job's seconds: process start, model load and warm-up (`start_s`), then `frames` at guess_fps."""
    return start_s + frames / guess_fps(model, plate, measured)


def video_windows(frames: int, window: int, overlap: int) -> int:
    """Windows a video model runs over `frames` frames (depthbatch: the first window, then one per window - overlap
    new frames)."""
    if frames <= window:
        return 1
    return 1 + math.ceil((frames - window) / (window - overlap))


def fps_from_floor_ms(ms_per_frame: Optional[float]) -> Optional[float]:
    return 1e3 / ms_per_frame if ms_per_frame and ms_per_frame > 0 else None


def parse_kv_line(line: str) -> Dict[str, str]:
    """`name key=value key=value ...` (model_floor's, gpu_floor.py's lines) -> {key: value}."""
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


def last_line_starting(text: str, prefix: str) -> Optional[str]:
    lines = [l for l in text.splitlines() if l.startswith(prefix)]
    return lines[-1] if lines else None


def from_summary(report: Dict, frames: int) -> Dict[str, object]:
    """The row's depthbatch numbers from its JSON summary (pipeline.summary / pipeline.report)."""
    n = max(int(report.get("rendered") or frames), 1)
    render_s = float(report.get("render_s") or report.get("wall_s") or 0.0)
    totals = report.get("stage_totals") or {}
    out: Dict[str, object] = {
        "rendered": n,
        "render_s": render_s,
        "db_fps": n / render_s if render_s > 0 else None,
        "stages_ms": {s: float(totals.get(f"{s}_ms", 0.0)) / n for s in STAGES},
        "workers": int(report.get("worker_threads") or 0),
        "first_frame_s": report.get("first_frame_s"),
        "busy": (float(report["infer_busy_ms"]) / 1e3 / render_s) if report.get("infer_busy_ms") is not None
        and render_s > 0 else None,
        "precision_in_force": (report.get("inference") or {}).get("precision"),
        "inference_threads": (report.get("inference") or {}).get("threads"),
    }
    return out


def gpu_samples_summary(samples: Sequence[Tuple[float, float, float]], t_end: float, render_s: float,
                        mem_before_mib: Optional[float]) -> Dict[str, Optional[float]]:
    """nvidia-smi samples (time, utilization %, memory used MiB) of one depthbatch run -> mean utilization over the
    rendering interval (the last `render_s` seconds before `t_end`; all samples when none fall in it) and the peak
    memory used, less `mem_before_mib` (what the GPU held before the run)."""
    if not samples:
        return {"gpu_util": None, "gpu_mem_mib": None, "gpu_samples": 0}
    inside = [s for s in samples if t_end - render_s <= s[0] <= t_end] or list(samples)
    peak = max(s[2] for s in samples)
    return {"gpu_util": sum(s[1] for s in inside) / len(inside),
            "gpu_mem_mib": peak - (mem_before_mib or 0.0), "gpu_samples": len(inside)}


def cpu_capacity_fps(row: Dict) -> Optional[float]:
    """Frames/s the CPU stages (read, colour, reformat, restore, write) can deliver with the job's workers: workers
    x 1000 / their ms per frame (each measured inside the job, under its contention)."""
    st, w = row.get("stages_ms"), row.get("workers")
    if not st or not w:
        return None
    ms = sum(st.get(s, 0.0) for s in CPU_STAGES)
    return w * 1e3 / ms if ms > 0 else None


def model_bound(row: Dict) -> Optional[bool]:
    """True when the model floor is below the CPU stages' capacity: the GPU should then be busy all along."""
    cap, floor = cpu_capacity_fps(row), row.get("floor_fps")
    if cap is None or floor is None:
        return None
    return floor <= cap


def check_targets(row: Dict) -> List[Tuple[str, str, str]]:
    """The §5 targets that apply to `row`: (what, the value against its target, PASS | FAIL | n/a: why)."""
    checks: List[Tuple[str, str, str]] = []
    model = row.get("model")
    fps = row.get("db_fps")

    def verdict(ok: bool) -> str:
        return "PASS" if ok else "FAIL"

    if model == "fastdepth":
        loop = row.get("loop_fps")
        if fps and loop:
            x = fps / loop
            checks.append(("depthbatch / Python loop", f"{x:.1f}x (target >= {LOOP_SPEEDUP:.0f}x)",
                           verdict(x >= LOOP_SPEEDUP)))
        else:
            checks.append(("depthbatch / Python loop", f"target >= {LOOP_SPEEDUP:.0f}x",
                           "n/a: " + ("no depthbatch rate" if not fps else "no Python loop rate")))
    if model == "dav2s":
        floor, cap = row.get("floor_fps"), cpu_capacity_fps(row)
        bound = min(v for v in (floor, cap) if v) if (floor or cap) else None
        if fps and bound:
            checks.append(("depthbatch / min(floor, CPU capacity)",
                           f"{fps:.1f} / {bound:.1f} = {fps / bound:.2f} (target >= {FLOOR_SHARE}; floor "
                           f"{_f(floor)}, CPU capacity {_f(cap)} frames/s)", verdict(fps >= FLOOR_SHARE * bound)))
        else:
            checks.append(("depthbatch / min(floor, CPU capacity)", f"target >= {FLOOR_SHARE}",
                           "n/a: " + ("no depthbatch rate" if not fps else "no floor and no stage times")))
    if model == "vdas":
        checks.append(("depthbatch frames/s", f"{_f(fps)} (target >= {VDA_FPS:.0f})",
                       verdict(fps >= VDA_FPS) if fps else "n/a: no depthbatch rate"))
    if model in ("dav2s", "vdas"):
        bound_now = model_bound(row)
        util = row.get("gpu_util")
        if bound_now is False:
            checks.append(("GPU busy (model-bound case)", f"{_pct(util)}", "n/a: CPU-bound here (CPU capacity "
                           f"{_f(cpu_capacity_fps(row))} < floor {_f(row.get('floor_fps'))} frames/s)"))
        elif util is None:
            checks.append(("GPU busy (model-bound case)", f"target >= {BUSY:.0%}", "n/a: no nvidia-smi samples"))
        else:
            checks.append(("GPU busy (model-bound case)", f"{_pct(util)} (target >= {BUSY:.0%})",
                           verdict(util / 100.0 >= BUSY)))
    ff = row.get("first_frame_s")
    checks.append(("first frame after load", f"{_f(ff, 2)} s (target <= {FIRST_FRAME_S:.0f} s)",
                   verdict(ff <= FIRST_FRAME_S) if ff is not None else "n/a: no depthbatch run"))
    return checks


def _f(v: Optional[float], digits: int = 1) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _pct(v: Optional[float]) -> str:
    return "–" if v is None else f"{v:.0f}%"


def stages_cell(st: Optional[Dict[str, float]]) -> str:
    if not st:
        return "–"
    return "/".join(f"{st.get(s, 0.0):.1f}" for s in STAGES)


def _mark(checks: List[Tuple[str, str, str]], what: str) -> str:
    for name, _, status in checks:
        if name.startswith(what):
            return " ✓" if status == "PASS" else " ✗" if status == "FAIL" else ""
    return ""


def format_table(rows: Iterable[Dict], device: str = "") -> str:
    """The markdown table of the measured rows, then each row's targets (PASS / FAIL / n/a with the reason), then
    every skipped part with its reason."""
    rows = list(rows)
    head = ("| model | plate | precision | frames | depthbatch frames/s | Python loop frames/s | x loop | floor "
            "frames/s | of floor | GPU util | infer busy | peak GPU MiB | read/col/ref/infer/rest/write ms a frame "
            "| first frame s |")
    lines = [f"GPU check{(' on ' + device) if device else ''}: "
             "✓/✗ = the issue-31 §5 target of that number met/missed (below the table)", "", head,
             "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    target_lines: List[str] = []
    skipped_lines: List[str] = []
    for r in rows:
        checks = check_targets(r)
        fps, loop, floor = r.get("db_fps"), r.get("loop_fps"), r.get("floor_fps")
        prec = r.get("precision", "")
        if r.get("precision_in_force") and r.get("precision_in_force") != prec:
            prec += f" (ran {r['precision_in_force']})"
        lines.append("| " + " | ".join([
            MODELS.get(r.get("model"), (r.get("model"),))[0], PLATES.get(r.get("plate"), (r.get("plate"),))[0], prec,
            str(r.get("frames", "–")),
            _f(fps) + (_mark(checks, "depthbatch frames/s") or _mark(checks, "depthbatch / min")),
            _f(loop) + (f" ({r['loop_frames']} fr)" if loop and r.get("loop_frames") else ""),
            (f"{fps / loop:.1f}x" if fps and loop else "–") + _mark(checks, "depthbatch / Python"),
            _f(floor), f"{fps / floor:.2f}" if fps and floor else "–",
            _pct(r.get("gpu_util")) + _mark(checks, "GPU busy"),
            f"{r['busy']:.2f}" if r.get("busy") is not None else "–",
            _f(r.get("gpu_mem_mib"), 0), stages_cell(r.get("stages_ms")),
            _f(r.get("first_frame_s"), 2) + _mark(checks, "first frame")]) + " |")
        name = f"{MODELS.get(r.get('model'), (r.get('model'),))[0]}, {r.get('plate')}, {r.get('precision')}"
        for what, value, status in checks:
            target_lines.append(f"- {name}: {what}: {value}: **{status}**")
        for part, why in (r.get("skipped") or {}).items():
            skipped_lines.append(f"- {name}: {part} {why}")
    lines += ["", "Targets (issue 31 §5, H200-class GPU): FastDepth >= 10x the Python loop; DA-V2-S >= 0.8 of "
              "min(model floor, CPU stages' capacity); VDA-S >= 30 frames/s; GPU busy >= 90% where the model is the "
              "bottleneck; first frame <= 2 s after the model load.", ""] + target_lines
    if skipped_lines:
        lines += ["", "Skipped:"] + skipped_lines
    return "\n".join(lines) + "\n"


def format_parity(rows: Iterable[Dict]) -> str:
    """CUDA against CPU depth: rows {model, precision, in_force, max_abs, span, p99_abs, frames, skipped}."""
    lines = ["| model | precision asked | ran | frames | max abs diff / depth span | p99 abs diff / span |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        label = MODELS.get(r.get("model"), (r.get("model"),))[0]
        if r.get("skipped"):
            lines.append(f"| {label} | {r.get('precision')} | {r['skipped']} | | | |")
            continue
        span = r.get("span") or 0.0
        rel = (r["max_abs"] / span) if span > 0 and r.get("max_abs") is not None else None
        p99 = (r["p99_abs"] / span) if span > 0 and r.get("p99_abs") is not None else None
        lines.append(f"| {label} | {r.get('precision')} | {r.get('in_force') or r.get('precision')} | "
                     f"{r.get('frames', '–')} | {'–' if rel is None else f'{rel:.2e}'} | "
                     f"{'–' if p99 is None else f'{p99:.2e}'} |")
    return "\n".join(lines) + "\n"
