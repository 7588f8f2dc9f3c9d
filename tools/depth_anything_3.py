"""Depth Anything 3 monocular models (DA3MONO-LARGE, DA3METRIC-LARGE) as scripted TorchScript modules.

Source of truth: github ByteDance-Seed/Depth-Anything-3 (PyPI depth-anything-3 0.1.1):
  configs/da3mono-large.yaml and configs/da3metric-large.yaml (the same network: DinoV2 vitl, out_layers
  [4, 11, 17, 23], alt/qknorm/rope disabled, cat_token False; DPT head dim_in 1024, features 256,
  out_channels [256, 512, 1024, 1024], output_dim 1), model/da3.py (DepthAnything3Net), model/dpt.py (DPT),
  model/dinov2/ (DinoVisionTransformer), api.py (DepthAnything3: the hub checkpoints are its state dict,
  so every key starts with "model."), utils/io/input_processor.py (ImageNet mean/std, process_res 504).

How it differs from Depth Anything V2 (tools/depth_anything_v2.py supplies the shared pieces):
  * keys: model.backbone.pretrained.* and model.head.* (V2: pretrained.*, depth_head.*)
  * ViT: no mask_token; the final norm is nn.LayerNorm with the default eps 1e-5 (blocks keep 1e-6)
  * head: refinenet4 has no resConfUnit1; output_conv2 = Conv3x3, ReLU, Conv1x1 (no final activation);
    depth = exp(logits); a sky head scratch.sky_output_conv2 (same shape) gives sky = relu(logits)
  * DepthAnything3Net.forward then sets sky pixels (sky >= 0.3) to the 0.99 quantile of the non-sky depth
    (`_process_mono_sky_estimation`, only when both sets have more than 10 pixels). The official code
    takes that quantile over the whole batch and, above 100000 non-sky pixels, over a random sample of
    100000; this module takes it per image over all non-sky pixels (deterministic, and independent of
    how depthbatch batches frames). sky="none" leaves the raw exp(logits) everywhere.
  * outputs: DA3MONO predicts depth (larger = farther, unknown scale): kind relative_depth.
    DA3METRIC predicts depth normalised to a 300 px focal length: metres = output * focal_px / 300
    (README FAQ; utils/alignment.py apply_metric_scaling, scale_factor=300.0, focal = (fx + fy) / 2 in
    pixels of the image the network saw). See METRIC_FOCAL_NOTE for what depthbatch has to do.

Exported module: input [N,3,H,W] float32 sRGB in [0,1], H and W multiples of 14; output [N,1,H,W].
The official API runs the backbone under autocast (bf16/fp16); this module runs in the input's dtype
(float32), which is what the parity tests compare against.
"""
import os
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch import Tensor, nn

from tools.depth_anything_v2 import (IMAGENET_MEAN, IMAGENET_STD, PATCH_SIZE, DinoVisionTransformer, DPTHeadBase,
                                     _check_input, _first, _normalize, on_meta, read_state_dict, sha256_file,
                                     strict_load)

