"""Depth Anything 3 any-view models (DA3-SMALL, DA3-BASE) as scripted TorchScript modules: depth, confidence and
cameras for a set of views.

Source of truth: github ByteDance-Seed/Depth-Anything-3 (PyPI depth-anything-3 0.1.1):
  configs/da3-small.yaml, configs/da3-base.yaml   DinoV2 vits / vitb, out_layers [5, 7, 9, 11], alt_start 4,
                                                  qknorm_start 4, rope_start 4, cat_token True; DualDPT head
                                                  (dim_in 2 x embed, features 64 / 128, output_dim 2); CameraDec
                                                  (dim_in 2 x embed); CameraEnc (dim_out = embed)
  model/da3.py DepthAnything3Net.forward          backbone -> DualDPT -> camera decoder (use_ray_pose=False)
  model/dinov2/vision_transformer.py              _get_intermediate_layers_not_chunked (alternating local/global
                                                  attention, camera token, reference view), get_intermediate_layers
  model/dinov2/layers/{attention,block,rope}.py   qk-norm, 2-D RoPE (frequency 100)
  model/dualdpt.py DualDPT                        main (depth, conf) and auxiliary (ray, ray_conf) chains
  model/cam_dec.py CameraDec, model/utils/transform.py pose_encoding_to_extri_intri, utils/geometry.py
  affine_inverse                                  camera head -> extrinsics (world-to-camera), intrinsics
  model/reference_view_selector.py                reference view strategies ("saddle_balanced" is the default of
                                                  DepthAnything3Net.forward and api.DepthAnything3.inference)
  api.py                                          the hub checkpoints are api.DepthAnything3's state dict: every key
                                                  starts with "model."; process_res 504 (longest side)

Exported module (DepthAnything3Views):
  input   x [B, S, 3, H, W] float32 sRGB in [0, 1]: B sets of S = 1..max_frames views; H, W multiples of 14. The
          ImageNet mean/std (utils/io/input_processor.py) is applied inside.
  output  (depth [B,S,H,W], confidence [B,S,H,W], extrinsics [B,S,3,4], intrinsics [B,S,3,3]), float32:
          depth       DA3's depth: exp(logit), larger = farther, in the unit of the extrinsics' translations
                      (one unknown scale per forward call: a set of views)
          confidence  DA3's depth_conf: exp(logit) + 1 (>= 1, larger = more confident)
          extrinsics  OpenCV world-to-camera [R | t] (x right, y down, z forward), what the official forward
                      returns: affine_inverse of the camera decoder's camera-to-world. The world frame is the
                      reference view's camera by training (the reference view gets camera_token[0]), but nothing
                      forces it: the reference view's extrinsics are only close to the identity for a trained
                      model, and the reference view is not always view 0 (below). first_view_is_world: false.
          intrinsics  pixels of the input (H, W): fx = (W/2) / tan(fov_w/2), fy = (H/2) / tan(fov_h/2),
                      principal point (W/2, H/2)

Pose path: the camera head (cam_dec), the official default (use_ray_pose=False). POSE_NOTE says why not the
ray-map pose. The head's auxiliary ray chain is kept as DualDPT.forward_ray (an exported method, parity-tested
against the official ray / ray_conf) for a later ray-map solver; forward does not call it.

Reference view: as the official forward with its default strategy "saddle_balanced": for S >= 3 views
(utils/constants.py THRESH_FOR_REF_SELECTION) the view whose class token (after block alt_start - 1) is the most
"balanced" (reference_view_selector.py select_reference_view) is moved to the front before the camera token is
inserted, and the outputs are put back in input order. For S <= 2 the first view is the reference. The strategy is a
constructor option (ref_view="first" reproduces the official ref_view_strategy="first").

Checkpoints: the hub model.safetensors ("model.backbone...", "model.head...", "model.cam_dec...",
"model.cam_enc...") or DepthAnything3Net.state_dict() (no "model." prefix), loaded strictly (cam_enc is loaded but
not used: it encodes input camera poses, which depthbatch does not give). The official API runs the backbone under
autocast (bf16/fp16); this module runs in float32, which is what the parity tests compare against.
"""
import os
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tools.depth_anything_3 import NETS as MONO_NETS
from tools.depth_anything_3 import normalize_keys as normalize_mono_keys
from tools.depth_anything_v2 import (IMAGENET_MEAN, IMAGENET_STD, PATCH_SIZE, Block, DinoVisionTransformer,
                                     DPTHeadBase, FeatureFusionBlock, FeatureFusionBlockNoResidual, LayerScale, Mlp,
                                     _first, on_meta, read_state_dict, sha256_file, strict_load)

