"""The depthbatch model contract: `depthbatch.json`, a TorchScript extra file.

Every exporter in tools/ saves through `save_scripted`, so every model file depthbatch ships or makes
carries the same contract the C++ runtime reads (include/depthbatch/model_contract.h documents the C++
side; both must agree on the field names below).

Fields (JSON):
  format          1 (bump on incompatible change)
  name            short model name, e.g. "fastdepth-nyu"
  input.colorspace  OCIO colorspace (or alias) the model expects its RGB in, e.g. "sRGB"
  input.multiple  H and W fed to the model must be multiples of this (px): 32 FastDepth, 14 ViT
  input.size      [height, width] the model was trained at (px): the default processing size
  input.fixed_size  true when the module only accepts exactly input.size (a traced module)
  input.frames    optional, > 1 for a multi-frame (video) model: the module takes [B,T,3,H,W] and returns
                  [B,T,H,W], T = 1..frames consecutive frames (tools/video_depth_anything.py)
  input.mean/std  always null: depthbatch feeds RGB in [0, 1] and the module applies its own normalisation
                  (the C++ refuses a contract with either set; make_contract raises ValueError)
  output.kind     "metric_depth" | "relative_inverse_depth" | "relative_depth"
  output.units    "m" for metric depth, "" for relative kinds
  output.max_scale  optional (1-64, default 4): the output's H and W may be at most this many times the
                  input's; a larger output is refused (a model that upsamples by more must say so)
  output.reference_focal_px  optional: focal-dependent metric output (Depth Anything 3 metric)
  output.extra_outputs  optional: what the module returns besides depth. A list of {"name", "channel", "about"}:
                  forward then returns a tuple (depth, extra_1, ..., extra_k), each [N,1,H,W] or [N,H,W] of the
                  depth's shape; extra k is written as EXR channel `channel` when the job lists `name` in
                  output.passes ("sky" -> "sky.A", a matte; "confidence" -> "depth.confidence"). name: letters,
                  digits and _, not P or N; channel: printable ASCII without spaces, not starting or ending with
                  ".", not R/G/B/A/depth.Z; names and channels unique.
  Ranges the C++ side enforces (exit 4 naming the field): input.size sides 1-16384 px, input.multiple 1-1024.
  temporal        multi-frame models only: how depthbatch windows a shot (window, overlap, keyframes,
                  crossfade, align "scale_shift" | "none"; docs/video-models.md "Video models")
  views           multi-view models (the alternative to temporal; tools/depth_anything_3_views.py): the module takes
                  [B,S,3,H,W] and returns (depth, confidence, extrinsics [B,S,3,4], intrinsics [B,S,3,3]). Fields:
                  window (views per forward), overlap (views shared by consecutive windows), pose "ray_map" |
                  "camera_head" (+ pose_note), extrinsics "opencv_world_to_camera", intrinsics "pixels",
                  first_view_is_world, reference_view. Passed to make_contract as a keyword (a top-level block).
  source, source_sha256, license, variant, domain: provenance, copied into every rendered EXR's metadata as
                  depthbatch/model_<key>; domain "indoor" (trained on rooms only) makes depthbatch warn once per job
  exported_by     {"torch": "2.13.0+cpu"}: the torch that wrote the file (torch.__version__), added by
                  save_scripted. Files made before it was recorded have none. `depthbatch info` prints it, and a
                  LibTorch that cannot load the file names it in the error (exit 4, README "Which LibTorch loads a
                  model"). Not part of make_contract's dict (contract_fields drops it to compare contracts).

LibTorch floor: save_scripted refuses (ValueError naming the operator and where it is called) a module whose saved
code calls an operator LibTorch 2.4 does not have (tools/libtorch_floor.py): depthbatch supports LibTorch 2.4 and
newer, and a scripted torch.nn.functional helper (F.interpolate above all: call tools/ops.py resize) pulls in the
exporting torch's newest operators.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from typing import Any, Dict

import torch

EXTRA_FILE = "depthbatch.json"
KINDS = ("metric_depth", "relative_inverse_depth", "relative_depth")
EXPORTED_BY = "exported_by"   # {"torch": torch.__version__}, added by save_scripted


def exported_by() -> Dict[str, str]:
    """The contract's record of what wrote the file: {"torch": torch.__version__}."""
    return {"torch": torch.__version__}


