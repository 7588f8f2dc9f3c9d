"""bench/gpu-check's arithmetic (bench/gpu_plan.py): the issue-31 §5 targets, the budget that skips rather than
overruns, the numbers taken from a depthbatch summary and nvidia-smi samples, and the table. No GPU, torch or
build: the values are the first GPU run's (H200, ../shared/tools/device-bundle/README.md) and a summary of the
shape depthbatch writes (src/job_report.cpp)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import gpu_plan as P  # noqa: E402


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


# A summary as depthbatch writes it for a 96-frame CUDA job (the keys gpu_plan reads; values invented but typical
# of DA-V2-S on the bedroom plate after issue 31 §1-3: 16 workers, 18 ms forwards).
SUMMARY = {
    "rendered": 96, "wall_s": 3.9, "render_s": 2.4, "worker_threads": 16, "torch_threads": 16,
    "stage_totals": {"read_ms": 960.0, "color_ms": 96.0, "reformat_ms": 480.0, "infer_ms": 1728.0,
                     "restore_ms": 384.0, "write_ms": 2880.0},
    "infer_busy_ms": 2208.0, "infer_wait_ms": 100.0, "first_frame_s": 0.41,
    "inference": {"threads": 1, "precision_asked": "fp16", "precision": "fp32"},
}


def test_from_summary_takes_rate_stages_busy_and_precision():
    r = P.from_summary(SUMMARY, 96)
    assert r["db_fps"] == pytest.approx(40.0)                 # 96 frames / render_s 2.4
    assert r["stages_ms"]["read"] == pytest.approx(10.0)      # 960 ms / 96 frames
    assert r["stages_ms"]["write"] == pytest.approx(30.0)
    assert r["busy"] == pytest.approx(0.92)                   # 2.208 s / 2.4 s
    assert r["first_frame_s"] == 0.41
    assert r["precision_in_force"] == "fp32" and r["inference_threads"] == 1 and r["workers"] == 16


def test_cpu_capacity_and_model_bound():
    row = P.from_summary(SUMMARY, 96)
    # CPU stages: 10 + 1 + 5 + 4 + 30 = 50 ms a frame on 16 workers -> 320 frames/s
    assert P.cpu_capacity_fps(row) == pytest.approx(320.0)
    row["floor_fps"] = 1e3 / 17.0                             # the first run's DA-V2-S steady state, 17 ms
    assert P.model_bound(row) is True
    row["floor_fps"] = 500.0
    assert P.model_bound(row) is False


def test_targets_fastdepth_against_the_first_gpu_run():
    # The first GPU run: FastDepth cuda fp32 4.0 frames/s, the Python loop 6.6: 0.6x, far from 10x
    row = {"model": "fastdepth", "db_fps": 4.0, "loop_fps": 6.6, "first_frame_s": 3.1}
    checks = {name: (value, status) for name, value, status in P.check_targets(row)}
    assert checks["depthbatch / Python loop"] == ("0.6x (target >= 10x)", "FAIL")
    assert checks["first frame after load"] == ("3.10 s (target <= 2 s)", "FAIL")
    row.update(db_fps=70.0, first_frame_s=0.5)
    checks = {name: status for name, _, status in P.check_targets(row)}
    assert checks == {"depthbatch / Python loop": "PASS", "first frame after load": "PASS"}


def test_targets_dav2s_use_the_lower_of_floor_and_cpu_capacity():
    row = {"model": "dav2s", **P.from_summary(SUMMARY, 96), "floor_fps": 1e3 / 17.0, "gpu_util": 93.0}
    checks = {name: (value, status) for name, value, status in P.check_targets(row)}
    value, status = checks["depthbatch / min(floor, CPU capacity)"]
    # min(58.8 floor, 320 CPU) = 58.8; 40 / 58.8 = 0.68 < 0.8
    assert status == "FAIL" and value.startswith("40.0 / 58.8 = 0.68")
    assert checks["GPU busy (model-bound case)"] == ("93% (target >= 90%)", "PASS")
    row["db_fps"] = 50.0
    assert dict((n, s) for n, _, s in P.check_targets(row))["depthbatch / min(floor, CPU capacity)"] == "PASS"
    row["floor_fps"] = 1000.0                                 # now the CPU stages bound it: busy does not apply
    busy = dict((n, s) for n, _, s in P.check_targets(row))["GPU busy (model-bound case)"]
    assert busy.startswith("n/a: CPU-bound")


def test_targets_vdas_and_missing_numbers():
    checks = {n: s for n, _, s in P.check_targets({"model": "vdas", "db_fps": 3.4, "first_frame_s": None})}
    assert checks["depthbatch frames/s"] == "FAIL"           # the first run: 3.4 frames/s, target 30
    assert checks["first frame after load"].startswith("n/a")
    assert checks["GPU busy (model-bound case)"].startswith("n/a")
    assert {n: s for n, _, s in P.check_targets({"model": "vdas", "db_fps": 31.0})}["depthbatch frames/s"] == "PASS"


def test_budget_skips_what_would_not_fit_and_caps_timeouts():
    clock = Clock()
    b = P.Budget(540, reserve=20, clock=clock)
    assert b.allows(500) == (True, "")
    clock.t += 420                                            # 120 s left, less the 20 s reserve: 100
    ok, why = b.allows(150)
    assert not ok and why == "skipped: needs ~150 s, 100 s of the budget left"
    assert b.allows(100)[0]
    assert b.timeout() == pytest.approx(100) and b.timeout(cap=60) == 60
    clock.t += 200                                            # past the budget
    assert b.timeout() == 0 and b.allows(1) == (False, "skipped: needs ~1 s, 0 s of the budget left")


def test_estimates_follow_measured_rates():
    measured = {}
    # nothing measured: the model's guess (DA-V2-S 8 frames/s), the 2K plate 2.5x the cost
    assert P.estimate_depthbatch_s("dav2s", "bedroom", 96, measured) == pytest.approx(8 + 12)
    assert P.estimate_depthbatch_s("dav2s", "exr2k", 96, measured) == pytest.approx(8 + 30)
    measured[("dav2s", "bedroom")] = 48.0
    assert P.guess_fps("dav2s", "bedroom", measured) == 48.0
    assert P.guess_fps("dav2s", "exr2k", measured) == pytest.approx(19.2)   # scaled from the other plate
    assert P.guess_fps("vdas", "bedroom", measured) == 6.0                  # other models unaffected


def test_video_windows_and_floor_parsing():
    assert P.video_windows(32, 32, 10) == 1
    assert P.video_windows(96, 32, 10) == 4                   # 0-31, 22-53, 44-75, 66-97
    line = ("model_floor ms_per_frame=3.400 median_ms_per_frame=3.380 cpu_ms_per_frame=2.100 ms_per_batch=3.400 "
            "input=384x224 batch=1 iters=30 threads=16 device=cuda:0 precision=fp32 pipelined=1 model=/x/f.pt")
    out = "warming\n" + line + "\n"
    kv = P.parse_kv_line(P.last_line_starting(out, "model_floor"))
    assert kv["ms_per_frame"] == "3.400" and kv["input"] == "384x224" and kv["model"] == "/x/f.pt"
    assert P.fps_from_floor_ms(float(kv["ms_per_frame"])) == pytest.approx(294.1, abs=0.1)
    assert P.fps_from_floor_ms(0) is None


def test_gpu_samples_use_the_rendering_interval():
    # (time, util %, MiB): loading 0% for 2 s, then rendering at 90-100% for the last 2 s
    samples = [(10.0, 0, 500), (10.5, 0, 900), (11.0, 2, 1500), (12.2, 90, 2500), (12.6, 100, 2600),
               (13.0, 96, 2600)]
    s = P.gpu_samples_summary(samples, t_end=13.0, render_s=1.0, mem_before_mib=400)
    assert s["gpu_util"] == pytest.approx((90 + 100 + 96) / 3)
    assert s["gpu_mem_mib"] == 2200 and s["gpu_samples"] == 3
    assert P.gpu_samples_summary([], 13.0, 1.0, None)["gpu_util"] is None


def test_table_marks_each_number_against_its_target_and_lists_skips():
    rows = [
        {"model": "fastdepth", "plate": "bedroom", "precision": "fp32", "frames": 96, "db_fps": 70.0,
         "loop_fps": 6.6, "loop_frames": 24, "floor_fps": 294.1, "gpu_util": 40.0, "busy": 0.3, "gpu_mem_mib": 812,
         "stages_ms": {s: 1.0 for s in P.STAGES}, "first_frame_s": 0.45},
        {"model": "vdas", "plate": "exr2k", "precision": "fp16", "frames": 96, "precision_in_force": "fp32",
         "skipped": {"depthbatch": "skipped: needs ~60 s, 12 s of the budget left"}},
    ]
    t = P.format_table(rows, "NVIDIA H200")
    lines = t.splitlines()
    assert lines[0].startswith("GPU check on NVIDIA H200")
    fd = next(l for l in lines if l.startswith("| FastDepth |"))
    cells = [c.strip() for c in fd.strip("|").split("|")]
    assert cells[:8] == ["FastDepth", "bedroom 960x540 JPEG", "fp32", "96", "70.0", "6.6 (24 fr)", "10.6x ✓",
                         "294.1"]
    assert cells[8] == "0.24" and cells[12] == "1.0/1.0/1.0/1.0/1.0/1.0" and cells[13] == "0.45 ✓"
    vd = next(l for l in lines if l.startswith("| VDA-S (seeded) |"))
    assert "fp16 (ran fp32)" in vd and "| – |" in vd
    assert "- FastDepth, bedroom, fp32: depthbatch / Python loop: 10.6x (target >= 10x): **PASS**" in lines
    assert "- VDA-S (seeded), exr2k, fp16: depthbatch skipped: needs ~60 s, 12 s of the budget left" in lines
    # the header and the separator have as many columns as each row
    assert lines[2].count("|") == lines[3].count("|") == fd.count("|")


def test_parity_table_is_relative_to_the_depth_span():
    t = P.format_parity([{"model": "fastdepth", "precision": "bf16", "in_force": "fp32", "frames": 2,
                          "max_abs": 0.021, "p99_abs": 0.004, "span": 0.1},
                         {"model": "dav2s", "precision": "fp16", "skipped": "skipped: needs ~20 s, 3 s left"}])
    assert "| FastDepth | bf16 | fp32 | 2 | 2.10e-01 | 4.00e-02 |" in t
    assert "| DA-V2-S (seeded) | fp16 | skipped: needs ~20 s, 3 s left |" in t


def test_the_run_skips_a_step_that_would_overrun_the_budget(tmp_path):
    """bench/gpu_check.py's steps, with 10 s of a 540 s budget left: each says what it needed and starts nothing
    (no depthbatch, no model_floor, no Python is run: none exists at these paths)."""
    import argparse
    import gpu_check as G
    a = argparse.Namespace(cpu_dry_run=False, build=str(tmp_path), frames=96, loop_frames=24, plates="bedroom")
    clock = Clock()
    ctx = G.Ctx(a, P.Budget(540, reserve=20, clock=clock), tmp_path)
    ctx.plates = {"bedroom": (str(tmp_path / "bedroom.####.jpg"), 96)}
    ctx.models = {"dav2s": tmp_path / "dav2s.pt", "vdas": tmp_path / "vdas.pt"}
    ctx.env["PYTHONPATH"] = str(tmp_path)            # as if the OpenEXR wheel were installed
    clock.t += 510
    row = {}
    G.run_depthbatch_row(ctx, row, "dav2s", "bedroom", "fp32")
    G.run_floor_row(ctx, row, "dav2s", "bedroom", "fp32")
    G.run_loop_row(ctx, row, "dav2s", "bedroom", "fp32")
    assert row["skipped"] == {
        "depthbatch": "skipped: needs ~20 s, 10 s of the budget left",      # 8 s start + 96 frames at 8 frames/s
        "floor": "skipped: needs ~16 s, 10 s of the budget left",           # 10 s + 31 forwards x 1.5 / 8
        "loop": "skipped: needs ~19 s, 10 s of the budget left"}            # 10 s + 24 frames x 3 / 8
    video = {}
    G.run_loop_row(ctx, video, "vdas", "bedroom", "fp32")
    assert video["skipped"]["loop"].startswith("n/a: a video model needs windows")
    assert G.parity(ctx, "dav2s")[0]["skipped"] == "skipped: needs ~24 s, 10 s of the budget left"
    assert not (tmp_path / "out").exists()
