"""Parity of the Depth Anything V2 exporter (tools/depth_anything_v2.py) with transformers.

Reference: transformers' DepthAnythingForDepthEstimation (eager attention), built offline from configs
written here for the Small and Base models (the values of the published depth-anything/
Depth-Anything-V2-{Small,Base}-hf config.json files), with EVERY parameter randomised (layer-scale gammas,
LayerNorm weights, tokens and position embeddings included, so that a mix-up cannot hide behind a
default value). Its state dict is renamed onto the official keys by the exporter's own mapping, saved as
an official-layout .pth, exported with the tool (script, save, reload) and compared:

  relative error = max |ours - reference| / max |reference|  <= 1e-4

per stage (backbone tokens of the 4 layers the head takes, reassemble outputs, layerN_rn outputs, each
fusion stage, final depth), for 3 seeds x 518x518, 266x392, 518x924 (Small) and 3 seeds at 266x392 plus
518x518 and 518x924 once (Base, marked heavy). A failing stage test names where a divergence starts.
The reference's last conv is re-centred so that about half of the depth map is above ReLU's zero
(asserted), else the head could hide errors.

Position embeddings: current transformers resizes them to the exact patch grid ("hf" mode); the official
Depth Anything V2 / DINOv2 code uses a scale factor with a +0.1 offset ("official" mode, the exporter's
default). The "official" cases compare against the same transformers model with its
interpolate_pos_encoding replaced by the DINOv2 formula below; both agree at 518x518.
"""
import hashlib
import math
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from safetensors.torch import save_file  # noqa: E402
from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, Dinov2Config  # noqa: E402

from tools import depth_anything_v2 as dav2  # noqa: E402
from tools.contract import read_contract  # noqa: E402
from tools.export import main as export_main  # noqa: E402

TOL = 1e-4
SIZES = [(518, 518), (266, 392), (518, 924)]
SEEDS = [0, 1, 2]
STAGES = ["backbone", "reassemble", "rn", "fusion", "depth"]
# ImageNet statistics of transformers' DPTImageProcessor (image_mean / image_std defaults).
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
# Config values of depth-anything/Depth-Anything-V2-{Small,Base}-hf (transformers'
# convert_depth_anything_to_hf.py for V2): backbone out_indices count the embedding output as stage 0.
HF_CONFIGS = {
    "vits": dict(hidden_size=384, num_attention_heads=6, out_indices=[3, 6, 9, 12],
                 neck_hidden_sizes=[48, 96, 192, 384], fusion_hidden_size=64),
    "vitb": dict(hidden_size=768, num_attention_heads=12, out_indices=[3, 6, 9, 12],
                 neck_hidden_sizes=[96, 192, 384, 768], fusion_hidden_size=128),
}
# Keys in the official checkpoints (len(DepthAnythingV2(...).state_dict()) of the official code).
OFFICIAL_KEY_COUNT = {"vits": 239, "vitb": 239, "vitl": 407}


