"""Video Depth Anything (VDA) as a scripted TorchScript module for depthbatch.

Exported module (see tools/contract.py, DESIGN.md "Model contract" and docs/video-models.md "Video models"):
  input   [B, T, 3, H, W] float32 RGB in [0, 1], sRGB-encoded; 1 <= T <= 32 frames in order; H and W
          multiples of 14 (the ViT patch)
  output  [B, T, H, W] float32, >= 0: relative inverse depth (disparity-like: larger = nearer) or, for the
          Metric-Video-Depth-Anything checkpoints, metric depth in metres (the same network; the official
          code only skips the window alignment for them)
The ImageNet normalisation (mean 0.485 0.456 0.406, std 0.229 0.224 0.225, as the official
infer_video_depth's NormalizeImage) happens inside the module. One call is one window: the official
inference (`infer_video_depth`) runs 32-frame windows with a 10-frame overlap, keyframe substitution,
least-squares alignment and an 8-frame cross-fade; those parameters are written into depthbatch.json
("temporal") and applied by depthbatch, not by this module.

Architecture (github DepthAnything/Video-Depth-Anything, video_depth_anything/video_depth.py,
dpt_temporal.py, motion_module/motion_module.py and attention.py), written here from that description:
  pretrained  the DINOv2 ViT of Depth Anything V2 (tools/depth_anything_v2.DinoVisionTransformer), applied
              to the B*T frames independently
  head        the Depth Anything V2 DPT head (tools/depth_anything_v2.DPTHead) with its temporal hook
              filled: four motion modules (`head.motion_modules.0..3`) mix each spatial position across
              the T frames, on the third and fourth reassembled maps and after refinenet4 and refinenet3.
  motion module (AnimateDiff's TemporalModule, one transformer block of two temporal self-attentions +
              a GEGLU feed-forward): x + proj_out(block(proj_in(GroupNorm32(x)))), attention over time per
              pixel with 8 heads and sinusoidal absolute position encodings (`pos_encoder.pe`, 32 frames).
The key layout is the official checkpoints' (`pretrained.blocks.N...`, `head.scratch.refinenetN...`,
`head.motion_modules.M.temporal_transformer.transformer_blocks.0.attention_blocks.K.to_q.weight`, ...);
loading is strict (tools.depth_anything_v2.strict_load).

TorchScript: einops rearranges are reshapes/permutes, xformers (and the official baddbmm/softmax fallback)
is F.scaled_dot_product_attention; every ModuleList is iterated or indexed by a literal.
"""
import math
import os
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tools.depth_anything_v2 import (DEFAULT_SIZE, IMAGENET_MEAN, IMAGENET_STD, PATCH_SIZE, VARIANTS, DPTHead,
                                     DinoVisionTransformer, on_meta, read_state_dict, sha256_file, strict_load)

# Official inference constants (video_depth.py: "infer settings, do not change").
WINDOW = 32                                      # INFER_LEN: frames per forward
OVERLAP = 10                                     # OVERLAP: inputs of a later window taken from the previous one
KEYFRAMES = [0, 12, 24, 25, 26, 27, 28, 29, 30, 31]  # KEYFRAMES: which of the previous window's inputs
CROSSFADE = 8                                    # INTERP_LEN: overlapping outputs blended linearly
# Motion modules (dpt_temporal.py motion_module_kwargs, motion_module.py defaults).
MOTION_HEADS = 8
MOTION_GROUPS = 32
TEMPORAL_MAX_LEN = 32                            # num_frames: the length of the position-encoding table

# Hugging Face repositories of the official checkpoints (README "Pre-trained Models" of the official repo).
CHECKPOINT_URLS = {
    ("vits", False): "https://huggingface.co/depth-anything/Video-Depth-Anything-Small/resolve/main/"
                     "video_depth_anything_vits.pth",
    ("vitb", False): "https://huggingface.co/depth-anything/Video-Depth-Anything-Base/resolve/main/"
                     "video_depth_anything_vitb.pth",
    ("vitl", False): "https://huggingface.co/depth-anything/Video-Depth-Anything-Large/resolve/main/"
                     "video_depth_anything_vitl.pth",
    ("vits", True): "https://huggingface.co/depth-anything/Metric-Video-Depth-Anything-Small/resolve/main/"
                    "metric_video_depth_anything_vits.pth",
    ("vitb", True): "https://huggingface.co/depth-anything/Metric-Video-Depth-Anything-Base/resolve/main/"
                    "metric_video_depth_anything_vitb.pth",
    ("vitl", True): "https://huggingface.co/depth-anything/Metric-Video-Depth-Anything-Large/resolve/main/"
                    "metric_video_depth_anything_vitl.pth",
}


