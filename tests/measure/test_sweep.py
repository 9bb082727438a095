"""agentnb.sweep: a grid of configurations, one row per model call, failures kept as data."""

from __future__ import annotations

import concurrent.futures

import pytest

import agentnb as a
from agentnb.measure.sweeps import CONFIG_COLUMNS, configurations, sweep
from agentnb.trace import CALL_COLUMNS, canonical_request

CLAUSE = "The supplier guarantees 100% availability of the service. " * 3

# Columns that differ from one execution to the next (times, ids): ignored when comparing frames.
VOLATILE = [
    "run_id",
    "span_id",
    "parent_id",
    "started",
    "ended",
    "latency_s",
    "wait_s",
    "wall_s",
    "critical_s",
]


def review(k: int, opinion: str = "acceptable") -> object:
    """An orchestrator that consults k scripted reviewers in one turn (a coroutine: fn may return one)."""
    reviewers = [
        a.Agent(f"r{i}", "Review the clause.", a.ScriptedModel([a.say(opinion)])) for i in range(k)
    ]
    plan = [a.tool_call(f"r{i}", input=CLAUSE) for i in range(k)]
    coordinator = a.Agent(
        "coordinator", "Consult all.", a.ScriptedModel([plan, a.say("Synthesis.")]), reviewers
    )
    return a.run(coordinator, CLAUSE)


async def test_rows_are_model_calls_with_the_parameters_as_columns():
    models: dict[int, list] = {}

    async def fn(k: int, opinion: str):
        result = await review(k, opinion)
        models[k] = [r for s in result.trace.spans if s.kind == "model_call" for r in [s]]
        return result

    frame = await sweep(fn, {"k": [1, 3], "opinion": "fine"}, progress=False)

    assert list(frame.columns) == ["k", "opinion", *CONFIG_COLUMNS, *CALL_COLUMNS]
    assert frame.attrs["params"] == ["k", "opinion"]
    # k=1: coordinator twice + 1 reviewer; k=3: coordinator twice + 3 reviewers
    assert list(frame["k"]) == [1, 1, 1, 3, 3, 3, 3, 3]
    assert set(frame["opinion"]) == {"fine"}
    assert list(frame["config"]) == [0, 0, 0, 1, 1, 1, 1, 1]
    assert list(frame.loc[frame["k"] == 3, "depth"]) == [0, 1, 1, 1, 0]
    assert frame["ok"].all() and frame["error"].isna().all()
    assert (frame["wall_s"] > 0).all() and frame["critical_s"].notna().all()
    assert frame.groupby("k")["run_id"].nunique().tolist() == [1, 1]


async def test_a_row_holds_what_the_model_was_sent():
    captured = []

    async def fn(k: int):
        reviewer = a.ScriptedModel([a.say("ok")])
        coordinator = a.ScriptedModel([a.tool_call("r", input=CLAUSE), a.say("done")])
        captured.extend([coordinator, reviewer])
        agent = a.Agent("c", "Consult.", coordinator, [a.Agent("r", "Review.", reviewer)])
        return await a.run(agent, CLAUSE)

    frame = await sweep(fn, {"k": [1]}, progress=False)

    sent = sum(len(canonical_request(r)) for m in captured for r in m.requests)
    assert frame["chars_in"].sum() == sent
    assert len(frame) == sum(len(m.requests) for m in captured) == 3


async def test_repeat_runs_each_configuration_again():
    frame = await sweep(review, {"k": [1, 2]}, repeat=2, progress=False)

    per_run = frame.groupby(["k", "repeat"]).size()
    assert per_run.to_dict() == {(1, 0): 3, (1, 1): 3, (2, 0): 4, (2, 1): 4}
    assert frame["run_id"].nunique() == 4


async def test_an_error_in_one_configuration_is_recorded_and_the_sweep_goes_on():
    def fn(k: int):
        if k == 2:
            raise ValueError("no reviewers for k=2")
        return review(k)

    frame = await sweep(fn, {"k": [1, 2, 3]}, progress=False)

    failed = frame[frame["k"] == 2]
    assert len(failed) == 1  # the configuration stays visible, with empty call columns
    assert failed["error"].iloc[0] == "ValueError: no reviewers for k=2"
    assert not failed["ok"].iloc[0] and failed["span_id"].isna().all()
    assert frame.loc[frame["k"] != 2, "ok"].all()
    assert list(frame.loc[frame["k"] == 3, "depth"]) == [0, 1, 1, 1, 0]


