"""Why a slot or a job takes no part in a cycle."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LeftOut:
    """A slot or job left out of the cycle, naming the attribute at fault.

    Most of these are inputs HTCondor's negotiator would EXCEPT on; here the rest of the pool is
    negotiated and the reason is reported.
    """

    kind: str        # "slot" or "job"
    name: str
    attribute: str
    reason: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}: {self.attribute}: {self.reason}"
