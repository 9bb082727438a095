"""Benchmark 4: characters sent on the article's contract-review scenario, k = 1, 2, 3, 5.

Three ways for the 1,043-character clause to reach the reviewers (`agentnb.measure.scenarios`):
inline (the article's setup), by the handle ``input``, and attached to the run. Sizes, not
times: deterministic, measured once. The numbers come from `benchmarks.cost_tables`, which
also prints the long form (``python -m benchmarks.cost_tables``).
"""

from __future__ import annotations

from typing import Any

from ._stats import Row, at_most, row

ARTICLE = {"generalist": 1_119, 1: 4.9, 2: 7.7, 3: 10.6, 5: 16.3, "per_sub_agent": 3_200}
"""What the reference article measured with openai-agents (inline), for comparison."""


def bench_cost() -> dict[str, Any]:
    from .cost_tables import TARGETS, measure

    data = measure()
    base = data["generalist"]
    rows: list[Row] = [
        row(
            "generalist",
            "characters sent",
            base,
            "chars",
            note=f"article: {ARTICLE['generalist']:,}",
        )
    ]
    for mode, m in data["modes"].items():
        mult_limit, per_limit = TARGETS.get(mode, (None, None))
        for k, chars in m["chars"].items():
            mult = m["multiplier"][k]
            target, met = at_most(mult, mult_limit) if (mult_limit and k == 3) else (None, None)
            note = f"{chars:,} chars" + (f"; article {ARTICLE[k]}×" if mode == "inline" else "")
            rows.append(
                row(f"{mode}, k={k}", "multiplier", mult, "×", target=target, met=met, note=note)
            )
        per = m["per_sub_agent"]
        target, met = at_most(per, per_limit) if per_limit else (None, None)
        rows.append(
            row(
                mode,
                "chars per added sub-agent",
                per,
                "chars",
                target=target,
                met=met,
                note=_biggest(m["per_sub_agent_by_component"])
                + (f"; article ≈{ARTICLE['per_sub_agent']:,}" if mode == "inline" else ""),
            )
        )
    return {
        "name": "cost",
        "title": "Cost: characters sent on the article's scenario (inline / by handle / attached)",
        "params": {},
        "data": data,
        "rows": rows,
    }


def _biggest(split: dict[str, float]) -> str:
    """The components that make up the per-sub-agent increment, largest first."""
    parts = sorted(((v, c) for c, v in split.items() if round(v)), reverse=True)[:3]
    return ", ".join(f"{c} {v:,.0f}" for v, c in parts)
