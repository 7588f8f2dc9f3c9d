"""Parity of the Depth Anything 3 exporter (tools/depth_anything_3.py) with the official package.

Reference: depth-anything-3 0.1.1 (PyPI; github ByteDance-Seed/Depth-Anything-3). Its metadata pulls
xformers, which pins a different torch, so it is installed WITHOUT dependencies next to addict, omegaconf
and einops (pinned in tools/requirements.txt):
    pip install --no-deps depth-anything-3==0.1.1
These tests skip when it is missing, and say so (the skip reason is printed in the summary: -rs in pytest.ini).

The official DepthAnything3Net is built offline: for vitl from the package's own da3mono-large config
(identical to da3metric-large, asserted below), and with the same classes at ViT-S / ViT-B size
(configs/da3-small.yaml / da3-base.yaml dims with the monocular head) for the seeds x sizes matrix. All
parameters are randomised, the depth and sky logits re-centred (so exp() stays finite and the sky mask
holds both classes), and the hub-layout state dict ("model." + keys, as api.DepthAnything3 saves it)
is exported with the tool and compared per stage: relative error (max abs diff / max abs reference)
<= 1e-4 for backbone tokens, reassemble, layerN_rn, each fusion stage, raw depth, sky, final depth.

The final depth includes the official sky handling. The official code takes the 0.99 quantile over a
random sample of 100000 non-sky pixels when there are more, the exporter over all of them: up to 100000
non-sky pixels the official output is compared as is; above, against the official helper functions
applied with the exact quantile, plus the official output on the non-sky pixels (the sampled sky value
is only printed).
"""
import math
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Module-level skips: the whole file needs the reference package. The reason names what is missing and how to
# install it; tools/tests/pytest.ini (-rs) prints it in every run's summary.
pytest.importorskip("depth_anything_3", reason="every Depth Anything 3 parity test skipped: the reference package "
                    "depth_anything_3 is not installed (pip install --no-deps depth-anything-3==0.1.1)")
pytest.importorskip("addict", reason="every Depth Anything 3 parity test skipped: addict, needed by the reference "
                    "package, is not installed (pip install -r tools/requirements.txt)")

from addict import Dict as ADict  # noqa: E402
from depth_anything_3.cfg import create_object, load_config  # noqa: E402
from depth_anything_3.model.da3 import DepthAnything3Net as OfficialNet  # noqa: E402
from depth_anything_3.model.dinov2.dinov2 import DinoV2 as OfficialDinoV2  # noqa: E402
from depth_anything_3.model.dpt import DPT as OfficialDPT  # noqa: E402
from depth_anything_3.registry import MODEL_REGISTRY  # noqa: E402
from depth_anything_3.utils.alignment import (apply_metric_scaling, compute_sky_mask,  # noqa: E402
                                              set_sky_regions_to_max_depth)
from omegaconf import OmegaConf  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from tools import depth_anything_3 as da3  # noqa: E402
from tools.contract import read_contract  # noqa: E402
from tools.export import main as export_main  # noqa: E402

TOL = 1e-4
SIZES = [(518, 518), (266, 392), (518, 924)]
SEEDS = [0, 1, 2]
STAGES = ["backbone", "reassemble", "rn", "fusion", "depth_raw", "sky", "depth"]
# ImageNet statistics of depth_anything_3/utils/io/input_processor.py (InputProcessor.NORMALIZE).
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
# ViT-S / ViT-B test networks: dims and out_layers of configs/da3-small.yaml and da3-base.yaml, head sizes
# of their DualDPT, but the monocular DPT head and no alternating attention / RoPE / qk-norm / cat_token.
SMALL_NETS = {
    "vits": dict(out_layers=[5, 7, 9, 11], dim_in=384, features=64, out_channels=[48, 96, 192, 384]),
    "vitb": dict(out_layers=[5, 7, 9, 11], dim_in=768, features=128, out_channels=[96, 192, 384, 768]),
}
OFFICIAL_SAMPLE_LIMIT = 100000  # da3.py _process_mono_sky_estimation samples above this many non-sky pixels