def randomize(module: torch.nn.Module, seed: int) -> None:
    """Overwrite every parameter (and floating buffer) with seeded random values of a sane scale."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("weight") and p.dim() >= 2:          # Linear / Conv / ConvTranspose
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p[0].numel()))
            elif name.endswith(("lambda1", "gamma")):             # layer scale
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif "norm" in name and name.endswith("weight"):      # LayerNorm scale
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:                                                  # cls / mask token, position embeddings
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
        for _, b in module.named_buffers():
            if b.is_floating_point():
                b.copy_(torch.randn(b.shape, generator=g))


def make_reference(variant: str, seed: int, max_depth=None) -> DepthAnythingForDepthEstimation:
    c = HF_CONFIGS[variant]
    backbone = Dinov2Config(hidden_size=c["hidden_size"], num_hidden_layers=12,
                            num_attention_heads=c["num_attention_heads"], mlp_ratio=4, image_size=518,
                            patch_size=14, layerscale_value=1.0, layer_norm_eps=1e-6, use_mask_token=True,
                            out_indices=c["out_indices"], reshape_hidden_states=False, apply_layernorm=True)
    cfg = DepthAnythingConfig(backbone_config=backbone, patch_size=14, reassemble_hidden_size=c["hidden_size"],
                              reassemble_factors=[4, 2, 1, 0.5], neck_hidden_sizes=c["neck_hidden_sizes"],
                              fusion_hidden_size=c["fusion_hidden_size"], head_hidden_size=32, head_in_index=-1,
                              depth_estimation_type="relative" if max_depth is None else "metric",
                              max_depth=1 if max_depth is None else max_depth)
    cfg._attn_implementation = "eager"
    with torch.device("meta"):  # skip the default init: randomize() overwrites every tensor
        model = DepthAnythingForDepthEstimation(cfg)
    model = model.to_empty(device="cpu").eval()
    randomize(model, seed)
    center_output(model, seed)
    return model


def center_output(ref, seed):
    """Shift the last conv's bias so that its output (before ReLU / sigmoid) has median 0 on a calibration
    image: random weights can otherwise leave the whole depth map at ReLU's zero (or sigmoid's 0/1), which
    would hide any error in the head."""
    cap = []
    hook = ref.head.conv3.register_forward_hook(lambda m, i, o: cap.append(o))
    x = torch.rand(1, 3, 140, 182, generator=torch.Generator().manual_seed(2000 + seed))
    try:
        with torch.no_grad():
            ref(pixel_values=(x - MEAN) / STD)
            ref.head.conv3.bias -= cap[0].median()
    finally:
        hook.remove()


def official_interpolate_pos_encoding(self, embeddings, height, width):
    """DINOv2 (facebookresearch/dinov2 vision_transformer.py, as vendored by Depth-Anything-V2 with
    interpolate_offset=0.1, interpolate_antialias=False): bicubic with scale_factor (h0 + 0.1) / sqrt(N)."""
    pos = self.position_embeddings
    npatch, n = embeddings.shape[1] - 1, pos.shape[1] - 1
    if npatch == n and height == width:
        return pos
    m = int(math.sqrt(n))
    h0, w0 = height // 14 + 0.1, width // 14 + 0.1
    grid = F.interpolate(pos[:, 1:].reshape(1, m, m, -1).permute(0, 3, 1, 2), scale_factor=(h0 / m, w0 / m),
                         mode="bicubic", antialias=False)
    return torch.cat((pos[:, :1], grid.permute(0, 2, 3, 1).reshape(1, -1, pos.shape[-1])), dim=1)


def reference_stages(ref, x, interp="hf"):
    """Run the reference on x [N,3,H,W] in [0,1]; the same stage dict as forward_stages. interp
    "official" swaps in official_interpolate_pos_encoding for this call."""
    cap = {"rn": [None] * 4}
    emb = ref.backbone.embeddings
    if interp == "official":
        emb.interpolate_pos_encoding = types.MethodType(official_interpolate_pos_encoding, emb)
    hooks = [
        ref.backbone.register_forward_hook(
            lambda m, i, o: cap.__setitem__("backbone", [t[:, 1:] for t in o.feature_maps])),
        ref.neck.reassemble_stage.register_forward_hook(lambda m, i, o: cap.__setitem__("reassemble", list(o))),
        ref.neck.fusion_stage.register_forward_hook(lambda m, i, o: cap.__setitem__("fusion", list(o))),
    ]
    for k, conv in enumerate(ref.neck.convs):
        hooks.append(conv.register_forward_hook(lambda m, i, o, k=k: cap["rn"].__setitem__(k, o)))
    try:
        with torch.no_grad():
            cap["depth"] = [ref(pixel_values=(x - MEAN) / STD).predicted_depth.unsqueeze(1)]
    finally:
        for h in hooks:
            h.remove()
        if interp == "official":
            del emb.interpolate_pos_encoding
    return cap


def rel_err(ours, ref):
    assert ours.shape == ref.shape, f"shape {tuple(ours.shape)} != reference {tuple(ref.shape)}"
    return ((ours - ref).abs().max() / ref.abs().max().clamp_min(1e-12)).item()


# ---------------------------------------------------------------------------------------------------------
# Cached references, exports and results (one export per variant/seed/mode, reused at every size)
# ---------------------------------------------------------------------------------------------------------
_REFS = {}
_MODELS = {}
_RESULTS = {}


def reference(variant, seed, max_depth=None):
    """Cached randomised transformers reference (do not modify its parameters)."""
    key = (variant, seed, max_depth)
    if key not in _REFS:
        _REFS[key] = make_reference(variant, seed, max_depth)
    return _REFS[key]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    yield tmp_path_factory.mktemp("dav2")
    for cache in (_REFS, _MODELS, _RESULTS):  # several GB of models: free them for the next test module
        cache.clear()


def exported(workdir, variant, seed, interp, max_depth=None):
    """(loaded exported module, contract, official-layout checkpoint, exported file), cached."""
    key = (variant, seed, interp, max_depth)
    if key not in _MODELS:
        ckpt = workdir / f"official-{variant}-{seed}-{max_depth}.pth"
        if not ckpt.exists():
            torch.save(dav2.hf_to_official(reference(variant, seed, max_depth).state_dict()), ckpt)
        out = workdir / f"{variant}-{seed}-{interp}-{max_depth}.pt"
        contract = dav2.export(str(ckpt), str(out), variant, pos_embed_interp=interp, max_depth=max_depth)
        _MODELS[key] = (torch.jit.load(str(out), map_location="cpu"), contract, ckpt, out)
    return _MODELS[key]


def stage_errors(workdir, variant, seed, interp, hw, max_depth=None):
    key = (variant, seed, interp, hw, max_depth)
    if key not in _RESULTS:
        ours = exported(workdir, variant, seed, interp, max_depth)[0]
        x = torch.rand(1, 3, *hw, generator=torch.Generator().manual_seed(1000 + seed))
        want = reference_stages(reference(variant, seed, max_depth), x, interp)
        d = want["depth"][0]
        if max_depth is None:  # ReLU: about half of the pixels must be above zero
            active = (d > 0).float().mean().item()
            assert 0.05 < active < 0.95, f"degenerate reference output: {active:.3f} of the pixels above 0"
        else:  # sigmoid * max_depth: most pixels must be unsaturated
            active = ((d > 0.02 * max_depth) & (d < 0.98 * max_depth)).float().mean().item()
            assert active > 0.5, f"degenerate reference output: {active:.3f} of the pixels unsaturated"
        with torch.no_grad():
            got = ours.forward_stages(x)
        errs = {s: [rel_err(a, b) for a, b in zip(got[s], want[s])] for s in STAGES}
        assert all(len(got[s]) == len(want[s]) for s in STAGES)
        print(f"\nDA-V2 {variant} seed={seed} pos={interp} {hw[0]}x{hw[1]} max_depth={max_depth}: "
              + "  ".join(f"{s}={max(v):.2e}" for s, v in errs.items()))
        _RESULTS[key] = errs
    return _RESULTS[key]


def _case(variant, seed, interp, hw, heavy=False):
    marks = [pytest.mark.heavy] if heavy else []
    return pytest.param(variant, seed, interp, hw, marks=marks, id=f"{variant}-seed{seed}-{interp}-{hw[0]}x{hw[1]}")


CASES = (
    [_case("vits", s, "hf", hw) for s in SEEDS for hw in SIZES]
    + [_case("vits", 0, "official", hw) for hw in SIZES[1:]]  # at 518x518 both modes are the same code path
    + [_case("vitb", s, "hf", (266, 392)) for s in SEEDS]
    + [_case("vitb", 0, "hf", hw, heavy=True) for hw in [(518, 518), (518, 924)]]
)


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("variant,seed,interp,hw", CASES)
def test_parity_stage(workdir, variant, seed, interp, hw, stage):
    errs = stage_errors(workdir, variant, seed, interp, hw)[stage]
    assert max(errs) <= TOL, f"{stage} diverges: relative error per tensor {errs}"


@pytest.mark.parametrize("stage", STAGES)
def test_parity_metric_head(workdir, stage):
    """Depth-Anything-V2-Metric (sigmoid * max_depth) against transformers' metric configuration."""
    errs = stage_errors(workdir, "vits", 2, "hf", (266, 392), max_depth=20)[stage]
    assert max(errs) <= TOL, f"{stage} diverges: relative error per tensor {errs}"


