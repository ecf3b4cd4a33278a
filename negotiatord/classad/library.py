"""HTCondor's library configured in this process as a tool's, from no config file: its debug log
ready, and ClassAds evaluated under the old semantics HTCondor's daemons use.

**The debug log.** classad2 logs a D_ALWAYS line each time it frees the C++ side of a ClassAd or
an ExprTree (``_handle_dealloc`` in HTCondor's src/python-bindings/common2/py_handle.cpp). Until
the process configures HTCondor, dprintf keeps each line on a list in memory, to write it out once
it is configured (``_condor_save_dprintf_line`` in src/condor_utils/dprintf.cpp). classad2 alone
configures nothing, so a process kept about 150 bytes for every ClassAd it made and every
expression it looked up, for as long as it lived: a daemon grew cycle after cycle, and a trace
replay by gigabytes.

**The semantics.** Configuring HTCondor also sets the ClassAd library's scoping mode from
``STRICT_CLASSAD_EVALUATION``, whose default (False) is the old semantics: an unscoped name the ad
lacks is looked up in the other ad of the match, as the HTCondor manual's
``PREEMPTION_REQUIREMENTS`` examples need. classad2 alone would configure HTCondor the first time
it parsed an old-syntax ad, and only then, so a process that built its ads itself (a trace replay)
ran under the strict semantics.

**No config.** Configuring reads HTCondor's config, named by ``CONDOR_CONFIG``, and a config
HTCondor rejects ends the whole process. So it reads none here: ``CONDOR_CONFIG`` is /dev/null and
the ``_CONDOR_<NAME>`` overrides are set aside while ``htcondor2`` is imported (its import
configures HTCondor), then restored. negotiatord's own settings are read by HTCondor in a child
process (:mod:`negotiatord.settings.loader`); a child that needs the real config reloads it
(``htcondor2.reload_config``).
"""

from __future__ import annotations

import os


def configure_htcondor() -> None:
    """Configure HTCondor's library in this process, from no config (once; later calls do nothing)."""
    overrides = {name: os.environ.pop(name) for name in list(os.environ) if name.upper().startswith("_CONDOR_")}
    config = os.environ.get("CONDOR_CONFIG")
    os.environ["CONDOR_CONFIG"] = os.devnull
    try:
        import htcondor2  # noqa: F401  (its import configures HTCondor)
    finally:
        if config is None:
            del os.environ["CONDOR_CONFIG"]
        else:
            os.environ["CONDOR_CONFIG"] = config
        os.environ.update(overrides)
