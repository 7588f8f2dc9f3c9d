"""The original FastDepth run by onnxruntime: the reference for test_fastdepth.py (converter parity) and for
the C++ integration test Render.DefaultModelMatchesOnnxRuntimeOnTheNyuFrame (tests/integration/render_test.cpp,
run by ctest), which compares the depthbatch binary's depth.Z with it.

    python tools/tests/fastdepth_reference.py IMAGE OUT.f32

Reads IMAGE as 8-bit RGB, runs the original ONNX (.cache/fastdepth_7.onnx, tools.fastdepth.fetch_onnx) on
rgb / 255 as float32 [1,3,H,W] (H and W multiples of 32: no resize, no padding here) and writes the depth in
metres as raw little-endian float32, row-major H x W.
"""
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from PIL import Image

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools import fastdepth  # noqa: E402


def onnx_session(onnx_path: Path) -> ort.InferenceSession:
    """The original ONNX with symbolic N,H,W (its Upsample nodes have scales, so any size works)."""
    m = onnx.load(str(onnx_path))
    for v in (m.graph.input[0], m.graph.output[0]):
        for d, name in zip(v.type.tensor_type.shape.dim, "NCHW"):
            if name != "C":
                d.dim_param = name
    opts = ort.SessionOptions()
    opts.log_severity_level = 3          # quiet about the unused num_batches_tracked initializers
    return ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def depth(session: ort.InferenceSession, rgb: np.ndarray) -> np.ndarray:
    """Depth (m) of rgb [H,W,3] float32 in [0,1]: [H,W] float32."""
    x = np.ascontiguousarray(rgb.transpose(2, 0, 1)[None], dtype=np.float32)
    return session.run(None, {session.get_inputs()[0].name: x})[0][0, 0]


def main(image: Path, out: Path) -> None:
    rgb = np.asarray(Image.open(image).convert("RGB"), np.float32) / 255.0
    h, w = rgb.shape[:2]
    if h % 32 or w % 32:
        raise SystemExit(f"{image}: {w}x{h} is not a multiple of 32 on both sides")
    d = depth(onnx_session(fastdepth.fetch_onnx(REPO / ".cache")), rgb)
    assert d.shape == (h, w), d.shape
    d.astype("<f4").tofile(out)
    print(f"{out}: {w}x{h} depth {d.min():.3f}..{d.max():.3f} m")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
