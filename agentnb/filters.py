"""Handoff input filters (``agentnb.filters``): see `agentnb.runtime.handoff_filters`."""

from .runtime.handoff_filters import HistoryFilter, compose, keep_last_n, remove_tool_calls

__all__ = ["HistoryFilter", "compose", "keep_last_n", "remove_tool_calls"]
