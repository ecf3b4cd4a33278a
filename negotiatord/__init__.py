"""negotiatord: an HTCondor-style negotiator daemon.

Data flows one way: ads (feed, files) -> pool snapshot -> negotiation cycle (pure) ->
publish (reports, matches out) and accountant (usage, priorities, persisted).
"""

__version__ = "0.1.0"
