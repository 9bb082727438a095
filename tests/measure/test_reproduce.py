"""`python -m agentnb reproduce` end to end, in a subprocess that cannot reach the network."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import agentnb as a
from agentnb.measure import scenarios

# Run the command with every socket connection refused: proof that nothing goes to the network.
NO_NETWORK = """
import socket, sys
def refuse(*args, **kwargs):
    raise OSError("reproduce tried to open a network connection")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
from agentnb.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def test_reproduce_prints_the_tables_and_writes_the_figures(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    bogus = "http://127.0.0.1:9"  # nothing listens there: any request through it fails
    env.update(
        AGENTNB_TOKENIZER="off",
        HTTP_PROXY=bogus,
        HTTPS_PROXY=bogus,
        ALL_PROXY=bogus,
        http_proxy=bogus,
        https_proxy=bogus,
        MPLBACKEND="Agg",
    )
    out = tmp_path / "figures"
    done = subprocess.run(
        [sys.executable, "-c", NO_NETWORK, "reproduce", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )

    assert done.returncode == 0, done.stderr
    text = done.stdout
    # the article's table: generalist, then k = 1, 2, 3, 5 with characters sent and multiplier
    generalist = a.run_sync(scenarios.generalist()).chars_in
    assert f"generalist: {generalist:,} characters sent (1,043 are the clause)" in text
    inline = text.split("inline:")[1].split("by handle:")[0]
    rows = re.findall(r"orchestrator (\d) +([\d,]+) +([\d.]+)x", inline)
    assert [k for k, _, _ in rows] == ["1", "2", "3", "5"]
    for k, chars, times in rows:
        sent = a.run_sync(scenarios.review_hierarchy(int(k), "inline")).chars_in
        assert chars == f"{sent:,}" and times == f"{sent / generalist:.1f}"
    for heading in (
        "by handle:",
        "attached:",
        "team:",
        "Why: characters added by each sub-agent",
        "2. Latency",
        "3. Writer and verifier",
        "4. Depth guard",
    ):
        assert heading in text
    assert "missing=['technical']" in text
    assert "15 words, the limit is 12" in text
    assert "maximum depth reached (2)" in text and "legal is already on the call path" in text
    assert text.count('"event": "sub_agent_start"') == 4

    names = {"multiplier", "breakdown", "latency", "timeline", "verifier"}
    assert {p.stem for p in out.glob("*.png")} == names
    for path in out.glob("*.png"):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_a_command_it_prints_usage():
    from agentnb.__main__ import main

    assert main([]) == 2


def test_each_line_of_the_latency_figure_is_labelled_as_its_column_of_the_table(
    tmp_path: Path, monkeypatch
):
    from agentnb.measure import plot, reproduce

    drawn = []
    original = plot.latency

    def spy(*args, **kwargs):
        drawn.append(original(*args, **kwargs))
        return drawn[-1]

    monkeypatch.setattr(plot, "latency", spy)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    lines: list[str] = []
    a.run_sync(reproduce.reproduce(tmp_path, echo=lines.append))

    table = "\n".join(lines).split("2. Latency")[1].split("\n\n")[0].strip().splitlines()[1:]
    header = re.split(r"\s{2,}", table[0].strip())
    values = [[float(v) for v in row.split()] for row in table[1:]]
    columns = {name: [row[i] for row in values] for i, name in enumerate(header)}
    (ax,) = drawn[0].axes
    labelled = {line.get_label(): [round(y, 3) for y in line.get_ydata()] for line in ax.lines}
    # "mode: quantity" on the figure is the table's "mode quantity s" column (or "quantity s"
    # for a bound, which the table names by itself), with the same values.
    for label, ys in labelled.items():
        mode, quantity = label.split(": ")
        name = f"{mode} wall s" if quantity == "wall time" else f"{quantity} s"
        assert name in columns, (label, header)
        assert ys == columns[name], (label, ys, columns[name])
    assert "serial: sum of calls" in labelled and "parallel: critical path" in labelled
