"""What watches a run: typed events, hooks, streamed runs and their partial output."""
