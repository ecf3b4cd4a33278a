"""Misspelt knobs: a name that is almost one negotiatord reads, and per-group knobs of no group.

HTCondor's config reader accepts any name: a macro nobody reads is not an error, so a misspelt
knob (``GROUP_ACCEPT_SURPLUSS``) silently leaves the real one at its default, and a per-group knob
naming a group ``GROUP_NAMES`` does not list (``GROUP_QUOTA_DYNAMIC_group_chemestry``) silently
leaves the real group without it: HTCondor's ``GroupEntry::hgq_construct_tree`` only ever asks for
the knobs of the groups it lists. Here:

- a configured name that neither HTCondor nor negotiatord defines, and that is close to a knob
  negotiatord knows (difflib's similarity ratio at least :data:`CLOSE`, about one edit in ten
  characters), gets a warning naming both; so does any ``NEGOTIATORD_`` name negotiatord does not
  read, that prefix being its own;
- a per-group knob (``GROUP_QUOTA_<g>``, ``GROUP_ACCEPT_SURPLUS_<g>``, ...) whose group is not in
  ``GROUP_NAMES`` is a load error naming the file and line that set it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from pathlib import Path

from negotiatord.settings.errors import ConfigError

# How alike two names must be to call one a misspelling of the other (difflib's ratio).
CLOSE = 0.9
OWN_PREFIX = "NEGOTIATORD_"

# Per-group knobs, longest first: GROUP_QUOTA_DYNAMIC_<g> is not GROUP_QUOTA_<DYNAMIC_g>.
PER_GROUP_PREFIXES = tuple(sorted((
    "GROUP_QUOTA_", "GROUP_QUOTA_DYNAMIC_", "GROUP_ACCEPT_SURPLUS_", "GROUP_AUTOREGROUP_", "GROUP_PRIO_FACTOR_",
    "GROUP_RESOURCE_QUOTA_", "GROUP_BORROWING_LIMIT_", "GROUP_FAIRSHARE_WEIGHT_", "GROUP_LIMIT_",
    "GROUP_GUARANTEED_", "GROUP_QUOTA_PREEMPTION_DELAY_",
), key=len, reverse=True))


def per_group_knob(name: str) -> tuple[str, str] | None:
    """``(prefix, group)`` if ``name`` has the form of a per-group knob, else None."""
    upper = name.upper()
    for prefix in PER_GROUP_PREFIXES:
        if upper.startswith(prefix) and len(name) > len(prefix):
            return prefix, name[len(prefix):]
    return None


def check_per_group_knobs(unknown: Iterable[str], groups: Iterable[str], config: Path) -> None:
    """Refuse a per-group knob among ``unknown`` (configured names nothing reads) whose group is
    not in ``groups``, naming where it is set and the closest group listed."""
    listed = list(groups)
    by_lower = {group.lower(): group for group in listed}
    for name in unknown:
        found = per_group_knob(name)
        if found is None:
            continue
        _, group = found
        if group.lower() in by_lower:
            continue
        near = difflib.get_close_matches(group.lower(), list(by_lower), n=1, cutoff=0.6)
        hint = f" (did you mean {by_lower[near[0]]}?)" if near else ""
        raise ConfigError(f"{name}{locate(config, name)} names group {group!r}, which GROUP_NAMES does not "
                          f"list{hint}: HTCondor would silently ignore it")


def misspelling_warnings(unknown: Iterable[str], known: Iterable[str]) -> list[str]:
    """A warning for each name among ``unknown`` (configured names nothing reads) close to one of
    ``known``, and for each ``NEGOTIATORD_`` name, naming the knob it may have meant."""
    known_by_upper = {name.upper(): name for name in known}
    warnings = []
    for name in unknown:
        near = difflib.get_close_matches(name.upper(), list(known_by_upper), n=1, cutoff=CLOSE)
        if near:
            warnings.append(f"{name} is not a knob negotiatord or HTCondor knows: did you mean "
                            f"{known_by_upper[near[0]]}? (it is left at its default)")
        elif name.upper().startswith(OWN_PREFIX):
            warnings.append(f"{name} is not a knob negotiatord knows: it is ignored")
    return warnings


_INCLUDE = re.compile(r"^\s*include\s*(?:ifexist\s*)?:?\s*(\S.*?)\s*$", re.IGNORECASE)


def locate(config: Path, name: str) -> str:
    """`` (file, line N)`` where ``name`` is set in ``config`` or a file it includes by a path
    (``$(CONFIG_ROOT)`` is the config's directory; other macros are not followed); empty if not
    found. Only for messages: HTCondor's reader has already read the file."""
    setting = re.compile(rf"^\s*(?:NEGOTIATOR\.)?{re.escape(name)}\s*[=:]", re.IGNORECASE)
    seen: set[Path] = set()

    def search(path: Path) -> str:
        if path in seen or not path.is_file():
            return ""
        seen.add(path)
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        for number, line in enumerate(lines, 1):
            if setting.match(line):
                return f" ({path}, line {number})"
            included = _INCLUDE.match(line)
            if included:
                target = included.group(1).replace("$(CONFIG_ROOT)", str(config.parent))
                if "$(" not in target:
                    found = search((config.parent / target).resolve())
                    if found:
                        return found
        return ""

    return search(config.resolve())

