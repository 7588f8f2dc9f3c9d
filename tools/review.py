"""The review sheet of a depthbatch job: a contact sheet and per-frame depth statistics, as PNG and HTML.

    python -B tools/review.py MANIFEST.json OUT.png [OUT.html]      (or python -m tools.review ...)

`depthbatch review JOB` (and `pipeline.review`) writes the manifest and runs this file by its path with a
Python that has matplotlib, numpy, OpenEXR and PIL; it imports nothing else of tools/, so an installed prefix
ships this one file (P/share/depthbatch/tools/review.py). The
manifest: {"title", "marker" (the mark its files carry: output_marker::review, src/output/output_roles.h),
"colormap", "frames": [{"frame", "plate", "depth", "status", "reason"}]} (a path that is not
UTF-8 is {"fs_hex": its bytes in hex}); status is
"rendered" (the EXR exists), "failed", "skipped" or "missing", from the job's summaries when given. Everything
is read from the files: depth.Z and the metadata depthbatch wrote (convention, units), so a sheet can be made
after a farm render of many chunks and is the same as one made after a whole render.

OUT.png: up to 12 frames spread over the shot (plate thumbnail above its depth, one colour range for all, frame
numbers), then depth.Z's 2nd/50th/98th percentiles per frame and the frame-to-frame mean absolute difference
(flicker) over time, failed, skipped and missing frames marked. OUT.html beside it: the same, self-contained
(the PNG inlined) with a table per frame. Drawn with matplotlib (Agg).

Errors are one line on stderr, "review: ...": exit 3 when this Python lacks one of the modules (named), 1 for
any other error (its type and message); the traceback too when DEPTHBATCH_REVIEW_TRACEBACK is set
(`depthbatch -v` sets it and shows it as debug output).
"""
from __future__ import annotations  # annotations name np, which may be missing until run() says so

import base64
import html
import importlib
import io
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Dict, List, Optional, Tuple

try:
    import numpy as np
except ImportError:  # said in one line by run() below
    np = None

NEEDS = ("matplotlib", "numpy", "OpenEXR", "PIL")
PIP_NAMES = "matplotlib numpy OpenEXR Pillow"
EXIT_MISSING_MODULES = 3

CONTACT_FRAMES = 12
HAS_DEPTH = ("rendered", "skipped")   # skipped: a run found its output there already


def fs_path(value) -> str:
    """A manifest path: a string, or {"fs_hex": ...} for a path that is not UTF-8 (its bytes, os.fsdecode'd so that
    open() reaches the very file)."""
    return value if isinstance(value, str) else os.fsdecode(bytes.fromhex(value["fs_hex"]))


def printable_header(data: bytes) -> bytes:
    """`data` (a single-part OpenEXR file) with every byte of its string attributes that is not UTF-8 made '?',
    each in place (the offsets stay right): OpenEXR's Python module decodes every string attribute as UTF-8, and
    depthbatch/source of a shot in a Latin-1 folder holds the plate's path byte for byte."""
    out = bytearray(data)
    at = 8                                       # magic number and version
    while at < len(out) and out[at] != 0:
        name_end = out.index(0, at)
        type_end = out.index(0, name_end + 1)
        size = int.from_bytes(out[type_end + 1:type_end + 5], "little")
        value_at = type_end + 5
        if out[name_end + 1:type_end] == b"string":
            text = bytes(out[value_at:value_at + size]).decode("utf-8", "surrogateescape")
            fixed = "".join("?" if "\udc80" <= c <= "\udcff" else c for c in text).encode("utf-8")
            out[value_at:value_at + size] = fixed
        at = value_at + size
    return bytes(out)


def open_exr(path: str):
    """OpenEXR.File of `path`, read through a Python file object (OpenEXR.File takes no str holding surrogates: a
    path that is not UTF-8), its string attributes made UTF-8 when they are not (printable_header)."""
    import OpenEXR
    with open(path, "rb") as stream:
        data = stream.read()
    try:
        return OpenEXR.File(io.BytesIO(data), separate_channels=True)
    except UnicodeDecodeError:
        return OpenEXR.File(io.BytesIO(printable_header(data)), separate_channels=True)


