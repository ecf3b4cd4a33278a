"""negotiatord: an HTCondor-style negotiator daemon.

Data flows one way: ads (feed, files) -> pool snapshot -> negotiation cycle (pure) ->
publish (reports, matches out) and accountant (usage, priorities, persisted).

Importing the package readies HTCondor's debug log first, before any ClassAd is made (see
:mod:`negotiatord.classad.debug_log`).
"""

from negotiatord.classad.debug_log import configure_htcondor_debug_log

configure_htcondor_debug_log()

__version__ = "0.1.0"
