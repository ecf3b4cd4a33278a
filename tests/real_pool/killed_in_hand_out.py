"""negotiatord's own command line, killed with SIGKILL in the middle of a hand-out: a real ``kill -9``
of the real daemon at a moment a test can name.

``NEGOTIATORD_TEST_KILL_AT`` is ``N`` or ``N+``: the process kills itself when the N-th match of its
run is about to be marked handed (before the mark is written: the match never left), or, with
``+``, just after the mark is written and before its ``PERMISSION_AND_AD`` is (the one window in
which a match is charged that its schedd never receives).
"""

from __future__ import annotations

import os
import signal
import sys

from negotiatord.cli import main
from negotiatord.publish.matchlog import MatchLog


def _arm(at: str) -> None:
    after_mark = at.endswith("+")
    target = int(at.rstrip("+"))
    mark = MatchLog.mark_handed
    marked = 0

    def marking(log: MatchLog, cycle_id: int, job: str) -> None:
        nonlocal marked
        marked += 1
        if marked == target and not after_mark:
            os.kill(os.getpid(), signal.SIGKILL)
        mark(log, cycle_id, job)
        if marked == target:
            os.kill(os.getpid(), signal.SIGKILL)

    MatchLog.mark_handed = marking  # type: ignore[method-assign]


if __name__ == "__main__":
    _arm(os.environ["NEGOTIATORD_TEST_KILL_AT"])
    raise SystemExit(main(sys.argv[1:]))
