"""agentnb.experiment: runs stored as they end, read back, resumed, scored, on executors."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

import agentnb as a
from agentnb.errors import UserError


def reviewed(shape: str, trial: int, model: a.ModelClient | None = None) -> a.Agent:
    """A lead that answers alone (``flat``) or asks a reviewer first (``tree``)."""

    def reply(request: a.ModelRequest) -> a.Any:  # type: ignore[name-defined]
        if request.agent == "lead" and shape == "tree" and not request.tool_results:
            return a.tool_call("reviewer", input=f"check trial {trial}")
        return a.say(f"{request.agent} {shape} {trial}: {request.last_user_text}")

    model = model or a.FunctionModel(reply, name="fm")
    reviewer = a.Agent("reviewer", "Review.", model)
    tools = [reviewer.as_tool()] if shape == "tree" else []
    return a.Agent("lead", "Lead.", model, tools)


async def contract(shape: str, trial: int, item: str | None = None) -> a.RunResult:
    return await a.run(reviewed(shape, trial), item or "the contract")


async def test_each_run_is_stored_with_its_calls_and_read_back_as_frames(tmp_path):
    seen: list[tuple[str, int, str]] = []

    async def fn(shape: str, trial: int, item: str) -> a.RunResult:
        seen.append((shape, trial, item))
        return await contract(shape, trial, item)

    def score(run: a.RunResult, shape: str, trial: int, item: str) -> bool:
        return item in run.output

    store = tmp_path / "x.db"
    exp = await a.experiment(
        "review",
        fn,
        {"shape": ["flat", "tree"]},
        trials=2,
        dataset=["A", "B"],
        score=score,
        store=store,
        progress=False,
    )

    assert sorted(seen) == sorted((s, t, i) for s in ("flat", "tree") for t in (0, 1) for i in "AB")
    runs = exp.runs
    assert len(runs) == 8
    assert list(runs.columns[:4]) == ["shape", "config", "trial", "item"]
    assert runs["ok"].all() and runs["score"].map(type).eq(bool).all() and runs["score"].all()
    assert set(runs.loc[runs["shape"] == "tree", "calls"]) == {3}  # lead, reviewer, lead
    assert set(runs.loc[runs["shape"] == "flat", "calls"]) == {1}
    calls = exp.calls
    assert len(calls) == 16
    assert calls.attrs["params"] == ["shape"]
    tree = calls[(calls["shape"] == "tree") & (calls["trial"] == 1) & (calls["item"] == 0)]
    assert list(tree["agent"]) == ["lead", "reviewer", "lead"]
    assert (
        tree["chars_in"].sum()
        == runs.query("shape == 'tree' and trial == 1 and item == 0")["chars_in"].item()
    )
    assert not calls["cached"].any()
    assert {"run", "agent", "model_call", "tool_call"} <= set(exp.spans["kind"])
    summary = exp.summary("calls")
    assert list(summary.columns) == ["shape", "n", "mean", "ci_low", "ci_high", "method"]
    assert list(summary["n"]) == [4, 4] and list(summary["mean"]) == [1.0, 3.0]
    # the store is a real database: SQL reads it as well
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            "2",
        )
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == (8,)
    assert exp.query("SELECT sum(calls) AS n FROM runs")["n"].item() == 16


async def test_open_experiment_reads_it_back_in_a_new_process(tmp_path):
    store = tmp_path / "x.db"
    await a.experiment(
        "review", contract, {"shape": ["flat"]}, trials=3, store=store, progress=False
    )
    code = textwrap.dedent(f"""
        import agentnb
        exp = agentnb.open_experiment("review", store={str(store)!r})
        print(len(exp.runs), len(exp.calls), exp.version)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["3", "3", "1"]


