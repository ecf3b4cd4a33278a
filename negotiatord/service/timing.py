"""When the next negotiation cycle may start, by HTCondor's rules (``Matchmaker::negotiationTime``).

* ``NEGOTIATOR_INTERVAL``: a cycle starts this long after the previous one started (the manual:
  "how often the condor_negotiator starts a negotiation cycle").
* A reschedule request (``condor_reschedule``; here ``POST /v1/reschedule``) makes the next cycle
  due at once (``RESCHEDULE_commandHandler`` resets the timer to 0).
* Either way, no cycle starts within ``NEGOTIATOR_CYCLE_DELAY`` of the previous cycle's end
  (time for startds to report their new state) nor within ``NEGOTIATOR_MIN_INTERVAL`` of the
  previous cycle's start.
* The first cycle is due at start-up (both "last" times start at 0 in HTCondor).

Times are monotonic seconds, so a stepped wall clock cannot stall or rush cycles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from negotiatord.settings import Settings


@dataclass(frozen=True)
class CycleTiming:
    interval: float        # NEGOTIATOR_INTERVAL
    min_interval: float    # NEGOTIATOR_MIN_INTERVAL
    cycle_delay: float     # NEGOTIATOR_CYCLE_DELAY

    @classmethod
    def from_settings(cls, settings: Settings) -> CycleTiming:
        return cls(settings.negotiator_interval, settings.negotiator_min_interval,
                   settings.negotiator_cycle_delay)

    def next_start(self, last_start: float | None, last_end: float | None, rescheduled: bool) -> float:
        """The earliest time the next cycle may start (``-inf``: now)."""
        due = -math.inf if last_start is None or rescheduled else last_start + self.interval
        gates = [-math.inf]
        if last_end is not None:
            gates.append(last_end + self.cycle_delay)
        if last_start is not None:
            gates.append(last_start + self.min_interval)
        return max(due, *gates)
