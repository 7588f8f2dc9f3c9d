"""bench/run's body (bench/run sets up the venv and binaries, then runs this). See bench/run for usage."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402

PLATE = "plates/bedroom/bedroom.####.jpg"   # 24 frames 1001-1024, 960x540 8-bit JPEG
PLATE_FIRST, PLATE_COUNT, PLATE_W, PLATE_H = 1001, 24, 960, 540


def model_floor(model: Path, size: str, iters: int, device: str, threads: int = 0) -> Dict[str, str]:
    cmd = [str(B.MODEL_FLOOR), "--model", str(model), "--plate", f"{PLATE_W}x{PLATE_H}", "--size", size,
           "--iters", str(iters), "--device", device, "--threads", str(threads)]
    # OMP_WAIT_POLICY=PASSIVE as depthbatch sets it for itself (apps/depthbatch/main.cpp): idle LibTorch
    # threads sleep instead of spinning, so cpu_ms_per_frame is the model's work, not its waiting.
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env=env).stdout.strip().splitlines()[-1]
    return dict(kv.split("=", 1) for kv in out.split()[1:])


def reference_loop(model: Path, frames: str, out_dir: Path, device: str, size: str = "model") -> Dict:
    cmd = [B.PYTHON, str(Path(__file__).parent / "reference_loop.py"), "--model", str(model),
           "--input", str(B.SAMPLES / PLATE), "--frames", frames, "--output", str(out_dir / "ref.####.exr"),
           "--device", device, "--size", size]
    t0, cpu0 = time.perf_counter(), B.children_cpu_s()
    proc = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    r["wall_s"] = time.perf_counter() - t0
    r["cpu_s"] = B.children_cpu_s() - cpu0
    return r


JOB_SET: Dict[str, object] = {}   # --job-set KEY=VALUE: added to depthbatch's job in every case


def best(runs: List[Dict], key) -> Dict:
    return min(runs, key=key)


def fmt_stages(totals: Dict[str, float], frames: int) -> str:
    keys = ["read_ms", "color_ms", "reformat_ms", "infer_ms", "restore_ms", "write_ms"]
    return ", ".join(f"{k[:-3]} {totals[k] / frames:.1f}" for k in keys if k in totals) + " ms/frame (summed over threads)"


def run_case(title: str, model: Path, frames_n: int, size: str, floor_iters: int, reps: int, device: str,
             work: Path, gpu: bool, lines: List[str], floor_threads: List[int],
             compare_zlib: bool = False, python_loop: bool = True, cpu_accounting: bool = False) -> Dict[str, float]:
    frames = B.frames_spec(PLATE_FIRST, frames_n)
    floors = {}
    for t in floor_threads:
        B.log(f"{title}: model floor ({floor_iters} forwards, {t} LibTorch threads)")
        f = model_floor(model, size, floor_iters, device, threads=t)
        floors[int(f["threads"])] = f
    job = B.write_job(work / "job.yaml", str(B.SAMPLES / PLATE), frames, str(work / "out" / "depth.####.exr"),
                      {"model.path": str(model), "model.size": size if size in ("model", "plate") else int(size),
                       "model.device": device, **JOB_SET})
    db_runs, zlib_runs = [], []
    for i in range(reps):
        B.log(f"{title}: depthbatch run {i + 1}/{reps} ({frames_n} frames)")
        sampler = B.GpuSampler(gpu) if gpu else None
        r = B.run_depthbatch(job, gpu=sampler)
        if sampler is not None:
            r["gpu"] = sampler.summary()
        db_runs.append(r)
        if compare_zlib:   # the same job with OpenEXR's ZIP on zlib (exr_deflate.h), alternating with the above
            B.log(f"{title}: depthbatch run {i + 1}/{reps} with DEPTHBATCH_EXR_DEFLATE=zlib")
            zlib_runs.append(B.run_depthbatch(job, env={"DEPTHBATCH_EXR_DEFLATE": "zlib"}))
    db = best(db_runs, lambda r: r["report"]["wall_s"])
    one_cpu, py_one_cpu = [], []
    if cpu_accounting:   # a one-frame job: start-up, model load and planning, to take off the CPU per frame
        one = B.write_job(work / "one.yaml", str(B.SAMPLES / PLATE), str(PLATE_FIRST),
                          str(work / "out" / "one.####.exr"), {"model.path": str(model), "model.device": device})
        for i in range(max(2, reps)):
            one_cpu.append(B.run_depthbatch(one)["cpu_s"])
        if python_loop:
            py_one_cpu = [reference_loop(model, str(PLATE_FIRST), work / "out", device, size)["cpu_s"]
                          for _ in range(max(2, reps))]
    py_runs = []
    for i in range(reps if python_loop else 0):
        B.log(f"{title}: Python reference loop run {i + 1}/{reps}")
        py_runs.append(reference_loop(model, frames, work / "out", device, size))
    py = best(py_runs, lambda r: r["loop_s"]) if py_runs else None

    rep = db["report"]
    pipe_s, proc_s = rep["wall_s"], db["wall_s"]
    render_s = rep.get("render_s", 0.0)
    # The floor with depthbatch's own LibTorch thread count is the like-for-like one; the best over the
    # thread counts tried is the true floor when that differs.
    same = int(rep["torch_threads"])
    if same not in floors:
        B.log(f"{title}: model floor ({floor_iters} forwards, {same} LibTorch threads)")
        floors[same] = model_floor(model, size, floor_iters, device, threads=same)
    floor = floors[same]
    floor_ms = float(floor["median_ms_per_frame"])
    best_t = min(floors, key=lambda t: float(floors[t]["median_ms_per_frame"]))
    best_ms = float(floors[best_t]["median_ms_per_frame"])
    floor_total_s = frames_n * floor_ms / 1e3
    lines += [
        f"== {title} ==",
        f"frames: {frames_n} of {B.SAMPLES / PLATE} ({PLATE_W}x{PLATE_H}); model input {floor['input']}; "
        f"device {rep['device']}; best of {reps} run(s) each; load average now {B.loadavg()}",
        "model floor (bench/model_floor: DepthModel::infer at the processing size, no I/O; "
        f"{floor_iters} forwards after 1 warm-up): "
        + "; ".join(f"{t} LibTorch thread(s): median {float(f['median_ms_per_frame']):.1f} ms/frame "
                    f"(mean {float(f['ms_per_frame']):.1f})" for t, f in sorted(floors.items())),
        f"  like-for-like floor ({same} threads, as depthbatch): {floor_total_s:.2f} s for {frames_n} frames",
        f"depthbatch: pipeline {pipe_s:.2f} s ({frames_n / pipe_s:.2f} frames/s), process {proc_s:.2f} s "
        f"(with start-up and model load); {rep['worker_threads']} workers, {rep['torch_threads']} LibTorch "
        f"threads, {rep['frames_in_flight']} frames in flight",
        f"  stages: {fmt_stages(rep['stage_totals'], frames_n)}",
    ]
    if "infer_busy_ms" in rep:
        lines.append(f"  inference stage busy {rep['infer_busy_ms'] / 1e3:.2f} s, waiting for input "
                     f"{rep.get('infer_wait_ms', 0) / 1e3:.2f} s")
        if str(rep["device"]).startswith("cuda"):
            # The inference stage holds the device from the batch's copy in to the depth's copy out: its busy
            # share of the pipeline's wall time is how fed the GPU was (nvidia-smi's utilization, below, counts
            # only kernels).
            lines.append(f"  DEVICE-BUSY fraction (inference stage busy / rendering wall time): "
                         f"{rep['infer_busy_ms'] / 1e3 / (render_s or pipe_s):.2f}; the model floor's share of it "
                         f"{floor_total_s / (render_s or pipe_s):.2f}")
    if db.get("gpu"):
        lines.append(f"  {db['gpu']}")
    if zlib_runs:
        zl = best(zlib_runs, lambda r: r["report"]["wall_s"])
        zrep = zl["report"]
        lines += [f"depthbatch with OpenEXR's ZIP on zlib (DEPTHBATCH_EXR_DEFLATE=zlib): pipeline {zrep['wall_s']:.2f} s, "
                  f"process {zl['wall_s']:.2f} s; write {zrep['stage_totals']['write_ms'] / frames_n:.1f} ms/frame",
                  f"  RATIO zlib / libdeflate (pipeline): {zrep['wall_s'] / pipe_s:.2f}"]
    if py:
        lines += [
            f"Python reference loop: loop {py['loop_s']:.2f} s ({frames_n / py['loop_s']:.2f} frames/s), process "
            f"{py['wall_s']:.2f} s; {py['torch_threads']} torch threads",
            f"  stages: {fmt_stages(py['stage_totals'], frames_n)}"]
    else:
        lines.append("Python reference loop: skipped (--skip python, or no OpenEXR module for it)")
    lines.append(f"RATIO depthbatch wall / model floor: {pipe_s / floor_total_s:.2f} (pipeline), "
                 f"{proc_s / floor_total_s:.2f} (process)"
                 + (f", {render_s / floor_total_s:.2f} (rendering only: render_s {render_s:.2f} s, without model "
                    f"load and planning)" if render_s else "")
                 + (f"; vs the best floor ({best_t} thread(s), {best_ms:.1f} ms/frame): "
                    f"{pipe_s / (frames_n * best_ms / 1e3):.2f} (pipeline)" if best_t != same else ""))
    if py:
        lines.append(f"RATIO Python wall / depthbatch wall: {py['loop_s'] / pipe_s:.2f} (loop vs pipeline), "
                     f"{py['wall_s'] / proc_s:.2f} (process vs process)")
    lines.append("")
    result = {"pipe_s": pipe_s, "floor_ms": floor_ms, "stage_totals": rep["stage_totals"], "frames": frames_n,
              "depth_exr": str(work / "out" / f"depth.{PLATE_FIRST}.exr")}
    if one_cpu and frames_n > 1:
        # CPU per frame of the whole process (every thread: TBB workers, LibTorch's pool, OpenEXR's pool), less
        # the one-frame job's (start-up) and the model's own CPU per forward (model_floor, same thread count).
        per_frame = (statistics.median([r["cpu_s"] for r in db_runs]) - statistics.median(one_cpu)) / (frames_n - 1)
        result["cpu_outside_model_ms"] = per_frame * 1e3 - float(floor["cpu_ms_per_frame"])
        result["cpu_per_frame_ms"] = per_frame * 1e3
        result["model_cpu_ms"] = float(floor["cpu_ms_per_frame"])
        line = f"CPU per frame, model included (process CPU time beyond a one-frame run): depthbatch {per_frame * 1e3:.1f} ms"
        if py_one_cpu:
            py_frame = (statistics.median([r["cpu_s"] for r in py_runs]) - statistics.median(py_one_cpu)) / (frames_n - 1)
            line += (f", Python loop {py_frame * 1e3:.1f} ms ({per_frame / py_frame:.2f}x): on a machine whose cores are "
                     f"all busy, wall time follows CPU time")
        lines.insert(len(lines) - 1, line)   # before the blank line that ends the case
    return result


# depthbatch's per-frame stages and the library call each one is built on (bench/stages, one thread).
STAGE_CALLS = [("read", "read_ms", "oiio_float"), ("colour", "color_ms", "srgb_noop"),
               ("reformat", "reformat_ms", "torch_triangle"), ("restore", "restore_ms", "bilinear_upsample"),
               ("write", "write_ms", "zip_rgb_float")]


def stage_table(case: Dict, lines: List[str]) -> None:
    """Per-stage CPU: the library calls alone (bench/stages) against the same stage inside depthbatch (its own
    per-frame report from the I/O-heavy run: summed over worker threads, so contention between frames in
    flight counts against depthbatch)."""
    plate = str(B.SAMPLES / PLATE.replace("####", f"{PLATE_FIRST:04d}"))
    depth = ["--depth", case["depth_exr"]] if Path(case.get("depth_exr", "")).is_file() else []
    out = subprocess.run([str(B.BUILD / "bench" / "stages"), plate, "--iters", "15", *depth], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    zlib_write = subprocess.run([str(B.BUILD / "bench" / "stages"), plate, "--iters", "15", "--only", "write", *depth],
                                check=True, stdout=subprocess.PIPE, text=True,
                                env=dict(os.environ, DEPTHBATCH_EXR_DEFLATE="zlib")).stdout
    alone: Dict[str, float] = {}
    extra: List[str] = []
    for ln in out.splitlines():
        kv = dict(x.split("=", 1) for x in ln.split()[2:])
        alone[kv["name"]] = float(kv["ms"])
        extra.append(f"  {ln.split()[1]:9s} {kv['name']:24s} {float(kv['ms']):8.2f} ms"
                     + (f"  {kv['bytes']} bytes, {kv['deflate']}" if "bytes" in kv else ""))
    for ln in zlib_write.splitlines():
        kv = dict(x.split("=", 1) for x in ln.split()[2:])
        extra.append(f"  {ln.split()[1]:9s} {kv['name']:24s} {float(kv['ms']):8.2f} ms  {kv['bytes']} bytes, "
                     f"{kv['deflate']} (DEPTHBATCH_EXR_DEFLATE=zlib)")
    n = case["frames"]
    lines += [f"== per-stage CPU per frame: the library call alone (bench/stages, 1 thread, median of 15) vs inside "
              f"depthbatch (the I/O-heavy run above) ==",
              f"{'stage':10s} {'library call':24s} {'alone ms':>9s} {'depthbatch ms':>14s} {'ratio':>6s}"]
    lib_sum = db_sum = 0.0
    for stage, key, call in STAGE_CALLS:
        db_ms = case["stage_totals"][key] / n
        lib_sum += alone[call]
        db_sum += db_ms
        lines.append(f"{stage:10s} {call:24s} {alone[call]:9.2f} {db_ms:14.2f} {db_ms / alone[call]:6.2f}")
    lines.append(f"{'outside the model':35s} {lib_sum:9.2f} {db_sum:14.2f} {db_sum / lib_sum:6.2f}")
    if "cpu_outside_model_ms" in case:
        c = case["cpu_outside_model_ms"]
        lines.append(f"RATIO CPU outside the model per frame, depthbatch / library calls alone: {c / lib_sum:.2f} "
                     f"({c:.1f} vs {lib_sum:.1f} ms; target <= 1.2): process CPU time of all threads, "
                     f"{case['cpu_per_frame_ms']:.1f} ms a frame beyond the one-frame job, less the model's "
                     f"{case['model_cpu_ms']:.1f} ms a forward (model_floor's CPU time)")
    rr = case["stage_totals"]["reformat_ms"] / n + case["stage_totals"]["restore_ms"] / n
    lines.append(f"reformat + restore inside depthbatch: {rr:.1f} ms a frame (target <= 10 at 960x540)")
    lines += ["every call measured (alternatives included):"] + extra + [""]


def startup(reps: int, device: str, work: Path, lines: List[str]) -> None:
    """A one-frame job with the default model, process wall time (start-up, model load, dry run, one frame,
    exit), best and median of `reps` runs."""
    job = B.write_job(work / "one.yaml", str(B.SAMPLES / PLATE), str(PLATE_FIRST), str(work / "out" / "one.####.exr"),
                      {"model.device": device})
    walls = []
    for i in range(reps):
        t0 = time.perf_counter()
        subprocess.run([str(B.DEPTHBATCH), str(job), "-q", "--overwrite"], check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t0)
    walls.sort()
    lines += [f"== start-up: a one-frame job (default model, bedroom 1001), process wall, {reps} runs ==",
              f"best {walls[0]:.2f} s, median {walls[len(walls) // 2]:.2f} s (target <= 0.8 s); all: "
              + " ".join(f"{w:.2f}" for w in walls), ""]


def thread_sweep(frames_n: int, reps: int, device: str, work: Path, lines: List[str]) -> None:
    frames = B.frames_spec(PLATE_FIRST, frames_n)
    job = B.write_job(work / "sweep.yaml", str(B.SAMPLES / PLATE), frames, str(work / "out" / "sweep.####.exr"),
                      {"model.device": device})
    nproc = os.cpu_count() or 1
    values = sorted({1, 2, nproc})   # {1, 2} on a 2-core machine
    configs = [(pt, mt, "") for pt in values for mt in values]
    # libgomp's threads spin at barriers (OMP_WAIT_POLICY unset); passive makes them sleep at once, which
    # matters when other threads (TBB workers, other processes) want the same cores. It must be in the
    # environment when libgomp loads, so it is a property of the process, not a job key.
    configs.append((nproc, nproc, "OMP_WAIT_POLICY=PASSIVE"))
    rows = []
    for pt, mt, env in configs:
        runs = []
        for i in range(reps):
            B.log(f"thread sweep: pipeline.threads {pt}, model.threads {mt} {env}, run {i + 1}/{reps}")
            extra_env = dict([env.split("=", 1)]) if env else None
            runs.append(B.run_depthbatch(job, ["--set", f"pipeline.threads={pt}", "--set", f"model.threads={mt}"],
                                         env=extra_env))
        r = best(runs, lambda r: r["report"]["wall_s"])
        rows.append((pt, mt, env, r["report"], [x["report"]["wall_s"] for x in runs]))
    fastest = min(rows, key=lambda row: row[3]["wall_s"])
    lines += [f"== thread split, FastDepth on the {PLATE_W}x{PLATE_H} bedroom plate ({frames_n} frames, best of "
              f"{reps}; load average now {B.loadavg()}) ==",
              f"{'pipeline.threads':>16} {'model.threads':>13} {'workers':>7} {'torch':>5} {'wall s':>7} "
              f"{'frames/s':>8} {'infer ms/f':>10} {'infer wait s':>12} {'vs best':>7}  all runs (s)"]
    for pt, mt, env, rep, walls in rows:
        n = max(1, rep["rendered"])
        mark = "*" if (pt, mt, env) == (nproc, nproc, "") else " "
        lines.append(f"{pt:>15}{mark} {mt:>13} {rep['worker_threads']:>7} "
                     f"{rep['torch_threads']:>5} {rep['wall_s']:>7.2f} {n / rep['wall_s']:>8.2f} "
                     f"{rep['stage_totals']['infer_ms'] / n:>10.1f} {rep.get('infer_wait_ms', 0) / 1e3:>12.2f} "
                     f"{rep['wall_s'] / fastest[3]['wall_s']:>7.2f}  {' '.join(f'{w:.2f}' for w in walls)}"
                     + (f"  {env}" if env else ""))
    lines.append(f"fastest: pipeline.threads {fastest[0]}, model.threads {fastest[1]}"
                 f"{' ' + fastest[2] if fastest[2] else ''} ({fastest[3]['wall_s']:.2f} s)")
    default = [row for row in rows if (row[0], row[1], row[2]) == (nproc, nproc, "")]
    if default:
        d = default[0][3]
        lines.append(f"* = what the job defaults (pipeline.threads 0, model.threads 0) resolve to on this machine: "
                     f"{d['worker_threads']} workers, {d['torch_threads']} LibTorch threads; it takes "
                     f"{d['wall_s'] / fastest[3]['wall_s']:.2f}x the fastest.")
    lines += ["'infer ms/f' is the forward pass inside the pipeline: compare it with the model floor above; when it is "
              "much higher, LibTorch's intra-op (OpenMP) threads are competing with the TBB workers for the same cores.",
              ""]


def rss_runs(counts: List[int], size: str, channels: str, device: str, work: Path, lines: List[str]) -> None:
    seq = work / "seq"
    seq.mkdir()
    for i in range(max(counts)):
        src = B.SAMPLES / PLATE.replace("####", f"{PLATE_FIRST + i % PLATE_COUNT:04d}")
        (seq / f"long.{1001 + i:04d}.jpg").symlink_to(src)
    rows = []
    for n in counts:
        out = work / f"rss{n}"
        job = B.write_job(work / f"rss{n}.yaml", str(seq / "long.####.jpg"), B.frames_spec(1001, n),
                          str(out / "depth.####.exr"), {"model.size": size if size in ("model", "plate") else int(size),
                                                        "model.device": device, "output.channels": channels})
        B.log(f"peak RSS: {n} frames (model.size {size})")
        r = B.run_depthbatch(job, measure_rss=True)
        rows.append((n, r))
        for f in out.glob("*.exr"):   # 1,000 EXRs are ~3 GB: free the disk before the next run
            f.unlink()
    lines += [f"== peak RSS of depthbatch vs sequence length (symlinks to the bedroom plate; model.size {size} and "
              f"output.channels {channels} to keep the {max(counts)}-frame run short: this bench is about growth "
              f"with sequence length, not the absolute level) =="]
    for n, r in rows:
        rep = r["report"]
        lines.append(f"{n:>5} frames: peak RSS {r['max_rss_kb'] / 1024:.1f} MiB, pipeline {rep['wall_s']:.1f} s "
                     f"({rep['rendered'] / rep['wall_s']:.1f} frames/s), {rep['frames_in_flight']} frames in flight")
    if len(rows) >= 2:
        (n0, r0), (n1, r1) = rows[0], rows[-1]
        lines.append(f"RATIO RSS({n1})/RSS({n0}): {r1['max_rss_kb'] / r0['max_rss_kb']:.3f}")
    lines.append("")


def main() -> int:
    p = argparse.ArgumentParser(prog="bench/run")
    p.add_argument("--device", default="cpu", help="cpu (default) | cuda | cuda:N: depthbatch, floor and Python loop")
    p.add_argument("--reps", type=int, default=2, help="runs per measurement, the fastest is kept (default 2)")
    p.add_argument("--frames", type=int, default=PLATE_COUNT, help="frames for the FastDepth case (max 24)")
    p.add_argument("--heavy-frames", type=int, default=4, help="frames for the model-heavy case (default 4)")
    p.add_argument("--heavy-model", default=None, help="TorchScript model for the model-heavy case "
                   "(default: Depth Anything V2 Small architecture, random weights; see bench/heavy_model.py)")
    p.add_argument("--rss-frames", default="100,1000", help="sequence lengths for peak RSS (default 100,1000)")
    p.add_argument("--rss-size", default="64", help="model.size for the RSS runs (default 64)")
    p.add_argument("--rss-channels", default="depth", help="output.channels for the RSS runs (default depth)")
    p.add_argument("--skip", default="", help="comma list of parts to skip: fastdepth,stages,startup,heavy,sweep,rss,python "
                   "(python: the Python reference loop)")
    p.add_argument("--skip-also", default=None, action="append", help=argparse.SUPPRESS)   # bench/run adds parts it cannot run
    p.add_argument("--job-set", action="append", default=[], metavar="KEY=VALUE",
                   help="a job key for depthbatch's runs of each case, e.g. output.pixel_type=half (repeatable; the "
                        "Python loop is unchanged)")
    p.add_argument("--nvidia-smi", action="store_true", help="sample GPU utilization during depthbatch runs")
    a = p.parse_args()
    skip = set(filter(None, ",".join([a.skip] + (a.skip_also or [])).split(",")))
    for kv in a.job_set:
        key, _, value = kv.partition("=")
        try:
            JOB_SET[key] = json.loads(value)
        except ValueError:
            JOB_SET[key] = value
    for exe in (B.DEPTHBATCH, B.MODEL_FLOOR):
        if not exe.exists():
            print(f"bench/run: {exe} is missing (build it: cmake --build {B.BUILD})", file=sys.stderr)
            return 2
    t_start = time.perf_counter()
    lines = (["depthbatch bench/run — one run, ratios measured now (not a test)"] + B.machine_lines()
             + ([f"depthbatch's jobs also set: {JOB_SET}"] if JOB_SET else []) + [""])
    print("\n".join(lines), flush=True)
    out: List[str] = []

    def flush():
        print("\n".join(out), flush=True)
        out.clear()

    with B.tempdir("depthbatch-bench-") as tmp:
        work = Path(tmp)
        if "fastdepth" not in skip:
            d = work / "fastdepth"
            d.mkdir()
            case = run_case("I/O-heavy: FastDepth (default model) on the 960x540 bedroom plate", B.DEFAULT_MODEL,
                            min(a.frames, PLATE_COUNT), "model", 12, a.reps, a.device, d, a.nvidia_smi, out,
                            sorted({1, os.cpu_count() or 1}) if a.device == "cpu" else [], compare_zlib=True,
                            python_loop="python" not in skip, cpu_accounting=True)
            flush()
            if "stages" not in skip:
                stage_table(case, out)
                flush()
        if "startup" not in skip:
            d = work / "startup"
            d.mkdir()
            startup(7, a.device, d, out)
            flush()
        if "heavy" not in skip:
            d = work / "heavy"
            d.mkdir()
            if a.heavy_model:
                heavy, what = Path(a.heavy_model).resolve(), a.heavy_model
            else:
                # "-3": exported with tools/ops.py resize, loadable by LibTorch 2.4 (README "Which LibTorch loads a
                # model"), and with depth that varies (the -2 file gave all-zero depth); older caches are not reused
                heavy = B.CACHE / "heavy-dav2s-3.pt"
                what = "cached " + str(heavy)
                if not heavy.exists():
                    B.log("model-heavy case: exporting the model (once; cached in", B.CACHE, ")")
                    r = subprocess.run([B.PYTHON, str(Path(__file__).parent / "heavy_model.py"), str(heavy)],
                                       check=True, stdout=subprocess.PIPE, text=True)
                    what = json.loads(r.stdout.strip().splitlines()[-1])["description"]
                    (heavy.with_suffix(".txt")).write_text(what + "\n")
                elif heavy.with_suffix(".txt").exists():
                    what = heavy.with_suffix(".txt").read_text().strip()
            out.append(f"model-heavy model: {what}")
            run_case("model-heavy: Depth Anything V2 Small cost at processing size 518 on the bedroom plate", heavy,
                     min(a.heavy_frames, PLATE_COUNT), "model", 2, 1, a.device, d, a.nvidia_smi, out,
                     sorted({1, os.cpu_count() or 1}) if a.device == "cpu" else [], python_loop="python" not in skip)
            flush()
        if "sweep" not in skip:
            d = work / "sweep"
            d.mkdir()
            thread_sweep(min(a.frames, PLATE_COUNT), a.reps, a.device, d, out)
            flush()
        if "rss" not in skip:
            d = work / "rss"
            d.mkdir()
            rss_runs([int(n) for n in a.rss_frames.split(",")], a.rss_size, a.rss_channels, a.device, d, out)
            flush()
    print(f"total bench time {time.perf_counter() - t_start:.0f} s; load average at the end: {B.loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