def randomize(module, seed):
    """Overwrite every parameter (and floating buffer) with seeded random values of a sane scale."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("weight") and p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p[0].numel()))
            elif name.endswith("gamma"):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:  # cls token, position embeddings
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
        for _, b in module.named_buffers():
            if b.is_floating_point():
                b.copy_(torch.randn(b.shape, generator=g))


def official_head_outputs(ref, x):
    """Official backbone + head on x [1,3,H,W] in [0,1] -> dict with depth, sky [B,S,H,W]."""
    feats, _ = ref.backbone(((x - MEAN) / STD)[:, None], export_feat_layers=[])
    return ref.head(feats, x.shape[2], x.shape[3], patch_start_idx=0)


def center_logits(ref, seed):
    """Re-centre the last convs: depth logits get median 0, sky logits put ~30 % of pixels above 0.3."""
    cap = {}
    h1 = ref.head.scratch.output_conv2.register_forward_hook(lambda m, i, o: cap.__setitem__("d", o))
    h2 = ref.head.scratch.sky_output_conv2.register_forward_hook(lambda m, i, o: cap.__setitem__("s", o))
    x = torch.rand(1, 3, 140, 182, generator=torch.Generator().manual_seed(2000 + seed))
    try:
        with torch.no_grad():
            official_head_outputs(ref, x)
            ref.head.scratch.output_conv2[2].bias -= cap["d"].median()
            ref.head.scratch.sky_output_conv2[2].bias -= torch.quantile(cap["s"].flatten(), 0.7) - 0.3
    finally:
        h1.remove()
        h2.remove()


def make_reference(net, seed):
    if net == "vitl":
        ref = create_object(load_config(MODEL_REGISTRY["da3mono-large"]))
    else:
        c = SMALL_NETS[net]
        ref = OfficialNet(OfficialDinoV2(name=net, out_layers=c["out_layers"], alt_start=-1, qknorm_start=-1,
                                         rope_start=-1, cat_token=False),
                          OfficialDPT(dim_in=c["dim_in"], output_dim=1, features=c["features"],
                                      out_channels=c["out_channels"]))
    ref = ref.eval()
    randomize(ref, seed)
    center_logits(ref, seed)
    return ref


def hub_state_dict(ref):
    """The layout of the hub's model.safetensors (api.DepthAnything3 holds the net as `model`)."""
    return {"model." + k: v.contiguous() for k, v in ref.state_dict().items()}


def reference_stages(ref, x):
    cap = {"reassemble": [None] * 4, "rn": [None] * 4, "fusion": [None] * 4}
    head, s = ref.head, ref.head.scratch

    def put(name, k):
        return lambda m, i, o: cap[name].__setitem__(k, o)

    def head_hook(m, i, o):  # copy: da3.py replaces out.depth after the head returns
        cap["depth_raw"] = [o["depth"].flatten(0, 1).unsqueeze(1)]
        cap["sky"] = [o["sky"].flatten(0, 1).unsqueeze(1)]

    hooks = [ref.backbone.register_forward_hook(
        lambda m, i, o: cap.__setitem__("backbone", [f[0].flatten(0, 1) for f in o[0]])),
        head.register_forward_hook(head_hook)]
    hooks += [head.resize_layers[k].register_forward_hook(put("reassemble", k)) for k in range(4)]
    hooks += [getattr(s, f"layer{k + 1}_rn").register_forward_hook(put("rn", k)) for k in range(4)]
    hooks += [getattr(s, f"refinenet{4 - k}").register_forward_hook(put("fusion", k)) for k in range(4)]
    try:
        torch.manual_seed(0)  # the official sky quantile samples with torch.randint above 100000 pixels
        with torch.no_grad():
            out = ref(((x - MEAN) / STD)[:, None])
    finally:
        for h in hooks:
            h.remove()
    cap["depth"] = [out["depth"].flatten(0, 1).unsqueeze(1)]
    return cap


