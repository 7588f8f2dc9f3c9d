"""Export depth models to depthbatch TorchScript files: `python -m tools.export SUBCOMMAND ...`.

  depth-anything-v2   official .pth or Hugging Face (-hf) .safetensors -> scripted module + depthbatch.json
  video-depth-anything  official Video Depth Anything .pth (relative or --metric) -> multi-frame module + json
  depth-anything-3    DA3MONO-LARGE / DA3METRIC-LARGE model.safetensors -> scripted module + depthbatch.json
  depth-anything-3-views  DA3-SMALL / DA3-BASE (any-view) model.safetensors -> multi-view module (depth, confidence,
                      extrinsics, intrinsics for up to 32 views) + depthbatch.json with a "views" block
  nuke-style-trace    a test model traced at one size, without depthbatch.json (what artists make for Nuke)

Every scripted export is reloaded and compared with the in-memory module (tools/contract.save_scripted).
Exit status: 0 on success, 2 on a bad checkpoint or argument, with one line on stderr (the message names the
offending keys; a truncated or unreadable checkpoint names the file). DEPTHBATCH_EXPORT_TRACEBACK=1 adds the
traceback.
"""
import argparse
import json
import os
import sys
import traceback
from typing import List, Optional


class _OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line (no usage block), exit 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (--help for usage)\n")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a size in pixels (at least 1)")
    return value


def _one_line(e: BaseException) -> str:
    """An exception as one line: its message's first line (torch's run on for pages), whitespace collapsed."""
    text = str(e).strip().split("\n", 1)[0] if str(e).strip() else type(e).__name__
    return " ".join(text.split())