def read_depth(path: str):
    """depth.Z and the header of a depthbatch EXR, or (None, {}) when it cannot be read."""
    try:
        with open_exr(path) as f:
            header = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.header().items()}
            return f.channels()["depth.Z"].pixels.astype(np.float32), header
    except Exception:  # noqa: BLE001 - a damaged or foreign file is shown as missing, with its reason
        return None, {}


def larger_is_nearer_of(header: Dict) -> bool:
    """Whether larger depth.Z values are nearer the camera: the depthbatch/larger_is_nearer key ("1" or "0") that
    depthbatch writes (DepthNormalizer::larger_is_nearer decides it once, for previews and this sheet alike). EXRs
    of versions before the key: derived from the convention as those versions did (inverse; normalized with near_is
    1; raw of a relative inverse depth model)."""
    key = header.get("depthbatch/larger_is_nearer")
    if key is not None:
        return str(key).strip() == "1"
    convention = str(header.get("depthbatch/depth_convention", ""))
    return (convention == "inverse"
            or (convention == "normalized" and str(header.get("depthbatch/near_is", "0")).startswith("1"))
            or (convention == "raw" and header.get("depthbatch/model_output_kind") == "relative_inverse_depth"))


def read_plate(path: str) -> Optional[np.ndarray]:
    """The plate as display RGB in 0-1 for a thumbnail: 8/16-bit images as they are, float EXRs clipped and
    encoded with the sRGB curve (a preview, not a colour-managed view)."""
    p = Path(path)
    try:
        if p.suffix.lower() == ".exr":
            with open_exr(str(p)) as f:
                ch = f.channels()
                rgb = np.stack([ch[c].pixels.astype(np.float32) for c in ("R", "G", "B") if c in ch], -1)
            if rgb.shape[-1] == 1:
                rgb = np.repeat(rgb, 3, -1)
            rgb = np.clip(np.nan_to_num(rgb), 0, 1)
            return np.where(rgb <= 0.0031308, 12.92 * rgb, 1.055 * rgb ** (1 / 2.4) - 0.055)
        from PIL import Image
        img = Image.open(p)
        img.thumbnail((480, 480))
        arr = np.asarray(img.convert("RGB"), np.float32) / 255.0
        return arr
    except Exception:  # noqa: BLE001 - a plate that cannot be shown leaves an empty thumbnail
        return None


def stats(frames: List[Dict]) -> None:
    prev = None
    for f in frames:
        d = f.get("_depth")
        if d is None:
            prev = None
            continue
        v = d[np.isfinite(d)]
        f["p2"], f["p50"], f["p98"] = (float(x) for x in np.percentile(v, [2, 50, 98]))
        if prev is not None and prev.shape == d.shape:
            f["flicker"] = float(np.nanmean(np.abs(d - prev)))
        prev = d


def colour_range(p2: List[float], p98: List[float], convention: str) -> Tuple[float, float]:
    """The depth values at the two ends of the thumbnails' colour map (and of its colour bar): 0 and 1 for a
    normalized job (0-1 by construction), else the medians over the shot of each frame's 2nd and 98th
    percentiles (0 and 1 when nothing was rendered)."""
    if convention == "normalized" or not p2:
        return 0.0, 1.0
    return float(np.median(p2)), float(np.median(p98))


