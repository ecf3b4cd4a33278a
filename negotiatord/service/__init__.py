"""negotiatord the daemon: the feed, cycles on HTCondor's timing knobs, matches out, the accountant
persisted every cycle, statistics and metrics over HTTP, systemd integration.

:mod:`~negotiatord.service.daemon` wires the parts; each other module does one job.
"""
