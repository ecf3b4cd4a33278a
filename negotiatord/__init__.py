"""negotiatord: an HTCondor-style negotiator daemon.

Data flows one way: ads (feed, files) -> pool snapshot -> negotiation cycle (pure) ->
publish (reports, matches out) and accountant (usage, priorities, persisted).

Importing the package configures HTCondor's library first, before any ClassAd is made: its debug
log ready and the old ClassAd semantics of HTCondor's daemons (see
:mod:`negotiatord.classad.library`).
"""

from negotiatord.classad.library import configure_htcondor

configure_htcondor()

__version__ = "0.1.0"
