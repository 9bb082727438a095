"""One folder per provider API: its wire format (wire.py), its stream reader (stream.py) and its adapter (adapter.py)."""
