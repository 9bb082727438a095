"""agentnb's benchmark harness: ``python -m benchmarks`` (``--quick`` for a check in under a minute).

Framework overhead per model call, fan-out scale, trace scale, cost on the article's scenario,
token counting on a growing history and sweep overhead; see benchmarks/README.md. Not part of
the installed package, and never imported by the tests except the smoke test, which runs each
benchmark at tiny sizes to keep the harness from rotting.
"""