# Per-model facts. Network dims from configs/da3{mono,metric}-large.yaml and vit_large (embed 1024,
# depth 24, heads 16); licences from the README model table (both Apache 2.0); the suggested processing
# size is the API default process_res=504 (longest side, "upper_bound_resize").
MODELS: Dict[str, Dict[str, Any]] = {
    "mono-large": dict(name="depth-anything-3-mono-large", kind="relative_depth", units="",
                       license="Apache-2.0", hub="depth-anything/DA3MONO-LARGE"),
    "metric-large": dict(name="depth-anything-3-metric-large", kind="metric_depth", units="m",
                         license="Apache-2.0", hub="depth-anything/DA3METRIC-LARGE"),
}
NETS: Dict[str, Dict[str, Any]] = {
    # The released monocular models are all vitl. vits/vitb (dims, out_layers and head sizes of
    # configs/da3-small.yaml / da3-base.yaml, with the monocular DPT head) only serve to test the same
    # code quickly; no such checkpoints exist.
    "vitl": dict(embed_dim=1024, depth=24, num_heads=16, out_layers=[4, 11, 17, 23], features=256,
                 out_channels=[256, 512, 1024, 1024]),
    "vitb": dict(embed_dim=768, depth=12, num_heads=12, out_layers=[5, 7, 9, 11], features=128,
                 out_channels=[96, 192, 384, 768]),
    "vits": dict(embed_dim=384, depth=12, num_heads=6, out_layers=[5, 7, 9, 11], features=64,
                 out_channels=[48, 96, 192, 384]),
}
DEFAULT_SIZE = 504
SKY_THRESHOLD = 0.3       # da3.py: compute_sky_mask(sky, threshold=0.3) -> non-sky = sky < 0.3
SKY_QUANTILE = 0.99       # da3.py _process_mono_sky_estimation
SKY_MIN_PIXELS = 10       # ... returns unchanged unless both sets have more than 10 pixels
METRIC_FOCAL_PX = 300.0   # README FAQ / utils/alignment.py apply_metric_scaling(scale_factor=300.0)
METRIC_FOCAL_NOTE = (
    "raw output is depth for a 300 px focal length: metres = raw * focal_px / reference_focal_px, where "
    "focal_px = (fx + fy) / 2 is the focal length in pixels of the image the model was fed (the processing "
    "resolution, before padding): fx = focal_mm / aperture_width_mm * model_input_width, "
    "fy = focal_mm / aperture_height_mm * model_input_height (plate-pixel focal times the resize factor)")


class DinoV2(nn.Module):
    """model/dinov2/dinov2.py DinoV2: holds `pretrained` (the ViT)."""

    def __init__(self, embed_dim: int, depth: int, num_heads: int, out_layers: List[int]):
        super().__init__()
        self.pretrained = DinoVisionTransformer(embed_dim, depth, num_heads, out_layers,
                                                pos_embed_interp="official", final_norm_eps=1e-5,
                                                mask_token=False)

    def forward(self, x: Tensor) -> List[Tensor]:
        return self.pretrained.get_intermediate_layers(x)


