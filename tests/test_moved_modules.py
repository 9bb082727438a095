"""Modules that moved still import at their old paths (agentnb/_aliases.py), and results pickled
before a move still load: tests/fixtures/ holds pickles made by the code at 61ebd32
(``agentnb.runtime.loop.result``) and before de4da42 (``agentnb.runtime.result``), by
tests/fixtures/make_run_result_pickle.py."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import agentnb as a
from agentnb._aliases import GONE_PACKAGES, MOVED

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_imports_the_module_at_its_new_path(old):
    module = importlib.import_module(old)

    assert module is importlib.import_module(MOVED[old])
    assert module.__spec__ is not None and module.__spec__.name == MOVED[old]
    assert module.__name__ == MOVED[old]


def test_nothing_new_lives_at_an_old_path():
    assert not any(importlib.util.find_spec(new) is None for new in MOVED.values())
    for old in MOVED:
        parent, _, name = old.rpartition(".")
        if parent in GONE_PACKAGES:
            continue
        folder = Path(str(importlib.import_module(parent).__file__)).parent
        assert not (folder / f"{name}.py").exists(), f"{old} is a file again and an alias too"


@pytest.mark.parametrize(
    "fixture", ["run_result_61ebd32.pickle", "run_result_before_de4da42.pickle"]
)
def test_a_result_pickled_before_the_moves_loads(fixture):
    data = (FIXTURES / fixture).read_bytes()
    assert b"agentnb.runtime.loop.result" in data or b"agentnb.runtime.result" in data

    result = pickle.loads(data)

    assert isinstance(result, a.RunResult) and result.ok and result.output == "3"
    assert [(s.kind, s.name) for s in result.spans][:2] == [("run", "adder"), ("agent", "adder")]
    assert result.calls["agent"].tolist() == ["adder", "adder"]
    assert isinstance(result.last_agent, a.AgentSummary)
    assert result.last_agent.tools[0].name == "add"


def test_an_old_path_named_like_a_function_does_not_replace_the_function():
    importlib.import_module("agentnb.runtime.team")

    import agentnb.runtime

    assert callable(agentnb.runtime.team) and agentnb.runtime.team is a.team


def test_old_paths_import_in_a_fresh_interpreter_before_anything_else():
    code = (
        "import pickle, sys\n"
        "from agentnb.runtime.loop.result import RunResult\n"
        "from agentnb.models.openai import OpenAIModel\n"
        f"r = pickle.loads(open({str(FIXTURES / 'run_result_before_de4da42.pickle')!r}, 'rb').read())\n"
        "assert type(r) is RunResult, type(r)\n"
        "print(type(r).__name__, OpenAIModel.__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["RunResult", "OpenAIModel"]
