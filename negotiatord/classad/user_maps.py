"""HTCondor's ClassAd user maps in this process, so that ``userMap(name, input)`` finds them.

A negotiator loads the maps ``NEGOTIATOR_CLASSAD_USER_MAP_NAMES`` names, each from
``CLASSAD_USER_MAPFILE_<name>`` or else ``CLASSAD_USER_MAPDATA_<name>`` (``reconfig_user_maps``,
``src/condor_utils/classad_usermap.cpp``), and replaces them all on a reconfig. This process reads
no HTCondor config (:mod:`negotiatord.classad.library`), so the maps are handed to the library one
by one (``htcondor2.load_a_config_usermap_file``); inline data goes through a private file that is
removed once read. A map is looked up as HTCondor's own code does, through the ClassAd function.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import classad2
import htcondor2


class UserMapError(ValueError):
    """A map the library could not load; the message names the knob."""


@dataclass(frozen=True)
class UserMap:
    """One named map: a file (``CLASSAD_USER_MAPFILE_<name>``) or its text (``..._MAPDATA_<name>``)."""

    name: str
    file: Path | None = None
    data: str | None = None

    @property
    def knob(self) -> str:
        return f"CLASSAD_USER_MAP{'FILE' if self.file is not None else 'DATA'}_{self.name}"


def install_user_maps(maps: Iterable[UserMap]) -> None:
    """Make ``maps`` the process's user maps, dropping any loaded before (a reconfig's effect);
    raises :class:`UserMapError` naming the knob of a map that cannot be loaded."""
    htcondor2.reload_config_usermaps()   # this process's config names no map: all are dropped
    for user_map in maps:
        if user_map.file is not None:
            _load(user_map, user_map.file)
            continue
        descriptor, name = tempfile.mkstemp(prefix="negotiatord-usermap-")
        try:
            with os.fdopen(descriptor, "w") as written:
                written.write(user_map.data or "")
            _load(user_map, Path(name))
        finally:
            os.unlink(name)


def _load(user_map: UserMap, path: Path) -> None:
    try:
        htcondor2.load_a_config_usermap_file(user_map.name, str(path))
    except htcondor2.HTCondorException as error:
        where = f" = {user_map.file}" if user_map.file is not None else ""
        raise UserMapError(f"{user_map.knob}{where}: {error}") from None


def map_user(map_name: str, value: str) -> str | None:
    """What map ``map_name`` maps ``value`` to (``userMap``); None when it maps it to nothing."""
    mapped = classad2.ExprTree(f"userMap({classad2.quote(map_name)}, {classad2.quote(value)})").eval()
    return mapped if isinstance(mapped, str) else None
