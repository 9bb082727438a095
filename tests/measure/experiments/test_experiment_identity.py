"""Stored runs are matched by what they are (parameters, trial, item content), never by their
places in the grid or the dataset (issue 32, point 3)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

import agentnb as a


def echoing(made: list[tuple[str, int, str]]):
    """fn: a run whose model answers with the configuration and the item it was given."""

    async def fn(label: str, trial: int, item: str) -> a.RunResult:
        made.append((label, trial, item))
        model = a.ScriptedModel([a.say(f"{label}:{item}")])
        result = await a.run(a.Agent("solo", "Answer.", model), item)
        assert model.requests[0].last_user_text == item  # what the model received
        return result

    return fn


def said(run, **_):
    return len(run.output)  # a score of its own per run, to tell rows apart


async def test_a_grid_value_added_in_front_keeps_the_earlier_rows_under_their_labels(tmp_path):
    store, made = tmp_path / "x.db", []
    fn, items = echoing(made), ["one", "three"]
    await a.experiment("g", fn, {"label": ["b", "cc"]}, dataset=items, store=store, progress=False)
    made.clear()
    exp = await a.experiment(
        "g",
        fn,
        {"label": ["aaaa", "b", "cc"]},
        dataset=items,
        store=store,
        resume="continue",
        progress=False,
    )
    assert sorted(made) == [("aaaa", 0, "one"), ("aaaa", 0, "three")]  # only what is new
    runs = exp.runs
    assert list(zip(runs["label"], runs["config"], runs["item"])) == [
        ("aaaa", 0, 0),
        ("aaaa", 0, 1),
        ("b", 1, 0),
        ("b", 1, 1),
        ("cc", 2, 0),
        ("cc", 2, 1),
    ]
    summary = exp.summary("calls")
    assert list(summary["label"]) == ["aaaa", "b", "cc"] and list(summary["n"]) == [2, 2, 2]
    calls = exp.calls
    assert sorted(set(calls["label"])) == ["aaaa", "b", "cc"] and len(calls) == 6
    spans = exp.spans
    assert len(spans[spans["kind"] == "model_call"]) == 6


async def test_a_reordered_dataset_reuses_each_run_under_its_own_item(tmp_path):
    store, made = tmp_path / "x.db", []
    fn = echoing(made)
    grid = {"label": ["x"]}
    first = await a.experiment(
        "d", fn, grid, dataset=["a", "bb", "ccc"], score=said, store=store, progress=False
    )
    assert list(first.runs["score"]) == [3.0, 4.0, 5.0]  # "x:a", "x:bb", "x:ccc"
    made.clear()
    again = await a.experiment(
        "d",
        fn,
        grid,
        dataset=["ccc", "a", "bb", "dddd"],
        score=said,
        store=store,
        resume="continue",
        progress=False,
    )
    assert made == [("x", 0, "dddd")]  # the three stored ones were not made again
    runs = again.runs
    assert list(runs["item"]) == [0, 1, 2, 3]
    # each row's score is its own item's ("x:ccc" has 5 characters): no run under another's label
    assert list(runs["score"]) == [5.0, 3.0, 4.0, 6.0]
    assert again.dataset == ["ccc", "a", "bb", "dddd"]


async def test_equal_items_are_two_items_and_keep_their_runs_apart(tmp_path):
    store, made = tmp_path / "x.db", []
    fn = echoing(made)
    exp = await a.experiment(
        "e", fn, {"label": ["x"]}, dataset=["same", "same"], store=store, progress=False
    )
    assert len(made) == 2 and len(exp.runs) == 2
    made.clear()
    again = await a.experiment(
        "e", fn, {"label": ["x"]}, dataset=["same", "same"], store=store, progress=False
    )
    assert made == [] and len(again.runs) == 2


async def test_continue_under_a_changed_fn_adds_a_revision_and_overwrites_nothing(tmp_path):
    store = tmp_path / "x.db"

    async def first(k: int, trial: int) -> a.RunResult:
        return await a.run(a.Agent("s", "A.", a.ScriptedModel([a.say("first")])), "q")

    async def second(k: int, trial: int) -> a.RunResult:
        return await a.run(a.Agent("s", "A.", a.ScriptedModel([a.say("second")])), "q")

    await a.experiment("f", first, {"k": [1]}, store=store, progress=False)
    with sqlite3.connect(store) as conn:
        before = conn.execute("SELECT * FROM experiments").fetchall()
    exp = await a.experiment(
        "f", second, {"k": [1, 2]}, store=store, resume="continue", progress=False
    )
    with sqlite3.connect(store) as conn:
        after = conn.execute("SELECT * FROM experiments").fetchall()
        revisions = conn.execute("SELECT revision, fn, grid FROM revisions").fetchall()
    assert after == before  # the first definition, as it was
    assert len(revisions) == 1 and revisions[0][0] == 2
    assert "second" in revisions[0][1] and json.loads(revisions[0][2]) == [{"k": 1}, {"k": 2}]
    assert exp.made == 1 and len(exp.runs) == 2
    # the same changed definition again: no new revision, nothing to make
    again = await a.experiment(
        "f", second, {"k": [1, 2]}, store=store, resume="continue", progress=False
    )
    assert again.made == 0
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT count(*) FROM revisions").fetchone()[0] == 1


SEEDED = textwrap.dedent(
    """
    import sys
    import agentnb as a

    async def fn(tags, trial):
        return await a.run(a.Agent("s", "A.", a.ScriptedModel([a.say(str(sorted(tags)))])), "q")

    grid = {"tags": [{"alpha", "beta", "gamma", "delta"}, frozenset({"x", "y", "z"})]}
    exp = a.run_sync(a.experiment("sets", fn, grid, store=sys.argv[1], progress=False))
    print(exp.made, len(exp.runs))
    """
)


def test_a_set_in_the_grid_is_the_same_experiment_whatever_the_hash_seed(tmp_path):
    script, store = tmp_path / "sets.py", tmp_path / "x.db"
    script.write_text(SEEDED)
    outputs = []
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, str(script), str(store)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.split())
    assert outputs == [["2", "2"], ["0", "2"], ["0", "2"]]  # not "another grid", nothing rerun
    with sqlite3.connect(store) as conn:
        params = sorted(r[0] for r in conn.execute("SELECT params FROM runs"))
    assert params == ['{"tags": ["alpha", "beta", "delta", "gamma"]}', '{"tags": ["x", "y", "z"]}']


async def made_in(order: str, store) -> tuple[list[tuple[int, int]], a.Experiment]:
    """The order an experiment of 3 configurations × 3 trials made its runs in."""
    made: list[tuple[int, int]] = []

    async def fn(k: int, trial: int) -> a.RunResult:
        made.append((k, trial))
        return await a.run(a.Agent("s", "A.", a.ScriptedModel([a.say(f"{k}")])), "q")

    exp = await a.experiment(
        f"o-{order}", fn, {"k": [0, 1, 2]}, trials=3, order=order, store=store, progress=False
    )
    return made, exp


@pytest.mark.parametrize("order", ["trials", "grid", "shuffle"])
async def test_runs_are_made_in_the_order_asked_and_each_keeps_its_place(tmp_path, order):
    made, exp = await made_in(order, tmp_path / "x.db")
    cells = [(k, t) for t in range(3) for k in range(3)]
    if order == "trials":
        assert made == cells  # every configuration at trial 0, then trial 1, ...
    elif order == "grid":
        assert made == sorted(cells)  # each configuration's trials in a block
    else:
        assert sorted(made) == sorted(cells) and made not in (cells, sorted(cells))
        again, _ = await made_in(order, tmp_path / "y.db")
        assert again == made  # seeded by the name (a digest, not hash()): the same order again
    runs = exp.runs.sort_values("position")
    assert list(zip(runs["k"], runs["trial"])) == made  # runs.position is that order
    assert list(exp.runs["k"]) == [0, 0, 0, 1, 1, 1, 2, 2, 2]  # read back in the grid's order


async def test_tool_and_sub_agent_failures_are_counted_per_run(tmp_path):
    def broken(city: str) -> str:
        """Look a city up."""
        raise RuntimeError("the lookup is down")

    async def fn(shape: str, trial: int) -> a.RunResult:
        if shape == "tool":
            script = [a.tool_call("broken", city="Oslo"), a.say("done anyway")]
            lead = a.Agent("lead", "Lead.", a.ScriptedModel(script), tools=[broken])
        else:  # a sub-agent that runs out of turns
            loops = a.ScriptedModel([a.tool_call("broken", city="x")] * 5)
            helper = a.Agent("helper", "Help.", loops, tools=[broken], max_turns=1)
            script = [a.tool_call("helper", input="go"), a.say("done anyway")]
            lead = a.Agent("lead", "Lead.", a.ScriptedModel(script), tools=[helper.as_tool()])
        return await a.run(lead, "q")

    exp = await a.experiment(
        "failures", fn, {"shape": ["tool", "sub"]}, store=tmp_path / "x.db", progress=False
    )
    runs = exp.runs.set_index("shape")
    assert runs["ok"].all()  # the runs ended; what failed inside them is counted
    assert runs.loc["tool", "tool_errors"] == 1 and runs.loc["tool", "subagent_errors"] == 0
    assert runs.loc["sub", "subagent_errors"] == 1