# ---------------------------------------------------------------------------------------------------------
# Module hierarchy, key mapping, strict loading
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["vits", "vitb", "vitl"])
def test_state_dict_has_official_keys(variant):
    keys = set(dav2.DepthAnythingV2(variant).state_dict())
    assert len(keys) == OFFICIAL_KEY_COUNT[variant]
    last = dav2.VARIANTS[variant]["depth"] - 1
    for k in ["pretrained.cls_token", "pretrained.pos_embed", "pretrained.mask_token",
              "pretrained.patch_embed.proj.weight", f"pretrained.blocks.{last}.attn.qkv.weight",
              f"pretrained.blocks.{last}.attn.proj.bias", "pretrained.blocks.0.ls1.gamma",
              "pretrained.blocks.0.ls2.gamma", "pretrained.blocks.0.mlp.fc2.weight", "pretrained.norm.weight",
              "depth_head.projects.3.weight", "depth_head.resize_layers.0.weight", "depth_head.resize_layers.3.bias",
              "depth_head.scratch.layer4_rn.weight", "depth_head.scratch.refinenet4.resConfUnit1.conv1.weight",
              "depth_head.scratch.refinenet1.out_conv.bias", "depth_head.scratch.output_conv1.weight",
              "depth_head.scratch.output_conv2.0.weight", "depth_head.scratch.output_conv2.2.bias"]:
        assert k in keys, k
    assert not any(k.startswith("depth_head.resize_layers.2.") for k in keys)


