"""The teaching notebooks that ship with agentnb, and copying them out for ``agentnb notebooks``.

They are package data: ``agentnb/notebooks`` links to the repository's ``notebooks/`` folder, so
a wheel carries the numbered notebooks and notebook 08's recordings, and an editable install
reads them from the checkout. Where the link is missing (a checkout on a filesystem without
symbolic links), the checkout's ``notebooks/`` beside the package is used instead.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

NUMBERED = "[0-9][0-9]_*.ipynb"
"""The teaching sequence: every notebook whose name starts with two digits (solutions excluded)."""

RECORDINGS = ("recordings/*.jsonl", "recordings/*.csv", "recordings/*.py", "recordings/*.db")
"""What notebook 08 replays (and the script that recorded it), copied beside the notebooks so
it runs offline."""


def notebooks_folder() -> Path:
    """The folder that holds the shipped notebooks (package data, else the source checkout)."""
    shipped = Path(str(resources.files("agentnb") / "notebooks"))
    if any(shipped.glob(NUMBERED)):
        return shipped
    checkout = Path(__file__).resolve().parent.parent / "notebooks"
    if any(checkout.glob(NUMBERED)):
        return checkout
    raise FileNotFoundError(
        f"no notebooks found in {shipped} or {checkout}; reinstall agentnb (pip install agentnb)"
    )


def shipped_files(folder: Path) -> list[Path]:
    """Every file to copy, relative to ``folder``: the numbered notebooks, then the recordings."""
    names = sorted(folder.glob(NUMBERED))
    for pattern in RECORDINGS:
        names += sorted(folder.glob(pattern))
    return [path.relative_to(folder) for path in names]


def copy_notebooks(dest: Path, *, overwrite: bool = False) -> tuple[list[Path], list[Path]]:
    """Copy the shipped notebooks into ``dest`` (created if needed).

    Returns ``(copied, kept)``: a file that already exists in ``dest`` is kept as it is (it may
    hold a participant's work) unless ``overwrite`` is true.
    """
    source = notebooks_folder()
    copied: list[Path] = []
    kept: list[Path] = []
    for relative in shipped_files(source):
        target = dest / relative
        if target.exists() and not overwrite:
            kept.append(relative)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / relative, target)
        copied.append(relative)
    return copied, kept
