"""tools/contract.save_scripted: the same module exported twice, in two folders under two Python hash seeds, is the
same file byte for byte, so its sha256 (depthbatch/model_sha256, which `--skip-existing` compares) does not depend on
the machine or the folder that exported it."""
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from tools.contract import _sorted_final_constants

# A module with the constants that came out in hash-seed order (Conv2d's and BatchNorm2d's __constants__), a
# submodule call and a contract: what every exporter saves.
_EXPORT = r"""
import sys, torch
from tools.contract import make_contract, save_scripted
torch.manual_seed(0)
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
    def forward(self, x):
        return self.bn(self.conv(x)).mean(1, keepdim=True).abs()
net = torch.jit.script(Net().eval())
contract = make_contract("repro", colorspace="sRGB", multiple=32, size_hw=(32, 32), kind="metric_depth", units="m",
                         fixed_size=False, mean=None, std=None)
save_scripted(net, sys.argv[1], contract, torch.rand(1, 3, 32, 32), check_floor=False)
"""


def _export(repo_root: Path, out: Path, seed: str) -> bytes:
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(repo_root))
    script = out.parent / "export.py"      # torch.jit.script reads the source: a file, in the export's folder
    script.write_text(_EXPORT)
    subprocess.run([sys.executable, str(script), str(out)], check=True, env=env, cwd=out.parent)
    return out.read_bytes()


def test_two_exports_in_two_folders_under_two_hash_seeds_are_the_same_bytes(tmp_path, repo_root):
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "deeper").mkdir(parents=True)
    a = _export(repo_root, tmp_path / "a" / "m.pt", "1")
    b = _export(repo_root, tmp_path / "b" / "deeper" / "m.pt", "2")
    assert hashlib.sha256(a).hexdigest() == hashlib.sha256(b).hexdigest()
    names = zipfile.ZipFile(tmp_path / "a" / "m.pt").namelist()
    assert not [n for n in names if n.endswith(".debug_pkl")], names
    assert str(repo_root).encode() not in a and str(tmp_path).encode() not in a


def test_constants_are_sorted_within_a_run_and_nothing_else_moves():
    code = (b"class Conv2d(Module):\n  weight : Tensor\n  out_channels : Final[int] = 16\n"
            b"  dilation : Final[Tuple[int, int]] = (1, 1)\n  bias : Optional[Tensor]\n"
            b"  groups : Final[int] = 1\n  a : Final[str] = \"x\"\n  def forward(self):\n    return 1\n")
    assert _sorted_final_constants(code) == (
        b"class Conv2d(Module):\n  weight : Tensor\n  dilation : Final[Tuple[int, int]] = (1, 1)\n"
        b"  out_channels : Final[int] = 16\n  bias : Optional[Tensor]\n"
        b"  a : Final[str] = \"x\"\n  groups : Final[int] = 1\n  def forward(self):\n    return 1\n")