def test_hf_mapping_is_complete_and_exact():
    hf = reference("vits", 0).state_dict()
    off = dav2.hf_to_official(hf)
    assert set(off) == set(dav2.DepthAnythingV2("vits").state_dict())
    assert sum(v.numel() for v in off.values()) == sum(v.numel() for v in hf.values())
    assert torch.equal(off["pretrained.blocks.4.attn.qkv.weight"],
                       torch.cat([hf[f"backbone.encoder.layer.4.attention.{p}_proj.weight"] for p in "qkv"]))
    assert torch.equal(off["depth_head.scratch.refinenet4.resConfUnit1.conv2.bias"],
                       hf["neck.fusion_stage.layers.0.residual_layer1.convolution2.bias"])
    assert torch.equal(off["depth_head.scratch.layer3_rn.weight"], hf["neck.convs.2.weight"])
    assert torch.equal(off["pretrained.mask_token"], hf["backbone.embeddings.mask_token"])
    # the published *-hf safetensors use transformers 4 names: they must map onto the same tensors
    old_names = {"attention.q_proj": "attention.attention.query", "attention.k_proj": "attention.attention.key",
                 "attention.v_proj": "attention.attention.value", "attention.o_proj": "attention.output.dense"}
    legacy = {}
    for k, v in hf.items():
        for new, old in old_names.items():
            k = k.replace(new, old)
        legacy[k] = v
    assert legacy.keys() != hf.keys()
    off_legacy = dav2.hf_to_official(legacy)
    assert off_legacy.keys() == off.keys() and all(torch.equal(off[k], off_legacy[k]) for k in off)


def _official_sd(seed=0, variant="vits"):
    return dav2.hf_to_official(reference(variant, seed).state_dict())