def rel_err(ours, ref):
    assert ours.shape == ref.shape, f"shape {tuple(ours.shape)} != reference {tuple(ref.shape)}"
    return ((ours - ref).abs().max() / ref.abs().max().clamp_min(1e-12)).item()


_REFS = {}
_MODELS = {}
_RESULTS = {}


def reference(net, seed):
    """Cached randomised official reference (do not modify its parameters)."""
    if (net, seed) not in _REFS:
        _REFS[(net, seed)] = make_reference(net, seed)
    return _REFS[(net, seed)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    yield tmp_path_factory.mktemp("da3")
    for cache in (_REFS, _MODELS, _RESULTS):  # several GB of models: free them for the next test module
        cache.clear()


def exported(workdir, net, seed, which="mono-large", sky="clamp"):
    key = (net, seed, which, sky)
    if key not in _MODELS:
        ckpt = workdir / f"{net}-{seed}.safetensors"
        if not ckpt.exists():
            save_file(hub_state_dict(reference(net, seed)), str(ckpt))
        out = workdir / f"{net}-{seed}-{which}-{sky}.pt"
        contract = da3.export(str(ckpt), str(out), which, sky=sky, net=net)
        _MODELS[key] = (torch.jit.load(str(out), map_location="cpu"), contract, ckpt, out)
    return _MODELS[key]


def exact_official_sky(raw, sky):
    """The official sky handling (da3.py _process_mono_sky_estimation, official helper functions) with
    the quantile taken over all non-sky pixels instead of a random sample of 100000."""
    non_sky = compute_sky_mask(sky, threshold=0.3)
    if non_sky.sum() <= 10 or (~non_sky).sum() <= 10:
        return raw
    return set_sky_regions_to_max_depth(raw, None, non_sky, max_depth=torch.quantile(raw[non_sky], 0.99))[0]


def stage_errors(workdir, net, seed, hw):
    """Relative error per stage. "depth" is compared with the official output where that is deterministic
    (<= 100000 non-sky pixels) and else with the official sky handling using the exact quantile; the official
    random-sample quantile is only reported."""
    key = (net, seed, hw)
    if key not in _RESULTS:
        ref, ours = reference(net, seed), exported(workdir, net, seed)[0]
        x = torch.rand(1, 3, *hw, generator=torch.Generator().manual_seed(1000 + seed))
        want = reference_stages(ref, x)
        with torch.no_grad():
            got = ours.forward_stages(x)
        non_sky = want["sky"][0] < da3.SKY_THRESHOLD
        n_sky = int((~non_sky).sum())
        assert da3.SKY_MIN_PIXELS < n_sky < non_sky.numel() - da3.SKY_MIN_PIXELS, "degenerate sky mask"
        errs = {s: [rel_err(a, b) for a, b in zip(got[s], want[s])] for s in STAGES[:-1]}
        ours_d, sampled = got["depth"][0], want["depth"][0]
        if non_sky.numel() - n_sky <= OFFICIAL_SAMPLE_LIMIT:  # the official code samples above this
            errs["depth"] = [rel_err(ours_d, sampled)]
            note = "official sky quantile exact"
        else:
            errs["depth"] = [rel_err(ours_d, exact_official_sky(want["depth_raw"][0], want["sky"][0])),
                             rel_err(ours_d[non_sky], sampled[non_sky])]
            note = (f"official sampled sky quantile differs by "
                    f"{abs(sampled[~non_sky][0].item() / ours_d[~non_sky][0].item() - 1):.1e}")
        print(f"\nDA3 {net} seed={seed} {hw[0]}x{hw[1]} (sky {n_sky / non_sky.numel():.0%}, {note}): "
              + "  ".join(f"{s}={max(v):.2e}" for s, v in errs.items()))
        _RESULTS[key] = errs
    return _RESULTS[key]


def _case(net, seed, hw, heavy=False):
    return pytest.param(net, seed, hw, marks=[pytest.mark.heavy] if heavy else [],
                        id=f"{net}-seed{seed}-{hw[0]}x{hw[1]}")


CASES = ([_case("vits", s, hw) for s in SEEDS for hw in SIZES]
         + [_case("vits", 0, (224, 420))]
         + [_case("vitb", 0, (266, 392))]
         + [_case("vitl", 0, (266, 392), heavy=True)])


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("net,seed,hw", CASES)
def test_parity_stage(workdir, net, seed, hw, stage):
    errs = stage_errors(workdir, net, seed, hw)[stage]
    assert max(errs) <= TOL, f"{stage} diverges: relative error per tensor {errs}"


# ---------------------------------------------------------------------------------------------------------
def test_mono_and_metric_configs_are_the_same_network():
    mono = OmegaConf.to_container(load_config(MODEL_REGISTRY["da3mono-large"]))
    metric = OmegaConf.to_container(load_config(MODEL_REGISTRY["da3metric-large"]))
    assert mono == metric
    assert mono["net"]["out_layers"] == da3.NETS["vitl"]["out_layers"]
    assert mono["head"]["out_channels"] == da3.NETS["vitl"]["out_channels"]
    assert mono["head"]["features"] == da3.NETS["vitl"]["features"]


@pytest.mark.parametrize("net", ["vits", "vitb"])
def test_state_dict_keys_match_official(net):
    ref = reference(net, 0)
    want = {k: v.shape for k, v in hub_state_dict(ref).items()}
    got = {k: v.shape for k, v in da3.DepthAnything3Mono(net).state_dict().items()}
    assert got == want
    assert "model.head.scratch.refinenet4.resConfUnit1.conv1.weight" not in got
    assert "model.head.scratch.sky_output_conv2.2.weight" in got and "model.backbone.pretrained.mask_token" not in got


def test_clamp_sky_matches_official():
    g = torch.Generator().manual_seed(11)
    depth = torch.rand(1, 1, 60, 80, generator=g) * 10
    cases = {"mixed": torch.rand(1, 1, 60, 80, generator=g), "all sky": torch.ones(1, 1, 60, 80),
             "few sky": torch.zeros(1, 1, 60, 80)}
    cases["few sky"][0, 0, 0, :10] = 1.0  # exactly 10 sky pixels: the official code leaves depth alone
    for name, sky in cases.items():
        official = OfficialNet._process_mono_sky_estimation(None, ADict(depth=depth.clone(), sky=sky))
        ours = da3.clamp_sky(depth, sky)
        assert torch.allclose(ours, official.depth, rtol=1e-6, atol=0), name


def test_sky_none_returns_raw_depth(workdir):
    clamped = exported(workdir, "vits", 0)[0]
    raw = torch.jit.script(da3.build(hub_state_dict(reference("vits", 0)), net="vits", sky="none"))
    x = torch.rand(1, 3, 266, 392, generator=torch.Generator().manual_seed(12))
    with torch.no_grad():
        st = clamped.forward_stages(x)
        assert torch.equal(raw(x), st["depth_raw"][0]) and not torch.equal(raw(x), st["depth"][0])
        assert torch.equal(clamped(x), st["depth"][0])  # forward and forward_stages agree


def test_contract_mono(workdir):
    _, contract, ckpt, out = exported(workdir, "vits", 0)
    c = read_contract(str(out))
    assert c == contract
    assert c["input"] == {"colorspace": "sRGB", "multiple": 14, "size": [504, 504], "fixed_size": False,
                          "mean": None, "std": None}
    assert c["output"] == {"kind": "relative_depth", "units": ""}
    assert c["license"] == "Apache-2.0" and c["variant"] == "mono-large"
    assert len(c["source_sha256"]) == 64


def test_metric_contract_states_the_official_focal_scaling(workdir):
    """metres = raw * focal_px / reference_focal_px must equal the official apply_metric_scaling."""
    ours, contract, _, out = exported(workdir, "vits", 1, which="metric-large")
    c = read_contract(str(out))
    assert c == contract
    assert c["output"]["kind"] == "metric_depth" and c["output"]["units"] == "m"
    assert c["output"]["reference_focal_px"] == 300.0 and c["output"]["depth_scale"] == "focal_px/reference_focal_px"
    assert c["license"] == "Apache-2.0" and c["variant"] == "metric-large"
    x = torch.rand(1, 3, 266, 392, generator=torch.Generator().manual_seed(13))
    with torch.no_grad():
        raw = ours(x)
    fx, fy = 512.0, 498.0
    intrinsics = torch.tensor([[fx, 0, 196], [0, fy, 133], [0, 0, 1]]).view(1, 1, 3, 3)
    official = apply_metric_scaling(raw.view(1, 1, 266, 392), intrinsics)
    ours_m = raw * ((fx + fy) / 2) / c["output"]["reference_focal_px"]
    assert torch.allclose(ours_m.view(1, 1, 266, 392), official, rtol=1e-6)


def test_strict_loading(workdir):
    ref = reference("vits", 0)
    sd = hub_state_dict(ref)
    bad = dict(sd)
    del bad["model.head.scratch.sky_output_conv2.0.weight"]
    bad["model.backbone.pretrained.camera_token"] = torch.zeros(1, 2, 384)
    with pytest.raises(ValueError) as e:
        da3.build(bad, net="vits")
    assert "missing key(s): model.head.scratch.sky_output_conv2.0.weight" in str(e.value)
    assert "unexpected key(s): model.backbone.pretrained.camera_token" in str(e.value)
    with pytest.raises(ValueError, match="shape mismatch"):
        da3.build(sd, net="vitb")
    with pytest.raises(ValueError, match="not a Depth Anything 3 checkpoint"):
        da3.build({"pretrained.cls_token": torch.zeros(1, 1, 384)}, net="vits")
    # DepthAnything3Net.state_dict() (no "model." prefix) is accepted as well
    unprefixed = da3.build(ref.state_dict(), net="vits")
    assert set(unprefixed.state_dict()) == set(sd)


def test_cli(workdir, capsys):
    ours, _, ckpt, _ = exported(workdir, "vits", 0)
    out = workdir / "cli.pt"
    assert export_main(["depth-anything-3", "--model", "mono-large", "--checkpoint", str(ckpt),
                        "--out", str(out), "--net", "vits"]) == 0
    assert '"kind": "relative_depth"' in capsys.readouterr().out
    assert read_contract(str(out))["name"] == "depth-anything-3-mono-large-vits-test"
    x = torch.rand(1, 3, 266, 392, generator=torch.Generator().manual_seed(14))
    with torch.no_grad():
        assert torch.equal(torch.jit.load(str(out))(x), ours(x))


def test_input_must_be_multiple_of_14(workdir):
    ours = exported(workdir, "vits", 0)[0]
    with pytest.raises((RuntimeError, torch.jit.Error), match="multiples of 14"):
        ours(torch.rand(1, 3, 280, 300))


def test_harness_catches_a_swapped_tensor():
    """Negative control: swapping two same-shaped tensors (layer-scale gammas of one block) in the checkpoint
    must show up far above the tolerance, so exact agreement elsewhere is not an artefact of the harness."""
    sd = hub_state_dict(reference("vits", 0))
    a, b = "model.backbone.pretrained.blocks.3.ls1.gamma", "model.backbone.pretrained.blocks.3.ls2.gamma"
    sd[a], sd[b] = sd[b], sd[a]
    broken = torch.jit.script(da3.build(sd, net="vits"))
    x = torch.rand(1, 3, 140, 196, generator=torch.Generator().manual_seed(15))
    want = reference_stages(reference("vits", 0), x)
    with torch.no_grad():
        got = broken.forward_stages(x)
    assert rel_err(got["backbone"][0], want["backbone"][0]) > 100 * TOL
    assert rel_err(got["depth_raw"][0], want["depth_raw"][0]) > 100 * TOL
