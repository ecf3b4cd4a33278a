"""HTCondor's debug log made ready in this process, so that the ClassAd bindings do not keep in
memory every line they log.

classad2 logs a D_ALWAYS line each time it frees the C++ side of a ClassAd or an ExprTree
(``_handle_dealloc`` in HTCondor's src/python-bindings/common2/py_handle.cpp). Until the
process configures HTCondor's dprintf, dprintf keeps each line on a list in memory, to write it
out once it is configured (``_condor_save_dprintf_line`` in src/condor_utils/dprintf.cpp).
classad2 alone never configures it, so the process kept about 150 bytes of C++ memory for every
ClassAd it made and every expression it looked up, for as long as it lived: a daemon grew
cycle after cycle, and a trace replay by gigabytes.

Importing ``htcondor2`` configures dprintf as a tool's, writing nowhere unless asked. The import
also reads HTCondor's config, and a config HTCondor rejects ends the whole process, so here it
reads none: ``CONDOR_CONFIG`` is /dev/null and the ``_CONDOR_<NAME>`` overrides are set aside
for the import, then restored. negotiatord's settings are read by HTCondor in a child process
(:mod:`negotiatord.settings.loader`); a child that needs the real config reloads it
(``htcondor2.reload_config``).
"""

from __future__ import annotations

import os


def configure_htcondor_debug_log() -> None:
    """Configure HTCondor's dprintf in this process (once; later calls do nothing)."""
    overrides = {name: os.environ.pop(name) for name in list(os.environ) if name.upper().startswith("_CONDOR_")}
    config = os.environ.get("CONDOR_CONFIG")
    os.environ["CONDOR_CONFIG"] = os.devnull
    try:
        import htcondor2  # noqa: F401  (configures dprintf on import)
    finally:
        if config is None:
            del os.environ["CONDOR_CONFIG"]
        else:
            os.environ["CONDOR_CONFIG"] = config
        os.environ.update(overrides)
