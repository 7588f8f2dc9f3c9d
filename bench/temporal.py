"""bench/temporal's body (bench/temporal sets up the venv and binaries, then runs this). See bench/temporal."""
import argparse
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402

BORDER = 10           # ground-truth pixels this close to the image edge are left out (eroded border)


def load_gt(pattern: str, frame: int, scale: float) -> np.ndarray:
    from PIL import Image
    return np.asarray(Image.open(pattern.replace("####", f"{frame:04d}")), np.float64) * scale



def valid_mask(gt: np.ndarray) -> np.ndarray:
    m = gt > 0
    m[:BORDER, :] = m[-BORDER:, :] = False
    m[:, :BORDER] = m[:, -BORDER:] = False
    return m


def metrics(preds: List[np.ndarray], gts: List[np.ndarray]) -> Dict[str, float]:
    """Mean per-frame RMSE (m) and delta1 over valid pixels, and the error flicker: the mean over consecutive
    frames of mean |e_f - e_(f-1)| with e = pred - gt, over pixels valid in both (the frame-to-frame change of
    the error, which the scene does not explain)."""
    rmse, d1, flick = [], [], []
    prev_e, prev_m = None, None
    for p, g in zip(preds, gts):
        m = valid_mask(g)
        e = p - g
        rmse.append(float(np.sqrt(np.mean(e[m] ** 2))))
        ratio = np.maximum(p[m] / g[m], g[m] / np.maximum(p[m], 1e-9))
        d1.append(float(np.mean(ratio < 1.25)))
        if prev_e is not None:
            both = m & prev_m
            flick.append(float(np.mean(np.abs(e[both] - prev_e[both]))))
        prev_e, prev_m = e, m
    return {"rmse": float(np.mean(rmse)), "delta1": float(np.mean(d1)), "flicker": float(np.mean(flick))}


def align_sequence(preds: List[np.ndarray], gts: List[np.ndarray], inverse: bool = False) -> List[np.ndarray]:
    """Relative evaluation: one least-squares scale and shift for the whole sequence (what a relative model's
    user fixes once with near/far), so per-frame drift of scale stays visible. inverse: the predictions are
    disparity-like (relative_inverse_depth, e.g. Video Depth Anything): the fit is against 1/ground truth and
    the result is inverted back to depth (disparity <= 1e-6 after the fit counts as 1e6 m)."""
    xs = np.concatenate([p[valid_mask(g)] for p, g in zip(preds, gts)])
    ys = np.concatenate([g[valid_mask(g)] for g in gts])
    if inverse:
        ys = 1.0 / ys
    a = np.vstack([xs, np.ones_like(xs)]).T
    s, b = np.linalg.lstsq(a, ys, rcond=None)[0]
    if inverse:
        return [1.0 / np.maximum(s * p + b, 1e-6) for p in preds]
    return [s * p + b for p in preds]


def model_contract(model: str) -> Dict[str, object]:
    """depthbatch.json of a TorchScript file (read from the zip archive, no torch needed); {} for 'default'
    or a file without one."""
    import json
    import zipfile
    path = B.DEFAULT_MODEL if model == "default" else Path(model)
    try:
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if n.endswith("/extra/depthbatch.json")]
            return json.loads(z.read(names[0])) if names else {}
    except (OSError, zipfile.BadZipFile, ValueError):
        return {}


def row(mode: str, label: str, r: Dict[str, float], width: int) -> str:
    return (f"  {mode:8s} {label + ':':{width}s} RMSE {r['rmse']:.4f} m  delta1 {r['delta1']:.4f}  "
            f"error flicker {r['flicker']:.4f} m")


def ratio(mode: str, what: str, s: Dict[str, float], r: Dict[str, float]) -> str:
    return (f"  {mode:8s} {what}: RMSE {s['rmse'] / r['rmse']:.3f}, delta1 {s['delta1'] - r['delta1']:+.4f}, "
            f"error flicker {s['flicker'] / r['flicker']:.3f} ({100 * (1 - s['flicker'] / r['flicker']):.0f}% less)")