class DPT(DPTHeadBase):
    """model/dpt.py DPT with output_dim 1, use_sky_head True, norm_type "idt", pos_embed False, down_ratio 1."""

    def __init__(self, dim_in: int, features: int, out_channels: List[int]):
        super().__init__(dim_in, features, out_channels, refinenet4_residual=False)
        self.scratch.output_conv2 = nn.Sequential(
            nn.Conv2d(features // 2, 32, kernel_size=3, stride=1, padding=1), nn.ReLU(True),
            nn.Conv2d(32, 1, kernel_size=1, stride=1, padding=0))
        self.scratch.sky_output_conv2 = nn.Sequential(
            nn.Conv2d(features // 2, 32, kernel_size=3, stride=1, padding=1), nn.ReLU(True),
            nn.Conv2d(32, 1, kernel_size=1, stride=1, padding=0))

    def activate(self, feat: Tensor) -> Tuple[Tensor, Tensor]:
        """Upsampled features -> (depth = exp(logits), sky = relu(logits))."""
        return torch.exp(self.scratch.output_conv2(feat)), torch.relu(self.scratch.sky_output_conv2(feat))

    def forward(self, tokens: List[Tensor], ph: int, pw: int) -> Tuple[Tensor, Tensor]:
        """-> (depth, sky), each [N, 1, ph*14, pw*14]."""
        path_1 = self.fuse(self.reassemble(tokens, ph, pw))[1][3]
        return self.activate(self.upsample(path_1, ph, pw))


class DepthAnything3Net(nn.Module):
    """model/da3.py DepthAnything3Net without the camera / gaussian branches (None in these configs)."""

    def __init__(self, net: str = "vitl"):
        super().__init__()
        cfg = NETS[net]
        self.backbone = DinoV2(cfg["embed_dim"], cfg["depth"], cfg["num_heads"], cfg["out_layers"])
        self.head = DPT(cfg["embed_dim"], cfg["features"], cfg["out_channels"])
        self.patch_size = PATCH_SIZE

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        ph, pw = x.shape[2] // self.patch_size, x.shape[3] // self.patch_size
        return self.head(self.backbone(x), ph, pw)


def clamp_sky(depth: Tensor, sky: Tensor, threshold: float = SKY_THRESHOLD, q: float = SKY_QUANTILE,
              min_pixels: int = SKY_MIN_PIXELS) -> Tensor:
    """Per image: sky pixels (sky >= threshold) get the q-quantile (linear) of the non-sky depth, when both
    the sky and the non-sky set have more than min_pixels pixels. depth, sky: [N, 1, H, W]."""
    out: List[Tensor] = []
    for i in range(depth.shape[0]):
        d = depth[i]
        non_sky = sky[i] < threshold
        n_non_sky = int(non_sky.sum())
        if n_non_sky > min_pixels and non_sky.numel() - n_non_sky > min_pixels:
            value = torch.quantile(d[non_sky], q)
            d = torch.where(non_sky, d, value)
        out.append(d)
    return torch.stack(out, 0)


class DepthAnything3Mono(nn.Module):
    """The exported module. `model` is api.py's DepthAnything3.model, so the state dict keys are those of
    the hub's model.safetensors. forward(x [N,3,H,W] sRGB in [0,1]) -> [N,1,H,W] depth (see module doc)."""

    def __init__(self, net: str = "vitl", sky: str = "clamp"):
        super().__init__()
        if net not in NETS:
            raise ValueError(f"unknown DA3 backbone {net!r}; one of {sorted(NETS)}")
        if sky not in ("clamp", "none"):
            raise ValueError(f"sky must be 'clamp' or 'none', not {sky!r}")
        self.model = DepthAnything3Net(net)
        self.clamp_sky = sky == "clamp"
        self.patch_size = PATCH_SIZE
        self.mean: List[float] = list(IMAGENET_MEAN)
        self.std: List[float] = list(IMAGENET_STD)

    def forward(self, x: Tensor) -> Tensor:
        _check_input(x, self.patch_size)
        depth, sky = self.model(_normalize(x, self.mean, self.std))
        return clamp_sky(depth, sky) if self.clamp_sky else depth

    @torch.jit.export
    def forward_stages(self, x: Tensor) -> Dict[str, List[Tensor]]:
        """Intermediates of one forward pass, computed with the same methods forward uses: backbone
        (4 x [N, h*w, C] normed tokens, cls removed), reassemble, rn, fusion ([path_4 .. path_1]),
        depth_raw (exp(logits)), sky (relu(logits)), depth (the forward output); all [N, ...]."""
        _check_input(x, self.patch_size)
        ph, pw = x.shape[2] // self.patch_size, x.shape[3] // self.patch_size
        head = self.model.head
        tokens = self.model.backbone(_normalize(x, self.mean, self.std))
        layers = head.reassemble(tokens, ph, pw)
        rn, paths = head.fuse(layers)
        raw, sky = head.activate(head.upsample(paths[3], ph, pw))
        depth = clamp_sky(raw, sky) if self.clamp_sky else raw
        return {"backbone": tokens, "reassemble": layers, "rn": rn, "fusion": paths, "depth_raw": [raw],
                "sky": [sky], "depth": [depth]}


class DepthAnything3MonoSky(DepthAnything3Mono):
    """DepthAnything3Mono that also returns its sky head: forward(x) -> (depth, sky), each [N,1,H,W]; sky is
    relu(logits) as the official head gives it (the official code calls sky >= 0.3 sky). depthbatch writes it
    as the matte channel sky.A when a job asks for output.passes [sky] (contract output.extra_outputs)."""

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        _check_input(x, self.patch_size)
        depth, sky = self.model(_normalize(x, self.mean, self.std))
        return (clamp_sky(depth, sky) if self.clamp_sky else depth), sky


SKY_MATTE = {"name": "sky", "channel": "sky.A",
             "about": "the DA3 sky head, relu(logits); the official code treats sky >= 0.3 as sky"}


def normalize_keys(sd: Dict[str, Tensor], parts: Tuple[str, ...] = ("backbone", "head")) -> Dict[str, Tensor]:
    """Accept the hub layout (model.backbone..., model.head...; `parts` are the network's top-level modules) and
    DepthAnything3Net.state_dict() (backbone..., head...): the latter gets the "model." prefix. Anything else is
    left for strict_load."""
    roots = {k.split(".", 1)[0] for k in sd}
    if roots and roots <= set(parts):
        return {"model." + k: v for k, v in sd.items()}
    if roots != {"model"}:
        expected = " / ".join(f"model.{p}.*" for p in parts[:3])
        raise ValueError(f"not a Depth Anything 3 checkpoint: top-level names {_first(roots)} (expected {expected})")
    return dict(sd)


def build(state_dict: Dict[str, Tensor], *, net: str = "vitl", sky: str = "clamp",
          sky_matte: bool = False) -> DepthAnything3Mono:
    cls = DepthAnything3MonoSky if sky_matte else DepthAnything3Mono
    model = on_meta(lambda: cls(net, sky=sky))
    strict_load(model, normalize_keys(state_dict), what=f"Depth Anything 3 ({net}) checkpoint")
    return model.eval()


def export(checkpoint: str, out: str, which: str, *, sky: str = "clamp", source: Optional[str] = None,
           net: str = "vitl", example_hw: Tuple[int, int] = (140, 196), sky_matte: bool = False) -> Dict[str, Any]:
    """Script a DA3 mono/metric checkpoint into `out` with its depthbatch.json; returns the contract.

    which: "mono-large" or "metric-large". The metric contract carries output.reference_focal_px = 300 and
    output.depth_scale = "focal_px/reference_focal_px" (see METRIC_FOCAL_NOTE). sky_matte: the module also
    returns the sky head (DepthAnything3MonoSky), declared in output.extra_outputs as "sky" -> sky.A.
    """
    from tools.contract import make_contract, save_scripted

    if which not in MODELS:
        raise ValueError(f"unknown DA3 model {which!r}; one of {sorted(MODELS)}")
    info = MODELS[which]
    model = build(read_state_dict(checkpoint), net=net, sky=sky, sky_matte=sky_matte)
    name = info["name"] if net == "vitl" else f"{info['name']}-{net}-test"
    contract = make_contract(
        name, colorspace="sRGB", multiple=PATCH_SIZE, size_hw=(DEFAULT_SIZE, DEFAULT_SIZE), kind=info["kind"],
        units=info["units"], fixed_size=False, mean=None, std=None, extra_outputs=[SKY_MATTE] if sky_matte else None,
        source=source or f"{info['hub']} {os.path.basename(checkpoint)}",
        source_sha256=sha256_file(checkpoint), license=info["license"], variant=which,
        sky=("clamped to the per-image 0.99 quantile of non-sky depth" if sky == "clamp" else "raw"))
    if info["kind"] == "metric_depth":
        contract["output"]["reference_focal_px"] = METRIC_FOCAL_PX
        contract["output"]["depth_scale"] = "focal_px/reference_focal_px"
        contract["output"]["note"] = METRIC_FOCAL_NOTE
    with torch.no_grad():
        scripted = torch.jit.script(model)
    example = torch.rand(1, 3, *example_hw, generator=torch.Generator().manual_seed(0))
    save_scripted(scripted, out, contract, example)
    return contract
