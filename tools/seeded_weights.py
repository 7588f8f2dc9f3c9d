"""Weights generated from a seed, by a rule that depends only on each key's name, its shape and the seed.

Used for parity fixtures (tools/vda_fixtures.py, tests/data/vda): the official code and depthbatch's
exporter load the same seeded checkpoint, so no real checkpoint is needed anywhere in the tests, and
anyone can recreate the weights from the key names and shapes alone.

The rule, per key (`seeded_tensor`):
  generator   torch.Generator (CPU) seeded with the first 8 bytes (little-endian, top bit cleared) of
              sha256(f"{seed}:{key}") ; values drawn with torch.randn(shape, generator=...) in float32
  *.pe        (sinusoidal position tables of the motion modules) the sin/cos table itself
              (tools.video_depth_anything.sinusoid_table), as in the official checkpoints
  1-D *.weight  (LayerNorm / GroupNorm scales)        1 + 0.1 * n
  *.bias                                              0.02 * n
  *.gamma     (DINOv2 layer scale)                    0.3 + 0.05 * n
  other 1-D or token tensors (cls_token, pos_embed, mask_token)   0.1 * n
  >= 2-D weights (Linear, Conv, ConvTranspose)        n / sqrt(fan_in), fan_in = prod(shape[1:])
              (so the zero-initialised `proj_out` layers of the motion modules are NOT zero: with zeros
              the temporal path would be the identity and a parity test could not see it)
where n is the standard-normal draw. The scales keep activations finite through a whole forward pass.
"""
import hashlib
import math
from typing import Dict, Tuple

import torch
from torch import Tensor


def key_generator(key: str, seed: int) -> torch.Generator:
    digest = hashlib.sha256(f"{int(seed)}:{key}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & ((1 << 63) - 1))


def seeded_tensor(key: str, shape: Tuple[int, ...], seed: int) -> Tensor:
    """The seeded value of one key (see the module docstring for the rule)."""
    shape = tuple(int(s) for s in shape)
    leaf = key.rsplit(".", 1)[-1]
    if leaf == "pe" and len(shape) == 3:
        from tools.video_depth_anything import sinusoid_table
        return sinusoid_table(shape[1], shape[2]).clone()
    n = torch.randn(shape, generator=key_generator(key, seed), dtype=torch.float32)
    if leaf == "bias":
        return 0.02 * n
    if leaf == "gamma":
        return 0.3 + 0.05 * n
    if leaf == "weight" and len(shape) == 1:
        return 1.0 + 0.1 * n
    if leaf == "weight" and len(shape) >= 2:
        return n / math.sqrt(float(math.prod(shape[1:])))
    return 0.1 * n


def seeded_state_dict(shapes: Dict[str, Tuple[int, ...]], seed: int) -> Dict[str, Tensor]:
    """{key: seeded_tensor(key, shape, seed)} for every key of `shapes` (order kept)."""
    return {k: seeded_tensor(k, s, seed) for k, s in shapes.items()}
