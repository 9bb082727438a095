"""Measure agents built with other frameworks, and export agentnb's runs.

- `agentnb.integrations.openai_agents`: capture openai-agents runs (``agentnb[openai-agents]``);
- `agentnb.integrations.otel`: OpenTelemetry GenAI spans in and out (``agentnb[otel]``).

Each submodule imports its framework when it is imported; ``import agentnb`` imports none.
"""