async def test_a_run_that_ends_not_ok_keeps_its_calls_and_its_error():
    async def fn(turns: int):
        model = a.ScriptedModel([a.tool_call("missing")] * turns)
        return await a.run(a.Agent("looper", "Loop.", model, max_turns=turns), "go")

    frame = await sweep(fn, {"turns": [2]}, progress=False)

    assert len(frame) == 2 and not frame["ok"].any()
    assert frame["error"].iloc[0].startswith("MaxTurnsExceeded: looper used all 2 turns")


async def test_fan_outs_and_lists_of_results_are_gathered():
    class FanOutLike:  # duck-typed like agentnb.parallel's FanOut: .calls, .ok, .missing
        def __init__(self, results):
            self.results = results
            self.ok = False
            self.missing = {"technical": "did not answer within 1 s"}

        @property
        def calls(self):
            import pandas as pd

            return pd.concat([r.calls for r in self.results.values()], ignore_index=True)

    async def fn(shape: str):
        runs = [await review(1), await review(2)]
        return FanOutLike({"a": runs[0], "b": runs[1]}) if shape == "fan" else runs

    frame = await sweep(fn, {"shape": ["fan", "list"]}, progress=False)

    assert frame.groupby("shape").size().to_dict() == {"fan": 7, "list": 7}
    fan = frame[frame["shape"] == "fan"]
    assert fan["error"].iloc[0] == "missing: technical (did not answer within 1 s)"
    assert frame.loc[frame["shape"] == "list", "ok"].all()


def test_grids_expand_as_products_or_lists_and_reject_clashing_names():
    assert configurations({"k": [1, 2], "mode": ["inline", "handle"]}) == [
        {"k": 1, "mode": "inline"},
        {"k": 1, "mode": "handle"},
        {"k": 2, "mode": "inline"},
        {"k": 2, "mode": "handle"},
    ]
    assert configurations([{"setup": "generalist"}, {"setup": "tools", "k": 1}]) == [
        {"setup": "generalist"},
        {"setup": "tools", "k": 1},
    ]
    with pytest.raises(a.UserError, match="'model' -> 'model_param'"):
        configurations({"model": ["gpt-4o-mini"]})
    with pytest.raises(a.UserError, match="no values"):
        configurations({"k": []})


async def test_bad_arguments_are_user_errors():
    with pytest.raises(a.UserError, match="repeat"):
        await sweep(review, {"k": [1]}, repeat=0)
    with pytest.raises(a.UserError, match="executor"):
        await sweep(review, {"k": [1]}, executor=object(), progress=False)


async def test_progress_bar_counts_runs(capsys):
    await sweep(review, {"k": [1, 2]}, repeat=2, progress=True)
    assert "4/4" in capsys.readouterr().err

    await sweep(review, {"k": [1, 2]}, progress=False)
    assert capsys.readouterr().err == ""


def _comparable(frame):
    return frame.drop(columns=VOLATILE).reset_index(drop=True)


async def test_a_thread_pool_executor_gives_the_local_frame():
    local = await sweep(review, {"k": [1, 2, 3]}, repeat=2, progress=False)
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        remote = await sweep(review, {"k": [1, 2, 3]}, repeat=2, progress=False, executor=pool)

    assert len(local) == 24
    assert _comparable(remote).equals(_comparable(local))


async def test_a_dask_cluster_executor_gives_the_local_frame():
    distributed = pytest.importorskip("distributed")
    local = await sweep(review, {"k": [1, 2]}, repeat=2, progress=False)
    with (
        distributed.LocalCluster(
            processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        remote = await sweep(
            review, {"k": [1, 2]}, repeat=2, progress=False, executor=client.get_executor()
        )

    assert remote["run_id"].nunique() == 4  # Dask ran every repetition (no deduplication)
    assert _comparable(remote).equals(_comparable(local))


async def test_a_job_the_executor_cannot_run_is_recorded():
    class Refusing:
        def submit(self, fn, *args):
            raise RuntimeError("cluster is shutting down")

    frame = await sweep(review, {"k": [1]}, progress=False, executor=Refusing())

    assert frame["error"].tolist() == ["RuntimeError: cluster is shutting down"]