def _parser() -> argparse.ArgumentParser:
    p = _OneLineParser(prog="python -m tools.export", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)

    v2 = sub.add_parser("depth-anything-v2", help="Depth Anything V2 (relative, or metric with --metric-max-depth)")
    v2.add_argument("--variant", required=True, choices=["vits", "vitb", "vitl"],
                    help="vits = Small (Apache-2.0), vitb = Base, vitl = Large (CC-BY-NC-4.0)")
    v2.add_argument("--checkpoint", required=True,
                    help="depth_anything_v2_<variant>.pth (official) or model.safetensors (Hugging Face -hf layout)")
    v2.add_argument("--out", required=True, help="output TorchScript file (.pt)")
    v2.add_argument("--pos-embed-interp", default="official", choices=["official", "hf"],
                    help="position-embedding resize for non-518x518 inputs: 'official' = the official "
                         "DINOv2/Depth-Anything code (default), 'hf' = current transformers (size-based)")
    v2.add_argument("--metric-max-depth", type=float, default=None, metavar="METRES",
                    help="for the Depth-Anything-V2-Metric checkpoints: 20 (Hypersim, indoor) or 80 (VKITTI, outdoor)")
    v2.add_argument("--source", default=None, help="provenance text for the contract (default: the file name)")

    vd = sub.add_parser("video-depth-anything",
                        help="Video Depth Anything (32-frame windows; relative, or metric with --metric)")
    vd.add_argument("--variant", required=True, choices=["vits", "vitb", "vitl"],
                    help="vits = Small (Apache-2.0), vitb = Base, vitl = Large (CC-BY-NC-4.0)")
    vd.add_argument("--metric", action="store_true",
                    help="a Metric-Video-Depth-Anything checkpoint (metric_video_depth_anything_<variant>.pth): "
                         "output in metres, windows not rescaled")
    vd.add_argument("--checkpoint", required=True,
                    help="video_depth_anything_<variant>.pth or metric_video_depth_anything_<variant>.pth (official)")
    vd.add_argument("--out", required=True, help="output TorchScript file (.pt)")
    vd.add_argument("--source", default=None, help="provenance text for the contract (default: the file name)")

    v3 = sub.add_parser("depth-anything-3", help="Depth Anything 3 monocular models")
    v3.add_argument("--model", required=True, choices=["mono-large", "metric-large"],
                    help="mono-large = DA3MONO-LARGE (relative depth), metric-large = DA3METRIC-LARGE")
    v3.add_argument("--checkpoint", required=True, help="the model's model.safetensors (or a .pth state dict)")
    v3.add_argument("--out", required=True, help="output TorchScript file (.pt)")
    v3.add_argument("--sky", default="clamp", choices=["clamp", "none"],
                    help="clamp: sky pixels get the 0.99 quantile of non-sky depth (as the official forward); "
                         "none: raw network depth everywhere")
    v3.add_argument("--sky-matte", action="store_true",
                    help="also return the sky head, declared as the extra output 'sky' (EXR sky.A when a job "
                         "asks for output.passes [sky])")
    v3.add_argument("--source", default=None, help="provenance text for the contract")
    v3.add_argument("--net", default="vitl", choices=["vitl", "vitb", "vits"], help=argparse.SUPPRESS)  # tests only

    vv = sub.add_parser("depth-anything-3-views",
                        help="Depth Anything 3 any-view models: depth, confidence and cameras for a set of views")
    vv.add_argument("--model", required=True, choices=["small", "base"],
                    help="small = DA3-SMALL, base = DA3-BASE (both Apache-2.0)")
    vv.add_argument("--checkpoint", required=True, help="the model's model.safetensors (or a .pth state dict)")
    vv.add_argument("--out", required=True, help="output TorchScript file (.pt)")
    vv.add_argument("--source", default=None, help="provenance text for the contract")
    vv.add_argument("--net", default=None, choices=["vits", "vitb"], help=argparse.SUPPRESS)  # tests only
    vv.add_argument("--size", default=None, nargs=2, type=_positive, metavar=("H", "W"),
                    help=argparse.SUPPRESS)  # tests only: the contract's input.size

    nk = sub.add_parser("nuke-style-trace", help="test model traced at one fixed size, no depthbatch.json")
    nk.add_argument("--out", required=True)
    nk.add_argument("--size", required=True, nargs=2, type=_positive, metavar=("H", "W"))
    nk.add_argument("--inner", default="tiny",
                    help="luma | tiny | da-v2-small | PATH to a TorchScript model (default: tiny)")
    nk.add_argument("--seed", type=int, default=0)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "depth-anything-v2":
            from tools.depth_anything_v2 import export
            contract = export(args.checkpoint, args.out, args.variant, pos_embed_interp=args.pos_embed_interp,
                              max_depth=args.metric_max_depth, source=args.source)
        elif args.command == "video-depth-anything":
            from tools.video_depth_anything import export
            contract = export(args.checkpoint, args.out, args.variant, metric=args.metric, source=args.source)
        elif args.command == "depth-anything-3":
            from tools.depth_anything_3 import export
            contract = export(args.checkpoint, args.out, args.model, sky=args.sky, source=args.source, net=args.net,
                              sky_matte=args.sky_matte)
        elif args.command == "depth-anything-3-views":
            from tools.depth_anything_3_views import DEFAULT_SIZE_HW, export
            contract = export(args.checkpoint, args.out, args.model, source=args.source, net=args.net,
                              size_hw=tuple(args.size) if args.size else DEFAULT_SIZE_HW)
        else:
            from tools.nuke_style import make
            make(args.out, tuple(args.size), inner=args.inner, seed=args.seed)
            print(f"wrote {args.out}: traced at 1x3x{args.size[0]}x{args.size[1]}, no depthbatch.json")
            return 0
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - a truncated checkpoint, a size the network cannot take: one line
        if os.environ.get("DEPTHBATCH_EXPORT_TRACEBACK"):
            traceback.print_exc()
        where = getattr(args, "checkpoint", None) or getattr(args, "inner", None) or ""
        print(f"error: {args.command}{' ' + where if where else ''}: {type(e).__name__}: {_one_line(e)}",
              file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    print(json.dumps(contract, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
