"""The store's writer: nothing made is lost without an error saying how many runs were made,
stored and not stored (issue 32, point 1)."""

from __future__ import annotations

import sqlite3

import pytest
from fake_openai_server import FakeOpenAIServer, completion

import agentnb as a
from agentnb.measure.experiments import writer as writer_module
from agentnb.measure.experiments.writer import StoreFailed
from agentnb.models import Backoff


def wide_usage(body, headers=None):
    """A server that reports usage no 64-bit column holds, and a negative count."""
    return completion("hi", prompt_tokens=10**20, completion_tokens=-5)


async def test_usage_beyond_64_bits_is_stored_as_its_digits_and_every_run_is_kept(tmp_path):
    store = tmp_path / "x.db"
    with FakeOpenAIServer(wide_usage) as server:

        async def fn(k: int, trial: int) -> a.RunResult:
            model = a.OpenAIModel(
                "gpt-4o-mini", base_url=server.url, api_key="sk-x", backoff=Backoff(jitter=0.0)
            )
            return await a.run(a.Agent("w", "W.", model), f"question {k}")

        grid = {"k": [1, 2, 3]}
        exp = await a.experiment(
            "wide", fn, grid, trials=4, store=store, cache=True, progress=False
        )
        assert len(server.bodies) == 12
        assert sorted(b["messages"][-1]["content"] for b in server.bodies) == sorted(
            f"question {k}" for k in (1, 2, 3) for _ in range(4)
        )
        again = await a.experiment(
            "wide", fn, grid, trials=4, store=store, cache=True, resume="new", progress=False
        )
        assert len(server.bodies) == 12  # the rerun's answers came from the cache

    assert (exp.made, exp.stored, exp.lost, exp.refused) == (12, 12, 0, 0)
    assert exp.runs["ok"].all() and len(exp.runs) == 12
    calls = exp.calls
    assert list(calls["provider_tokens_in"]) == [str(10**20)] * 12  # lossless, as text
    # a negative count is no count: read as not reported (models.types.token_count)
    assert list(calls["provider_tokens_out"]) == [None] * 12
    assert again.calls["cached"].all()
    assert int(again.calls["provider_tokens_in"].iloc[0]) == 10**20


class OddEvents:
    """A model whose answers carry an event JSON cannot write, or one nested too deep to."""

    name = "odd"

    def __init__(self, deep: bool) -> None:
        self.deep = deep
        self.requests: list[a.ModelRequest] = []

    async def request(self, request: a.ModelRequest) -> a.ModelResponse:
        self.requests.append(request)
        value: object = object()
        if self.deep:
            for _ in range(100_000):
                value = [value]
        return a.ModelResponse(text="fine", events=[{"event": "odd", "value": value}])


@pytest.mark.parametrize("deep", [False, True], ids=["not-json", "nested-too-deep"])
async def test_an_answer_json_cannot_write_is_stored_or_refused_per_run_never_lost(tmp_path, deep):
    model = OddEvents(deep)

    async def fn(k: int, trial: int) -> a.RunResult:
        return await a.run(a.Agent("w", "W.", model), f"q{k}")

    exp = await a.experiment(
        "odd", fn, {"k": [1, 2, 3]}, trials=4, store=tmp_path / "x.db", cache=True, progress=False
    )
    assert len(model.requests) == 12
    assert (exp.made, exp.stored, exp.lost) == (12, 12, 0)
    runs = exp.runs
    assert len(runs) == 12
    if deep:  # refused one run at a time, saying why; each runs again on resume
        assert exp.refused == 12 and not runs["ok"].any()
        assert runs["error"].str.contains("the store could not hold this run").all()
    else:  # the object by its repr: the run and its cached answer are kept
        assert exp.refused == 0 and runs["ok"].all()
        with sqlite3.connect(tmp_path / "x.db") as conn:
            texts = [r[0] for r in conn.execute("SELECT response FROM responses")]
        assert len(texts) == 12 and all("<object object at" in t for t in texts)


async def solo(k: int, trial: int) -> a.RunResult:
    return await a.run(a.Agent("solo", "Answer.", a.ScriptedModel([a.say("x" * 20_000)])), f"{k}")


