"""The response cache: a request answered once at a local server is answered from the store after."""

from __future__ import annotations

import sqlite3

import pytest
from fake_openai_server import FakeOpenAIServer, completion

import agentnb as a
from agentnb.models import Backoff
from agentnb.models.response_cache import SESSION


def answering(server: FakeOpenAIServer, key: str = "sk-first") -> a.Agent:
    model = a.OpenAIModel(
        "gpt-4o-mini", base_url=server.url, api_key=key, backoff=Backoff(jitter=0.0)
    )
    return a.Agent("writer", "Write one line.", model)


def numbered_replies():
    """A server script whose n-th reply says ``answer n`` (so a fresh answer is told apart)."""
    count = {"n": 0}

    def reply(body, headers=None):
        count["n"] += 1
        return completion(f"answer {count['n']}", prompt_tokens=100, completion_tokens=7)

    return reply


async def test_a_rerun_is_answered_from_the_store_and_costs_nothing(tmp_path):
    store = tmp_path / "x.db"
    with FakeOpenAIServer(numbered_replies()) as server:
        keys = {"key": "sk-first"}

        async def fn(label: str, trial: int) -> a.RunResult:
            return await a.run(answering(server, keys["key"]), "Say hello.")

        grid = {"label": ["x", "y"]}  # two configurations that send the same request
        first = await a.experiment("c", fn, grid, trials=2, store=store, cache=True, progress=False)
        assert (
            len(server.bodies) == 2
        )  # one per trial: configurations share (common random numbers)
        keys["key"] = "sk-another"  # the key is not part of the cache key
        again = await a.experiment(
            "c", fn, grid, trials=2, store=store, cache=True, resume="new", progress=False
        )
        assert len(server.bodies) == 2  # the rerun was free

    runs, calls = first.runs, first.calls
    assert list(runs["calls"]) == [1, 1, 1, 1]
    by_trial = calls.groupby("trial")["cached"].apply(list).to_dict()
    assert by_trial == {0: [False, True], 1: [False, True]}  # y at each trial reused x's answer
    rerun = again.calls
    assert rerun["cached"].all()
    assert list(rerun["provider_tokens_in"]) == [100] * 4  # the original usage
    original = calls.loc[~calls["cached"]].set_index("trial")["latency_s"]
    kept = list(rerun.groupby("trial")["latency_s"].first())  # the original call's latency
    assert kept == pytest.approx(list(original), abs=0.01)  # (timed around the model call)
    assert all(t > 0.001 for t in kept) and again.runs["wall_s"].max() < min(kept)
    assert (first.runs.loc[[0, 1], "cost"] > 0).all()  # x paid, y and the rerun did not
    assert list(first.runs.loc[[2, 3], "cost"]) == [0.0, 0.0]
    assert list(again.runs["cost"]) == [0.0] * 4
    assert list(again.runs["cached_calls"]) == [1] * 4
    with sqlite3.connect(store) as conn:
        stored = conn.execute("SELECT trial, path, turn, response FROM responses").fetchall()
    assert sorted((t, p, n) for t, p, n, _ in stored) == [(0, "writer", 1), (1, "writer", 1)]
    assert not any("sk-" in text for *_, text in stored)


async def test_trials_and_identical_parallel_branches_get_answers_of_their_own(tmp_path):
    answers = {"n": 0}

    def reply(request: a.ModelRequest):
        if request.agent == "lead" and not request.tool_results:
            return [a.tool_call("helper", input="same"), a.tool_call("helper", input="same")]
        answers["n"] += 1
        return a.say(f"{request.agent} {answers['n']}")

    model = a.FunctionModel(reply, name="fm")

    async def fn(k: int, trial: int) -> a.RunResult:
        helper = a.Agent("helper", "Help.", model)
        return await a.run(a.Agent("lead", "Lead.", model, [helper.as_tool()]), "go")

    store = tmp_path / "x.db"
    await a.experiment("p", fn, {"k": 1}, trials=2, store=store, cache=True, progress=False)
    made = len(model.requests)
    assert made == 8  # per trial: lead, two helpers, lead: none answered from another's
    again = await a.experiment(
        "p", fn, {"k": 1}, trials=2, store=store, cache=True, resume="new", progress=False
    )
    assert len(model.requests) == made
    helpers = again.calls[again.calls["agent"] == "helper"]
    assert helpers["cached"].all() and len(helpers) == 4


