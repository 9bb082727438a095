"""The run loop: one run from its options to its result, events and hooks included."""
