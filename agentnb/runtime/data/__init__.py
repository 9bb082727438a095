"""The runtime's ground floor: the run's data (context and limits, `AgentRun`, options, how a tool
call ends, `Transfer`, the pause marker, `RunResult`, events, hooks) and the small helpers every
floor calls. The rule of this folder: it imports nothing else of the runtime; where it must know of
an agent or of a run's watchers, it declares a small Protocol of what it reads."""