def sinusoid_table(max_len: int, dim: int) -> Tensor:
    """[1, max_len, dim] sin/cos position table (motion_module.py PositionalEncoding, the transformer's):
    pe[0, t, 2i] = sin(t / 10000^(2i/dim)), pe[0, t, 2i+1] = cos(same)."""
    position = torch.arange(max_len).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
    pe = torch.zeros(1, max_len, dim)
    pe[0, :, 0::2] = torch.sin(position * div_term)
    pe[0, :, 1::2] = torch.cos(position * div_term)
    return pe


class PositionalEncoding(nn.Module):
    """x [M, T, C] + pe[:, :T]. Key: pos_encoder.pe (a buffer saved in the checkpoints)."""

    def __init__(self, dim: int, max_len: int = TEMPORAL_MAX_LEN):
        super().__init__()
        self.register_buffer("pe", sinusoid_table(max_len, dim))

    def forward(self, x: Tensor) -> Tensor:
        return x + self.pe[:, :x.shape[1]].to(x.dtype)


class TemporalAttention(nn.Module):
    """Self-attention across the frames of each clip, separately at every spatial position.

    x [N*T, P, C] (N clips of T frames, P positions) -> [N*T, P, C]. Keys: to_q, to_k, to_v (no bias),
    to_out.0 (with bias), pos_encoder.pe. softmax(q k^T / sqrt(C/heads)) v per head, as the official
    CrossAttention._attention and xformers' memory_efficient_attention.
    """

    def __init__(self, dim: int, heads: int = MOTION_HEADS, max_len: int = TEMPORAL_MAX_LEN):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(dim, dim, bias=False)
        self.to_v = nn.Linear(dim, dim, bias=False)
        self.to_out = nn.ModuleList([nn.Linear(dim, dim), nn.Dropout(0.0)])
        self.pos_encoder = PositionalEncoding(dim, max_len)

    def forward(self, x: Tensor, frames: int) -> Tensor:
        nt, p, c = x.shape[0], x.shape[1], x.shape[2]
        n = nt // frames
        # "(b f) d c -> (b d) f c"
        h = x.reshape(n, frames, p, c).permute(0, 2, 1, 3).reshape(n * p, frames, c)
        h = self.pos_encoder(h)
        hd = c // self.heads
        q = self.to_q(h).reshape(n * p, frames, self.heads, hd).transpose(1, 2)
        k = self.to_k(h).reshape(n * p, frames, self.heads, hd).transpose(1, 2)
        v = self.to_v(h).reshape(n * p, frames, self.heads, hd).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(n * p, frames, c)
        for layer in self.to_out:
            out = layer(out)
        # "(b d) f c -> (b f) d c"
        return out.reshape(n, p, frames, c).permute(0, 2, 1, 3).reshape(nt, p, c)


class GEGLU(nn.Module):
    """proj (dim -> 2*inner), split into (h, gate), h * gelu(gate). Key: proj."""

    def __init__(self, dim: int, inner: int):
        super().__init__()
        self.proj = nn.Linear(dim, inner * 2)

    def forward(self, x: Tensor) -> Tensor:
        h, gate = self.proj(x).chunk(2, dim=-1)
        return h * F.gelu(gate)


class FeedForward(nn.Module):
    """net.0 = GEGLU(dim, 4*dim), net.1 = dropout (0), net.2 = Linear(4*dim, dim)."""

    def __init__(self, dim: int, mult: int = 4):
        super().__init__()
        self.net = nn.ModuleList([GEGLU(dim, dim * mult), nn.Dropout(0.0), nn.Linear(dim * mult, dim)])

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.net:
            x = layer(x)
        return x


class TemporalTransformerBlock(nn.Module):
    """Two pre-norm temporal attentions (attention_blocks.K after norms.K, LayerNorm eps 1e-5), each
    residual, then x + ff(ff_norm(x))."""

    def __init__(self, dim: int, heads: int = MOTION_HEADS, max_len: int = TEMPORAL_MAX_LEN, blocks: int = 2):
        super().__init__()
        self.attention_blocks = nn.ModuleList([TemporalAttention(dim, heads, max_len) for _ in range(blocks)])
        self.norms = nn.ModuleList([nn.LayerNorm(dim) for _ in range(blocks)])
        self.ff = FeedForward(dim)
        self.ff_norm = nn.LayerNorm(dim)

    def forward(self, x: Tensor, frames: int) -> Tensor:
        for attention, norm in zip(self.attention_blocks, self.norms):
            x = attention(norm(x), frames) + x
        return self.ff(self.ff_norm(x)) + x


