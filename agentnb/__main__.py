"""``python -m agentnb <command>`` (also the ``agentnb`` console script).

Commands:
  notebooks DIR [--force] copy the teaching notebooks (and notebook 08's recordings) into DIR
                          and print how to open them
  reproduce [--out DIR]   run the reference article's experiments offline, print the tables
                          and write the figures as PNG files into DIR (default ./reproduce-out)
"""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from .words import plural


def build_parser() -> argparse.ArgumentParser:
    """The `agentnb` command line: one sub-command per task."""
    parser = argparse.ArgumentParser(
        prog="agentnb",
        description="Build, run and measure hierarchical agent systems.",
        epilog="Run `agentnb COMMAND --help` for a command's options.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    notebooks = commands.add_parser(
        "notebooks",
        help="copy the teaching notebooks into a folder and say how to open them",
        description="Copy the numbered teaching notebooks that ship with agentnb (and the "
        "recordings notebook 08 replays) into DIR, then print how to open them. Files "
        "already in DIR are kept unless --force is given.",
    )
    notebooks.add_argument("dir", metavar="DIR", help="folder to copy into (created if needed)")
    notebooks.add_argument(
        "--force", action="store_true", help="overwrite notebooks that already exist in DIR"
    )
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
    return parser


def _notebooks(dest: Path, force: bool) -> int:
    from .teaching_notebooks import copy_notebooks

    copied, kept = copy_notebooks(dest, overwrite=force)
    notebooks = sum(1 for p in copied if p.suffix == ".ipynb")
    if copied:
        others = len(copied) - notebooks
        also = f" and {plural(others, 'recording file')}" if others else ""
        print(f"Copied {plural(notebooks, 'notebook')}{also} into {dest}.")
    if kept:
        print(
            f"Kept {plural(len(kept), 'file')} already in {dest} as they are "
            "(--force overwrites them): " + ", ".join(str(p) for p in kept)
        )
    print("Open them with:")
    print(f"  jupyter lab {shlex.quote(str(dest))}")
    if importlib.util.find_spec("jupyterlab") is None:
        print("JupyterLab is not installed here; install it with: pip install 'agentnb[notebook]'")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command of the ``agentnb`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "notebooks":
        return _notebooks(Path(args.dir), args.force)
    if args.command == "reproduce":
        import matplotlib

        matplotlib.use("Agg")  # no display needed, even where one is configured
        from .measure.reproduce import main as run_reproduce

        return run_reproduce(args.out)
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
