"""tools/export.py: a bad checkpoint or argument exits 2 with one line on stderr, never a traceback."""
import pytest
import torch

from tools.export import main


def _stderr_lines(capsys) -> list:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


@pytest.mark.parametrize("command", ["depth-anything-v2", "depth-anything-3"])
def test_a_truncated_checkpoint_is_one_line_and_exit_2(tmp_path, capsys, command):
    whole = tmp_path / "whole.pth"
    torch.save({"weight": torch.zeros(4096)}, whole)
    cut = tmp_path / "cut.pth"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])   # a download that stopped half way
    which = ["--variant", "vits"] if command == "depth-anything-v2" else ["--model", "mono-large"]
    assert main([command, *which, "--checkpoint", str(cut), "--out", str(tmp_path / "m.pt")]) == 2
    lines = _stderr_lines(capsys)
    assert len(lines) == 1, lines
    # the file named, then torch's reason (its first line)
    assert lines[0].startswith("error: ") and f"{cut}: " in lines[0], lines
    assert not (tmp_path / "m.pt").exists()


def test_a_truncated_safetensors_file_is_one_line_and_exit_2(tmp_path, capsys):
    cut = tmp_path / "model.safetensors"
    cut.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":")
    assert main(["depth-anything-v2", "--variant", "vits", "--checkpoint", str(cut), "--out", str(tmp_path / "m.pt")]) == 2
    lines = _stderr_lines(capsys)
    assert len(lines) == 1 and "SafetensorError" in lines[0], lines


@pytest.mark.parametrize("size, why", [(["0", "64"], "0 is not a size in pixels (at least 1)"),
                                       (["x", "64"], "'x' is not a whole number"),
                                       (["-3", "64"], "-3 is not a size in pixels (at least 1)")])
def test_a_bad_size_is_one_line_and_exit_2(tmp_path, capsys, size, why):
    with pytest.raises(SystemExit) as e:
        main(["nuke-style-trace", "--out", str(tmp_path / "n.pt"), "--size", *size])
    assert e.value.code == 2
    lines = _stderr_lines(capsys)
    assert len(lines) == 1, lines
    assert lines[0] == f"python -m tools.export nuke-style-trace: error: argument --size: {why} (--help for usage)"