class TemporalTransformer3DModel(nn.Module):
    """x [N*T, C, h, w] -> x + proj_out(blocks(proj_in(GroupNorm(32, eps 1e-6)(x) as [N*T, h*w, C])))."""

    def __init__(self, channels: int, heads: int = MOTION_HEADS, max_len: int = TEMPORAL_MAX_LEN,
                 layers: int = 1):
        super().__init__()
        inner = heads * (channels // heads)
        self.norm = nn.GroupNorm(num_groups=MOTION_GROUPS, num_channels=channels, eps=1e-6, affine=True)
        self.proj_in = nn.Linear(channels, inner)
        self.transformer_blocks = nn.ModuleList([TemporalTransformerBlock(inner, heads, max_len)
                                                 for _ in range(layers)])
        self.proj_out = nn.Linear(inner, channels)

    def forward(self, x: Tensor, frames: int) -> Tensor:
        nt, c, h, w = x.shape[0], x.shape[1], x.shape[2], x.shape[3]
        residual = x
        t = self.norm(x).permute(0, 2, 3, 1).reshape(nt, h * w, c)
        t = self.proj_in(t)
        for block in self.transformer_blocks:
            t = block(t, frames)
        t = self.proj_out(t)
        return t.reshape(nt, h, w, c).permute(0, 3, 1, 2) + residual


class TemporalModule(nn.Module):
    """Key: temporal_transformer (the official TemporalModule wrapper)."""

    def __init__(self, channels: int, max_len: int = TEMPORAL_MAX_LEN):
        super().__init__()
        self.temporal_transformer = TemporalTransformer3DModel(channels, max_len=max_len)

    def forward(self, x: Tensor, frames: int) -> Tensor:
        return self.temporal_transformer(x, frames)


class DPTHeadTemporal(DPTHead):
    """The Depth Anything V2 DPT head with motion_modules.0..3 in its temporal hook (dpt_temporal.py):
    on out_channels[2], out_channels[3], features and features channels respectively."""

    def __init__(self, in_channels: int, features: int, out_channels: List[int],
                 max_len: int = TEMPORAL_MAX_LEN):
        super().__init__(in_channels, features, out_channels, metric=False)
        self.micro_batch = 4
        self.motion_modules = nn.ModuleList([
            TemporalModule(out_channels[2], max_len), TemporalModule(out_channels[3], max_len),
            TemporalModule(features, max_len), TemporalModule(features, max_len)])

    def forward(self, tokens: List[Tensor], ph: int, pw: int, frames: int = 1) -> Tensor:
        """[N*frames, 1, ph*14, pw*14]. After the motion modules, the shallow fusion and the output convs run
        `micro_batch` images at a time (dpt_temporal.py does the same to bound memory; the result does not
        depend on the split: these layers see one image at a time)."""
        rn, path_4, path_3 = self.fuse_deep(self.reassemble(tokens, ph, pw), frames)
        outs: List[Tensor] = []
        for i in range(0, int(path_3.shape[0]), self.micro_batch):
            j = i + self.micro_batch
            path_1 = self.fuse_shallow(path_3[i:j], rn[1][i:j], rn[0][i:j])[1]
            outs.append(self.scratch.output_conv2(self.upsample(path_1, ph, pw)))
        return torch.cat(outs, 0)

    def temporal(self, x: Tensor, stage: int, frames: int) -> Tensor:
        if stage == 0:
            return self.motion_modules[0](x, frames)
        if stage == 1:
            return self.motion_modules[1](x, frames)
        if stage == 2:
            return self.motion_modules[2](x, frames)
        return self.motion_modules[3](x, frames)


class VideoDepthAnything(nn.Module):
    """Video Depth Anything (official hierarchy: `pretrained`, `head`) with depthbatch's I/O.

    forward(x [B,T,3,H,W] RGB in [0,1]) -> [B,T,H,W] (ReLU'd, as the official forward). T <= 32 (the
    length of the position-encoding table); H, W positive multiples of 14.
    """

    def __init__(self, variant: str = "vits", max_frames: int = TEMPORAL_MAX_LEN):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown Video Depth Anything variant {variant!r}; one of {sorted(VARIANTS)}")
        cfg = VARIANTS[variant]
        self.variant = variant
        self.patch_size = PATCH_SIZE
        self.max_frames = int(max_frames)
        self.mean: List[float] = list(IMAGENET_MEAN)
        self.std: List[float] = list(IMAGENET_STD)
        self.pretrained = DinoVisionTransformer(cfg["embed_dim"], cfg["depth"], cfg["num_heads"], cfg["layers"],
                                                pos_embed_interp="official")
        self.head = DPTHeadTemporal(cfg["embed_dim"], cfg["features"], cfg["out_channels"], max_frames)

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() != 5 or x.shape[2] != 3:
            raise RuntimeError("expected input [B, T, 3, H, W], got " + str(x.shape))
        b, t, height, width = x.shape[0], x.shape[1], x.shape[3], x.shape[4]
        if t < 1 or t > self.max_frames:
            raise RuntimeError("frames per clip must be 1.." + str(self.max_frames) + ", got " + str(t))
        if height % self.patch_size != 0 or width % self.patch_size != 0 or height == 0 or width == 0:
            raise RuntimeError("input height and width must be positive multiples of " + str(self.patch_size)
                               + ", got " + str(height) + "x" + str(width))
        frames = x.reshape(b * t, 3, height, width)
        m = torch.tensor(self.mean, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
        s = torch.tensor(self.std, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
        ph, pw = height // self.patch_size, width // self.patch_size
        tokens = self.pretrained.get_intermediate_layers((frames - m) / s)
        depth = self.head(tokens, ph, pw, t)           # [B*T, 1, H, W]
        return F.relu(depth).reshape(b, t, height, width)


# ---------------------------------------------------------------------------------------------------
# Checkpoints and export
# ---------------------------------------------------------------------------------------------------
def official_shapes(variant: str) -> Dict[str, Tuple[int, ...]]:
    """Key -> shape of the official checkpoint of `variant` (relative and metric alike): the state dict
    of this module tree, which strict loading of the official files checks key by key."""
    model = on_meta(lambda: VideoDepthAnything(variant))
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def build(variant: str, state_dict: Dict[str, Tensor]) -> VideoDepthAnything:
    """An eval-mode VideoDepthAnything with the official-layout `state_dict` strictly loaded."""
    roots = {k.split(".", 1)[0] for k in state_dict}
    if roots - {"pretrained", "head"}:
        hint = " (a Depth Anything V2 image checkpoint? use `tools.export depth-anything-v2`)" \
            if "depth_head" in roots else ""
        raise ValueError(f"not a Video Depth Anything checkpoint: top-level names {sorted(roots)}{hint}")
    model = on_meta(lambda: VideoDepthAnything(variant))
    strict_load(model, state_dict, what=f"Video Depth Anything {variant} checkpoint")
    return model.eval()


def contract_fields(variant: str, metric: bool) -> Dict[str, Any]:
    """The multi-frame parts of depthbatch.json (see /docs/video-models.md "Video models" and tools/contract.py)."""
    return {
        "temporal": {"window": WINDOW, "overlap": OVERLAP, "keyframes": list(KEYFRAMES), "crossfade": CROSSFADE,
                     "align": "none" if metric else "scale_shift"},
    }


def model_name(variant: str, metric: bool) -> str:
    return f"{'metric-' if metric else ''}video-depth-anything-{variant}"


def export(checkpoint: str, out: str, variant: str, *, metric: bool = False, source: Optional[str] = None,
           example_thw: Tuple[int, int, int] = (3, 28, 42)) -> Dict[str, Any]:
    """Script an official Video Depth Anything checkpoint into `out` with its depthbatch.json; returns the
    contract. ValueError (one line) for a file that is not a readable checkpoint of `variant`."""
    from tools.contract import make_contract, save_scripted

    model = build(variant, read_state_dict(checkpoint))
    cfg = VARIANTS[variant]
    kind, units = ("metric_depth", "m") if metric else ("relative_inverse_depth", "")
    contract = make_contract(
        model_name(variant, metric), colorspace="sRGB", multiple=PATCH_SIZE, size_hw=(DEFAULT_SIZE, DEFAULT_SIZE),
        kind=kind, units=units, fixed_size=False, mean=None, std=None, frames=WINDOW,
        source=source or os.path.basename(checkpoint), source_sha256=sha256_file(checkpoint),
        license=cfg["license"], variant=variant, checkpoint_layout="official",
        pos_embed_interpolation="official", **contract_fields(variant, metric))
    with torch.no_grad():
        scripted = torch.jit.script(model)
    example = torch.rand(1, example_thw[0], 3, example_thw[1], example_thw[2],
                         generator=torch.Generator().manual_seed(0))
    save_scripted(scripted, out, contract, example)
    return contract
