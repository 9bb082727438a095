"""Handoff input filters (``agentnb.filters``): see `agentnb.runtime.handoffs.filters`."""

from .runtime.handoffs.filters import HistoryFilter, compose, keep_last_n, remove_tool_calls

__all__ = ["HistoryFilter", "compose", "keep_last_n", "remove_tool_calls"]
