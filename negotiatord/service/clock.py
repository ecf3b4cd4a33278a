"""The daemon's wall clock: real time, or real time shifted to start at a given epoch.

``negotiatord run --now EPOCH`` starts the clock at EPOCH and lets it run at the real rate. It is
for replaying captured ads and for tests: glidein START expressions compare ``time()`` with the
glidein's own end of life, so ads captured in the past only match at a time near their capture.
Every cycle's ``time()``, the accountant's decay and the reported times follow this clock; ad
lifetimes and cycle spacing use the monotonic clock and are unaffected.
"""

from __future__ import annotations

import time


class DaemonClock:
    def __init__(self, start_at: float | None = None) -> None:
        self.offset = 0.0 if start_at is None else start_at - time.time()

    def now(self) -> float:
        return time.time() + self.offset

    @property
    def shifted(self) -> bool:
        return self.offset != 0.0
