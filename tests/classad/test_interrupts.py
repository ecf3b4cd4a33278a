"""A Ctrl-C inside classad2's C code comes back as a SystemError caused by the KeyboardInterrupt
(seen from ``classad2.ClassAd({...})`` in a replay interrupted by SIGINT); it is still a Ctrl-C."""

from __future__ import annotations

from negotiatord.classad.interrupts import caused_by_interrupt


def _raised(error: BaseException, cause: BaseException | None) -> BaseException:
    try:
        raise error from cause
    except BaseException as caught:
        return caught


def test_an_interrupt_under_system_errors_is_an_interrupt():
    inner = _raised(SystemError("returned a result with an exception set"), KeyboardInterrupt())
    assert caused_by_interrupt(_raised(SystemError("returned a result with an exception set"), inner))
    assert caused_by_interrupt(KeyboardInterrupt())


def test_other_errors_are_not():
    assert not caused_by_interrupt(_raised(SystemError("bad"), ValueError("x")))
    assert not caused_by_interrupt(SystemError("bad"))