def test_strict_load_reports_missing_and_unexpected():
    sd = _official_sd()
    del sd["pretrained.blocks.3.ls2.gamma"]
    sd["depth_head.scratch.stem_transpose.weight"] = torch.zeros(1)
    with pytest.raises(ValueError) as e:
        dav2.build("vits", sd)
    msg = str(e.value)
    assert "1 missing key(s): pretrained.blocks.3.ls2.gamma" in msg
    assert "1 unexpected key(s): depth_head.scratch.stem_transpose.weight" in msg


def test_strict_load_reports_wrong_variant():
    with pytest.raises(ValueError, match="shape mismatch"):
        dav2.build("vitb", _official_sd())


def test_strict_load_hf_layout_incomplete_qkv():
    hf = dict(reference("vits", 0).state_dict())
    del hf["backbone.encoder.layer.2.attention.k_proj.weight"]
    with pytest.raises(ValueError) as e:
        dav2.build("vits", hf)
    assert "pretrained.blocks.2.attn.qkv.weight" in str(e.value) and "q/k/v incomplete" in str(e.value)


def test_not_a_checkpoint():
    with pytest.raises(ValueError, match="not a Depth Anything V2 checkpoint"):
        dav2.build("vits", {"encoder.weight": torch.zeros(1)})


# ---------------------------------------------------------------------------------------------------------
# The exported file: contract, CLI, HF layout, input checks, batching
# ---------------------------------------------------------------------------------------------------------
def test_contract(workdir):
    _, contract, ckpt, out = exported(workdir, "vits", 0, "hf")
    c = read_contract(str(out))
    assert c == contract
    assert c["name"] == "depth-anything-v2-small"
    assert c["input"] == {"colorspace": "sRGB", "multiple": 14, "size": [518, 518], "fixed_size": False,
                          "mean": None, "std": None}
    assert c["output"] == {"kind": "relative_inverse_depth", "units": ""}
    assert c["license"] == "Apache-2.0" and c["variant"] == "vits" and c["checkpoint_layout"] == "official"
    assert c["source_sha256"] == hashlib.sha256(ckpt.read_bytes()).hexdigest()
    assert c["pos_embed_interpolation"] == "hf"


def test_contract_base_and_metric(workdir):
    assert exported(workdir, "vitb", 0, "hf")[1]["license"] == "CC-BY-NC-4.0"
    c = exported(workdir, "vits", 2, "hf", max_depth=20)[1]
    assert c["output"] == {"kind": "metric_depth", "units": "m"} and c["max_depth_m"] == 20.0
    assert c["name"] == "depth-anything-v2-metric-small"


