"""The collector side of negotiatord: the ads a cycle negotiates over, kept current.

Slot, job and submitter ads arrive over HTTP (:mod:`~negotiatord.feed.api`), from files at start-up,
or from a real collector (:mod:`~negotiatord.feed.pull`); :mod:`~negotiatord.feed.store` keeps the
latest ad per key, forgets ads that are not refreshed within their lifetime, and holds matched
jobs and slots out of later cycles until their owners advertise them again.
"""

from negotiatord.feed.intake import Intake, take_in, take_in_text
from negotiatord.feed.kinds import AdKind
from negotiatord.feed.store import AdStore, PoolView

__all__ = ["AdKind", "AdStore", "Intake", "PoolView", "take_in", "take_in_text"]