async def test_a_full_disk_keeps_what_fit_and_counts_what_did_not(tmp_path, monkeypatch):
    store = tmp_path / "x.db"
    await a.experiment("full", solo, {"k": [0]}, store=store, progress=False)
    real = writer_module.connect

    def small_disk(path, **kwargs):  # the writer's connection: a few pages left
        conn = real(path, **kwargs)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 8}")
        return conn

    monkeypatch.setattr(writer_module, "connect", small_disk)
    grid = {"k": list(range(80))}
    with pytest.raises(StoreFailed, match=r"x.db' is full.*Runs made: 79, stored: \d+") as caught:
        await a.experiment("full", solo, grid, store=store, resume="continue", progress=False)
    failed = caught.value
    assert failed.made == 79  # k=0 was stored already
    assert 0 < failed.stored < 79 and failed.lost == 79 - failed.stored
    kept = a.open_experiment("full", store).runs
    assert len(kept) == 1 + failed.stored  # every run counted stored is there, whole
    assert failed.experiment.stored == failed.stored and len(failed.experiment.runs) == len(kept)
    unstored = {(r["params"], r["trial"]) for r in failed.unstored}
    assert len(unstored) == failed.lost
    assert not unstored & {(f'{{"k": {k}}}', 0) for k in kept["k"]}  # none both
    assert all(r["ok"] for r in failed.unstored)  # the results made, handed back

    monkeypatch.setattr(writer_module, "connect", real)  # space again: resume finishes it
    done = await a.experiment("full", solo, grid, store=store, resume="continue", progress=False)
    assert done.made == failed.lost and done.lost == 0
    runs = done.runs
    assert len(runs) == 80 and runs["ok"].all() and not runs.duplicated(["k", "trial"]).any()


async def test_a_writer_that_breaks_stops_the_experiment_naming_the_cause(tmp_path, monkeypatch):
    real = writer_module._write_at_once

    def breaks_from_the_fifth(conn, batch):
        if any(item[0]["position"] >= 4 for item in batch):  # the fifth run, and every after
            raise RuntimeError("a bug in the writer")
        return real(conn, batch)

    monkeypatch.setattr(writer_module, "_write_at_once", breaks_from_the_fifth)
    made = []

    async def fn(k: int, trial: int) -> a.RunResult:
        made.append(k)
        return await solo(k, trial)

    with pytest.raises(
        StoreFailed, match=r"stopped writing: RuntimeError: a bug in the writer.*Runs made"
    ) as caught:
        await a.experiment(
            "bug", fn, {"k": list(range(40))}, store=tmp_path / "x.db", progress=False
        )
    failed = caught.value
    assert failed.stored == 4  # the four before the failure
    assert failed.made == len(made)  # every run made is counted, the unwritten ones too
    assert failed.lost == len(failed.unstored) == failed.made - 4
    runs = a.open_experiment("bug", tmp_path / "x.db").runs
    assert sorted(runs["k"]) == made[:4] == [0, 1, 2, 3]


async def test_in_a_large_batch_every_call_and_span_is_stored_under_its_own_run(
    tmp_path, monkeypatch
):
    """Runs of three, one and no model calls in one batch, many more rows than one INSERT
    statement takes (the writer inserts a few dozen rows per statement): each row is stored
    under the run that made it."""
    monkeypatch.setattr(writer_module, "FLUSH_S", 60.0)  # one batch, written at the end
    monkeypatch.setattr(writer_module, "_MAX_VALUES", 100)  # a run's rows span statements too

    async def fn(shape: str, trial: int) -> a.RunResult:
        if shape == "none":
            raise ValueError("no run")
        lead = a.Agent("reviewer", "R.", a.ScriptedModel([a.say(f"{shape} {trial}")]))
        if shape == "tree":
            lead = a.Agent(
                "lead",
                "L.",
                a.ScriptedModel([a.tool_call("reviewer", input="x"), a.say(f"{trial}")]),
                [lead.as_tool()],
            )
        return await a.run(lead, f"{shape} {trial}")

    exp = await a.experiment(
        "batch",
        fn,
        {"shape": ["tree", "flat", "none"]},
        trials=40,
        store=tmp_path / "x.db",
        progress=False,
    )
    assert (exp.made, exp.stored, exp.lost) == (120, 120, 0)
    runs = exp.runs.set_index(["shape", "trial"]).sort_index()
    expected = {"tree": 3, "flat": 1, "none": 0}
    assert all(runs.loc[(s, t), "calls"] == n for s, n in expected.items() for t in range(40))
    assert list(runs.groupby("shape")["ok"].sum()) == [40, 0, 40]  # flat, none, tree
    calls = exp.calls
    spans = exp.spans
    for (shape, trial), group in calls.groupby(["shape", "trial"]):
        assert len(group) == expected[shape]
        assert group["chars_in"].sum() == runs.loc[(shape, trial), "chars_in"]
        (run_id,) = set(group["run_id"])
        config = ["tree", "flat", "none"].index(shape)
        mine = spans[(spans["config"] == config) & (spans["trial"] == trial)]
        assert set(mine["run_id"]) == {run_id}
        assert (mine["kind"] == "model_call").sum() == expected[shape]
    assert len(calls) == 40 * 4
