"""``python -m agentnb reproduce``: the reference article's experiments, offline, in one command.

Runs the built-in scenarios (`agentnb.measure.scenarios`) on scripted models — no network, no
key — prints the tables in the article's shape and writes the figures as PNG files:

1. characters sent by a generalist and by a coordinator with k = 1, 2, 3, 5 reviewers, and the
   multiplier — with the clause pasted inline (the article's setup), by handle, and attached;
   then why: what each added reviewer adds, component by component;
2. wall time of a review fan-out against the number of branches, parallel and serial, with
   the critical-path lower bound; then the parallel review with a reviewer slower than its
   timeout;
3. the writer–verifier rounds;
4. the depth guard's log lines with ``max_depth`` 2 and 3.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..runtime import Limits
from . import scenarios as sc
from .sweeps import sweep
from .tables import COMPONENT_COLUMNS, breakdown_growth, cost_fit, cost_table, latency_series

if TYPE_CHECKING:
    import pandas as pd

BRANCHES = (1, 2, 3, 5, 8)
"""Fan-out sizes of the latency series."""

BRANCH_LATENCY = 0.02
"""Seconds each reviewer's model takes in the latency series (small, so the command is quick)."""

BOUNDS = {"parallel": "critical path", "serial": "sum of calls"}
"""What each mode's critical-path bound is called, in the latency table and on its figure alike:
serial branches wait on one another, so their critical path is the sum of their calls."""

Print = Callable[[str], None]


async def cost_run(mode: str, k: int | None = None) -> Any:
    """One configuration of the cost sweep: the generalist (no k) or a hierarchy."""
    if k is None:
        return await sc.generalist()
    return await sc.review_hierarchy(k, mode)  # type: ignore[arg-type]


def team_of(n: int, latency: float = BRANCH_LATENCY) -> dict[str, Any]:
    """``n`` reviewers cycling through the legal, tax and technical profiles."""
    base = sc.review_team(dict.fromkeys(sc.REVIEWERS, latency))
    names = list(base)
    team = {}
    for i in range(n):
        profile = names[i % len(names)]
        name = profile if i < len(names) else f"{profile}_{i // len(names) + 1}"
        team[name] = base[profile].clone(name=name)
    return team


async def fan_out(mode: str, n: int) -> Any:
    """The review as a fan-out of ``n`` branches: all at once, or one slot (serial)."""
    from ..patterns import parallel

    return await parallel(team_of(n), sc.CLAUSE, max_concurrency=None if mode == "parallel" else 1)


async def reproduce(
    out: str | os.PathLike[str] = "reproduce-out", echo: Print = print
) -> dict[str, Path]:
    """Run every experiment, print the tables with ``echo`` and write the figures into ``out``.

    Returns the figure files by name.
    """
    import pandas as pd

    from ..patterns import harshest, parallel, verify_loop
    from . import plot

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Path] = {}

    def save(name: str, fig: Any) -> None:
        path = folder / f"{name}.png"
        fig.savefig(path, dpi=100)
        figures[name] = path

    with pd.option_context("display.width", 120, "display.max_columns", 20):
        echo(
            "agentnb reproduce: the reference article's experiments on scripted models (offline, no key)"
        )

        # 1. cost ---------------------------------------------------------------------------
        grid = [{"mode": "generalist"}] + [
            {"mode": m, "k": k} for m in sc.COST_MODES for k in sc.COST_KS
        ]
        calls = await sweep(cost_run, grid, progress=False)
        table = cost_table(calls)
        fits: dict[Any, dict[Any, Any]] = {f["mode"]: f for f in cost_fit(table).to_dict("records")}
        base = int(table.loc[table["baseline"], "chars_in"].iloc[0])
        echo("")
        echo("1. Characters sent: a generalist against a coordinator with k reviewers")
        echo(f"   The clause has {len(sc.CLAUSE):,} characters; every reviewer receives all of it.")
        titles = {
            "inline": "inline: the coordinator pastes the clause into each tool call (the article's setup)",
            "handle": "by handle: the clause is the run's input, forwarded as the handle 'input'",
            "attached": "attached: the clause is a document of the run, routed without being read",
            "team": "team: attached, the reviewers behind one agentnb.team tool instead of one each",
        }
        for mode in sc.COST_MODES:
            rows = table[(table["mode"] == mode) | table["baseline"]]
            echo("")
            echo(f"   {titles[mode]}")
            echo(_indent(_cost_text(rows)))
            slope, intercept = fits[mode]["slope"], fits[mode]["intercept"]
            echo(
                f"   each added sub-agent: {slope:+,.0f} characters "
                f"(linear fit, intercept {intercept:,.0f})"
            )
        echo("")
        echo(f"   generalist: {base:,} characters sent ({len(sc.CLAUSE):,} are the clause)")
        echo("")
        echo("   Why: characters added by each sub-agent, by component")
        growth = breakdown_growth(calls[calls["mode"] != "generalist"])
        echo(_indent(_growth_text(growth)))
        save("multiplier", plot.multiplier(table))
        save("breakdown", plot.cost_breakdown(calls))

        # 2. latency ------------------------------------------------------------------------
        runs = await sweep(
            fan_out, {"mode": ["parallel", "serial"], "n": list(BRANCHES)}, progress=False
        )
        series = latency_series(runs)
        echo("")
        echo(
            f"2. Latency: a review fan-out of n branches, each reviewer taking {BRANCH_LATENCY:g} s"
        )
        echo(_indent(_latency_text(series)))
        save("latency", plot.latency(series, bounds=BOUNDS))
        together = await fan_out("parallel", 3)
        one_by_one = await fan_out("serial", 3)
        save(
            "timeline",
            plot.timeline(
                together, one_by_one, labels=["parallel (3 branches)", "serial (one slot)"]
            ),
        )
        review = await parallel(sc.review_team(), sc.CLAUSE, timeout=0.5)
        worst = harshest(review.outputs, field="verdict", order=sc.SEVERITY)
        slow = await parallel(sc.review_team({"technical": 0.5}), sc.CLAUSE, timeout=0.2)
        echo("")
        echo(f"   parallel review: ok={review.ok}, overall verdict: {worst.verdict}")
        echo(
            f"   technical reviewer slower than the 0.2 s timeout: ok={slow.ok}, "
            f"missing={list(slow.missing)} ({'; '.join(slow.missing.values())})"
        )

        # 3. verifier -----------------------------------------------------------------------
        writer, verifier, task = sc.writer_and_verifier()
        loop = await verify_loop(writer, verifier, task, max_rounds=2)
        from .rounds import verifier_table

        rounds = verifier_table(loop)
        echo("")
        echo(f"3. Writer and verifier: {task}")
        echo(_indent(_rounds_text(rounds)))
        echo(f"   delivered ({'approved' if loop.approved else 'not approved'}): {loop.output}")
        save("verifier", plot.verifier_rounds(rounds))

        # 4. depth guard --------------------------------------------------------------------
        echo("")
        echo("4. Depth guard: legal and tax call each other")
        for depth in (2, 3):
            result = await _run(sc.recursion_pair(), "Assess the clause.", Limits(max_depth=depth))
            echo(f"   --- max_depth = {depth}")
            for line in result.log_lines():
                echo(f"   {line}")
            refused = [json.loads(x)["reason"] for x in result.log_lines() if '"guard"' in x]
            context = result.context
            echo(f"   the guard told tax: {refused}")
            echo(
                f"   outcome: {result.output} | model calls: {result.model_calls} | "
                f"final depth: {context.depth if context is not None else 0}"
            )

    echo("")
    echo(f"Figures written to {folder}/: " + ", ".join(p.name for p in figures.values()))
    return figures


