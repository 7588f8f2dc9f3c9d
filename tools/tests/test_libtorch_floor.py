"""The export-time LibTorch floor check (tools/libtorch_floor.py, run by tools/contract.py save_scripted) and the
contract's record of the exporting torch (exported_by).

The load check itself (LibTorch 2.4.1 loading and running every exporter's output) is scripts/check-libtorch-floor,
run by ctest (compat.LibTorchFloor); these tests need no download.
"""
import pytest
import torch
import torch.nn.functional as F

from tools import libtorch_floor
from tools.contract import EXPORTED_BY, contract_fields, make_contract, read_contract, save_scripted
from tools.ops import resize


# torch 2.13's F.interpolate has a lanczos mode, whose operator LibTorch 2.4 lacks.
NEW_RESIZE = hasattr(torch._C._nn, "_upsample_lanczos2d_aa")


def _contract():
    return make_contract("probe", colorspace="sRGB", multiple=1, size_hw=(8, 8), kind="relative_depth")


class Interpolate(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, scale_factor=2.0, mode="nearest")


class Resize(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return resize(x, scale=[2.0, 2.0], mode="nearest")


def test_the_op_list_is_libtorch_2_4s():
    ops = libtorch_floor.floor_ops()
    assert len(ops) > 4000
    for op in ("aten::upsample_nearest2d.vec", "aten::upsample_bilinear2d.vec", "aten::upsample_bicubic2d.vec",
               "aten::scaled_dot_product_attention", "aten::quantile.scalar", "prim::RaiseException"):
        assert op in ops, op
    # New after 2.4: the resize torch 2.13's F.interpolate body names, which made the default model unloadable.
    assert "aten::_upsample_lanczos2d_aa.vec" not in ops


def test_save_scripted_records_the_exporting_torch(tmp_path):
    contract = _contract()
    path = tmp_path / "m.pt"
    save_scripted(torch.jit.script(Resize()), str(path), contract, torch.rand(1, 3, 8, 8))
    stored = read_contract(str(path))
    assert stored[EXPORTED_BY] == {"torch": torch.__version__}
    assert contract[EXPORTED_BY] == {"torch": torch.__version__}   # what an exporter returns and prints
    assert contract_fields(stored) == _contract()


@pytest.mark.skipif(not NEW_RESIZE, reason="this torch's F.interpolate has no lanczos mode: scripting it stays within LibTorch 2.4")
def test_a_scripted_f_interpolate_is_refused_naming_the_operator(tmp_path):
    path = tmp_path / "m.pt"
    with pytest.raises(ValueError) as e:
        save_scripted(torch.jit.script(Interpolate()), str(path), _contract(), torch.rand(1, 3, 8, 8))
    text = str(e.value)
    assert "aten::_upsample_lanczos2d_aa.vec" in text and "LibTorch 2.4" in text
    assert "Interpolate.forward" in text and "functional.py line" in text, text
    assert "tools/ops.py resize" in text
    assert not path.exists(), "nothing is written when the check fails"


def test_an_operator_the_floor_lacks_is_named_with_where_it_is_called(tmp_path, monkeypatch):
    """Version independent: a floor without aten::relu refuses a module calling torch.relu."""
    class Relu(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x) * 2.0

    monkeypatch.setattr(libtorch_floor, "floor_ops", lambda: frozenset(
        op for op in libtorch_floor.FLOOR_OPS_FILE.read_text().split() if op != "aten::relu"))
    with pytest.raises(ValueError) as e:
        save_scripted(torch.jit.script(Relu()), str(tmp_path / "r.pt"), _contract(), torch.rand(1, 3, 8, 8))
    assert "calls aten::relu," in str(e.value) and "Relu.forward at " in str(e.value)
    assert "test_libtorch_floor.py line" in str(e.value)
    save_scripted(torch.jit.script(Relu()), str(tmp_path / "r.pt"), _contract(), torch.rand(1, 3, 8, 8),
                  check_floor=False)
    assert (tmp_path / "r.pt").exists()


def test_cli_lists_what_the_floor_lacks(tmp_path, capsys):
    good = tmp_path / "good.pt"
    torch.jit.script(Resize()).save(str(good))
    assert libtorch_floor.main([str(good)]) == 0
    assert "every operator it calls is in LibTorch 2.4.1" in capsys.readouterr().out
    if NEW_RESIZE:
        bad = tmp_path / "bad.pt"   # saved without save_scripted, as main's default model was
        torch.jit.script(Interpolate()).save(str(bad))
        assert libtorch_floor.main([str(bad)]) == 1
        assert "aten::_upsample_lanczos2d_aa.vec is not in LibTorch 2.4.1: called in Interpolate.forward" in \
            capsys.readouterr().out
