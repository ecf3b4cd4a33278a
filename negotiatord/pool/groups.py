"""Mapping accounting customers to the configured group tree."""

from __future__ import annotations

from negotiatord.settings import ROOT_GROUP, Settings


class GroupMap:
    """Finds a customer's group, as HTCondor's ``GroupEntry::GetAssignedGroup`` does.

    A name without ``@`` is a group's own record. Otherwise the part before the last ``@`` is
    ``<group path>.<user>``: ``group_a.x.alice@site`` belongs to ``group_a.x`` if configured, else
    ``group_a``, else ``<none>``; ``alice@site`` belongs to ``<none>``. Group names compare
    case-insensitively.
    """

    def __init__(self, settings: Settings) -> None:
        self._by_lower = {g.name.lower(): g.name for g in settings.groups}

    def group_of(self, customer: str) -> str:
        account, at, _ = customer.rpartition("@")
        name = customer.lower() if not at else account.rpartition(".")[0].lower()
        while name:
            if name in self._by_lower:
                return self._by_lower[name]
            name, _, _ = name.rpartition(".")
        return ROOT_GROUP

    def lineage(self, group: str) -> list[str]:
        """``group`` and its ancestors up to and including ``<none>``."""
        chain = [group]
        while group != ROOT_GROUP:
            head, dot, _ = group.rpartition(".")
            group = self._by_lower.get(head.lower(), ROOT_GROUP) if dot else ROOT_GROUP
            chain.append(group)
        return chain
