"""Tools: functions and agents exposed as tools, their schemas and their call context."""
