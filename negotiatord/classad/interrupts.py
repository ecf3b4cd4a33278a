"""A Ctrl-C that lands inside classad2's C code.

When SIGINT's KeyboardInterrupt is raised in Python code that classad2 calls back into (an
``isinstance`` check on a value it converts), its C function returns with the exception set, and
Python reports a SystemError whose cause is the KeyboardInterrupt. Code that stops cleanly on
Ctrl-C takes such an error for the interrupt it is.
"""

from __future__ import annotations


def caused_by_interrupt(error: BaseException) -> bool:
    """Whether ``error`` is a KeyboardInterrupt or was raised because of one (its causes)."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False
