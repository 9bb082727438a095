"""Experiments: many runs (configurations × trials × items) stored as each ends, resumed, read back as frames. Imports the rest of measure; nothing else of measure imports it."""
