"""``python -m agentnb <command>`` (also the ``agentnb`` console script).

Commands:
  reproduce [--out DIR]   run the reference article's experiments offline, print the tables
                          and write the figures as PNG files into DIR (default ./reproduce-out)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="agentnb", description="Build, run and measure hierarchical agent systems."
    )
    commands = parser.add_subparsers(dest="command", metavar="command")
    reproduce = commands.add_parser(
        "reproduce",
        help="run the article's experiments offline and write the tables and figures",
        description="Run the reference article's experiments on scripted models (no network, "
        "no key): print the cost, latency, verifier and depth-guard tables and write the "
        "figures as PNG files.",
    )
    reproduce.add_argument(
        "--out",
        default="reproduce-out",
        metavar="DIR",
        help="folder for the PNG figures (default: ./reproduce-out)",
    )
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        import matplotlib

        matplotlib.use("Agg")  # no display needed, even where one is configured
        from .measure.reproduce import main as run_reproduce

        return run_reproduce(args.out)
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