# Per-model facts: configs/da3-small.yaml / da3-base.yaml and vit_small / vit_base (embed 384 / 768, depth 12,
# heads 6 / 12); licences from the README model table (DA3-SMALL and DA3-BASE: Apache 2.0).
MODELS: Dict[str, Dict[str, Any]] = {
    "small": dict(net="vits", name="depth-anything-3-small-views", variant="da3-small",
                  hub="depth-anything/DA3-SMALL", license="Apache-2.0"),
    "base": dict(net="vitb", name="depth-anything-3-base-views", variant="da3-base",
                 hub="depth-anything/DA3-BASE", license="Apache-2.0"),
}
# The backbone and head sizes are the monocular exporter's (tools/depth_anything_3.py NETS: the same configs).
NETS: Dict[str, Dict[str, Any]] = {net: MONO_NETS[net] for net in ("vits", "vitb")}
ALT_START = 4          # alt_start = qknorm_start = rope_start = 4 in both configs
ROPE_FREQUENCY = 100.0  # vision_transformer.py rope_freq=100
REF_SELECTION_MIN_VIEWS = 3  # utils/constants.py THRESH_FOR_REF_SELECTION
REF_VIEW_STRATEGIES = ("saddle_balanced", "first", "middle", "saddle_sim_range")
CAM_ENC_HEADS = 16     # cam_enc.py CameraEnc num_heads default
MAX_FRAMES = 32        # largest S the export accepts
# The default processing size: api.py inference(process_res=504, process_res_method="upper_bound_resize") scales the
# longest side to 504 and rounds each side to the nearest multiple of 14 (utils/io/input_processor.py): a 16:9 plate
# becomes 280 x 504.
DEFAULT_SIZE_HW = (280, 504)
WINDOW, OVERLAP = 8, 3
POSE_NOTE = (
    "camera head (cam_dec), the official default use_ray_pose=False. The ray-map pose (use_ray_pose=True) solves "
    "each view's camera by a RANSAC homography fit (utils/ray_utils.py camray_to_caminfo) whose 100 sample sets and "
    "inlier subsample come from torch's global random generator (torch.randperm): the official output changes from "
    "call to call, whereas an exported module must give the same cameras for the same frames (save_scripted "
    "compares two runs; farm renders must be reproducible). Scripting it deterministically means replacing the "
    "official sampler, so it could only match an official run patched to the same samples, and the argmax over "
    "RANSAC scores, SVD and QL decomposition make such a match fragile; not done.")
CONFIDENCE = {"name": "confidence", "channel": "depth.confidence",
              "about": "DA3 depth_conf: exp(logit) + 1, >= 1, larger = more confident; relative within one set "
                       "of views"}