def main() -> int:
    p = argparse.ArgumentParser(prog="bench/temporal")
    p.add_argument("--model", default="default",
                   help="model.path (default: FastDepth, metric). A video model (depthbatch.json input.frames > 1, "
                        "e.g. an exported Video Depth Anything) is rendered as it is (its own windows, no "
                        "stabilize) and compared with FastDepth raw and stabilized in the same run")
    p.add_argument("--sequence", action="append", default=[], metavar="NAME:RGB:GT:FIRST-LAST:GT_SCALE",
                   help="a further sequence: plate pattern, ground-truth pattern (####), frames, metres per GT unit")
    p.add_argument("--radius", type=int, default=4, help="depth.stabilize_radius: R frames on each side")
    p.add_argument("--size", type=int, default=None, help="model.size for the --model runs (default: the job default)")
    a = p.parse_args()
    samples = B.SAMPLES
    seqs: List[Tuple[str, str, str, int, int, float]] = [
        ("livingroom", str(samples / "gtseq/livingroom/livingroom.####.jpg"),
         str(samples / "gtseq/livingroom/livingroom_depth_mm.####.png"), 1001, 1060, 0.001)]
    for s in a.sequence:
        name, rgb, gt, frames, scale = s.split(":")
        first, last = (int(v) for v in frames.split("-"))
        seqs.append((name, rgb, gt, first, last, float(scale)))
    print("depthbatch bench/temporal — accuracy and error flicker against ground truth, one run (not a test)")
    for line in B.machine_lines():
        print(line)
    t0 = time.perf_counter()
    contract = model_contract(a.model)
    video = int(contract.get("input", {}).get("frames", 1) or 1) > 1
    kind = contract.get("output", {}).get("kind", "metric_depth")
    stab = {"depth.stabilize": True, "depth.stabilize_radius": a.radius}
    own = {"model.size": a.size} if a.size else {}
    # label -> (model, job settings, output kind)
    if video:
        name = str(contract.get("name", Path(a.model).stem))
        plan = {name: (a.model, own, kind), "fastdepth raw": ("default", {}, "metric_depth"),
                "fastdepth stabilized": ("default", stab, "metric_depth")}
    else:
        plan = {"raw": (a.model, own, kind), "stabilized": (a.model, {**own, **stab}, kind)}
    width = max(len(k) for k in plan) + 1
    with B.tempdir("depthbatch-temporal-") as tmp:
        work = Path(tmp)
        for name, rgb, gt_pattern, first, last, scale in seqs:
            frames = f"{first}-{last}"
            gts = [load_gt(gt_pattern, f, scale) for f in range(first, last + 1)]
            runs = {}
            for i, (label, (model, settings, _)) in enumerate(plan.items()):
                t = time.perf_counter()
                out = B.render_depth_only(work, f"{name}-{i}", rgb, frames, settings, model)
                runs[label] = ([B.read_depth(out / f"depth.{f:04d}.exr").astype(np.float64)
                                for f in range(first, last + 1)], time.perf_counter() - t)
            print(f"\n{name}: frames {frames}, {len(gts)} frames, ground truth x {scale} m, border {BORDER} px eroded, "
                  f"stabilize_radius {a.radius} (window {2 * a.radius + 1})"
                  + (f"; {a.model}: {kind}, windows of {contract['input']['frames']}" if video else ""))
            all_metric = all(k == "metric_depth" for _, _, k in plan.values())
            for mode in (("metric", "relative") if all_metric else ("relative",)):
                res = {}
                for label, (preds, secs) in runs.items():
                    inverse = plan[label][2] == "relative_inverse_depth"
                    res[label] = metrics(preds if mode == "metric" else align_sequence(preds, gts, inverse), gts)
                for label, r in res.items():
                    print(row(mode, label, r, width))
                labels = list(res)
                if video:
                    print(ratio(mode, f"{labels[0]}/fastdepth stabilized", res[labels[0]], res["fastdepth stabilized"]))
                    print(ratio(mode, f"{labels[0]}/fastdepth raw", res[labels[0]], res["fastdepth raw"]))
                else:
                    print(ratio(mode, "stabilized/raw", res["stabilized"], res["raw"]))
            if not all_metric:
                print("  (relative: relative_inverse_depth is fitted to 1/ground truth, then inverted)")
            print("  render time: " + ", ".join(f"{k} {v[1]:.1f} s" for k, v in runs.items()))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
