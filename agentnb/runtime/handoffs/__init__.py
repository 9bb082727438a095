"""Handoffs: control passing to another agent, and what it is allowed to see."""
