"""Colour maps for depthbatch's depth previews, taken from matplotlib (not hand-tuned).

    python -m tools.colormaps OUT_DIR        (scripts/setup writes models/colormaps/)

Writes OUT_DIR/<name>.txt for turbo, viridis and inferno: 256 lines of "r g b" (sRGB-encoded, 0-1), entry k
being matplotlib's colormaps[name](k / 255). Sources: turbo, Anton Mikhailov, "Turbo, An Improved Rainbow
Colormap for Visualization", Google AI Blog 2019 (Apache-2.0), as matplotlib ships it (_cm_listed._turbo_data);
viridis and inferno, Nathaniel Smith and Stéfan van der Walt, matplotlib 2.0 (CC0).
"""
import sys
from pathlib import Path

NAMES = ("turbo", "viridis", "inferno")


def main(out: Path) -> int:
    import matplotlib
    import numpy as np

    out.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        rgba = matplotlib.colormaps[name](np.linspace(0.0, 1.0, 256))
        lines = [f"# {name}: matplotlib {matplotlib.__version__} colormaps['{name}'](k / 255), k = 0..255, sRGB 0-1"]
        lines += [f"{r:.6f} {g:.6f} {b:.6f}" for r, g, b, _ in rgba]
        (out / f"{name}.txt").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1])))
