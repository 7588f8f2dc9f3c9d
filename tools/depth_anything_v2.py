"""Depth Anything V2 as a scripted TorchScript module for depthbatch.

Exported module (see tools/contract.py and DESIGN.md "Model contract"):
  input   [N, 3, H, W] float32 RGB in [0, 1], sRGB-encoded; H and W multiples of 14 (the ViT patch)
  output  [N, 1, H, W] float32 relative inverse depth (disparity-like: larger = nearer), >= 0;
          with --metric-max-depth: metric depth in metres in (0, max_depth)
The ImageNet normalisation (mean 0.485 0.456 0.406, std 0.229 0.224 0.225: the values of the official
`DepthAnythingV2.image2tensor` and of the Hugging Face image processor) happens inside the module.

The module tree reproduces the official implementation (github DepthAnything/Depth-Anything-V2,
depth_anything_v2/dpt.py, dinov2.py, dinov2_layers/, util/blocks.py) so that its `state_dict()` has exactly
the keys of the official checkpoints (`pretrained.blocks.N.attn.qkv.weight`, `pretrained.blocks.N.ls1.gamma`,
`depth_head.scratch.refinenetN.resConfUnit1.conv1.weight`, ...). Checkpoints in the Hugging Face layout
(`depth-anything/Depth-Anything-V2-*-hf`, transformers' `DepthAnythingForDepthEstimation`) are renamed onto
these keys by `hf_to_official`. Loading is strict: any missing, unexpected or mis-shaped key is an error.

TorchScript notes: attention is `F.scaled_dot_product_attention` (no xformers); every resize is
tools/ops.py `resize` (the one upsample operator F.interpolate calls, bit-identical, so the saved file loads in
LibTorch 2.4: docs/models.md "Which LibTorch loads a model") with explicit int sizes, except the position-embedding resize,
which keeps the official float scale factors (see `DinoVisionTransformer.interpolate_pos_encoding`); ModuleLists
are only iterated.
"""
import hashlib
import math
import os
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tools.ops import resize

PATCH_SIZE = 14
# ImageNet statistics, as used by the official image2tensor / NormalizeImage and by DA3's InputProcessor.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# Official training/inference size: run.py --input-size 518 (= 37 patches), the size of pos_embed.
DEFAULT_SIZE = 518

# Per-variant configuration, from the official code:
#   ViT dims: dinov2.py vit_small/vit_base/vit_large (embed_dim, depth, num_heads; mlp_ratio 4)
#   intermediate layers: dpt.py DepthAnythingV2.intermediate_layer_idx
#   head: run.py model_configs (features, out_channels)
#   licence: README "LICENSE" (Small Apache-2.0; Base/Large CC-BY-NC-4.0)
# vitg (Giant, SwiGLU FFN) is not published and not supported here.
VARIANTS: Dict[str, Dict[str, Any]] = {
    "vits": dict(embed_dim=384, depth=12, num_heads=6, layers=[2, 5, 8, 11], features=64,
                 out_channels=[48, 96, 192, 384], license="Apache-2.0", label="small"),
    "vitb": dict(embed_dim=768, depth=12, num_heads=12, layers=[2, 5, 8, 11], features=128,
                 out_channels=[96, 192, 384, 768], license="CC-BY-NC-4.0", label="base"),
    "vitl": dict(embed_dim=1024, depth=24, num_heads=16, layers=[4, 11, 17, 23], features=256,
                 out_channels=[256, 512, 1024, 1024], license="CC-BY-NC-4.0", label="large"),
}
POS_EMBED_INTERP = ("official", "hf")


# ---------------------------------------------------------------------------------------------------
# DINOv2 ViT (dinov2.py + dinov2_layers/), inference only
# ---------------------------------------------------------------------------------------------------
class PatchEmbed(nn.Module):
    """[N,3,H,W] -> [N, (H/14)*(W/14), C] patch tokens (row-major). Key: patch_embed.proj."""

    def __init__(self, embed_dim: int, patch_size: int = PATCH_SIZE, in_chans: int = 3):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x: Tensor) -> Tensor:
        return self.proj(x).flatten(2).transpose(1, 2)