def integer_frame_axis(ax) -> None:
    """Ticks on whole frame numbers only (a short shot otherwise gets 1001.5)."""
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def main(manifest_path: Path, out: Path, out_html: Optional[Path] = None) -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.gridspec import GridSpec

    m = json.loads(manifest_path.read_text(encoding="utf-8"))
    frames = m["frames"]
    for f in frames:
        f["plate"], f["depth"] = fs_path(f["plate"]), fs_path(f["depth"])
    first_header: Dict = {}
    for f in frames:
        d, header = read_depth(f["depth"]) if f["status"] in HAS_DEPTH else (None, {})
        if f["status"] in HAS_DEPTH and d is None:
            f["status"], f["reason"] = "missing", "not a readable depthbatch EXR"
        f["_depth"] = d
        first_header = first_header or header
    units = str(first_header.get("depthbatch/depth_units", ""))
    convention = str(first_header.get("depthbatch/depth_convention", ""))
    stats(frames)
    rendered = [f for f in frames if f["status"] in HAS_DEPTH]
    # One colour range for every thumbnail: the shot's 2nd/98th percentiles; near (small depth, or large
    # inverse / disparity) takes the bright end of the map.
    lo, hi = colour_range([f["p2"] for f in rendered], [f["p98"] for f in rendered], convention)
    larger_is_nearer = larger_is_nearer_of(first_header)
    cmap = matplotlib.colormaps[m.get("colormap", "turbo")]
    if not larger_is_nearer:
        cmap = cmap.reversed()

    picks = rendered if len(rendered) <= CONTACT_FRAMES else [
        rendered[int(round(i))] for i in np.linspace(0, len(rendered) - 1, CONTACT_FRAMES)]
    cols = 6
    rows = max(1, (len(picks) + cols - 1) // cols)
    fig = plt.figure(figsize=(18, 3.2 * rows + 4.2), dpi=100)
    gs = GridSpec(2 * rows + 1, cols, figure=fig, height_ratios=[1] * (2 * rows) + [1.6 * rows / 1.0 if rows else 1])
    fig.suptitle(f"{m['title']} — {len(rendered)} of {len(frames)} frames rendered"
                 f"{' (' + convention + (', ' + units if units else '') + ')' if convention else ''}", fontsize=14)
    image = None
    for i, f in enumerate(picks):
        r, c = divmod(i, cols)
        ax = fig.add_subplot(gs[2 * r, c])
        plate = read_plate(f["plate"])
        if plate is not None:
            ax.imshow(plate)
        ax.set_title(f"frame {f['frame']}", fontsize=11)
        ax.axis("off")
        ax = fig.add_subplot(gs[2 * r + 1, c])
        image = ax.imshow(f["_depth"], cmap=cmap, vmin=lo, vmax=hi, interpolation="antialiased")
        ax.axis("off")
    ax = fig.add_subplot(gs[2 * rows, :])
    x = [f["frame"] for f in rendered]
    if rendered:
        ax.fill_between(x, [f["p2"] for f in rendered], [f["p98"] for f in rendered], color="tab:blue", alpha=0.2,
                        label="2nd-98th percentile")
        ax.plot(x, [f["p50"] for f in rendered], color="tab:blue", label="median")
    ax.set_xlabel("frame")
    integer_frame_axis(ax)
    ax.set_ylabel(f"depth.Z{' (' + units + ')' if units else ''}")
    ax.grid(alpha=0.3)
    ax2 = ax.twinx()
    fl = [(f["frame"], f["flicker"]) for f in rendered if "flicker" in f]
    if fl:
        ax2.plot([a for a, _ in fl], [b for _, b in fl], color="tab:red", label="flicker (mean |frame - previous|)")
    ax2.set_ylabel(f"flicker{' (' + units + ')' if units else ''}", color="tab:red")
    marks = {"failed": ("black", "x"), "skipped": ("tab:green", "|"), "missing": ("tab:orange", "v")}
    for status, (color, marker) in marks.items():
        bad = [f["frame"] for f in frames if f["status"] == status]
        if bad:
            ax.scatter(bad, [ax.get_ylim()[0]] * len(bad), color=color, marker=marker, s=60, zorder=5,
                       label=f"{status} ({len(bad)})")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper left", fontsize=10)
    if image is not None:
        fig.colorbar(image, ax=fig.axes[:2 * len(picks)], fraction=0.015, pad=0.01,
                     label=f"depth.Z{' (' + units + ')' if units else ''}; near at the "
                           f"{'top' if larger_is_nearer else 'bottom'}")
    out.parent.mkdir(parents=True, exist_ok=True)
    # The manifest's marker (output_marker::review): what depthbatch's output guard looks for before it replaces a sheet.
    fig.savefig(out, format="png", metadata={"Software": m["marker"]})
    plt.close(fig)

    def row(f: Dict) -> str:
        pct = f"{f['p2']:.4g} / {f['p50']:.4g} / {f['p98']:.4g}" if "p50" in f else ""
        flick = f"{f['flicker']:.4g}" if "flicker" in f else ""
        return (f"<tr class='{f['status']}'><td>{f['frame']}</td><td>{f['status']}</td><td>{pct}</td>"
                f"<td>{flick}</td><td>{html.escape(f.get('reason', ''))}</td></tr>")
    rows_html = "".join(row(f) for f in frames)
    png64 = base64.b64encode(out.read_bytes()).decode()
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="{html.escape(m['marker'])}">
<title>{html.escape(m['title'])}: {html.escape(m['marker'])}</title>
<style>body{{font-family:sans-serif;margin:1em}} img{{max-width:100%}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}} tr.failed,tr.missing{{background:#fdd}}
tr.skipped{{background:#efe}}</style></head>
<body data-loaded="0" data-errors="0">
<h1>{html.escape(m['title'])}</h1>
<p>{len(rendered)} of {len(frames)} frames rendered{html.escape(' (' + convention + (', ' + units if units else '') + ')') if convention else ''}.</p>
<img id="sheet" alt="contact sheet and depth statistics" src="data:image/png;base64,{png64}">
<h2>Frames</h2>
<table><tr><th>frame</th><th>status</th><th>depth.Z p2 / p50 / p98</th><th>flicker</th><th>reason</th></tr>{rows_html}</table>
<script>
window.addEventListener("error", function () {{ document.body.dataset.errors = +document.body.dataset.errors + 1; }});
window.addEventListener("load", function () {{
  var ok = 0, imgs = document.images;
  for (var i = 0; i < imgs.length; ++i) if (imgs[i].complete && imgs[i].naturalWidth > 0) ++ok;
  document.body.dataset.loaded = ok;
}});
</script>
</body></html>
"""
    out_html = out_html or out.with_suffix(".html")
    out_html.write_text(page, encoding="utf-8")
    print(f"{len(rendered)} of {len(frames)} frames rendered")
    return 0


def missing_modules() -> List[str]:
    """The modules of NEEDS this Python cannot import (a broken install counts as missing)."""
    missing = []
    for name in NEEDS:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - ImportError, or a module that fails while importing
            missing.append(name)
    return missing


def one_line(e: BaseException) -> str:
    """An exception as one line: 'PATH: reason' for a file error, else 'Type: message'."""
    if isinstance(e, OSError) and e.filename and e.strerror:
        text = f"{e.filename}: {e.strerror}"
    else:
        text = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    return " ".join(text.split())


def run(argv: List[str]) -> int:
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    missing = missing_modules()
    if missing:
        print(f"review: cannot import {', '.join(missing)}; set DEPTHBATCH_PYTHON to a Python with "
              f"{', '.join(NEEDS[:-1])} and {NEEDS[-1]} (pip install {PIP_NAMES})", file=sys.stderr)
        return EXIT_MISSING_MODULES
    try:
        return main(Path(argv[1]), Path(argv[2]), Path(argv[3]) if len(argv) == 4 else None)
    except Exception as e:  # noqa: BLE001 - every error is one line for depthbatch to show
        if os.environ.get("DEPTHBATCH_REVIEW_TRACEBACK"):
            traceback.print_exc()
        print(f"review: {one_line(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(run(sys.argv))
