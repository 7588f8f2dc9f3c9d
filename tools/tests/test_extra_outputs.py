"""Extra model outputs (tools/contract.py output.extra_outputs): the contract fields, and DA3's sky head
returned beside the depth (tools/depth_anything_3.py DepthAnything3MonoSky), on a randomly initialised ViT-S: no
checkpoint and no reference package needed."""
from __future__ import annotations

import pytest
import torch

from tools import contract as C
from tools import depth_anything_3 as da3


def test_contract_declares_extra_outputs_in_order():
    c = C.make_contract("x", colorspace="sRGB", multiple=14, size_hw=(14, 28), kind="metric_depth", units="m",
                        extra_outputs=[da3.SKY_MATTE, {"name": "confidence", "channel": "depth.confidence"}])
    assert [(e["name"], e["channel"]) for e in c["output"]["extra_outputs"]] == [("sky", "sky.A"),
                                                                                ("confidence", "depth.confidence")]
    assert "extra_outputs" not in C.make_contract("x", colorspace="sRGB", multiple=1, size_hw=(4, 4),
                                                  kind="relative_depth")["output"]
    for bad in ({"name": "P", "channel": "x.A"}, {"name": "a b", "channel": "x.A"}, {"name": "s", "channel": "depth.Z"}):
        with pytest.raises(ValueError):
            C.make_contract("x", colorspace="sRGB", multiple=1, size_hw=(4, 4), kind="relative_depth",
                            extra_outputs=[bad])
    with pytest.raises(ValueError, match="repeat a channel"):
        C.make_contract("x", colorspace="sRGB", multiple=1, size_hw=(4, 4), kind="relative_depth",
                        extra_outputs=[{"name": "a", "channel": "m.A"}, {"name": "b", "channel": "m.A"}])


def test_da3_sky_matte_is_the_sky_head_beside_the_same_depth(tmp_path):
    torch.manual_seed(0)
    sd = da3.DepthAnything3Mono("vits").state_dict()
    plain = da3.build(sd, net="vits")
    sky = da3.build(sd, net="vits", sky_matte=True)
    x = torch.rand(1, 3, 28, 42, generator=torch.Generator().manual_seed(1))
    scripted = torch.jit.script(sky)
    contract = C.make_contract("da3-test", colorspace="sRGB", multiple=14, size_hw=(28, 42), kind="relative_depth",
                               extra_outputs=[da3.SKY_MATTE])
    path = tmp_path / "sky.pt"
    C.save_scripted(scripted, str(path), contract, x)
    loaded = torch.jit.load(str(path))
    with torch.inference_mode():
        depth, matte = loaded(x)
        stages = plain.forward_stages(x)
        assert torch.equal(depth, plain(x))
        assert torch.allclose(matte, stages["sky"][0])
    assert depth.shape == matte.shape == (1, 1, 28, 42)
    assert C.read_contract(str(path))["output"]["extra_outputs"][0]["channel"] == "sky.A"