class Attention(nn.Module):
    """Multi-head self-attention with a fused qkv projection; [N, T, C] -> [N, T, C].

    The official MemEffAttention (xformers) and its plain fallback both compute
    softmax(q k^T / sqrt(head_dim)) v; scaled_dot_product_attention computes the same.
    """

    def __init__(self, dim: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3, bias=True)
        self.proj = nn.Linear(dim, dim, bias=True)

    def forward(self, x: Tensor) -> Tensor:
        b, t, c = x.shape[0], x.shape[1], x.shape[2]
        qkv = self.qkv(x).reshape(b, t, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
        return self.proj(out.transpose(1, 2).reshape(b, t, c))


class LayerScale(nn.Module):
    """x * gamma (per channel). Key: lsN.gamma."""

    def __init__(self, dim: int, init_values: float = 1.0):
        super().__init__()
        self.gamma = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        return x * self.gamma


class Mlp(nn.Module):
    """fc1 -> GELU (erf) -> fc2, hidden = 4 * dim."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """Pre-norm transformer block with layer scale: x + ls1(attn(norm1(x))), then x + ls2(mlp(norm2(x)))."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, eps: float = 1e-6):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.attn = Attention(dim, num_heads)
        self.ls1 = LayerScale(dim)
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.ls2 = LayerScale(dim)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x + self.ls2(self.mlp(self.norm2(x)))


class DinoVisionTransformer(nn.Module):
    """DINOv2 ViT/14 returning the final-normed tokens of the blocks in `out_indices`.

    Official constants (dinov2.py `DINOv2()`): img_size 518 (pos_embed holds 1 + 37*37 entries),
    patch 14, layer-scale init 1.0, LayerNorm eps 1e-6, no register tokens, interpolate_offset 0.1,
    no antialias. DA3 reuses this class with a final LayerNorm eps of 1e-5 and no mask token.

    pos_embed_interp selects how pos_embed is resized to a (H/14, W/14) grid other than 37x37:
      "official"  bicubic with scale_factor ((H/14 + 0.1)/37, (W/14 + 0.1)/37), as the official
                  DINOv2/Depth-Anything code and transformers < 4.4x did (the output grid has the exact
                  size, but the sampling positions follow the offset scale factor)
      "hf"        bicubic to size (H/14, W/14), as current transformers' Dinov2Embeddings does
    Both return pos_embed unchanged for a square input with 37x37 patches (518x518).
    """

    def __init__(self, embed_dim: int, depth: int, num_heads: int, out_indices: List[int],
                 pos_embed_interp: str = "official", final_norm_eps: float = 1e-6,
                 mask_token: bool = True, img_size: int = DEFAULT_SIZE, patch_size: int = PATCH_SIZE):
        super().__init__()
        if pos_embed_interp not in POS_EMBED_INTERP:
            raise ValueError(f"pos_embed_interp must be one of {POS_EMBED_INTERP}, not {pos_embed_interp!r}")
        grid = img_size // patch_size
        self.patch_size = patch_size
        self.pos_embed_interp = pos_embed_interp
        self.interpolate_offset = 0.1
        self.out_indices: List[int] = [int(i) for i in out_indices]
        self.patch_embed = PatchEmbed(embed_dim, patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, grid * grid + 1, embed_dim))
        if mask_token:  # a training-time parameter, unused at inference, present in the checkpoints
            self.mask_token = nn.Parameter(torch.zeros(1, embed_dim))
        self.blocks = nn.ModuleList([Block(embed_dim, num_heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=final_norm_eps)

    def interpolate_pos_encoding(self, npatch: int, height: int, width: int) -> Tensor:
        """pos_embed for a (height/14) x (width/14) patch grid: [1, 1 + npatch, C]."""
        n = self.pos_embed.shape[1] - 1
        if npatch == n and height == width:
            return self.pos_embed
        pos = self.pos_embed.float()
        dim = pos.shape[2]
        m = int(math.sqrt(float(n)))
        h0 = height // self.patch_size
        w0 = width // self.patch_size
        grid = pos[:, 1:].reshape(1, m, m, dim).permute(0, 3, 1, 2)
        if self.pos_embed_interp == "official":
            scale = [(float(h0) + self.interpolate_offset) / float(m),
                     (float(w0) + self.interpolate_offset) / float(m)]
            grid = resize(grid, scale=scale, mode="bicubic", align_corners=False)
        else:
            grid = resize(grid, size=[h0, w0], mode="bicubic", align_corners=False)
        if grid.shape[2] != h0 or grid.shape[3] != w0:
            raise RuntimeError("position embedding interpolation produced the wrong grid size")
        grid = grid.permute(0, 2, 3, 1).reshape(1, h0 * w0, dim)
        return torch.cat((pos[:, 0:1], grid), dim=1).to(self.pos_embed.dtype)

    def get_intermediate_layers(self, x: Tensor) -> List[Tensor]:
        """x: [N,3,H,W] normalised image -> one [N, (H/14)*(W/14), C] tensor per out index (normed, no cls)."""
        height, width = x.shape[2], x.shape[3]
        t = self.patch_embed(x)
        t = torch.cat((self.cls_token.expand(t.shape[0], -1, -1), t), dim=1)
        t = t + self.interpolate_pos_encoding(t.shape[1] - 1, height, width)
        outs: List[Tensor] = []
        for i, blk in enumerate(self.blocks):
            t = blk(t)
            if i in self.out_indices:
                outs.append(self.norm(t)[:, 1:])
        return outs


# ---------------------------------------------------------------------------------------------------
# DPT head (util/blocks.py + dpt.py DPTHead)
# ---------------------------------------------------------------------------------------------------
class ResidualConvUnit(nn.Module):
    """x + conv2(relu(conv1(relu(x)))), 3x3 convs, no batch norm (use_bn=False in every released model)."""

    def __init__(self, features: int):
        super().__init__()
        self.conv1 = nn.Conv2d(features, features, kernel_size=3, stride=1, padding=1, bias=True)
        self.conv2 = nn.Conv2d(features, features, kernel_size=3, stride=1, padding=1, bias=True)
        self.activation = nn.ReLU(False)

    def forward(self, x: Tensor) -> Tensor:
        out = self.conv2(self.activation(self.conv1(self.activation(x))))
        return out + x


class FeatureFusionBlock(nn.Module):
    """(x [+ resConfUnit1(res)]) -> resConfUnit2 -> bilinear (align_corners) resize -> 1x1 out_conv.

    size: output [h, w]; None means twice the input size (the official scale_factor=2, which with
    align_corners=True is exactly a resize to 2h x 2w). has_residual=False builds the DA3 variant
    without resConfUnit1 (its refinenet4).
    """

    def __init__(self, features: int, has_residual: bool = True):
        super().__init__()
        self.out_conv = nn.Conv2d(features, features, kernel_size=1, stride=1, padding=0, bias=True)
        if has_residual:
            self.resConfUnit1 = ResidualConvUnit(features)
        self.resConfUnit2 = ResidualConvUnit(features)

    def forward(self, x: Tensor, res: Optional[Tensor] = None, size: Optional[List[int]] = None) -> Tensor:
        if res is not None:
            x = x + self.resConfUnit1(res)
        x = self.resConfUnit2(x)
        if size is None:
            out_size = [int(x.shape[2]) * 2, int(x.shape[3]) * 2]
        else:
            out_size = [int(size[0]), int(size[1])]
        x = resize(x, size=out_size, mode="bilinear", align_corners=True)
        return self.out_conv(x)


class FeatureFusionBlockNoResidual(nn.Module):
    """DA3's refinenet4: FeatureFusionBlock without resConfUnit1 (its checkpoints have no such keys)."""

    def __init__(self, features: int):
        super().__init__()
        self.out_conv = nn.Conv2d(features, features, kernel_size=1, stride=1, padding=0, bias=True)
        self.resConfUnit2 = ResidualConvUnit(features)

    def forward(self, x: Tensor, res: Optional[Tensor] = None, size: Optional[List[int]] = None) -> Tensor:
        x = self.resConfUnit2(x)
        if size is None:
            out_size = [int(x.shape[2]) * 2, int(x.shape[3]) * 2]
        else:
            out_size = [int(size[0]), int(size[1])]
        x = resize(x, size=out_size, mode="bilinear", align_corners=True)
        return self.out_conv(x)


class Scratch(nn.Module):
    """Container with the official attribute names (layerN_rn, refinenetN, output_conv1/2, ...)."""

    def forward(self, x: Tensor) -> Tensor:  # never called; TorchScript wants a forward
        return x


class DPTHeadBase(nn.Module):
    """Reassemble (projects + resize_layers), scratch.layerN_rn and the 4->1 fusion chain.

    Shapes, for an (h, w) = (H/14, W/14) patch grid and tokens [N, h*w, C]:
      reassemble  out_channels[i] maps at 4x, 2x, 1x, 1/2x of (h, w) (1/2x: stride-2 3x3 conv, ceil)
      rn          `features` channels each, same sizes (scratch.layer1_rn..layer4_rn, 3x3, no bias)
      fusion      path_4 (size of rn3), path_3 (rn2), path_2 (rn1), path_1 (2x rn1 = 8x (h, w))
    Subclasses add scratch.output_conv1/output_conv2 and the final activation.
    """

    def __init__(self, in_channels: int, features: int, out_channels: List[int], refinenet4_residual: bool):
        super().__init__()
        self.projects = nn.ModuleList(
            [nn.Conv2d(in_channels, oc, kernel_size=1, stride=1, padding=0) for oc in out_channels])
        self.resize_layers = nn.ModuleList([
            nn.ConvTranspose2d(out_channels[0], out_channels[0], kernel_size=4, stride=4, padding=0),
            nn.ConvTranspose2d(out_channels[1], out_channels[1], kernel_size=2, stride=2, padding=0),
            nn.Identity(),
            nn.Conv2d(out_channels[3], out_channels[3], kernel_size=3, stride=2, padding=1),
        ])
        s = Scratch()
        s.layer1_rn = nn.Conv2d(out_channels[0], features, kernel_size=3, stride=1, padding=1, bias=False)
        s.layer2_rn = nn.Conv2d(out_channels[1], features, kernel_size=3, stride=1, padding=1, bias=False)
        s.layer3_rn = nn.Conv2d(out_channels[2], features, kernel_size=3, stride=1, padding=1, bias=False)
        s.layer4_rn = nn.Conv2d(out_channels[3], features, kernel_size=3, stride=1, padding=1, bias=False)
        s.refinenet1 = FeatureFusionBlock(features)
        s.refinenet2 = FeatureFusionBlock(features)
        s.refinenet3 = FeatureFusionBlock(features)
        s.refinenet4 = FeatureFusionBlock(features) if refinenet4_residual else FeatureFusionBlockNoResidual(features)
        s.output_conv1 = nn.Conv2d(features, features // 2, kernel_size=3, stride=1, padding=1)
        self.scratch = s
        self.patch_size = PATCH_SIZE

    def reassemble(self, tokens: List[Tensor], ph: int, pw: int) -> List[Tensor]:
        out: List[Tensor] = []
        for i, (project, resize) in enumerate(zip(self.projects, self.resize_layers)):
            x = tokens[i]
            x = x.permute(0, 2, 1).reshape(x.shape[0], x.shape[2], ph, pw)
            out.append(resize(project(x)))
        return out

    def temporal(self, x: Tensor, stage: int, frames: int) -> Tensor:
        """Hook of a temporal head (tools/video_depth_anything.py DPTHeadTemporal overrides it): mixes
        x [N*frames, C, h, w] (N clips of `frames` consecutive frames) across time at `stage` 0 (the
        third reassembled map), 1 (the fourth), 2 (path_4) or 3 (path_3), where Video Depth Anything's
        dpt_temporal.py runs its motion modules. A single-frame head returns x unchanged."""
        return x

    def fuse_deep(self, layers: List[Tensor], frames: int = 1) -> Tuple[List[Tensor], Tensor, Tensor]:
        """-> ([layer1_rn..layer4_rn], path_4, path_3): the part of `fuse` that may mix frames."""
        s = self.scratch
        layer_3 = self.temporal(layers[2], 0, frames)
        layer_4 = self.temporal(layers[3], 1, frames)
        rn = [s.layer1_rn(layers[0]), s.layer2_rn(layers[1]), s.layer3_rn(layer_3), s.layer4_rn(layer_4)]
        path_4 = self.temporal(s.refinenet4(rn[3], None, [int(rn[2].shape[2]), int(rn[2].shape[3])]), 2, frames)
        path_3 = self.temporal(s.refinenet3(path_4, rn[2], [int(rn[1].shape[2]), int(rn[1].shape[3])]), 3, frames)
        return rn, path_4, path_3

    def fuse_shallow(self, path_3: Tensor, rn2: Tensor, rn1: Tensor) -> Tuple[Tensor, Tensor]:
        """-> (path_2, path_1): refinenet2 and refinenet1, per image (any batch split gives the same)."""
        s = self.scratch
        path_2 = s.refinenet2(path_3, rn2, [int(rn1.shape[2]), int(rn1.shape[3])])
        return path_2, s.refinenet1(path_2, rn1, None)

    def fuse(self, layers: List[Tensor], frames: int = 1) -> Tuple[List[Tensor], List[Tensor]]:
        """-> ([layer1_rn..layer4_rn], [path_4, path_3, path_2, path_1]); `frames`: see `temporal`."""
        rn, path_4, path_3 = self.fuse_deep(layers, frames)
        path_2, path_1 = self.fuse_shallow(path_3, rn[1], rn[0])
        return rn, [path_4, path_3, path_2, path_1]

    def upsample(self, path_1: Tensor, ph: int, pw: int) -> Tensor:
        """output_conv1, then bilinear (align_corners) to the input size (ph*14, pw*14)."""
        out = self.scratch.output_conv1(path_1)
        size = [ph * self.patch_size, pw * self.patch_size]
        return resize(out, size=size, mode="bilinear", align_corners=True)


class DPTHead(DPTHeadBase):
    """Depth Anything V2 DPTHead (use_bn=False, use_clstoken=False in every released model).

    scratch.output_conv2 = Conv3x3(features/2 -> 32), ReLU, Conv1x1(32 -> 1), ReLU, Identity (relative) or
    Conv3x3, ReLU, Conv1x1, Sigmoid (metric_depth/depth_anything_v2/dpt.py): the same keys (.0 and .2).
    """

    def __init__(self, in_channels: int, features: int, out_channels: List[int], metric: bool = False):
        super().__init__(in_channels, features, out_channels, refinenet4_residual=True)
        last = nn.Sigmoid() if metric else nn.ReLU(True)
        tail = [last] if metric else [last, nn.Identity()]
        self.scratch.output_conv2 = nn.Sequential(
            nn.Conv2d(features // 2, 32, kernel_size=3, stride=1, padding=1), nn.ReLU(True),
            nn.Conv2d(32, 1, kernel_size=1, stride=1, padding=0), *tail)

    def forward(self, tokens: List[Tensor], ph: int, pw: int, frames: int = 1) -> Tensor:
        path_1 = self.fuse(self.reassemble(tokens, ph, pw), frames)[1][3]
        return self.scratch.output_conv2(self.upsample(path_1, ph, pw))


def _normalize(x: Tensor, mean: List[float], std: List[float]) -> Tensor:
    m = torch.tensor(mean, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    s = torch.tensor(std, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    return (x - m) / s


def _check_input(x: Tensor, multiple: int) -> None:
    if x.dim() != 4 or x.shape[1] != 3:
        raise RuntimeError("expected input [N, 3, H, W], got " + str(x.shape))
    if x.shape[2] % multiple != 0 or x.shape[3] % multiple != 0 or x.shape[2] == 0 or x.shape[3] == 0:
        raise RuntimeError("input height and width must be positive multiples of " + str(multiple)
                           + ", got " + str(x.shape[2]) + "x" + str(x.shape[3]))


class DepthAnythingV2(nn.Module):
    """Depth Anything V2 (official hierarchy: `pretrained`, `depth_head`) with depthbatch's I/O.

    forward(x [N,3,H,W] RGB in [0,1]) -> [N,1,H,W]: relative inverse depth (ReLU, as the official forward)
    or, with max_depth set, metric depth in metres (sigmoid * max_depth, as metric_depth/dpt.py).
    forward_stages(x) -> the intermediate tensors, for parity tests (see its docstring).
    """

    def __init__(self, variant: str = "vits", pos_embed_interp: str = "official",
                 max_depth: Optional[float] = None):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown Depth Anything V2 variant {variant!r}; one of {sorted(VARIANTS)}")
        cfg = VARIANTS[variant]
        self.variant = variant
        self.metric = max_depth is not None
        self.max_depth = float(max_depth) if max_depth is not None else 1.0
        self.patch_size = PATCH_SIZE
        self.mean: List[float] = list(IMAGENET_MEAN)
        self.std: List[float] = list(IMAGENET_STD)
        self.pretrained = DinoVisionTransformer(cfg["embed_dim"], cfg["depth"], cfg["num_heads"], cfg["layers"],
                                                pos_embed_interp=pos_embed_interp)
        self.depth_head = DPTHead(cfg["embed_dim"], cfg["features"], cfg["out_channels"], metric=self.metric)

    def _activate(self, out: Tensor) -> Tensor:
        if self.metric:
            return out * self.max_depth
        return F.relu(out)

    def forward(self, x: Tensor) -> Tensor:
        _check_input(x, self.patch_size)
        ph, pw = x.shape[2] // self.patch_size, x.shape[3] // self.patch_size
        tokens = self.pretrained.get_intermediate_layers(_normalize(x, self.mean, self.std))
        return self._activate(self.depth_head(tokens, ph, pw))

    @torch.jit.export
    def forward_stages(self, x: Tensor) -> Dict[str, List[Tensor]]:
        """Intermediates of one forward pass, computed with the same methods forward uses (it keeps them
        all, so it needs more memory):
          backbone    4 x [N, h*w, C]   final-normed tokens of the 4 blocks the head takes (cls removed)
          reassemble  4 x [N, out_channels[i], ...]  after projects + resize_layers
          rn          4 x [N, features, ...]          after scratch.layerN_rn
          fusion      [path_4, path_3, path_2, path_1] refinenet4 .. refinenet1 outputs
          depth       [ [N, 1, H, W] ]                the forward output
        """
        _check_input(x, self.patch_size)
        ph, pw = x.shape[2] // self.patch_size, x.shape[3] // self.patch_size
        head = self.depth_head
        tokens = self.pretrained.get_intermediate_layers(_normalize(x, self.mean, self.std))
        layers = head.reassemble(tokens, ph, pw)
        rn, paths = head.fuse(layers)
        depth = self._activate(head.scratch.output_conv2(head.upsample(paths[3], ph, pw)))
        return {"backbone": tokens, "reassemble": layers, "rn": rn, "fusion": paths, "depth": [depth]}


# ---------------------------------------------------------------------------------------------------
# Checkpoints: reading, Hugging Face key mapping, strict loading
# ---------------------------------------------------------------------------------------------------
def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_state_dict(path: str) -> Dict[str, Tensor]:
    """Tensors of a .safetensors file or a torch-saved state dict (.pth/.pt/.bin, loaded weights_only).

    A dict holding the state dict under a single "state_dict" or "model" entry is unwrapped.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    if path.endswith(".safetensors"):
        from safetensors.torch import load_file
        sd = load_file(path, device="cpu")
    else:
        try:
            sd = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # truncated / not a torch file: one line naming the file
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise ValueError(f"{path}: not a readable checkpoint ({type(e).__name__}: {first})") from None
    if isinstance(sd, dict) and not any(isinstance(v, Tensor) for v in sd.values()):
        inner = [k for k in ("state_dict", "model") if isinstance(sd.get(k), dict)]
        if len(inner) == 1:
            sd = sd[inner[0]]
    if not isinstance(sd, dict) or not all(isinstance(v, Tensor) for v in sd.values()):
        raise ValueError(f"{path}: not a state dict of tensors")
    return dict(sd)


def _first(keys: Iterable[str], n: int = 10) -> str:
    keys = sorted(keys)
    more = f" ... (+{len(keys) - n} more)" if len(keys) > n else ""
    return ", ".join(keys[:n]) + more


def strict_load(module: nn.Module, state_dict: Dict[str, Tensor], what: str = "checkpoint") -> None:
    """Load `state_dict` into `module`; raise ValueError naming the first missing / unexpected /
    mis-shaped keys. Never leaves a parameter at its random initial value. A module built on the meta
    device (see `on_meta`) gets the checkpoint's tensors assigned (converted to the module's dtype)."""
    own = module.state_dict()
    missing = set(own) - set(state_dict)
    unexpected = set(state_dict) - set(own)
    shapes = [f"{k} {tuple(state_dict[k].shape)} != {tuple(own[k].shape)}"
              for k in sorted(set(own) & set(state_dict)) if state_dict[k].shape != own[k].shape]
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing key(s): {_first(missing)}")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected key(s): {_first(unexpected)}")
    if shapes:
        problems.append(f"{len(shapes)} shape mismatch(es): {'; '.join(shapes[:10])}")
    if problems:
        raise ValueError(f"{what} does not match {type(module).__name__}: " + " | ".join(problems))
    meta = any(t.is_meta for t in own.values())
    module.load_state_dict({k: v.to(dtype=own[k].dtype, device="cpu") for k, v in state_dict.items()},
                           strict=True, assign=meta)


def on_meta(factory):
    """Build a module with `factory()` on the meta device: no time spent initialising weights that a
    checkpoint will replace (strict_load then assigns real tensors)."""
    with torch.device("meta"):
        return factory()


# Hugging Face DepthAnythingForDepthEstimation -> official. Backbone names: transformers' Dinov2Backbone, in
# both the layout of the published *-hf checkpoints (attention.attention.query/key/value,
# attention.output.dense) and the one transformers >= 5 writes (attention.q_proj/k_proj/v_proj/o_proj).
_HF_RULES: List[Tuple[str, str]] = [
    (r"backbone\.embeddings\.cls_token", "pretrained.cls_token"),
    (r"backbone\.embeddings\.mask_token", "pretrained.mask_token"),
    (r"backbone\.embeddings\.position_embeddings", "pretrained.pos_embed"),
    (r"backbone\.embeddings\.patch_embeddings\.projection\.(weight|bias)", r"pretrained.patch_embed.proj.\1"),
    (r"backbone\.encoder\.layer\.(\d+)\.norm([12])\.(weight|bias)", r"pretrained.blocks.\1.norm\2.\3"),
    (r"backbone\.encoder\.layer\.(\d+)\.attention\.output\.dense\.(weight|bias)", r"pretrained.blocks.\1.attn.proj.\2"),
    (r"backbone\.encoder\.layer\.(\d+)\.attention\.o_proj\.(weight|bias)", r"pretrained.blocks.\1.attn.proj.\2"),
    (r"backbone\.encoder\.layer\.(\d+)\.layer_scale([12])\.lambda1", r"pretrained.blocks.\1.ls\2.gamma"),
    (r"backbone\.encoder\.layer\.(\d+)\.mlp\.(fc[12])\.(weight|bias)", r"pretrained.blocks.\1.mlp.\2.\3"),
    (r"backbone\.layernorm\.(weight|bias)", r"pretrained.norm.\1"),
    (r"neck\.reassemble_stage\.layers\.(\d+)\.projection\.(weight|bias)", r"depth_head.projects.\1.\2"),
    (r"neck\.reassemble_stage\.layers\.([013])\.resize\.(weight|bias)", r"depth_head.resize_layers.\1.\2"),
    (r"head\.conv1\.(weight|bias)", r"depth_head.scratch.output_conv1.\1"),
    (r"head\.conv2\.(weight|bias)", r"depth_head.scratch.output_conv2.0.\1"),
    (r"head\.conv3\.(weight|bias)", r"depth_head.scratch.output_conv2.2.\1"),
]
_HF_QKV = re.compile(r"backbone\.encoder\.layer\.(\d+)\.attention\."
                     r"(?:attention\.(query|key|value)|(q|k|v)_proj)\.(weight|bias)")
_HF_CONVS = re.compile(r"neck\.convs\.([0-3])\.weight")
_HF_FUSION = re.compile(r"neck\.fusion_stage\.layers\.([0-3])\."
                        r"(projection|residual_layer([12])\.convolution([12]))\.(weight|bias)")


def hf_to_official(sd: Dict[str, Tensor]) -> Dict[str, Tensor]:
    """Rename a Hugging Face Depth Anything (V2) state dict onto the official keys.

    query/key/value (or q/k/v_proj) are concatenated into qkv in that order (the official qkv Linear
    splits its output as [q; k; v]); fusion_stage.layers.i is refinenet(4 - i) (transformers runs the
    fusion from the deepest level); neck.convs.i is scratch.layer(i+1)_rn. Keys no rule covers, and q/k/v
    triples with a part missing, are passed through under their own names, so strict_load reports them.
    """
    out: Dict[str, Tensor] = {}
    qkv: Dict[Tuple[str, str], Dict[str, Tensor]] = {}
    for key, value in sd.items():
        m = _HF_QKV.fullmatch(key)
        if m:
            part = {"query": "q", "key": "k", "value": "v"}.get(m.group(2) or "", m.group(3))
            qkv.setdefault((m.group(1), m.group(4)), {})[part] = value
            continue
        m = _HF_CONVS.fullmatch(key)
        if m:
            out[f"depth_head.scratch.layer{int(m.group(1)) + 1}_rn.weight"] = value
            continue
        m = _HF_FUSION.fullmatch(key)
        if m:
            block = f"depth_head.scratch.refinenet{4 - int(m.group(1))}"
            if m.group(2) == "projection":
                out[f"{block}.out_conv.{m.group(5)}"] = value
            else:
                out[f"{block}.resConfUnit{m.group(3)}.conv{m.group(4)}.{m.group(5)}"] = value
            continue
        for pattern, repl in _HF_RULES:
            if re.fullmatch(pattern, key):
                out[re.sub(pattern, repl, key)] = value
                break
        else:
            out[key] = value
    for (layer, kind), parts in qkv.items():
        if set(parts) == {"q", "k", "v"}:
            out[f"pretrained.blocks.{layer}.attn.qkv.{kind}"] = torch.cat([parts["q"], parts["k"], parts["v"]], 0)
        else:
            for p, v in parts.items():
                out[f"backbone.encoder.layer.{layer}.attention.{p}_proj.{kind} (q/k/v incomplete)"] = v
    return out


def detect_layout(sd: Dict[str, Tensor]) -> str:
    """"official" (pretrained./depth_head.) or "hf" (backbone./neck./head.); ValueError otherwise."""
    roots = {k.split(".", 1)[0] for k in sd}
    if roots and roots <= {"pretrained", "depth_head"}:
        return "official"
    if roots and roots <= {"backbone", "neck", "head"}:
        return "hf"
    raise ValueError(f"not a Depth Anything V2 checkpoint (official or Hugging Face layout): top-level names "
                     f"{_first(roots)}")


def build(variant: str, state_dict: Dict[str, Tensor], *, pos_embed_interp: str = "official",
          max_depth: Optional[float] = None) -> Tuple[DepthAnythingV2, str]:
    """An eval-mode DepthAnythingV2 with `state_dict` (either layout) strictly loaded; returns (model, layout)."""
    layout = detect_layout(state_dict)
    sd = hf_to_official(state_dict) if layout == "hf" else state_dict
    model = on_meta(lambda: DepthAnythingV2(variant, pos_embed_interp=pos_embed_interp, max_depth=max_depth))
    strict_load(model, sd, what=f"{layout}-layout Depth Anything V2 {variant} checkpoint")
    return model.eval(), layout


def export(checkpoint: str, out: str, variant: str, *, pos_embed_interp: str = "official",
           max_depth: Optional[float] = None, source: Optional[str] = None,
           example_hw: Tuple[int, int] = (140, 196)) -> Dict[str, Any]:
    """Script a Depth Anything V2 checkpoint into `out` with its depthbatch.json; returns the contract."""
    from tools.contract import make_contract, save_scripted

    model, layout = build(variant, read_state_dict(checkpoint), pos_embed_interp=pos_embed_interp,
                          max_depth=max_depth)
    cfg = VARIANTS[variant]
    if max_depth is None:
        name, kind, units = f"depth-anything-v2-{cfg['label']}", "relative_inverse_depth", ""
    else:
        name, kind, units = f"depth-anything-v2-metric-{cfg['label']}", "metric_depth", "m"
    contract = make_contract(
        name, colorspace="sRGB", multiple=PATCH_SIZE, size_hw=(DEFAULT_SIZE, DEFAULT_SIZE), kind=kind,
        units=units, fixed_size=False, mean=None, std=None,
        source=source or os.path.basename(checkpoint), source_sha256=sha256_file(checkpoint),
        license=cfg["license"], variant=variant, checkpoint_layout=layout,
        pos_embed_interpolation=pos_embed_interp,
        **({"max_depth_m": float(max_depth)} if max_depth is not None else {}))
    with torch.no_grad():
        scripted = torch.jit.script(model)
    example = torch.rand(1, 3, *example_hw, generator=torch.Generator().manual_seed(0))
    save_scripted(scripted, out, contract, example)
    return contract
