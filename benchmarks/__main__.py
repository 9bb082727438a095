"""``python -m benchmarks``: see `benchmarks.run`."""

from benchmarks.run import main

raise SystemExit(main())
