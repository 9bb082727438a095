"""The runtime's top floor, the engine: the run loop (and `run_below`, which runs a sub-agent's
or a guardrail's agent for the floors below, handed to them in the `RunContext`), child runs,
resuming a paused run, streaming, and the thread bridges behind `run_sync`. The rule of this
folder: it may import every floor below (the concepts, the data); nothing below imports it."""