def test_cli_hf_safetensors_matches_official_layout(workdir):
    """The CLI on a Hugging Face layout safetensors gives the same model as the official layout."""
    ours = exported(workdir, "vits", 0, "official")[0]
    st = workdir / "hf-small.safetensors"
    save_file({k: v.contiguous() for k, v in reference("vits", 0).state_dict().items()}, str(st))
    out = workdir / "hf-small.pt"
    assert export_main(["depth-anything-v2", "--variant", "vits", "--checkpoint", str(st), "--out", str(out)]) == 0
    c = read_contract(str(out))
    assert c["checkpoint_layout"] == "hf" and c["pos_embed_interpolation"] == "official"
    x = torch.rand(1, 3, 266, 392, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert (torch.jit.load(str(out))(x) - ours(x)).abs().max().item() == 0.0


def test_cli_rejects_bad_checkpoint(workdir, capsys):
    sd = _official_sd()
    del sd["depth_head.scratch.refinenet2.out_conv.weight"]
    bad = workdir / "bad.pth"
    torch.save(sd, bad)
    assert export_main(["depth-anything-v2", "--variant", "vits", "--checkpoint", str(bad),
                        "--out", str(workdir / "bad.pt")]) == 2
    assert "missing key(s): depth_head.scratch.refinenet2.out_conv.weight" in capsys.readouterr().err
    assert not (workdir / "bad.pt").exists()


def test_harness_catches_a_swapped_tensor():
    """Negative control: swapping two same-shaped tensors (layer-scale gammas of one block) in the checkpoint
    must show up far above the tolerance."""
    sd = _official_sd()
    a, b = "pretrained.blocks.3.ls1.gamma", "pretrained.blocks.3.ls2.gamma"
    sd[a], sd[b] = sd[b], sd[a]
    broken = torch.jit.script(dav2.build("vits", sd)[0])
    x = torch.rand(1, 3, 140, 196, generator=torch.Generator().manual_seed(15))
    want = reference_stages(reference("vits", 0), x)
    with torch.no_grad():
        got = broken.forward_stages(x)
    assert rel_err(got["backbone"][0], want["backbone"][0]) > 100 * TOL
    assert rel_err(got["depth"][0], want["depth"][0]) > 100 * TOL


def test_input_must_be_multiple_of_14(workdir):
    ours = exported(workdir, "vits", 0, "hf")[0]
    with pytest.raises((RuntimeError, torch.jit.Error), match="multiples of 14"):
        ours(torch.rand(1, 3, 100, 140))


def test_batch_equals_single_frames(workdir):
    ours = exported(workdir, "vits", 0, "official")[0]
    x = torch.rand(2, 3, 266, 392, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        both = ours(x)
        single = torch.cat([ours(x[:1]), ours(x[1:])])
        assert torch.equal(ours.forward_stages(x)["depth"][0], both)
    assert both.shape == (2, 1, 266, 392)
    assert (both - single).abs().max().item() <= 1e-5 * single.abs().max().item()


def test_pos_embed_modes_agree_only_at_518(workdir):
    """The two position-embedding resizes are the same at 518x518 and differ slightly elsewhere."""
    model, _ = dav2.build("vits", _official_sd())
    other = dav2.DepthAnythingV2("vits", pos_embed_interp="hf").eval()
    other.load_state_dict(model.state_dict())
    with torch.no_grad():
        for hw, same in [((518, 518), True), ((266, 392), False)]:
            x = torch.rand(1, 3, *hw, generator=torch.Generator().manual_seed(5))
            a, b = model(x), other(x)
            err = rel_err(a, b)
            print(f"\nDA-V2 vits official vs hf position-embedding resize at {hw}: {err:.2e}")
            assert (err == 0.0) == same


# ---------------------------------------------------------------------------------------------------------
# Nuke-style traced test models (tools/nuke_style.py)
# ---------------------------------------------------------------------------------------------------------
def test_nuke_style_luma(workdir):
    from tools.nuke_style import expected_luma
    out = workdir / "nuke-luma.pt"
    r = subprocess.run([sys.executable, "-m", "tools.export", "nuke-style-trace", "--out", str(out),
                        "--size", "224", "308", "--inner", "luma"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert read_contract(str(out)) == {}
    m = torch.jit.load(str(out))
    x = torch.rand(1, 3, 224, 308, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        assert (m(x) - expected_luma(x)).abs().max().item() < 1e-5
        with pytest.raises((RuntimeError, torch.jit.Error)):
            m(torch.rand(1, 3, 252, 336))


@pytest.mark.parametrize("inner", ["tiny", "da-v2-small"])
def test_nuke_style_inner_nets(workdir, inner):
    from tools.nuke_style import make
    out = workdir / f"nuke-{inner}.pt"
    x = make(str(out), (140, 196), inner=inner, seed=1)
    m = torch.jit.load(str(out))
    with torch.no_grad():
        y = m(x)
        assert y.shape == (1, 1, 140, 196) and torch.isfinite(y).all() and y.abs().max() > 0
        with pytest.raises((RuntimeError, torch.jit.Error)):
            m(torch.rand(1, 3, 154, 196))
