"""The ``agentnb`` console script: ``--help`` lists every command, and ``agentnb notebooks DIR``
copies the shipped notebooks (package data) where a user who only ran ``pip install agentnb``
can open them. The built wheel itself is checked by ``.ci/run`` in a second fresh venv."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from agentnb import teaching_notebooks
from agentnb.__main__ import build_parser, main

ROOT = Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(subparsers.choices)


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    assert _commands() == ["notebooks", "reproduce", "serve-local"]
    for command in _commands():
        assert command in shown


def test_no_command_prints_the_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "notebooks" in capsys.readouterr().err


def test_notebooks_copies_every_numbered_notebook_and_says_how_to_open_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "nb"
    assert main(["notebooks", str(dest)]) == 0
    numbered = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert len(numbered) >= 8
    assert sorted(p.name for p in dest.glob("*.ipynb")) == numbered
    assert not (dest / "solutions").exists()  # the answers stay with the facilitator
    # Notebook 08 replays its recording from a relative path: it comes along.
    assert (dest / "recordings" / "review_gpt-4o-mini.jsonl").is_file()
    # A copy, not a link to the installed package: the user's edits stay in DIR.
    copied = dest / "01_quickstart.ipynb"
    assert not copied.is_symlink()
    assert json.loads(copied.read_text())["cells"]
    out = capsys.readouterr().out
    recordings = [p for p in (dest / "recordings").iterdir() if p.is_file()]
    assert (dest / "recordings" / "mcp_server.py").is_file()  # notebook 15 starts it
    assert (
        f"Copied {len(numbered)} notebooks and {len(recordings)} recording files into {dest}."
        in out
    )
    assert f"jupyter lab {dest}" in out


def test_notebooks_keeps_a_participants_work_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "nb"
    main(["notebooks", str(dest)])
    mine = dest / "01_quickstart.ipynb"
    mine.write_text("my answers")
    capsys.readouterr()
    main(["notebooks", str(dest)])
    assert mine.read_text() == "my answers"
    assert "(--force overwrites them): 01_quickstart.ipynb" in capsys.readouterr().out
    main(["notebooks", str(dest), "--force"])
    assert mine.read_text() != "my answers"


def test_the_notebooks_are_read_from_the_package(tmp_path: Path) -> None:
    """From an editable install as from a wheel, the notebooks are found under the package
    (``agentnb/notebooks``), so the same lookup serves both."""
    folder = teaching_notebooks.notebooks_folder()
    assert folder == Path(teaching_notebooks.__file__).parent / "notebooks"
    assert (folder / "01_quickstart.ipynb").is_file()


def test_package_data_names_every_shipped_file_and_only_existing_ones() -> None:
    """What the wheel carries is what ``agentnb notebooks`` copies: each package-data pattern
    matches at least one file, and every file the command copies is matched by a pattern."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["agentnb"]
    package = ROOT / "agentnb"
    for pattern in patterns:
        assert list(package.glob(pattern)), f"package-data pattern {pattern!r} matches nothing"
    matched = {p for pattern in patterns for p in package.glob(pattern)}
    folder = package / "notebooks"
    for relative in teaching_notebooks.shipped_files(folder):
        assert folder / relative in matched, f"{relative} would be missing from the wheel"


def test_serve_local_prints_the_base_url_and_stops_the_server_on_ctrl_c(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import os
    import sys
    from types import SimpleNamespace

    import agentnb.__main__ as cli
    from agentnb.models.local_server import model as local

    tests = Path(__file__).resolve().parent
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tests), *sys.path]))
    monkeypatch.setenv("FAKE_LLAMA", "serve")
    monkeypatch.setattr(local.LocalModel, "_server_module", "fake_llama_server")
    servers: list[local.LocalModel] = []
    made = local.local_model

    def recorded(*args, **kwargs):
        servers.append(made(*args, **kwargs))
        return servers[-1]

    def ctrl_c(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(local, "local_model", recorded)
    monkeypatch.setattr(cli, "time", SimpleNamespace(sleep=ctrl_c))  # the CLI's wait only
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")

    assert main(["serve-local", "--model", str(gguf)]) == 0
    out = capsys.readouterr().out
    assert "Serving tiny at http://127.0.0.1:" in out and "Stopped." in out
    assert "base_url='http://127.0.0.1:" in out
    assert not servers[0].running and servers[0].pid is None


def test_serve_local_with_a_missing_model_says_so_and_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["serve-local", "--model", str(tmp_path / "missing.gguf")]) == 1
    assert "no such file" in capsys.readouterr().err
