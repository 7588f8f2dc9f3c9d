"""bench/edges' body (bench/edges sets up the venv and binaries, then runs this). See bench/edges."""
import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402

METHODS = ("bilinear", "guided", "edge_hard")
EDGE_JUMP_M = 0.3     # a ground-truth edge: neighbours differing by more than this (m)
BAND_PX = 4           # the band: pixels within this many px of a ground-truth edge
BORDER = 10           # pixels this close to the image border are left out (as bench/temporal)


def edge_band(gt: np.ndarray) -> np.ndarray:
    """Pixels within BAND_PX (square neighbourhood) of a ground-truth depth edge: 4-neighbours differing by more
    than EDGE_JUMP_M, both valid."""
    e = np.zeros(gt.shape, bool)
    dx = np.abs(np.diff(gt, axis=1)) > EDGE_JUMP_M
    dx &= (gt[:, 1:] > 0) & (gt[:, :-1] > 0)
    dy = np.abs(np.diff(gt, axis=0)) > EDGE_JUMP_M
    dy &= (gt[1:, :] > 0) & (gt[:-1, :] > 0)
    e[:, 1:] |= dx
    e[:, :-1] |= dx
    e[1:, :] |= dy
    e[:-1, :] |= dy
    band = np.zeros_like(e)
    for oy in range(-BAND_PX, BAND_PX + 1):
        for ox in range(-BAND_PX, BAND_PX + 1):
            band |= np.roll(np.roll(e, oy, axis=0), ox, axis=1)
    return band


def valid(gt: np.ndarray) -> np.ndarray:
    m = gt > 0
    m[:BORDER, :] = m[-BORDER:, :] = False
    m[:, :BORDER] = m[:, -BORDER:] = False
    return m


def rmse(pred: np.ndarray, gt: np.ndarray, mask: np.ndarray) -> float:
    return float(np.sqrt(np.mean((pred[mask] - gt[mask]) ** 2)))


def evaluate(preds: Dict[str, List[np.ndarray]], gts: List[np.ndarray]) -> Dict[str, Dict[str, float]]:
    """Per method: RMSE over the whole image and in the edge band (pooled over frames), as written and after one
    median scale per frame (pred * median(gt / pred)), which takes the model's overall scale error out."""
    out = {}
    for m, ps in preds.items():
        sq = {"whole": [], "band": [], "whole_s": [], "band_s": []}
        for p, g in zip(ps, gts):
            v = valid(g)
            b = edge_band(g) & v
            s = float(np.median(g[v] / np.maximum(p[v], 1e-6)))
            for key, mask, q in (("whole", v, p), ("band", b, p), ("whole_s", v, p * s), ("band_s", b, p * s)):
                sq[key].append((q[mask] - g[mask]) ** 2)
        out[m] = {k: float(np.sqrt(np.mean(np.concatenate(v)))) for k, v in sq.items()}
        out[m]["band_px"] = int(sum(len(x) for x in sq["band"]))
    return out


def report(name: str, res: Dict[str, Dict[str, float]]) -> None:
    base = res["bilinear"]
    print(f"  {'method':10s} {'edge band RMSE':>15s} {'whole RMSE':>11s} {'band (scaled)':>14s} {'whole (scaled)':>15s}")
    for m in METHODS:
        r = res[m]
        print(f"  {m:10s} {r['band']:13.4f} m {r['whole']:9.4f} m {r['band_s']:12.4f} m {r['whole_s']:13.4f} m")
    for m in METHODS[1:]:
        r = res[m]
        print(f"  {m}/bilinear: edge band {r['band'] / base['band']:.3f} ({100 * (1 - r['band'] / base['band']):+.1f}% less), "
              f"whole {r['whole'] / base['whole']:.3f}; scaled: edge band {r['band_s'] / base['band_s']:.3f}, "
              f"whole {r['whole_s'] / base['whole_s']:.3f}")
    print(f"  edge band: {base['band_px']} px (within {BAND_PX} px of ground-truth jumps > {EDGE_JUMP_M} m)")


def render(work: Path, name: str, pattern: str, frames: str, settings: Dict[str, object], model: str,
           frame_list: List[int]) -> Dict[str, List[np.ndarray]]:
    preds = {}
    for m in METHODS:
        out = B.render_depth_only(work, f"{name}-{m}", pattern, frames, {**settings, "depth.upsample": m}, model)
        preds[m] = [B.read_depth(out / f"depth.{f:04d}.exr").astype(np.float64) for f in frame_list]
    return preds


