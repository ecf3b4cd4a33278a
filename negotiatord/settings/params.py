"""What the readers of one part of the config (the pool's side, the command port's) ask of the
parameters the loader dumped from HTCondor's config reader, and how they split a list knob."""

from __future__ import annotations

from typing import Protocol


class ConfigParams(Protocol):
    """The loader's view of a condor config: a knob's text as set or as HTCondor defaults it, and
    typed readers that name the knob in their errors."""

    def raw(self, name: str) -> str | None: ...
    def setting(self, name: str) -> str | None: ...
    def default(self, name: str) -> str | None: ...
    def number(self, name: str, low: float | None = None, above: bool = False,
               fallback: float | None = None) -> float: ...
    def boolean(self, name: str, fallback: bool | None = None) -> bool: ...
    def changed(self, name: str) -> bool: ...


def listed(text: str | None) -> list[str]:
    """The items of a list knob, separated by commas or blanks as HTCondor's ``StringList``
    separates them."""
    return [word for word in (text or "").replace(",", " ").split() if word]
