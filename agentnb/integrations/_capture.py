"""What the integrations' capture objects share: a block used with ``with`` or
``async with``, shown in a notebook as agentnb's HTML of each run it measured."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ..runtime import RunResult

_C = TypeVar("_C", bound="CaptureBlock")


class CaptureBlock:
    """Subclasses define `__enter__`, `__exit__`, ``runs`` and `empty_html`; the async forms
    and the notebook HTML follow from them."""

    runs: Any
    """The measured runs (`RunResult`s): a list, or a property that builds one."""

    def __enter__(self: _C) -> _C:
        raise NotImplementedError

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        raise NotImplementedError

    async def __aenter__(self: _C) -> _C:
        return self.__enter__()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(kind, error, tb)

    def empty_html(self) -> str:
        """What a notebook shows when nothing was measured."""
        raise NotImplementedError

    def _repr_html_(self) -> str:
        runs: list[RunResult] = list(self.runs)
        return "".join(run._repr_html_() for run in runs) or self.empty_html()