def picture(work: Path, plate: Path, preds: Dict[str, np.ndarray], crop: Tuple[int, int, int, int], dest: Path) -> None:
    """A crop of the plate and of each method's depth side by side (turbo, one range for all), to dest."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image
    x0, y0, x1, y1 = crop
    rgb = np.asarray(Image.open(plate).convert("RGB"))[y0:y1, x0:x1]
    lo, hi = np.percentile(np.concatenate([p[y0:y1, x0:x1].ravel() for p in preds.values()]), [1, 99])
    fig, axes = plt.subplots(1, 1 + len(preds), figsize=(4 * (1 + len(preds)), 4 * (y1 - y0) / (x1 - x0) + 0.5))
    axes[0].imshow(rgb, interpolation="nearest")
    axes[0].set_title("plate")
    for ax, (m, p) in zip(axes[1:], preds.items()):
        ax.imshow(p[y0:y1, x0:x1], cmap="turbo_r", vmin=lo, vmax=hi, interpolation="nearest")
        ax.set_title(f"depth.upsample: {m}")
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(dest, dpi=100, pil_kwargs={"quality": 90})
    plt.close(fig)


def main() -> int:
    p = argparse.ArgumentParser(prog="bench/edges")
    p.add_argument("--model", default="default", help="model.path (default: FastDepth, metric)")
    p.add_argument("--picture", help="write the side-by-side crop (plate, bilinear, guided, edge_hard) here (.jpg)")
    a = p.parse_args()
    samples = B.SAMPLES
    print("depthbatch bench/edges — depth at object edges per depth.upsample method, one run (not a test)")
    for line in B.machine_lines():
        print(line)
    t0 = time.perf_counter()
    with B.tempdir("depthbatch-edges-") as tmp:
        work = Path(tmp)
        # 1. NYU: the sample is the FastDepth deploy image, 224x224 with depth.npy. To have something to enlarge,
        # the model runs at 96 px (FastDepth's multiple is 32) and depth is enlarged 2.33x to the 224 px plate.
        nyu = work / "nyu"
        nyu.mkdir()
        (nyu / "nyu.1001.png").symlink_to(samples / "nyu" / "rgb.png")
        gt = np.load(samples / "nyu" / "depth.npy").astype(np.float64)
        preds = render(work, "nyu", str(nyu / "nyu.####.png"), "1001", {"model.size": 96}, a.model, [1001])
        print(f"\nnyu/rgb.png (224x224, ground truth depth.npy): FastDepth at 96x96, enlarged 2.33x to 224x224")
        report("nyu", evaluate(preds, [gt]))
        # 2. The living room (640x480, ground truth in mm): FastDepth at its 224 px short side (288x224), enlarged
        # 2.2x to 640x480 — the case the issue names. Every 5th frame of the 60.
        frames = list(range(1001, 1061, 5))
        lr = samples / "gtseq/livingroom"
        gts = [np.asarray(__import__("PIL.Image").Image.open(lr / f"livingroom_depth_mm.{f}.png"), np.float64) * 0.001
               for f in frames]
        preds = render(work, "livingroom", str(lr / "livingroom.####.jpg"), f"1001-1060x5", {}, a.model, frames)
        print(f"\ngtseq/livingroom (640x480, ground truth in mm), frames 1001-1056 every 5th: FastDepth at 288x224, "
              f"enlarged 2.2x")
        report("livingroom", evaluate(preds, gts))
        if a.picture:
            picture(work, lr / "livingroom.1001.jpg", {m: preds[m][0] for m in METHODS}, (300, 150, 560, 350),
                    Path(a.picture))
            print(f"\npicture: {a.picture}")
    # 3. CPU cost per 1920x1080 frame, one thread (bench/upsample_cost: bedroom plate enlarged to 1080p).
    cost = subprocess.run([str(B.BUILD / "bench" / "upsample_cost"), str(samples / "plates/bedroom/bedroom.1001.jpg"),
                           "--plate", "1920x1080", "--iters", "21"], capture_output=True, text=True, check=True).stdout
    print("\nCPU per 1920x1080 frame, one thread (median of 21; guided = the plate's luma at both sizes + the filter):")
    for line in cost.splitlines():
        print(" ", line)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