def contract_fields(contract: Dict[str, Any]) -> Dict[str, Any]:
    """`contract` without the export record (exported_by): what the exporter decided, to compare two contracts
    made by different torch versions."""
    return {k: v for k, v in contract.items() if k != EXPORTED_BY}


def extra_output(name: str, channel: str, about: str = "") -> Dict[str, str]:
    """One entry of output.extra_outputs (see the module doc). Raises ValueError on a bad name or channel."""
    if not name or not all(c.isalnum() or c == "_" for c in name) or name in ("P", "N"):
        raise ValueError(f"extra output name {name!r}: letters, digits and _, not P or N")
    printable = all(0x20 < ord(c) < 0x7f for c in channel)   # the C++ side's rule (model_contract.cpp)
    if (not channel or not printable or channel in ("R", "G", "B", "A", "depth.Z") or channel[0] == "."
            or channel[-1] == "."):
        raise ValueError(f"extra output channel {channel!r} is empty, taken or not a channel name")
    return {"name": name, "channel": channel, "about": about}


def make_contract(name: str, *, colorspace: str, multiple: int, size_hw, kind: str, units: str = "",
                  fixed_size: bool = False, mean=None, std=None, extra_outputs=None, frames: Any = None,
                  **provenance: Any) -> Dict[str, Any]:
    """Build and validate a contract dict. Raises ValueError on a bad field. extra_outputs: entries made by
    extra_output(), in the order the module returns them after the depth. frames: > 1 for a multi-frame model."""
    if mean is not None or std is not None:
        raise ValueError("input.mean/std must be null: depthbatch feeds RGB in [0, 1], normalise inside the module")
    if kind not in KINDS:
        raise ValueError(f"output kind {kind!r} is not one of {KINDS}")
    if kind == "metric_depth" and units != "m":
        raise ValueError("metric_depth models must state units 'm'")
    h, w = (int(size_hw[0]), int(size_hw[1]))
    if multiple < 1 or h % multiple or w % multiple:
        raise ValueError(f"size {h}x{w} is not a multiple of {multiple}")
    output: Dict[str, Any] = {"kind": kind, "units": units}
    if extra_outputs:
        extras = [extra_output(e["name"], e["channel"], e.get("about", "")) for e in extra_outputs]
        for key in ("name", "channel"):
            values = [e[key] for e in extras]
            if len(set(values)) != len(values):
                raise ValueError(f"extra outputs repeat a {key}: {values}")
        output["extra_outputs"] = extras
    inp: Dict[str, Any] = {"colorspace": colorspace, "multiple": int(multiple), "size": [h, w],
                           "fixed_size": bool(fixed_size), "mean": mean, "std": std}
    if frames is not None:
        if int(frames) < 1:
            raise ValueError(f"input frames must be >= 1, not {frames}")
        inp["frames"] = int(frames)
    return {
        "format": 1,
        "name": name,
        "input": inp,
        "output": output,
        **provenance,
    }


