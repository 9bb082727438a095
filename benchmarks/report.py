"""The published form of a benchmark run: a markdown table with the machine it ran on."""

from __future__ import annotations

from typing import Any


def number(value: float | int | None, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, int) or (unit == "chars" and float(value).is_integer()):
        return f"{int(value):,}"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def spread(row: dict[str, Any]) -> str:
    s = row.get("spread")
    if not s or s.get("n", 0) < 2:
        return ""
    unit = row.get("unit", "")
    return (
        f"IQR {number(s['q1'], unit)}–{number(s['q3'], unit)}; "
        f"range {number(s['min'], unit)}–{number(s['max'], unit)}; n={s['n']}"
    )


def verdict(row: dict[str, Any]) -> str:
    met = row.get("met")
    return "" if met is None else ("met" if met else "**missed**")


def machine_line(machine: dict[str, Any]) -> str:
    parts = [
        f"{machine.get('cpu')} ({machine.get('cores')} cores)",
        f"{machine.get('os')}",
        f"Python {machine.get('python')}",
        f"agentnb {machine.get('agentnb')}"
        + (f" @ {machine['git_commit']}" if machine.get("git_commit") else ""),
    ]
    if machine.get("openai_agents"):
        parts.append(f"openai-agents {machine['openai_agents']}")
    parts.append(f"pandas {machine.get('pandas')}")
    parts.append(f"tokenizer: {machine.get('tokenizer')}")
    if machine.get("load_average"):
        parts.append("load average " + " / ".join(f"{x:.2f}" for x in machine["load_average"]))
    return " · ".join(p for p in parts if p)


def markdown(results: dict[str, Any]) -> str:
    """The whole run as markdown: a heading line per run, then one table for every benchmark."""
    machine = results["machine"]
    mode = "quick run" if results.get("quick") else "full run"
    lines = [
        f"Machine: {machine_line(machine)}  ",
        f"Run: {machine.get('date')}, {mode}, {results.get('duration_s', 0):.0f} s. "
        "Timings are medians (spread: interquartile range and extremes over n samples).",
        "",
        "| Benchmark | Case | Metric | Value | Spread | Target | | Notes |",
        "| --- | --- | --- | ---: | --- | --- | --- | --- |",
    ]
    for section in results["benchmarks"]:
        title = section["title"].split(" (")[0].split(":")[0]
        for r in section["rows"]:
            value = number(r["value"], r.get("unit", ""))
            unit = r.get("unit", "")
            shown = f"{value} {unit}".strip() if r["value"] is not None else value
            target = f"{r['target']} {unit}".strip() if r.get("target") else ""
            cells = [title, r["case"], r["metric"], shown, spread(r), target, verdict(r), r["note"]]
            lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)
