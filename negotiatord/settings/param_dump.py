"""Child-process entry: read the condor config named by CONDOR_CONFIG and print it as JSON.

Run as ``CONDOR_CONFIG=<file> python -m negotiatord.settings.param_dump``. It runs in a child
process because HTCondor's config reader exits the whole process (status 1, the file and line on
stderr) on a bad file, and the daemon must survive a bad reload with its old config.

The output is one JSON object on stdout::

    {"params":   {name: value, ...},   # the config as the negotiator sees it
     "defaults": {name: value, ...},   # HTCondor's built-in values (an empty config)
     "assigned": [NAME, ...]}          # the names the config's files assign themselves

Every value is the macro-expanded text, exactly what ``$(name)`` gives inside the config:
``htcondor2.param`` itself converts known params to int/float/bool and silently falls back to
the built-in default when the text does not convert (``PRIORITY_HALFLIFE = abc`` reads as
86400.0), which would hide the user's mistake; the parent does the typing and names the bad
value instead. HTCondor drops a param set to an empty value from ``param.keys()``, so an empty
value shows up as a name missing from ``params`` (while still present in ``defaults`` if it has
a built-in value). A value holding bytes that are not UTF-8 cannot be handed over as text: its
name is listed under ``"undecodable"`` instead.

``python -m negotiatord.settings.param_dump --where NAME`` prints where NAME got its value instead,
``{"where": [FILE, LINE]}`` or ``{"where": null}`` (:mod:`negotiatord.settings.sources`).

Nothing here prints a Python traceback: an unexpected failure is one line on stderr, status 3.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from negotiatord.settings.sources import assignments, locate

# Read the config as the negotiator daemon does: ``NEGOTIATOR.<NAME>`` overrides ``<NAME>``
# (HTCondor manual, "Introduction to Configuration", subsystem-prefixed names).
SUBSYSTEM = "NEGOTIATOR"
# Where an expansion is evaluated; a name no real config uses.
_PROBE = "NEGOTIATORD_PARAM_DUMP_PROBE"


def _dump(param: MutableMapping[str, Any], undecodable: list[str] | None = None) -> dict[str, str]:
    """Every param as macro-expanded text, ``NEGOTIATOR.<NAME>`` folded into ``<NAME>``; the names of
    values that are not UTF-8 go to ``undecodable``."""
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
        text = _expanded(param, f"$({name})", undecodable, name)
        if text is not None:
            values[name] = text
    return values


def _expanded(param: MutableMapping[str, Any], text: str, undecodable: list[str] | None = None,
              name: str = "") -> str | None:
    """``text`` with its ``$(...)`` expanded by HTCondor; None if empty, or not UTF-8 (``name``
    listed in ``undecodable``)."""
    param[_PROBE] = text
    try:
        return param.get(_PROBE)
    except UnicodeDecodeError:
        if undecodable is not None:
            undecodable.append(name)
        return None


def main() -> int:
    try:
        return _main()
    except Exception as error:    # told in one line; the parent names the config
        print(f"param_dump: {type(error).__name__}: {error}", file=sys.stderr)
        return 3


def _main() -> int:
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
    if sys.argv[1:2] == ["--where"]:
        return _where(htcondor2.param, Path(config), sys.argv[2])
    undecodable: list[str] = []
    params = _dump(htcondor2.param, undecodable)
    expand = lambda text: _expanded(htcondor2.param, text)  # noqa: E731
    assigned = sorted({found.name for found in assignments(Path(config), expand)})

    json.dump({"params": params, "defaults": defaults, "undecodable": undecodable, "assigned": assigned}, sys.stdout)
    return 0


def _where(param: MutableMapping[str, Any], config: Path, name: str) -> int:
    """Print where ``name`` got its value, as the module's docstring says."""
    value = _expanded(param, f"$({name})", [])
    found = locate(config, name, lambda text: _expanded(param, text), value)
    json.dump({"where": None if found is None else [str(found.file), found.line],
               "byte": None if found is None else found.byte_not_utf8()}, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