def save_scripted(module: torch.jit.ScriptModule, path: str, contract: Dict[str, Any],
                  example: torch.Tensor, tol: float = 1e-5, check_floor: bool = True) -> float:
    """Save `module` with the contract embedded, reload it and check the round trip.

    Adds `exported_by` ({"torch": torch.__version__}) to `contract` (in place, so an exporter returns and prints
    what the file holds). example: [N,3,H,W] float32 input ([B,T,3,H,W] for a multi-frame model). Returns the max
    abs difference between the in-memory module and the reloaded file (raises RuntimeError above `tol`). Raises
    ValueError, naming the operator and where the module calls it, when the saved code calls an operator LibTorch
    2.4 does not have (tools/libtorch_floor.py; check_floor=False skips that, for tests only); nothing is written
    then. Never pass a module that went through torch.jit.optimize_for_inference: such a file fails to load (see
    DESIGN.md, Nuke facts).
    """
    from tools.libtorch_floor import check_module

    contract[EXPORTED_BY] = exported_by()
    # Written beside the target in a hidden folder (torch.jit.save names the archive's top folder after
    # the file name, so the temporary keeps the final name) and moved into place only once it checks out.
    text = json.dumps(contract, indent=1, sort_keys=True)
    final = os.path.abspath(path)
    tmp_dir = tempfile.mkdtemp(prefix=".export-", dir=os.path.dirname(final))
    tmp = os.path.join(tmp_dir, os.path.basename(final))
    try:
        raw_dir = os.path.join(tmp_dir, "raw")
        os.mkdir(raw_dir)
        raw = os.path.join(raw_dir, os.path.basename(final))
        module.save(raw, _extra_files={EXTRA_FILE: text})
        if check_floor:   # on the file as torch.jit.save wrote it: its debug info names the Python line that calls
            check_module(torch.jit.load(raw, map_location="cpu"), path)
        _reproducible_archive(raw, tmp)
        files = {EXTRA_FILE: ""}
        loaded = torch.jit.load(tmp, map_location="cpu", _extra_files=files)
        if json.loads(files[EXTRA_FILE]) != json.loads(text):
            raise RuntimeError(f"{path}: contract did not survive the round trip")
        with torch.inference_mode():
            a, b = module(example), loaded(example)
            a = a if isinstance(a, (tuple, list)) else (a,)   # extra outputs: (depth, extra_1, ...)
            b = b if isinstance(b, (tuple, list)) else (b,)
            diff = max((x - y).abs().max().item() for x, y in zip(a, b))
        if not diff <= tol:
            raise RuntimeError(f"{path}: reloaded module differs by {diff} (> {tol})")
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    return diff


_FINAL_LINE = re.compile(rb"^  \w+ : Final\[.*\] = .*$")


def _sorted_final_constants(code: bytes) -> bytes:
    """`code` (a serialized TorchScript class) with each run of `  name : Final[T] = value` lines sorted.

    TorchScript writes a class's constants in the iteration order of the module's `__constants__` set, which
    changes with Python's string hash seed (PYTHONHASHSEED): the same export made two files. Their order means
    nothing to the loader (constants are looked up by name)."""
    lines = code.split(b"\n")
    out, run = [], []
    for line in lines + [b""]:
        if _FINAL_LINE.match(line):
            run.append(line)
            continue
        out.extend(sorted(run))
        run = []
        out.append(line)
    return b"\n".join(out[:-1])


def _reproducible_archive(src: str, dst: str) -> None:
    """Copy the TorchScript archive `src` to `dst` so that the same weights exported by the same torch give the same
    bytes on any machine, in any folder, under any hash seed.

    Two exports differed, and so did their sha256 — the depthbatch/model_sha256 that `--skip-existing` compares (a
    farm whose machines exported or installed the model in different folders saw each other's frames as "written
    by another model"):
    - the `.debug_pkl` records hold the original Python source ranges with the absolute paths of the exporting
      machine's files (the checkout, the venv's site-packages). They are left out: LibTorch loads an archive
      without them (they are optional), and a TorchScript error still shows the serialized code's traceback, only
      not the original Python lines;
    - class constants come in hash-seed order (_sorted_final_constants).
    Written with torch's own archive writer (record alignment; serialization_id and byteorder as torch.jit.save
    writes them; the version record copied)."""
    reader = torch._C.PyTorchFileReader(src)
    writer = torch._C.PyTorchFileWriter(dst)
    names = reader.get_all_records()
    # The format version is `version` or `.data/version` (torch.jit.save writes the latter from version 10 on, e.g.
    # Depth Anything's exports): copied under its own name, so the writer adds none of its own.
    version = next(n for n in ("version", ".data/version") if n in names)
    writer.set_min_version(int(reader.get_record(version).decode().strip()))
    for name in names:
        # byteorder and .data/serialization_id are the writer's own: it writes them itself.
        if name.endswith(".debug_pkl") or name in ("byteorder", ".data/serialization_id"):
            continue
        data = reader.get_record(name)
        if name.startswith("code/") and name.endswith(".py"):
            data = _sorted_final_constants(data)
        writer.write_record(name, data, len(data))
    writer.write_end_of_file()
    del writer


def read_contract(path: str) -> Dict[str, Any]:
    """The contract stored in a TorchScript file; {} when the file has none."""
    files = {EXTRA_FILE: ""}
    torch.jit.load(path, map_location="cpu", _extra_files=files)
    return json.loads(files[EXTRA_FILE]) if files[EXTRA_FILE] else {}
