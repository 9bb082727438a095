"""The runtime's top floor, the engine: the run loop, an agent run as a tool, resuming a paused
run, streaming, and the thread bridges behind `run_sync`. The rule of this folder: it may import
every floor below (the concepts, the data); nothing below imports it."""