# ---------------------------------------------------------------------------------------------------------------
# Backbone: model/dinov2/vision_transformer.py with the any-view additions
# ---------------------------------------------------------------------------------------------------------------
def rope_2d(t: Tensor, pos: Tensor, frequency: float) -> Tensor:
    """layers/rope.py RotaryPositionEmbedding2D.forward: t [N, heads, T, d], pos [N, T, 2] int (y, x).
    The first half of the features rotates with y, the second with x; cos/sin of pos * inv_freq (the official
    table lookup of the same products)."""
    half = t.shape[-1] // 2
    exponents = torch.arange(0, half, 2, device=t.device).float() / float(half)
    inv_freq = 1.0 / torch.pow(torch.full_like(exponents, frequency), exponents)
    out: List[Tensor] = []
    for axis, feats in enumerate(t.chunk(2, dim=-1)):
        angles = pos[..., axis].to(torch.float32).unsqueeze(-1) * inv_freq   # [N, T, d/4]
        angles = torch.cat((angles, angles), dim=-1).to(t.dtype)
        cos = angles.cos()[:, None]
        sin = angles.sin()[:, None]
        x1, x2 = feats[..., : feats.shape[-1] // 2], feats[..., feats.shape[-1] // 2:]
        out.append(feats * cos + torch.cat((-x2, x1), dim=-1) * sin)
    return torch.cat(out, dim=-1)


class ViewAttention(nn.Module):
    """layers/attention.py Attention with qkv bias, optional q/k LayerNorm (per head, eps 1e-5) and 2-D RoPE."""

    def __init__(self, dim: int, num_heads: int, qk_norm: bool, rope: bool):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3, bias=True)
        self.q_norm = nn.LayerNorm(dim // num_heads) if qk_norm else nn.Identity()
        self.k_norm = nn.LayerNorm(dim // num_heads) if qk_norm else nn.Identity()
        self.proj = nn.Linear(dim, dim, bias=True)
        self.use_rope = rope
        self.frequency = ROPE_FREQUENCY

    def forward(self, x: Tensor, pos: Optional[Tensor]) -> Tensor:
        b, t, c = x.shape[0], x.shape[1], x.shape[2]
        qkv = self.qkv(x).reshape(b, t, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = self.q_norm(qkv[0]), self.k_norm(qkv[1]), qkv[2]
        if self.use_rope and pos is not None:
            q = rope_2d(q, pos, self.frequency)
            k = rope_2d(k, pos, self.frequency)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(b, t, c))


class ViewBlock(nn.Module):
    """layers/block.py Block (eval): x + ls1(attn(norm1(x), pos)), then x + ls2(mlp(norm2(x))); LayerNorm eps 1e-6."""

    def __init__(self, dim: int, num_heads: int, qk_norm: bool, rope: bool):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = ViewAttention(dim, num_heads, qk_norm, rope)
        self.ls1 = LayerScale(dim)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, 4 * dim)
        self.ls2 = LayerScale(dim)

    def forward(self, x: Tensor, pos: Optional[Tensor]) -> Tensor:
        x = x + self.ls1(self.attn(self.norm1(x), pos))
        return x + self.ls2(self.mlp(self.norm2(x)))


def select_reference_view(x: Tensor, strategy: str) -> Tensor:
    """reference_view_selector.py select_reference_view: x [B, S, N, C] -> [B] int64 view index."""
    b, s = x.shape[0], x.shape[1]
    if s <= 1 or strategy == "first":
        return torch.zeros(b, dtype=torch.long, device=x.device)
    if strategy == "middle":
        return torch.full((b,), s // 2, dtype=torch.long, device=x.device)
    cls = x[:, :, 0]
    feat = cls / cls.norm(2.0, [-1], True)
    sim = torch.matmul(feat, feat.transpose(1, 2))
    sim_no_diag = sim - torch.eye(s, device=sim.device, dtype=sim.dtype).unsqueeze(0)
    if strategy == "saddle_sim_range":
        return (sim_no_diag.max(dim=-1).values - sim_no_diag.min(dim=-1).values).argmax(dim=1)
    sim_score = sim_no_diag.sum(dim=-1) / float(s - 1)
    score = ((_normalize_metric(sim_score) - 0.5).abs() + (_normalize_metric(cls.norm(2.0, [-1])) - 0.5).abs()
             + (_normalize_metric(feat.var(dim=-1)) - 0.5).abs())
    return score.argmin(dim=1)


def _normalize_metric(m: Tensor) -> Tensor:
    lo = m.min(dim=1, keepdim=True).values
    hi = m.max(dim=1, keepdim=True).values
    return (m - lo) / (hi - lo + 1e-8)


def _gather_views(x: Tensor, index: Tensor) -> Tensor:
    """x[b, index[b, s]] for x [B, S, ...], index [B, S]."""
    shape = [index.shape[0], index.shape[1]] + [1] * (x.dim() - 2)
    return torch.gather(x, 1, index.reshape(shape).expand(x.shape))


def reorder_index(b_idx: Tensor, s: int) -> Tensor:
    """reorder_by_reference: [ref, 0, 1, .., ref-1, ref+1, ..] per batch -> [B, S] gather index."""
    pos = torch.arange(s, device=b_idx.device).unsqueeze(0).expand(b_idx.shape[0], s)
    ref = b_idx.unsqueeze(1)
    idx = torch.where((pos > 0) & (pos <= ref), pos - 1, pos)
    return torch.where(pos == 0, ref.expand(b_idx.shape[0], s), idx)


def restore_index(b_idx: Tensor, s: int) -> Tensor:
    """restore_original_order: the inverse permutation of reorder_index."""
    pos = torch.arange(s, device=b_idx.device).unsqueeze(0).expand(b_idx.shape[0], s)
    ref = b_idx.unsqueeze(1)
    idx = torch.where(pos < ref, pos + 1, pos)
    return torch.where(pos == ref, torch.zeros_like(idx), idx)


class AnyViewViT(DinoVisionTransformer):
    """vision_transformer.py DinoVisionTransformer with alt_start / qknorm_start / rope_start 4 and cat_token True.

    Keys: cls_token, camera_token [1, 2, C], pos_embed, patch_embed.proj, blocks.N (q_norm / k_norm from block 4),
    norm (LayerNorm eps 1e-5). The patch embedding and the position-embedding resize (bicubic, offset 0.1) are
    DinoVisionTransformer's (tools/depth_anything_v2.py), which follow the same DINOv2 code."""

    def __init__(self, embed_dim: int, depth: int, num_heads: int, out_layers: List[int], ref_view: str):
        super().__init__(embed_dim, depth, num_heads, out_layers, pos_embed_interp="official", final_norm_eps=1e-5,
                         mask_token=False)
        self.camera_token = nn.Parameter(torch.zeros(1, 2, embed_dim))
        self.blocks = nn.ModuleList([ViewBlock(embed_dim, num_heads, qk_norm=i >= ALT_START, rope=i >= ALT_START)
                                     for i in range(depth)])
        self.alt_start = ALT_START
        self.rope_start = ALT_START
        self.embed_dim = embed_dim
        self.ref_view = ref_view
        self.min_views_for_selection = REF_SELECTION_MIN_VIEWS

    def rope_positions(self, b: int, s: int, ph: int, pw: int, device: torch.device) -> Tuple[Tensor, Tensor]:
        """_prepare_rope: (pos [B*S, 1+ph*pw, 2] with the cls token at (0, 0) and patch (y, x) at (y+1, x+1);
        pos_nodiff [B, S*(1+ph*pw), 2]: cls (0, 0), every patch (1, 1)), for local and global blocks."""
        ys = torch.arange(ph, device=device).view(ph, 1).expand(ph, pw).reshape(-1)
        xs = torch.arange(pw, device=device).view(1, pw).expand(ph, pw).reshape(-1)
        grid = torch.stack((ys, xs), dim=-1) + 1
        zero = torch.zeros(1, 2, dtype=grid.dtype, device=device)
        local = torch.cat((zero, grid), dim=0)
        glob = torch.cat((zero, torch.ones_like(grid)), dim=0)
        return (local.unsqueeze(0).expand(b * s, local.shape[0], 2),
                glob.unsqueeze(0).expand(b, s, glob.shape[0], 2).reshape(b, s * glob.shape[0], 2))

    def forward_views(self, x: Tensor) -> Tuple[List[Tensor], Tensor]:
        """x [B, S, 3, H, W] normalised -> (4 x [B, S, ph*pw, 2C] tokens of out_layers: cat(local, norm(global)),
        cls removed; the last out layer's camera token [B, S, 2C], un-normed), as get_intermediate_layers."""
        b, s, height, width = x.shape[0], x.shape[1], x.shape[3], x.shape[4]
        ph, pw = height // self.patch_size, width // self.patch_size
        t = self.patch_embed(x.flatten(0, 1))
        t = torch.cat((self.cls_token.expand(t.shape[0], -1, -1), t), dim=1)
        t = t + self.interpolate_pos_encoding(t.shape[1] - 1, height, width)
        n, c = t.shape[1], t.shape[2]
        t = t.reshape(b, s, n, c)
        l_pos, g_pos = self.rope_positions(b, s, ph, pw, x.device)
        local_t = t
        reordered = False
        restore = torch.zeros(b, s, dtype=torch.long, device=x.device)
        outs: List[Tensor] = []
        cam = torch.zeros(b, s, 2 * c, dtype=t.dtype, device=t.device)
        for i, blk in enumerate(self.blocks):
            if i == self.alt_start - 1 and s >= self.min_views_for_selection:
                b_idx = select_reference_view(t, self.ref_view)
                order = reorder_index(b_idx, s)
                t = _gather_views(t, order)
                local_t = _gather_views(local_t, order)
                restore = restore_index(b_idx, s)
                reordered = True
            if i == self.alt_start:
                cam_token = torch.cat((self.camera_token[:, :1].expand(b, 1, c),
                                       self.camera_token[:, 1:].expand(b, s - 1, c)), dim=1)
                t = torch.cat((cam_token.unsqueeze(2), t[:, :, 1:]), dim=2)
            use_pos = i >= self.rope_start
            if i >= self.alt_start and i % 2 == 1:
                t = blk(t.reshape(b, s * n, c), g_pos if use_pos else None).reshape(b, s, n, c)
            else:
                t = blk(t.reshape(b * s, n, c), l_pos if use_pos else None).reshape(b, s, n, c)
                local_t = t
            if i in self.out_indices:
                out = torch.cat((local_t, t), dim=-1)
                if reordered:
                    out = _gather_views(out, restore)
                cam = out[:, :, 0]
                outs.append(torch.cat((out[..., :c], self.norm(out[..., c:])), dim=-1)[:, :, 1:])
        return outs, cam


# ---------------------------------------------------------------------------------------------------------------
# DualDPT head (model/dualdpt.py)
# ---------------------------------------------------------------------------------------------------------------
class Permute(nn.Module):
    """model/utils/head_utils.py Permute."""

    def __init__(self, dims: List[int]):
        super().__init__()
        self.dims = dims

    def forward(self, x: Tensor) -> Tensor:
        return x.permute(self.dims)


def uv_pos_embed(c: int, h: int, w: int, aspect: float, dtype: torch.dtype, device: torch.device) -> Tensor:
    """head_utils.py create_uv_grid(w, h, aspect_ratio=W/H) + position_grid_to_embed(., c, omega_0=100):
    [c, h, w] (sin/cos of u in the first c/2 channels, of v in the last c/2)."""
    diag = (aspect ** 2 + 1.0) ** 0.5
    span_x = aspect / diag
    span_y = 1.0 / diag
    xs = torch.linspace(-span_x * (w - 1) / w, span_x * (w - 1) / w, w, dtype=dtype, device=device)
    ys = torch.linspace(-span_y * (h - 1) / h, span_y * (h - 1) / h, h, dtype=dtype, device=device)
    u = xs.view(1, w).expand(h, w).reshape(-1)
    v = ys.view(h, 1).expand(h, w).reshape(-1)
    d = c // 2
    omega = torch.arange(d // 2, dtype=torch.float32, device=device) / (d / 2.0)
    omega = 1.0 / torch.pow(torch.full_like(omega, 100.0), omega)
    parts: List[Tensor] = []
    for p in (u, v):
        out = p.reshape(-1, 1) * omega.view(1, -1)
        parts.append(torch.cat((torch.sin(out), torch.cos(out)), dim=1).float())
    return torch.cat(parts, dim=-1).view(h, w, c).permute(2, 0, 1)


class DualDPT(DPTHeadBase):
    """model/dualdpt.py DualDPT (output_dim 2, activation exp, conf_activation expp1, pos_embed True, down_ratio 1,
    aux_pyramid_levels 4, aux_out1_conv_num 5). Main chain: DPTHeadBase's reassemble convs and fusion; the auxiliary
    (ray) chain has its own refinenets. forward returns (depth, depth_conf) [N, H, W]; forward_ray the ray map
    [N, h, w, 6] and ray_conf [N, h, w] at 8x the patch grid (only the ray-map pose needs it)."""

    def __init__(self, dim_in: int, features: int, out_channels: List[int]):
        super().__init__(dim_in, features, out_channels, refinenet4_residual=False)
        self.norm = nn.LayerNorm(dim_in)
        s = self.scratch
        s.output_conv2 = nn.Sequential(nn.Conv2d(features // 2, 32, 3, 1, 1), nn.ReLU(True), nn.Conv2d(32, 2, 1, 1, 0))
        s.refinenet1_aux = FeatureFusionBlock(features)
        s.refinenet2_aux = FeatureFusionBlock(features)
        s.refinenet3_aux = FeatureFusionBlock(features)
        s.refinenet4_aux = FeatureFusionBlockNoResidual(features)
        s.output_conv1_aux = nn.ModuleList([nn.Sequential(
            nn.Conv2d(features, features // 2, 3, 1, 1), nn.Conv2d(features // 2, features, 3, 1, 1),
            nn.Conv2d(features, features // 2, 3, 1, 1), nn.Conv2d(features // 2, features, 3, 1, 1),
            nn.Conv2d(features, features // 2, 3, 1, 1)) for _ in range(4)])
        s.output_conv2_aux = nn.ModuleList([nn.Sequential(
            nn.Conv2d(features // 2, 32, 3, 1, 1), Permute([0, 2, 3, 1]), nn.LayerNorm(32), Permute([0, 3, 1, 2]),
            nn.ReLU(True), nn.Conv2d(32, 7, 1, 1, 0)) for _ in range(4)])

    def add_pos_embed(self, x: Tensor, height: int, width: int) -> Tensor:
        """DualDPT._add_pos_embed(x, W, H, ratio=0.1)."""
        pe = uv_pos_embed(x.shape[1], x.shape[2], x.shape[3], float(width) / float(height), x.dtype, x.device)
        return x + (pe * 0.1).unsqueeze(0)

    def reassemble_views(self, tokens: List[Tensor], ph: int, pw: int) -> List[Tensor]:
        """_forward_impl step 1: norm, to [N, 2C, ph, pw], projects, pos embed, resize_layers."""
        height, width = ph * self.patch_size, pw * self.patch_size
        out: List[Tensor] = []
        for i, (project, resize_layer) in enumerate(zip(self.projects, self.resize_layers)):
            x = self.norm(tokens[i])
            x = x.permute(0, 2, 1).reshape(x.shape[0], x.shape[2], ph, pw)
            out.append(resize_layer(self.add_pos_embed(project(x), height, width)))
        return out

    def forward(self, tokens: List[Tensor], ph: int, pw: int) -> Tuple[Tensor, Tensor]:
        height, width = ph * self.patch_size, pw * self.patch_size
        rn, paths = self.fuse(self.reassemble_views(tokens, ph, pw))
        main = self.upsample(paths[3], ph, pw)     # output_conv1, bilinear (align_corners) to H x W
        logits = self.scratch.output_conv2(self.add_pos_embed(main, height, width))
        return torch.exp(logits[:, 0]), torch.exp(logits[:, 1]) + 1.0

    @torch.jit.export
    def forward_ray(self, tokens: List[Tensor], ph: int, pw: int) -> Tuple[Tensor, Tensor]:
        """The auxiliary chain (DualDPT._fuse aux_list[-1], output_conv2_aux[-1]): ray [N, 8ph, 8pw, 6] (linear),
        ray_conf [N, 8ph, 8pw] (expp1)."""
        height, width = ph * self.patch_size, pw * self.patch_size
        s = self.scratch
        layers = self.reassemble_views(tokens, ph, pw)
        rn = [s.layer1_rn(layers[0]), s.layer2_rn(layers[1]), s.layer3_rn(layers[2]), s.layer4_rn(layers[3])]
        aux = s.refinenet4_aux(rn[3], None, [int(rn[2].shape[2]), int(rn[2].shape[3])])
        aux = s.refinenet3_aux(aux, rn[2], [int(rn[1].shape[2]), int(rn[1].shape[3])])
        aux = s.refinenet2_aux(aux, rn[1], [int(rn[0].shape[2]), int(rn[0].shape[3])])
        aux = s.refinenet1_aux(aux, rn[0], None)
        last = aux
        for i, conv in enumerate(s.output_conv1_aux):
            if i == 3:
                last = conv(aux)
        out = last
        for i, conv in enumerate(s.output_conv2_aux):
            if i == 3:
                out = conv(self.add_pos_embed(last, height, width))
        fmap = out.permute(0, 2, 3, 1)
        return fmap[..., :6], torch.exp(fmap[..., 6]) + 1.0


# ---------------------------------------------------------------------------------------------------------------
# Cameras: model/cam_dec.py, model/cam_enc.py (keys only), model/utils/transform.py, utils/geometry.py
# ---------------------------------------------------------------------------------------------------------------
class CameraDec(nn.Module):
    """cam_dec.py CameraDec: camera token [B, S, 2C] -> pose encoding [B, S, 9] = (t, quaternion xyzw, fov_h, fov_w)."""

    def __init__(self, dim_in: int):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(dim_in, dim_in), nn.ReLU(), nn.Linear(dim_in, dim_in), nn.ReLU())
        self.fc_t = nn.Linear(dim_in, 3)
        self.fc_qvec = nn.Linear(dim_in, 4)
        self.fc_fov = nn.Sequential(nn.Linear(dim_in, 2), nn.ReLU())

    def forward(self, feat: Tensor) -> Tensor:
        b, s = feat.shape[0], feat.shape[1]
        f = self.backbone(feat.reshape(b * s, -1)).float()
        return torch.cat([self.fc_t(f).reshape(b, s, 3), self.fc_qvec(f).reshape(b, s, 4),
                          self.fc_fov(f).reshape(b, s, 2)], dim=-1)


class PoseBranch(nn.Module):
    """model/utils/attention.py Mlp as cam_enc.pose_branch: fc1 (9 -> D/2), GELU, fc2 (D/2 -> D)."""

    def __init__(self, dim_in: int, hidden: int, dim_out: int):
        super().__init__()
        self.fc1 = nn.Linear(dim_in, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim_out)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)))


class CameraEnc(nn.Module):
    """cam_enc.py CameraEnc (trunk_depth 4, 16 heads): present for strict loading only; never called (it encodes
    input camera poses, which depthbatch does not give)."""

    def __init__(self, dim_out: int):
        super().__init__()
        self.trunk = nn.Sequential(*[Block(dim_out, CAM_ENC_HEADS) for _ in range(4)])
        self.token_norm = nn.LayerNorm(dim_out)
        self.trunk_norm = nn.LayerNorm(dim_out)
        self.pose_branch = PoseBranch(9, dim_out // 2, dim_out)

    def forward(self, x: Tensor) -> Tensor:
        return self.trunk_norm(self.trunk(self.token_norm(self.pose_branch(x))))


def quat_to_mat(q: Tensor) -> Tensor:
    """model/utils/transform.py quat_to_mat (xyzw, scalar last) -> [..., 3, 3]."""
    i, j, k, r = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    two_s = 2.0 / (q * q).sum(-1)
    o = torch.stack((1 - two_s * (j * j + k * k), two_s * (i * j - k * r), two_s * (i * k + j * r),
                     two_s * (i * j + k * r), 1 - two_s * (i * i + k * k), two_s * (j * k - i * r),
                     two_s * (i * k - j * r), two_s * (j * k + i * r), 1 - two_s * (i * i + j * j)), -1)
    return o.reshape(list(q.shape[:-1]) + [3, 3])


def pose_encoding_to_cameras(pose: Tensor, height: int, width: int) -> Tuple[Tensor, Tensor]:
    """transform.py pose_encoding_to_extri_intri, then da3.py's affine_inverse (camera-to-world -> world-to-camera):
    -> (extrinsics [B, S, 3, 4], intrinsics [B, S, 3, 3] in pixels)."""
    rot = quat_to_mat(pose[..., 3:7])
    t = pose[..., :3].unsqueeze(-1)
    rt = rot.transpose(-1, -2)
    extrinsics = torch.cat([rt, -(rt @ t)], dim=-1)
    fy = (height / 2.0) / torch.clamp(torch.tan(pose[..., 7] / 2.0), 1e-6)
    fx = (width / 2.0) / torch.clamp(torch.tan(pose[..., 8] / 2.0), 1e-6)
    zero = torch.zeros_like(fx)
    one = torch.ones_like(fx)
    intrinsics = torch.stack([fx, zero, zero + width / 2.0, zero, fy, zero + height / 2.0, zero, zero, one],
                             dim=-1).reshape(list(pose.shape[:-1]) + [3, 3])
    return extrinsics, intrinsics


# ---------------------------------------------------------------------------------------------------------------
class Backbone(nn.Module):
    """model/dinov2/dinov2.py DinoV2: holds `pretrained` (the ViT)."""

    def __init__(self, pretrained: AnyViewViT):
        super().__init__()
        self.pretrained = pretrained

    def forward(self, x: Tensor) -> Tuple[List[Tensor], Tensor]:
        return self.pretrained.forward_views(x)


class DepthAnything3Net(nn.Module):
    """model/da3.py DepthAnything3Net (backbone, head, cam_dec, cam_enc; no gaussian branch in these configs)."""

    def __init__(self, net: str, ref_view: str):
        super().__init__()
        cfg = NETS[net]
        self.backbone = Backbone(AnyViewViT(cfg["embed_dim"], cfg["depth"], cfg["num_heads"], cfg["out_layers"],
                                            ref_view))
        self.head = DualDPT(2 * cfg["embed_dim"], cfg["features"], cfg["out_channels"])
        self.cam_dec = CameraDec(2 * cfg["embed_dim"])
        self.cam_enc = CameraEnc(cfg["embed_dim"])
        self.patch_size = PATCH_SIZE

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        b, s, height, width = x.shape[0], x.shape[1], x.shape[3], x.shape[4]
        ph, pw = height // self.patch_size, width // self.patch_size
        tokens, cam = self.backbone(x)
        depth, conf = self.head([t.flatten(0, 1) for t in tokens], ph, pw)
        extrinsics, intrinsics = pose_encoding_to_cameras(self.cam_dec(cam), height, width)
        return (depth.reshape(b, s, height, width), conf.reshape(b, s, height, width), extrinsics, intrinsics)


class DepthAnything3Views(nn.Module):
    """The exported module: `model` is api.py's DepthAnything3.model, so the state dict keys are the hub's.
    forward(x [B,S,3,H,W] sRGB in [0,1]) -> (depth, confidence, extrinsics, intrinsics): see the module doc."""

    def __init__(self, net: str = "vits", ref_view: str = "saddle_balanced", max_frames: int = MAX_FRAMES):
        super().__init__()
        if net not in NETS:
            raise ValueError(f"unknown DA3 any-view backbone {net!r}; one of {sorted(NETS)}")
        if ref_view not in REF_VIEW_STRATEGIES:
            raise ValueError(f"ref_view must be one of {REF_VIEW_STRATEGIES}, not {ref_view!r}")
        self.model = DepthAnything3Net(net, ref_view)
        self.patch_size = PATCH_SIZE
        self.max_frames = int(max_frames)
        self.mean: List[float] = list(IMAGENET_MEAN)
        self.std: List[float] = list(IMAGENET_STD)

    def _prepare(self, x: Tensor) -> Tensor:
        if x.dim() != 5 or x.shape[2] != 3:
            raise RuntimeError("expected input [B, S, 3, H, W], got " + str(x.shape))
        if x.shape[1] < 1 or x.shape[1] > self.max_frames:
            raise RuntimeError("the number of views S must be 1.." + str(self.max_frames) + ", got "
                               + str(x.shape[1]))
        if x.shape[3] % self.patch_size != 0 or x.shape[4] % self.patch_size != 0 or x.shape[3] == 0 \
                or x.shape[4] == 0:
            raise RuntimeError("input height and width must be positive multiples of " + str(self.patch_size)
                               + ", got " + str(x.shape[3]) + "x" + str(x.shape[4]))
        m = torch.tensor(self.mean, dtype=x.dtype, device=x.device).view(1, 1, 3, 1, 1)
        s = torch.tensor(self.std, dtype=x.dtype, device=x.device).view(1, 1, 3, 1, 1)
        return (x - m) / s

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        return self.model(self._prepare(x))


def normalize_keys(sd: Dict[str, Tensor]) -> Dict[str, Tensor]:
    """Accept the hub layout (model.backbone..., model.head..., model.cam_dec..., model.cam_enc...) and
    DepthAnything3Net.state_dict() (no prefix), which gets "model." (tools/depth_anything_3.py's rule)."""
    return normalize_mono_keys(sd, ("backbone", "head", "cam_dec", "cam_enc"))


def build(state_dict: Dict[str, Tensor], *, net: str = "vits", ref_view: str = "saddle_balanced",
          max_frames: int = MAX_FRAMES) -> DepthAnything3Views:
    model = on_meta(lambda: DepthAnything3Views(net, ref_view=ref_view, max_frames=max_frames))
    strict_load(model, normalize_keys(state_dict), what=f"Depth Anything 3 any-view ({net}) checkpoint")
    return model.eval()


def export(checkpoint: str, out: str, which: str, *, source: Optional[str] = None, net: Optional[str] = None,
           size_hw: Tuple[int, int] = DEFAULT_SIZE_HW, ref_view: str = "saddle_balanced",
           example_shape: Tuple[int, int, int, int] = (1, 2, 42, 70)) -> Dict[str, Any]:
    """Script a DA3-SMALL / DA3-BASE checkpoint into `out` with its depthbatch.json; returns the contract.

    which: "small" or "base". net: the backbone when it is not the model's own (tests: a "-<net>-test" name).
    size_hw: the contract's input.size. example_shape: (B, S, H, W) of save_scripted's round-trip check."""
    from tools.contract import make_contract, save_scripted

    if which not in MODELS:
        raise ValueError(f"unknown DA3 any-view model {which!r}; one of {sorted(MODELS)}")
    info = MODELS[which]
    net = net or info["net"]
    model = build(read_state_dict(checkpoint), net=net, ref_view=ref_view)
    name = info["name"] if net == info["net"] else f"{info['name']}-{net}-test"
    contract = make_contract(
        name, colorspace="sRGB", multiple=PATCH_SIZE, size_hw=size_hw, kind="relative_depth", units="",
        fixed_size=False, mean=None, std=None, extra_outputs=[CONFIDENCE], frames=MAX_FRAMES,
        source=source or f"{info['hub']} {os.path.basename(checkpoint)}", source_sha256=sha256_file(checkpoint),
        license=info["license"], variant=info["variant"],
        views={"window": WINDOW, "overlap": OVERLAP, "pose": "camera_head", "pose_note": POSE_NOTE,
               "extrinsics": "opencv_world_to_camera", "intrinsics": "pixels", "first_view_is_world": False,
               "reference_view": ref_view})
    with torch.no_grad():
        scripted = torch.jit.script(model)
    b, s, h, w = example_shape
    example = torch.rand(b, s, 3, h, w, generator=torch.Generator().manual_seed(0))
    save_scripted(scripted, out, contract, example)
    return contract