async def test_a_rerun_skips_what_ended_and_reruns_what_failed_keeping_its_row(tmp_path):
    store = tmp_path / "x.db"
    calls: list[tuple[str, int]] = []
    broken = {("tree", 1)}

    async def fn(shape: str, trial: int) -> a.RunResult:
        calls.append((shape, trial))
        if (shape, trial) in broken:
            raise RuntimeError("the reviewer is down")
        return await contract(shape, trial)

    grid = {"shape": ["flat", "tree"]}
    first = await a.experiment("r", fn, grid, trials=2, store=store, progress=False)
    assert len(calls) == 4
    assert list(first.runs["ok"]) == [True, True, True, False]
    assert first.runs["error"].iloc[3] == "RuntimeError: the reviewer is down"

    calls.clear()
    broken.clear()
    second = await a.experiment("r", fn, grid, trials=3, store=store, progress=False)
    assert sorted(calls) == [
        ("flat", 2),
        ("tree", 1),
        ("tree", 2),
    ]  # the failed one and the new trial
    runs = second.runs
    assert len(runs) == 6 and runs["ok"].all()
    history = second.history()
    assert len(history) == 7
    old = history[(history["shape"] == "tree") & (history["trial"] == 1)]
    assert list(old["attempt"]) == [1, 2] and list(old["ok"]) == [False, True]


async def test_a_changed_grid_or_fn_under_the_same_name_is_refused_unless_resume_says(tmp_path):
    store = tmp_path / "x.db"
    await a.experiment("r", contract, {"shape": ["flat"]}, store=store, progress=False)
    with pytest.raises(UserError, match=r"another grid.*resume='continue'.*resume='new'"):
        await a.experiment("r", contract, {"shape": ["flat", "tree"]}, store=store, progress=False)

    async def other(shape: str, trial: int) -> a.RunResult:
        return await contract(shape, trial)

    with pytest.raises(UserError, match="another fn"):
        await a.experiment("r", other, {"shape": ["flat"]}, store=store, progress=False)

    kept = await a.experiment(
        "r", contract, {"shape": ["flat", "tree"]}, store=store, resume="continue", progress=False
    )
    assert kept.version == 1 and len(kept.history()) == 2  # flat kept, tree run
    new = await a.experiment(
        "r", other, {"shape": ["tree"]}, store=store, resume="new", progress=False
    )
    assert new.version == 2 and list(new.runs["shape"]) == ["tree"]
    assert a.open_experiment("r", store).version == 2
    assert len(a.open_experiment("r", store, version=1).runs) == 2


async def test_a_score_that_raises_marks_that_score_and_the_experiment_goes_on(tmp_path):
    def score(run: a.RunResult, shape: str, trial: int) -> float:
        if trial == 1:
            raise ValueError("no expected answer")
        if trial == 2:
            return "good"  # type: ignore[return-value]
        return len(run.output)

    exp = await a.experiment(
        "s",
        contract,
        {"shape": "flat"},
        trials=3,
        score=score,
        store=tmp_path / "x.db",
        progress=False,
    )
    runs = exp.runs
    assert runs["ok"].all()
    assert runs["score"].iloc[0] == len("lead flat 0: the contract")
    assert runs["score_error"].iloc[1] == "ValueError: no expected answer"
    assert "score returned str 'good'; return a number or a bool" in runs["score_error"].iloc[2]
    assert exp.summary("score")["n"].item() == 1


async def test_a_judge_agents_calls_are_counted_apart_from_the_system_under_test(tmp_path):
    judge_model = a.ScriptedModel([a.say("PASS")] * 2)
    judge = a.Agent("judge", "Say PASS or FAIL.", judge_model)

    async def score(run: a.RunResult, shape: str, trial: int) -> bool:
        verdict = await a.run(judge, f"Is this right? {run.output}")
        return verdict.output == "PASS"

    exp = await a.experiment(
        "j",
        contract,
        {"shape": "tree"},
        trials=2,
        score=score,
        store=tmp_path / "x.db",
        progress=False,
    )
    runs = exp.runs
    assert list(runs["calls"]) == [3, 3]  # the system under test only
    assert list(runs["judge_calls"]) == [1, 1]
    assert list(runs["judge_chars_in"]) == [
        len(a.canonical_request(r)) for r in judge_model.requests
    ]
    assert judge_model.requests[0].last_user_text == "Is this right? lead tree 0: the contract"
    assert len(exp.calls) == 6  # judge calls are not the system's calls


async def test_ctrl_c_stops_cleanly_keeping_what_ended_and_a_rerun_finishes(tmp_path):
    store = tmp_path / "x.db"
    count = {"n": 0}

    async def fn(shape: str, trial: int) -> a.RunResult:
        count["n"] += 1
        if count["n"] == 4:
            raise KeyboardInterrupt
        return await contract(shape, trial)

    with pytest.raises(KeyboardInterrupt):
        await a.experiment("c", fn, {"shape": "flat"}, trials=6, store=store, progress=False)
    assert len(a.open_experiment("c", store).runs) == 3  # the runs that ended, committed
    done = await a.experiment("c", fn, {"shape": "flat"}, trials=6, store=store, progress=False)
    assert count["n"] == 7 and len(done.runs) == 6 and done.runs["ok"].all()