async def _run(agent: Any, input: str, limits: Limits) -> Any:
    from ..runtime import run

    return await run(agent, input, limits=limits)


def _indent(text: str, by: str = "   ") -> str:
    return "\n".join(by + line for line in text.splitlines())


def _cost_text(rows: pd.DataFrame) -> str:
    """The article's table: setup, k, characters sent, multiplier."""
    shown = rows.assign(
        setup=["generalist" if b else "orchestrator" for b in rows["baseline"]],
        k=["-" if b else str(int(k)) for b, k in zip(rows["baseline"], rows["k"])],
        chars=[f"{int(c):,}" for c in rows["chars_in"]],
        times=[f"{m:.1f}x" for m in rows["multiplier"]],
    )[["setup", "k", "chars", "times"]]
    shown.columns = ["setup", "k", "characters sent", "multiplier"]
    return shown.to_string(index=False)


def _growth_text(growth: pd.DataFrame) -> str:
    from .plot import COMPONENT_LABELS

    wide = growth.pivot(index="component", columns="mode", values="slope")
    wide = wide.reindex([*COMPONENT_COLUMNS, "chars_in", "chars_out"])
    wide = wide[[m for m in sc.COST_MODES if m in wide.columns]]
    labels = {**COMPONENT_LABELS, "chars_in": "total sent", "chars_out": "generated (output)"}
    wide.index = [labels[c] for c in wide.index]
    return wide.map(lambda v: f"{v:+,.0f}").to_string()


def _latency_text(series: pd.DataFrame) -> str:
    wide = series.pivot(index="n", columns="mode", values=["wall_s", "critical_s"])
    shown = pd_frame(
        {
            "n": wide.index,
            "parallel wall s": wide[("wall_s", "parallel")].to_numpy(),
            "serial wall s": wide[("wall_s", "serial")].to_numpy(),
            f"{BOUNDS['parallel']} s": wide[("critical_s", "parallel")].to_numpy(),
            f"{BOUNDS['serial']} s": wide[("critical_s", "serial")].to_numpy(),
        }
    )
    return shown.to_string(index=False, float_format=lambda v: f"{v:.3f}")


def _rounds_text(rounds: pd.DataFrame) -> str:
    shown = rounds[["round", "outcome", "problems", "chars_writer", "chars_verifier", "chars_in"]]
    shown = shown.assign(problems=[", ".join(p) or "-" for p in shown["problems"]])
    shown.columns = [
        "round",
        "outcome",
        "problems",
        "writer chars",
        "verifier chars",
        "characters sent",
    ]
    return shown.to_string(index=False)


def pd_frame(data: dict[str, Any]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(data)


def main(out: str = "reproduce-out") -> int:
    """The command's body: runs everything on a fresh event loop; returns the exit code."""
    asyncio.run(reproduce(out))
    return 0
