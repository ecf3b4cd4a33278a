"""What happens after a cycle: its results rendered, its matches published, what it matched held.

:mod:`~negotiatord.publish.report` renders a cycle's result (the dry run's JSON and table, the
daemon's log figures, each match's document); :mod:`~negotiatord.publish.matchlog` is the
daemon's persisted publication of matches, each visible once its cycle's charges are committed;
:mod:`~negotiatord.publish.holds` makes the stand-ins that keep what a committed cycle matched out
of later cycles until it is re-advertised, and files them in the feed's ad store.
"""
