"""A newcomer's mistakes in a real kernel's cell end in one line that says what to do, not in a
traceback through agentnb's internals (agentnb/notebook/hints.py); other errors keep IPython's
traceback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_client import KernelClient
from notebook_support import execute, running_kernel

from agentnb.errors import UserError
from agentnb.notebook.hints import hint_for


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelClient]:
    with running_kernel(tmp_path_factory.mktemp("jupyter")) as (_, client):
        execute(
            client,
            "import agentnb\nreviewer = agentnb.Agent('r', 'Be brief.', "
            "agentnb.ScriptedModel([agentnb.say('Fine.')] * 3))",
        )
        yield client


def stderr(messages: list[dict[str, Any]]) -> str:
    return "".join(
        m["content"]["text"]
        for m in messages
        if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"
    )


def tracebacks(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"]["ename"] for m in messages if m["msg_type"] == "error"]


@pytest.mark.parametrize(
    ("code", "line"),
    [
        (
            "agentnb.Agent('r', agentnb.ScriptedModel([]), 'Review.')",
            "UserError: Agent('r'): instructions got a model client",
        ),
        (
            "import asyncio\nasyncio.run(agentnb.run(reviewer, 'x'))",
            "Jupyter's event loop is already running; in a notebook cell, write "
            "`result = await agentnb.run(agent, input)`",
        ),
        (
            "result = agentnb.run(reviewer, 'x')\nresult.output",
            "the coroutine was never awaited; in a notebook cell, write `result = await",
        ),
    ],
)
def test_a_newcomers_mistake_is_one_line_saying_what_to_do(kernel: KernelClient, code, line):
    messages = execute(kernel, code)
    shown = stderr(messages)
    assert line in shown
    assert len(shown.strip().splitlines()) == 1  # one line: no traceback
    assert tracebacks(messages) == []
    assert "agentnb/" not in shown


def test_other_errors_keep_their_traceback(kernel: KernelClient):
    messages = execute(kernel, "{}['missing']")
    assert tracebacks(messages) == ["KeyError"]


def test_the_cell_after_a_hint_runs_as_usual(kernel: KernelClient):
    execute(kernel, "agentnb.Agent('r', agentnb.ScriptedModel([]), 'Review.')")
    messages = execute(kernel, "print(agentnb.run_sync(reviewer, 'x').output)")
    printed = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")
    assert printed == "Fine.\n"


def test_hint_for_knows_only_the_mistakes_it_names():
    assert hint_for(UserError("bad")) == "UserError: bad"
    assert hint_for(RuntimeError("something else")) is None
    assert hint_for(AttributeError("'dict' object has no attribute 'output'")) is None


def test_the_coroutine_asyncio_run_refused_never_warns_in_a_later_cell(kernel: KernelClient):
    execute(kernel, "import asyncio\nasyncio.run(agentnb.run(reviewer, 'x'))")
    execute(kernel, "{}['an error: IPython lets go of the last traceback']")
    messages = execute(kernel, "import gc\ngc.collect()\nprint('after')")
    # before: "RuntimeWarning: coroutine 'run' was never awaited", whenever the collector ran
    assert stderr(messages) == ""
    assert tracebacks(messages) == []


def test_a_forgotten_await_leaves_the_coroutine_to_the_user(kernel: KernelClient):
    execute(
        kernel,
        "model = agentnb.ScriptedModel([agentnb.say('Awaited.')])\n"
        "pending = agentnb.run(agentnb.Agent('p', 'Be brief.', model), 'the input')\n"
        "pending.output",
    )
    messages = execute(
        kernel, "print((await pending).output, model.requests[0].messages[-1].content)"
    )
    printed = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")
    assert printed == "Awaited. the input\n"
