"""The LibTorch floor: every model file tools/ writes must load in LibTorch 2.4 (README "Which LibTorch loads a
model"). This module checks it statically, at export time, against the operators LibTorch 2.4.1 registers.

LibTorch loads a scripted file by compiling the Python-like code stored in it (code/__torch__/...py): every call of
an operator that LibTorch does not have fails the load ("Unknown builtin op: aten::..."). A newer torch can put
such calls in a file without the model using them: scripting `F.interpolate` stores its whole body, which in
torch 2.13 names aten::_upsample_lanczos2d_aa (call tools/ops.py `resize` instead).

`check_file(path)` loads a saved file with this torch, walks the inlined graph of every method of every module in
it (what the file's code calls, after torch resolved each call to one operator overload) and raises ValueError
naming the first operator the floor lacks, the method that calls it and where (the exporter's source line and
the line of the saved code). tools/contract.py `save_scripted` runs it on every export before the file is moved
into place. The floor's operators are FLOOR_OPS_FILE, `ns::name.overload` one a line, made once from LibTorch
2.4.1 itself by `scripts/check-libtorch-floor --write-op-list` (tests/compat/load_check.cpp --ops: every
operator of torch::jit::getAllOperators() in libtorch_cpu.so 2.4.1).

What this cannot see, the load check does (scripts/check-libtorch-floor: loads and runs the default model and one
export of each exporter with LibTorch 2.4.1): an operator that 2.4 has under the same name and overload but whose
newer signature the file uses (a keyword argument 2.4 lacks), and a file format version 2.4 does not read.

  python -m tools.libtorch_floor MODEL.pt ...    print each file's operators the floor lacks (exit 1 if any)
"""
from __future__ import annotations

import functools
import re
import sys
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Optional, Tuple

import torch

FLOOR = "2.4"                  # the oldest LibTorch depthbatch supports (README)
FLOOR_EXACT = "2.4.1"          # the one the op list was made from and CI loads with
FLOOR_OPS_FILE = Path(__file__).resolve().with_name("libtorch-2.4-ops.txt")


@functools.lru_cache(maxsize=1)
def floor_ops() -> FrozenSet[str]:
    """The operators of LibTorch 2.4.1 (`ns::name.overload`, or `ns::name` for the default overload)."""
    lines = FLOOR_OPS_FILE.read_text(encoding="utf-8").splitlines()
    return frozenset(s.strip() for s in lines if s.strip() and not s.startswith("#"))


def _nodes(block) -> Iterator[torch._C.Node]:
    for node in block.nodes():
        yield node
        for sub in node.blocks():
            yield from _nodes(sub)


def _op_name(schema: str) -> Optional[str]:
    """'aten::upsample_nearest2d.vec(Tensor input, ...) -> Tensor' -> 'aten::upsample_nearest2d.vec'."""
    if schema == "(no schema)":
        return None
    name = schema.split("(", 1)[0].strip()
    return name or None


def _where(node: torch._C.Node) -> str:
    """The exporter's source line and the saved code's line of `node` (from the file's debug info), if known."""
    text = node.sourceRange() or ""
    places = re.findall(r'File "([^"]+)", line (\d+)', text)
    if not places:
        return ""
    original = places[0]
    saved = next((p for p in places[1:] if p[0].startswith("code/")), None)
    out = f"{original[0]} line {original[1]}"
    if saved and saved != original:
        out += f" (saved as {saved[0]} line {saved[1]})"
    return out


def file_ops(module: torch.jit.ScriptModule) -> Dict[str, Tuple[str, str]]:
    """Every operator the methods of `module` and its submodules call (functions they call inlined):
    {`ns::name.overload`: (qualified method, where)} for the first call found."""
    found: Dict[str, Tuple[str, str]] = {}
    for sub in module.modules():
        if not isinstance(sub, torch.jit.ScriptModule):
            continue
        qualified = sub.original_name
        for name in sub._c._method_names():
            try:
                graph = getattr(sub, name).inlined_graph
            except (AttributeError, RuntimeError):
                graph = sub._c._get_method(name).graph
            for node in _nodes(graph):
                op = _op_name(node.schema())
                if op and op not in found:
                    found[op] = (f"{qualified}.{name}", _where(node))
    return found


def missing_ops(module: torch.jit.ScriptModule) -> List[Tuple[str, str, str]]:
    """[(operator, method, where)] for each operator `module` calls that LibTorch 2.4 does not have."""
    have = floor_ops()
    return [(op, method, where) for op, (method, where) in sorted(file_ops(module).items()) if op not in have]


def check_module(module: torch.jit.ScriptModule, what: str) -> None:
    """Raise ValueError naming the first operator of `module` that LibTorch 2.4 lacks (see the module doc)."""
    missing = missing_ops(module)
    if not missing:
        return
    op, method, where = missing[0]
    more = f" (and {len(missing) - 1} more: {', '.join(m[0] for m in missing[1:6])})" if len(missing) > 1 else ""
    hint = ""
    if "upsample" in op or "interpolate" in where:
        hint = " For F.interpolate call tools/ops.py resize, the one operator it runs."
    raise ValueError(
        f"{what}: the module calls {op}{more}, which LibTorch {FLOOR} (the oldest depthbatch supports) does not "
        f"have, so LibTorch {FLOOR} cannot load the file; called in {method}"
        f"{' at ' + where if where else ''}. Call operators LibTorch {FLOOR} has instead of torch {torch.__version__}'s "
        f"newer ones (a torch.nn.functional helper scripts its whole body).{hint}")


def check_file(path: str) -> None:
    """check_module on the TorchScript file at `path`."""
    check_module(torch.jit.load(path, map_location="cpu"), path)


def main(argv: Optional[List[str]] = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        missing = missing_ops(torch.jit.load(path, map_location="cpu"))
        if not missing:
            print(f"{path}: every operator it calls is in LibTorch {FLOOR_EXACT}")
        for op, method, where in missing:
            print(f"{path}: {op} is not in LibTorch {FLOOR_EXACT}: called in {method}{' at ' + where if where else ''}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