KILLED = """
import asyncio, sys, time
import agentnb as a

async def fn(k, trial):
    print("run", k, trial, flush=True)
    model = a.ScriptedModel([a.say(f"answer {k} {trial}")], latency=0.02)
    return await a.run(a.Agent("solo", "Answer.", model), "question")

exp = asyncio.run(a.experiment("killed", fn, {"k": [0, 1]}, trials=40, store=sys.argv[1],
                                progress=False))
print("done", len(exp.runs), flush=True)
"""


def test_a_process_killed_mid_experiment_loses_at_most_its_runs_in_flight(tmp_path):
    script, store = tmp_path / "killed.py", tmp_path / "x.db"
    script.write_text(KILLED)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen(
        [sys.executable, str(script), str(store)], stdout=subprocess.PIPE, text=True, env=env
    ) as proc:
        assert proc.stdout is not None
        started = 0
        for line in proc.stdout:
            started += line.startswith("run")
            if started == 30:
                break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    kept = a.open_experiment("killed", store).runs
    stored = len(kept)
    assert 0 < stored < 30
    # the runs are made in order (interleaved by trial): what is stored is the first of
    # them, nothing lost between
    assert sorted(kept["position"]) == list(range(stored))
    assert list(kept.sort_values("position")["k"]) == [p % 2 for p in range(stored)]
    with sqlite3.connect(store) as conn:  # every stored run is whole: its call is there
        whole = conn.execute("SELECT count(*) FROM calls").fetchone()[0]
    assert whole == stored

    rerun = subprocess.run(
        [sys.executable, str(script), str(store)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    lines = rerun.stdout.splitlines()
    assert lines[-1] == "done 80"
    assert sum(line.startswith("run") for line in lines) == 80 - stored  # nothing run twice
    runs = a.open_experiment("killed", store).runs
    assert runs["ok"].all() and not runs.duplicated(["k", "trial"]).any()


async def test_bad_arguments_are_user_errors_before_anything_runs(tmp_path):
    store = tmp_path / "x.db"
    with pytest.raises(UserError, match="clash"):
        await a.experiment("x", contract, {"trial": [1]}, store=store, progress=False)
    with pytest.raises(UserError, match="no stable text"):
        await a.experiment("x", contract, {"shape": [object()]}, store=store, progress=False)
    with pytest.raises(UserError, match="cache"):
        await a.experiment("x", contract, {"shape": "flat"}, cache="yes", store=store)
    with pytest.raises(UserError, match="resume"):
        await a.experiment("x", contract, {"shape": "flat"}, resume="again", store=store)
    with pytest.raises(UserError, match="dataset"):
        await a.experiment("x", contract, {"shape": "flat"}, dataset=[], store=store)
    with pytest.raises(UserError, match="There is no store at .*x.db'; run agentnb.experiment"):
        a.open_experiment("nope", store)  # and checking arguments created none
    await a.experiment("x", contract, {"shape": "flat"}, store=store, progress=False)
    with pytest.raises(UserError, match=r"No experiment 'nope' in .* it holds \['x'\]"):
        a.open_experiment("nope", store)


async def test_on_a_thread_pool_workers_send_rows_back_and_the_driver_writes(tmp_path):
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        exp = await a.experiment(
            "t",
            contract,
            {"shape": ["flat", "tree"]},
            trials=3,
            store=tmp_path / "x.db",
            executor=pool,
            progress=False,
        )
    assert len(exp.runs) == 6 and exp.runs["ok"].all()
    assert len(exp.calls) == 12


async def test_a_dask_cluster_runs_the_experiment_without_a_shared_disk(tmp_path):
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        exp = await a.experiment(
            "d",
            contract,
            {"shape": ["flat", "tree"]},
            trials=2,
            store=tmp_path / "x.db",
            executor=client.get_executor(),
            progress=False,
        )
    local = await a.experiment(
        "l",
        contract,
        {"shape": ["flat", "tree"]},
        trials=2,
        store=tmp_path / "y.db",
        progress=False,
    )
    columns = ["shape", "trial", "calls", "chars_in", "chars_out"]
    assert exp.runs[columns].equals(local.runs[columns])


async def test_ctrl_c_inside_a_run_stops_the_experiment_too(tmp_path):
    @a.tool
    def look() -> str:
        """Look."""
        raise KeyboardInterrupt  # what Ctrl-C does while a tool runs

    async def fn(k: int, trial: int) -> a.RunResult:
        if trial < 2:
            return await contract("flat", trial)
        model = a.ScriptedModel([a.tool_call("look"), a.say("never")])
        return await a.run(a.Agent("solo", "Look.", model, [look]), "q")

    store = tmp_path / "x.db"
    with pytest.raises(KeyboardInterrupt):
        await a.experiment("c", fn, {"k": 1}, trials=4, store=store, progress=False)
    assert list(a.open_experiment("c", store).runs["trial"]) == [
        0,
        1,
    ]  # the interrupted run is not stored


def test_run_sync_runs_an_experiment_and_the_bar_counts_cached_and_failed(tmp_path, capsys):
    async def fn(k: int, trial: int) -> a.RunResult:
        if trial == 1:
            raise RuntimeError("down")
        return await contract("flat", trial)

    exp = a.run_sync(a.experiment("b", fn, {"k": 1}, trials=3, store=tmp_path / "x.db"))
    assert list(exp.runs["ok"]) == [True, False, True]
    err = capsys.readouterr().err
    assert "b: 100%" in err and "3/3" in err and "failed=1" in err and "cached=0" in err


async def test_a_verify_loops_rounds_are_a_column_to_summarise(tmp_path):
    async def fn(strict: bool, trial: int) -> a.VerifyResult:
        verdicts = [
            a.say('{"outcome": "redo", "problems": ["too long"]}'),
            a.say('{"outcome": "approved", "problems": []}'),
        ]
        verifier = a.Agent(
            "verifier", "Check.", a.ScriptedModel(verdicts[trial % 2 and not strict :])
        )
        writer = a.Agent("writer", "Write.", a.ScriptedModel([a.say("draft")] * 3))
        return await a.verify_loop(writer, verifier, "Write it.", max_rounds=3)

    exp = await a.experiment(
        "v", fn, {"strict": [True, False]}, trials=2, store=tmp_path / "x.db", progress=False
    )
    assert list(exp.runs["rounds"]) == [2, 2, 2, 1]
    assert list(exp.summary("rounds")["mean"]) == [2.0, 1.5]
    spans = exp.spans  # every run of the pattern is stored: writer and verifier, each round
    assert len(spans[(spans["kind"] == "run") & (spans["trial"] == 0)]) == 8


async def test_a_patterns_own_columns_are_kept_beside_the_call_columns(tmp_path):
    async def fn(k: int, trial: int) -> a.FanOut:
        agents = [a.Agent(n, "Answer.", a.ScriptedModel([a.say(n)])) for n in ("legal", "tax")]
        return await a.parallel(agents, "clause")

    exp = await a.experiment("p", fn, {"k": 1}, trials=2, store=tmp_path / "x.db", progress=False)
    calls = exp.calls
    assert list(calls["branch"]) == ["legal", "tax", "legal", "tax"]
    assert list(calls["agent"]) == ["legal", "tax", "legal", "tax"]
    assert list(exp.runs["calls"]) == [2, 2]


@pytest.mark.parametrize(("trials", "items"), [(10**12, None), (400_000, [1, 2, 3])])
async def test_an_experiment_too_large_to_plan_is_refused_before_any_run(tmp_path, trials, items):
    from agentnb.measure.experiments.runs import MAX_RUNS

    made: list[int] = []

    async def fn(k: int, trial: int, **_: object) -> a.RunResult:
        made.append(trial)
        return await a.run(a.Agent("w", "x", a.ScriptedModel([a.say("x")])), "q")

    with pytest.raises(UserError, match=f"one experiment plans at most {MAX_RUNS:,}"):
        await a.experiment(
            "big",
            fn,
            {"k": [1]},
            trials=trials,
            dataset=items,
            store=tmp_path / "s.db",
            progress=False,
        )
    assert made == [] and not (tmp_path / "s.db").exists()  # refused before the store was made
