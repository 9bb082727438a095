"""Guards around a run: guardrails on input and output, checks and approval of tool calls."""
