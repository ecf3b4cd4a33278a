"""Child-process entry: read the condor config named by CONDOR_CONFIG and print it as JSON.

Run as ``CONDOR_CONFIG=<file> python -m negotiatord.settings.param_dump``. It runs in a child
process because HTCondor's config reader exits the whole process (status 1, the file and line on
stderr) on a bad file, and the daemon must survive a bad reload with its old config.

The output is one JSON object on stdout::

    {"params":   {name: value, ...},   # the config as the negotiator sees it
     "defaults": {name: value, ...}}   # HTCondor's built-in values (an empty config)

Every value is the macro-expanded text, exactly what ``$(name)`` gives inside the config:
``htcondor2.param`` itself converts known params to int/float/bool and silently falls back to
the built-in default when the text does not convert (``PRIORITY_HALFLIFE = abc`` reads as
86400.0), which would hide the user's mistake; the parent does the typing and names the bad
value instead. HTCondor drops a param set to an empty value from ``param.keys()``, so an empty
value shows up as a name missing from ``params`` (while still present in ``defaults`` if it has
a built-in value).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import MutableMapping
from typing import Any

# Read the config as the negotiator daemon does: ``NEGOTIATOR.<NAME>`` overrides ``<NAME>``
# (HTCondor manual, "Introduction to Configuration", subsystem-prefixed names).
SUBSYSTEM = "NEGOTIATOR"
# Where an expansion is evaluated; a name no real config uses.
_PROBE = "NEGOTIATORD_PARAM_DUMP_PROBE"


def _dump(param: MutableMapping[str, Any]) -> dict[str, str]:
    """Every param as macro-expanded text, ``NEGOTIATOR.<NAME>`` folded into ``<NAME>``."""
    names: dict[str, str] = {}
    for key in list(param.keys()):
        if key.upper() == _PROBE:
            continue
        head, dot, tail = key.partition(".")
        name = tail if dot and head.upper() == SUBSYSTEM else key
        names.setdefault(name.upper(), name)
    values = {}
    for name in names.values():
        # $(name) resolves the subsystem override, HTCondor's defaults and nested macros.
        param[_PROBE] = f"$({name})"
        text = param.get(_PROBE)
        if text is not None:
            values[name] = text
    return values


def main() -> int:
    """Print the config named by CONDOR_CONFIG, and HTCondor's built-in values, as JSON."""
    config = os.environ.get("CONDOR_CONFIG")
    if not config:
        print("param_dump: CONDOR_CONFIG is not set", file=sys.stderr)
        return 2
    # First an empty config with no _CONDOR_<NAME> environment overrides, so "defaults" holds
    # only what HTCondor itself defines; then the real file, with the environment restored.
    overrides = {k: os.environ.pop(k) for k in list(os.environ) if k.upper().startswith("_CONDOR_")}
    os.environ["CONDOR_CONFIG"] = os.devnull
    import htcondor2

    htcondor2.set_subsystem(SUBSYSTEM)
    htcondor2.reload_config()
    defaults = _dump(htcondor2.param)

    os.environ.update(overrides)
    os.environ["CONDOR_CONFIG"] = config
    htcondor2.reload_config()  # on a bad file HTCondor prints the file and line and exits(1)
    params = _dump(htcondor2.param)

    json.dump({"params": params, "defaults": defaults}, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