async def test_a_cached_call_in_a_streamed_run_streams_its_stored_text(tmp_path):
    model = a.ScriptedModel([a.say("the stored answer")])

    async def fn(k: int, trial: int) -> tuple[list[str], a.RunResult]:
        stream = a.run_streamed(a.Agent("solo", "Answer.", model), "q")
        deltas = [e.text async for e in stream if isinstance(e, a.TextDelta)]
        seen.append("".join(deltas))
        return await stream.result()

    seen: list[str] = []
    store = tmp_path / "x.db"
    await a.experiment("s", fn, {"k": 1}, store=store, cache=True, progress=False)
    again = await a.experiment(
        "s", fn, {"k": 1}, store=store, cache=True, resume="new", progress=False
    )
    assert len(model.requests) == 1  # the script had one step: a second request would fail
    assert seen == ["the stored answer", "the stored answer"]
    assert again.calls["cached"].item() and again.runs["ok"].item()


async def test_cache_modes_read_only_and_write_only(tmp_path):
    model = a.FunctionModel(lambda r: a.say("fresh"), name="fm")

    async def fn(k: int, trial: int) -> a.RunResult:
        return await a.run(a.Agent("solo", "Answer.", model), "q")

    store = tmp_path / "x.db"

    def stored() -> int:
        with sqlite3.connect(store) as conn:
            return int(conn.execute("SELECT count(*) FROM responses").fetchone()[0])

    await a.experiment("m", fn, {"k": 1}, store=store, cache="read", progress=False)
    assert len(model.requests) == 1 and stored() == 0  # read-only: nothing written
    await a.experiment("m", fn, {"k": 1}, store=store, cache="write", resume="new", progress=False)
    assert len(model.requests) == 2 and stored() == 1
    await a.experiment("m", fn, {"k": 1}, store=store, cache="write", resume="new", progress=False)
    assert len(model.requests) == 3 and stored() == 1  # write-only: never read, never overwritten
    cached = await a.experiment(
        "m", fn, {"k": 1}, store=store, cache="read", resume="new", progress=False
    )
    assert len(model.requests) == 3 and cached.calls["cached"].item()
    off = await a.experiment("m", fn, {"k": 1}, store=store, resume="new", progress=False)
    assert len(model.requests) == 4 and not off.calls["cached"].item()


async def test_outside_an_experiment_the_run_loop_talks_to_the_model_itself():
    assert SESSION.get() is None
    model = a.ScriptedModel([a.say("hi")])
    result = await a.run(a.Agent("solo", "Answer.", model), "q")
    assert result.ok and not result.calls["cached"].any() and len(model.requests) == 1


async def test_a_dask_worker_gets_the_trials_answers_and_sends_new_ones_back(tmp_path):
    distributed = pytest.importorskip("distributed")

    async def fn(k: int, trial: int) -> a.RunResult:
        model = a.FunctionModel(lambda r: a.say(f"fresh {trial}"), name="fm")
        return await a.run(a.Agent("solo", "Answer.", model), f"q {trial}")

    store = tmp_path / "x.db"
    found = []
    with (
        distributed.LocalCluster(
            processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        for resume in (None, "new"):
            exp = await a.experiment(
                "d",
                fn,
                {"k": [1, 2]},
                trials=2,
                store=store,
                cache=True,
                resume=resume,
                executor=client.get_executor(),
                progress=False,
            )
            found.append(exp.calls)
    # the first version's jobs were all sent before any answer came back: none could share
    assert not found[0]["cached"].any()
    assert found[1]["cached"].all()  # the worker was sent what the driver had stored
    with sqlite3.connect(store) as conn:  # k=1 and k=2 sent the same request at each trial
        assert conn.execute("SELECT count(*) FROM responses").fetchone() == (2,)


async def test_the_paid_calls_of_an_interrupted_run_are_reused_when_it_runs_again(tmp_path):
    interrupt = {"on": True}

    @a.tool
    def look() -> str:
        """Look."""
        if interrupt["on"]:
            raise KeyboardInterrupt  # Ctrl-C after the first model call was paid for
        return "seen"

    model = a.FunctionModel(
        lambda r: a.say("done") if r.tool_results else a.tool_call("look"), name="fm"
    )

    async def fn(k: int, trial: int) -> a.RunResult:
        return await a.run(a.Agent("solo", "Look, then answer.", model, [look]), "q")

    store = tmp_path / "x.db"
    with pytest.raises(KeyboardInterrupt):
        await a.experiment("i", fn, {"k": 1}, store=store, cache=True, progress=False)
    assert len(model.requests) == 1
    interrupt["on"] = False
    exp = await a.experiment("i", fn, {"k": 1}, store=store, cache=True, progress=False)
    assert len(model.requests) == 2  # only the second call was asked for again
    assert list(exp.calls["cached"]) == [True, False]
    assert exp.runs["ok"].item()
