"""Benchmark: the cost of agent-as-tool on the article's contract-review scenario, three ways.

Prints characters sent (whole run, every depth) for a generalist and for an orchestrator with
k = 1, 2, 3, 5 reviewers, with the multiplier against the generalist, in the three modes of
`agentnb.measure.scenarios`: inline (the article's setup), (a) by the handle ``input``,
(b) attached to the run. Then the per-sub-agent increment (least-squares slope) and which
request components it is made of. Offline and deterministic: the numbers are sizes, not times.

    python -m benchmarks.cost_tables
"""

from __future__ import annotations

from typing import Any

import agentnb as a
from agentnb.measure.scenarios import COST_KS, COST_MODES, generalist, review_hierarchy

TARGETS = {"handle": (8.0, 2_300), "attached": (6.5, None), "team": (5.5, 1_700)}
"""mode -> (k=3 multiplier, characters per added sub-agent) that issues 3 and 17 ask for."""

COMPONENTS = ("system", "tools", "user", "assistant", "tool_args", "tool_results", "framing")


def slope(ks: list[int], ys: list[float]) -> float:
    mean_k, mean_y = sum(ks) / len(ks), sum(ys) / len(ys)
    num = sum((k - mean_k) * (y - mean_y) for k, y in zip(ks, ys))
    return num / sum((k - mean_k) ** 2 for k in ks)


def measure() -> dict[str, Any]:
    base = a.run_sync(generalist()).chars_in
    out: dict[str, Any] = {"generalist": base, "modes": {}}
    for mode in COST_MODES:
        runs = {k: a.run_sync(review_hierarchy(k, mode)) for k in COST_KS}
        chars = {k: r.chars_in for k, r in runs.items()}
        split = {
            c: slope(list(COST_KS), [float(r.calls[f"chars_in_{c}"].sum()) for r in runs.values()])
            for c in COMPONENTS
        }
        out["modes"][mode] = {
            "chars": chars,
            "multiplier": {k: v / base for k, v in chars.items()},
            "per_sub_agent": slope(list(COST_KS), [float(v) for v in chars.values()]),
            "per_sub_agent_by_component": split,
        }
    return out


def main() -> None:
    data = measure()
    base = data["generalist"]
    print(f"generalist: {base:,} characters sent")
    for mode, m in data["modes"].items():
        print(f"\n{mode}")
        print(f"{'k':>3} {'chars sent':>11} {'x generalist':>13}")
        for k in COST_KS:
            print(f"{k:>3} {m['chars'][k]:>11,} {m['multiplier'][k]:>12.2f}x")
        split = ", ".join(f"{c} {v:,.0f}" for c, v in m["per_sub_agent_by_component"].items() if v)
        print(f"per added sub-agent: {m['per_sub_agent']:,.0f} ({split})")
        if mode in TARGETS:
            mult, per = TARGETS[mode]
            ok = m["multiplier"][3] <= mult and (per is None or m["per_sub_agent"] <= per)
            print(
                f"target k=3 <= {mult}x"
                + (f", <= {per:,}/sub-agent" if per else "")
                + f": {'met' if ok else 'MISSED'}"
            )


if __name__ == "__main__":
    main()
