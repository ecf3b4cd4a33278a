"""Claimed slots as candidates: HTCondor's own preemption, by priority and by startd RANK.

With NEGOTIATOR_CONSIDER_PREEMPTION (HTCondor's default), a claimed slot that matches a job is a
candidate too, as in HTCondor's matchmaker.cpp ``matchmakingAlgorithm``:

- *rank*: the slot prefers the job to the one it runs (``MY.Rank > MY.CurrentRank``), whatever
  the priorities;
- *priority*: the slot's customer is not the job's submitter, PREEMPTION_REQUIREMENTS holds and
  the slot ranks the job at least as well as the running one (``MY.Rank >= MY.CurrentRank``).

Candidates are ordered as HTCondor orders them: NEGOTIATOR_PRE_JOB_RANK, the job's Rank,
NEGOTIATOR_POST_JOB_RANK, then the preemption state (an idle slot before a rank preemption before a
priority preemption), then PREEMPTION_RANK. So an idle slot that ranks as well as a claimed one
always wins; a claimed slot is taken only when it ranks strictly better on the first three, or
when no idle slot is left. A preempted slot is not offered again in the cycle (HTCondor removes a
matched offer from its list).

A rule decides whether a job may take a claimed slot: ``priority`` and ``rank`` here; the fair
sharing rule (Dominant Resource Share across groups) names itself ``fair_sharing`` and gives the
strategy that allowed it. Every preemption is recorded with its rule and strategy.

The answers PREEMPTION_REQUIREMENTS and PREEMPTION_RANK give for a slot are kept for the cycle
when PREEMPTION_REQUIREMENTS_STABLE / PREEMPTION_RANK_STABLE (the defaults) say they do not change
within it; otherwise they are asked again, with the figures of the moment, each time the slot is
considered, as HTCondor's ``cache_still_valid`` re-checks its cached candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum

import classad2
import numpy as np

from negotiatord.cycle.matchlist import Candidate, best_first
from negotiatord.cycle.result import PREEMPTION_RULES
from negotiatord.evaluation.loading import PoolColumns, equal_ranks_end, first_true
from negotiatord.evaluation.preemption import names_only_target, rank_for_every_slot
from negotiatord.evaluation.protocol import UNRANKED, PairEvaluator, PreemptionAssessment, PreemptionInserts
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.slots import Claim, considers_priority_preemption, may_be_preempted
from negotiatord.pool.snapshot import SlotTable
from negotiatord.settings import Settings

PRIORITY, RANK, FAIR_SHARING, QUOTA = PREEMPTION_RULES

Inserts = Callable[[Autocluster, np.ndarray], PreemptionInserts]


class PreemptState(IntEnum):
    """matchmaker.cpp's PreemptState: the higher, the better a candidate (after the three ranks);
    its NO_PREEMPTION, an idle slot, is better than both (:meth:`PreemptionList.best`)."""

    PRIORITY = 0
    RANK = 1


@dataclass
class PreemptingCandidate(Candidate):
    """A claimed slot offered to a job: taking it preempts ``claim``'s job under ``rule``.

    With ALLOW_PSLOT_PREEMPTION the slot (``row``) may be a partitionable slot instead: then
    ``victims`` are the rows of its dynamic slots whose jobs go, each with the strategy that
    allowed it, ``claim`` being the first's; their resources go back to the p-slot, from which
    the job's dynamic slot is carved as from any p-slot."""

    claim: Claim
    rule: str
    strategy: str | None
    victims: tuple[tuple[int, str | None], ...] = ()

    @property
    def victim_rows(self) -> tuple[int, ...]:
        """The rows of the claimed slots whose jobs taking this candidate preempts."""
        return tuple(row for row, _ in self.victims) if self.victims else (self.row,)


@dataclass(frozen=True)
class _PartitionableEntry:
    """A partitionable slot a request may take by preempting ``victims``, its dynamic slots; the
    three ranks, cost and consumption are the request's on the p-slot with their resources back.
    ``preemption_rank`` is the first victim's PREEMPTION_RANK; ``version`` the p-slot's when asked."""

    row: int
    rank: np.ndarray
    cost: float
    consumption: np.ndarray
    victims: tuple[int, ...]
    state: PreemptState
    preemption_rank: float
    version: int


class ClaimedSlots:
    """The claimed slots a cycle may preempt, and which of them it has not taken yet.

    A claimed slot is one whose ad says ``State = "Claimed"`` with a customer; which of them
    a job could take is :func:`~negotiatord.pool.slots.may_be_preempted`'s answer. Slots whose
    SlotWeight does not evaluate are left out, as they are of everything else.

    With ALLOW_PSLOT_PREEMPTION, a dynamic slot its partitionable slot names (``ChildName``) is
    offered only through that p-slot, as HTCondor's ``matchmakingAlgorithm`` skips a dynamic
    slot whose p-slot rolls its information up; ``children`` maps such a p-slot to its dynamic
    slots, and the p-slot stays open while none of them has been taken.
    """

    def __init__(self, table: SlotTable, weights: np.ndarray, settings: Settings,
                 trimmed: frozenset[int] = frozenset(), preemptable: np.ndarray | None = None) -> None:
        """``trimmed``: rows of slots about to shut down (NEGOTIATOR_TRIM_SHUTDOWN_THRESHOLD), left
        out; so are the dynamic slots of such a partitionable slot. ``preemptable``: each row's
        ``may_be_preempted`` under ``settings``, if known (the snapshot builder asks it once per
        slot ad); else it is asked here, slot by slot."""
        if preemptable is None:
            preemptable = np.fromiter((may_be_preempted(slot, settings) for slot in table.slots), bool,
                                      len(table))
        parents = table.partitionable_parents if settings.allow_pslot_preemption else {}
        eligible = [row for row in np.flatnonzero(preemptable & ~np.isnan(weights)).tolist() if row not in trimmed]
        self.children: dict[int, list[int]] = {}
        for child, parent in parents.items():     # in ChildName order
            if (weights[child] == weights[child] and child not in trimmed and parent not in trimmed
                    and preemptable[child]):
                self.children.setdefault(parent, []).append(child)
        self._parent = {child: parent for parent, children in self.children.items() for child in children}
        rows = [row for row in eligible if row not in parents]
        self.table = table
        self.rows = np.array(rows, dtype=np.int64)
        self.rows.setflags(write=False)
        self.amounts = table.amounts[self.rows]
        self.amounts.setflags(write=False)
        # with no priority preemption possible, only slots whose Rank could beat their
        # CurrentRank matter: where the Rank has one value for a job on every slot, that is
        # one comparison per slot, made before the slots are assessed (:meth:`could_outrank`)
        self._ranks: dict[str, tuple[classad2.ExprTree, np.ndarray, np.ndarray]] = {}
        self._other = np.arange(len(rows))
        # PREEMPTION_REQUIREMENTS_STABLE and PREEMPTION_RANK_STABLE: answers outlive the pie spin
        self.stable = settings.preemption_requirements_stable and settings.preemption_rank_stable
        if not considers_priority_preemption(settings):
            self._group_by_rank(table)
        self.open = np.zeros(len(table), dtype=bool)
        self.open[self.rows] = True
        self.open[list(self._parent)] = True
        self.open[list(self.children)] = True

    def _group_by_rank(self, table: SlotTable) -> None:
        """Positions in :attr:`rows` by the text of a Rank that names only TARGET attributes,
        with their CurrentRank (PreemptingRank while a claim waits); the rest in ``_other``."""
        by_text: dict[str, tuple[classad2.ExprTree, list[int], list[float]]] = {}
        other = []
        for position, row in enumerate(self.rows.tolist()):
            slot = table.slots[row]
            rank = slot.ad.lookup("Rank") if "Rank" in slot.ad else None
            current = slot.claim.rank_to_beat if slot.claim is not None else None
            if rank is None or current is None or not names_only_target(rank):
                other.append(position)
                continue
            entry = by_text.setdefault(str(rank), (rank, [], []))
            entry[1].append(position)
            entry[2].append(current)
        self._ranks = {text: (rank, np.array(positions, dtype=np.int64), np.array(currents))
                       for text, (rank, positions, currents) in by_text.items()}
        self._other = np.array(other, dtype=np.int64)

    def could_outrank(self, autocluster: Autocluster, inserts: Inserts) -> tuple[np.ndarray, np.ndarray]:
        """The rows (and their amounts) a job of ``autocluster`` could take: all of them, or,
        with no priority preemption possible, those whose Rank may exceed their CurrentRank; a
        Rank with one value for the job on every slot (:func:`rank_for_every_slot`, with the
        figures HTCondor inserts into the job) is compared here, as ``MY.Rank > MY.CurrentRank``."""
        if not self._ranks:
            return self.rows, self.amounts
        inserted = inserts(autocluster, np.zeros(0, dtype=np.int64)).submitter
        # unstable answers are asked again with the figures of the moment: a Rank reading them
        # cannot be decided now
        varying = () if self.stable else {name.lower() for name in inserted}
        kept = [self._other]
        for rank, positions, currents in self._ranks.values():
            decidable, value = rank_for_every_slot(rank, autocluster.ad, inserted, varying)
            if not decidable:
                kept.append(positions)
            elif value is not None:
                kept.append(positions[currents < value])
        positions = np.sort(np.concatenate(kept))
        return self.rows[positions], self.amounts[positions]

    def __len__(self) -> int:
        return len(self.rows) + len(self._parent)

    def take(self, row: int) -> None:
        self.open[row] = False
        parent = self._parent.get(row)
        if parent is not None:
            self.open[parent] = False


class PreemptionList:
    """One request's claimed candidates, best first by the three ranks, as a MatchList keeps the
    idle ones; preemption state and PREEMPTION_RANK decide within a tier of equal ranks."""

    def __init__(self, autocluster: Autocluster, evaluator: PairEvaluator, claimed: ClaimedSlots,
                 pool: PoolColumns, inserts: Inserts) -> None:
        self._autocluster = autocluster
        self._evaluator = evaluator
        self._claimed = claimed
        self._pool = pool
        self._stable = claimed.stable
        asked_rows, asked_amounts = claimed.could_outrank(autocluster, inserts)
        if len(asked_rows):
            assessment = evaluator.assess(autocluster, asked_rows, asked_amounts)
            matched = np.flatnonzero(assessment.matched)
            rows, rank = assessment.rows[matched], assessment.rank[matched]
            cost, consumption = assessment.cost[matched], assessment.consumption[matched]
        else:
            rows, rank = asked_rows, np.zeros((0, 3))
            cost, consumption = np.zeros(0), np.zeros((0, claimed.amounts.shape[1]))
        self._partitionable: dict[int, _PartitionableEntry] = {}    # p-slot row -> its dynamic slots' preemption
        if claimed.children and autocluster.ad.get("WantPslotPreemption") is True:
            entries = self._partitionable_entries(inserts)
            self._partitionable = {entry.row: entry for entry in entries}
            if entries:
                rows = np.concatenate([rows, [entry.row for entry in entries]])
                rank = np.concatenate([rank, [entry.rank for entry in entries]])
                cost = np.concatenate([cost, [entry.cost for entry in entries]])
                consumption = np.concatenate([consumption, [entry.consumption for entry in entries]])
        order = best_first(rows, rank)
        self._rows = rows[order]
        self._rank = rank[order]
        self._cost = cost[order]
        self._consumption = consumption[order]
        # by position in the list: the preemption state (_UNASKED, _NO_CANDIDATE or a PreemptState)
        # and PREEMPTION_RANK, kept while the answers are stable
        self._state = np.full(len(self._rows), _UNASKED, dtype=np.int8)
        self._preemption_rank = np.full(len(self._rows), UNRANKED)
        self._is_partitionable = np.isin(self._rows, list(self._partitionable))
        self.refused: set[int] = set()      # rows this request may not take (its concurrency limits there)
        self._head = 0
        self._tier_ends: dict[int, int] = {}   # position -> the end of its tier of equal ranks

    def _partitionable_entries(self, inserts: Inserts) -> list[_PartitionableEntry]:
        """ALLOW_PSLOT_PREEMPTION, as matchmaker.cpp's ``pslotMultiMatch`` decides it for a job
        that says ``WantPslotPreemption = True`` and a partitionable slot it does not match as
        the slot stands: the p-slot's dynamic slots are taken lowest CurrentRank first (ties in
        ChildName order), each one that may go under HTCondor's rules (the slot's Rank for the
        job above its CurrentRank: RANK; equal, another customer's and PREEMPTION_REQUIREMENTS
        holding with the dynamic slot as MY: priority) giving its resources back to the p-slot,
        until the p-slot matches the job. The candidate is a priority preemption when any of its
        victims needed PREEMPTION_REQUIREMENTS, else a RANK one. The p-slot's answers hold while
        it is not changed (its version) and none of its dynamic slots is taken."""
        claimed, table = self._claimed, self._claimed.table
        pslots = np.array(list(claimed.children), dtype=np.int64)
        standing = self._evaluator.assess(self._autocluster, pslots, self._pool.amounts[pslots])
        entries = []
        for pslot in pslots[~standing.matched].tolist():
            children = np.array([row for row in claimed.children[pslot] if claimed.open[row]], dtype=np.int64)
            if not len(children):
                continue
            asked = inserts(self._autocluster, children)
            states, ranks = _decided(self._evaluator.assess_preemption(self._autocluster, children, asked), asked)
            usable = [(row, PreemptState(state), rank) for row, state, rank
                      in zip(children.tolist(), states.tolist(), ranks.tolist()) if state >= 0]
            usable.sort(key=lambda entry: _current_rank(table.slots[entry[0]].claim))
            if not usable:
                continue
            victims = np.array([row for row, _, _ in usable], dtype=np.int64)
            given_back = np.cumsum(np.nan_to_num(table.amounts[victims]), axis=0)
            merged = self._evaluator.assess(self._autocluster, np.full(len(victims), pslot, dtype=np.int64),
                                            self._pool.amounts[pslot] + given_back)
            if not merged.matched.any():
                continue
            needed = int(np.argmax(merged.matched))
            rules = [state for _, state, _ in usable[:needed + 1]]
            entries.append(_PartitionableEntry(
                pslot, merged.rank[needed], float(merged.cost[needed]), merged.consumption[needed],
                tuple(victims[:needed + 1].tolist()),
                PreemptState.PRIORITY if PreemptState.PRIORITY in rules else PreemptState.RANK,
                usable[0][2], int(self._pool.version[pslot])))
        return entries

    def best(self, idle: Candidate | None, inserts: Inserts) -> PreemptingCandidate | None:
        """The best claimed candidate that beats ``idle`` (the best idle one, if any), or None."""
        position = self._head
        while position < len(self._rows):
            position = self._next_open(position)
            if position == len(self._rows):
                break
            rank = self._rank[position]
            if idle is not None and (float(rank[0]), float(rank[1]), float(rank[2])) <= idle.rank:
                return None           # the idle slot ranks as well or better: no preemption
            end = self._tier_ends.get(position)
            if end is None:       # the ranks do not change: each tier's end is found once
                end = self._tier_ends[position] = equal_ranks_end(self._rank, position)
            tier = np.arange(position, end)
            tier = tier[self._claimed.open[self._rows[tier]]]
            chosen = self._choose(tier, inserts)
            if chosen is not None:
                return chosen
            if self._stable and position == self._head:
                self._head = end      # stable answers: no job of this request takes this tier
            position = end
        return None

    def best_open_rank(self) -> tuple[float, ...] | None:
        """The three ranks of the best matching claimed slot still open (which the rules may
        still refuse), or None if none is."""
        position = self._next_open(self._head)
        return tuple(self._rank[position].tolist()) if position < len(self._rows) else None

    def _next_open(self, start: int) -> int:
        found = start + first_true(self._claimed.open[self._rows[start:]])
        if self._head == start:
            self._head = found
        return found

    def _choose(self, tier: np.ndarray, inserts: Inserts) -> PreemptingCandidate | None:
        """Within a tier of equal ranks: the best preemption state, then the highest PREEMPTION_RANK,
        then the first in slot-table order."""
        states, ranks = self._states(tier, inserts)
        rows = self._rows[tier]
        usable = states >= 0
        if self.refused:
            usable &= ~np.isin(rows, list(self.refused))
        if not usable.any():
            return None
        usable &= states == states[usable].max()
        usable &= ranks == ranks[usable].max()
        chosen = int(tier[usable][np.argmin(rows[usable])])
        row = int(self._rows[chosen])
        slot_rank = self._rank[chosen]
        entry = self._partitionable.get(row)
        victims = () if entry is None else tuple((victim, None) for victim in entry.victims)
        claim = self._claimed.table.slots[row if entry is None else entry.victims[0]].claim
        assert claim is not None     # ClaimedSlots holds claimed slots only
        return PreemptingCandidate(
            row, (float(slot_rank[0]), float(slot_rank[1]), float(slot_rank[2])), float(self._cost[chosen]),
            self._consumption[chosen], 0, claim=claim,
            rule=RANK if states[usable].max() == PreemptState.RANK else PRIORITY, strategy=None, victims=victims,
        )

    def _states(self, tier: np.ndarray, inserts: Inserts) -> tuple[np.ndarray, np.ndarray]:
        """The preemption state (_NO_CANDIDATE or a PreemptState) and PREEMPTION_RANK of each
        position of ``tier``: asked of the evaluator where not known (stable answers are kept),
        a partitionable slot's while it is unchanged."""
        for position in tier[self._is_partitionable[tier]].tolist():
            entry = self._partitionable[int(self._rows[position])]
            still = int(self._pool.version[entry.row]) == entry.version
            self._state[position] = entry.state if still else _NO_CANDIDATE
            self._preemption_rank[position] = entry.preemption_rank
        unknown = tier[~self._is_partitionable[tier]]
        if self._stable:
            unknown = unknown[self._state[unknown] == _UNASKED]
        if len(unknown):
            rows = self._rows[unknown]
            asked = inserts(self._autocluster, rows)
            self._state[unknown], self._preemption_rank[unknown] = _decided(
                self._evaluator.assess_preemption(self._autocluster, rows, asked), asked)
        return self._state[tier], self._preemption_rank[tier]


_UNASKED, _NO_CANDIDATE = -2, -1     # a list's preemption states besides PreemptState's


def _decided(answers: PreemptionAssessment, inserts: PreemptionInserts) -> tuple[np.ndarray, np.ndarray]:
    """matchmaker.cpp: RANK preemption if the slot strictly prefers the job; else priority
    preemption if the slot's customer is not the submitter, PREEMPTION_REQUIREMENTS holds and
    the slot ranks the job at least as well; else the slot is no candidate. Each row's state,
    and its PREEMPTION_RANK."""
    other = np.asarray(inserts.other_customer, dtype=bool)
    priority = other & answers.requirements & answers.rank_at_least
    states = np.where(answers.rank_above, PreemptState.RANK,
                      np.where(priority, PreemptState.PRIORITY, _NO_CANDIDATE)).astype(np.int8)
    return states, answers.preemption_rank.astype(np.float64)


def _current_rank(claim: Claim | None) -> float:
    """A dynamic slot's CurrentRank as pslotMultiMatch reads it (0, its default, when missing)."""
    return 0.0 if claim is None or claim.rank_to_beat is None else claim.rank_to_beat


# the inserted figures that move within a cycle: usage changes with every match (the others, the
# priorities, groups and quotas, are the cycle's own)
VARYING = frozenset({"remoteuserresourcesinuse", "remotegroupresourcesinuse", "submitteruserresourcesinuse",
                     "submittergroupresourcesinuse"})


class InsertedFigures:
    """The figures HTCondor's negotiator inserts before PREEMPTION_REQUIREMENTS and PREEMPTION_RANK
    are evaluated, as they stand when a request asks: into the job ad, what matchmaker.cpp's
    ``negotiate`` inserts (``SubmitterUserPrio``, ``SubmittorPrio``, ``SubmitterUserResourcesInUse``,
    ``SubmitterNegotiatingGroup``, ``SubmitterAutoregroup`` and, with accounting groups configured,
    ``SubmitterGroup``, ``SubmitterGroupResourcesInUse``, ``SubmitterGroupQuota``); into the slot ad,
    what its ``addRemoteUserPrios`` inserts (``RemoteUserPrio``, ``RemoteUserResourcesInUse``,
    ``CurrentRank`` set to PreemptingRank when the slot has one and, with groups,
    ``RemoteGroup``, ``RemoteGroupResourcesInUse``, ``RemoteGroupQuota``). Usage is weighted (the
    accountant's WeightedResourcesUsed); a group's is its own customers'.

    ``usage`` and ``own_usage`` are the cycle's own mappings, read at each question.
    """

    def __init__(self, table: SlotTable, settings: Settings, priority: Callable[[str], float],
                 group_of: Callable[[str], str], usage: Mapping[str, float], own_usage: Mapping[str, float],
                 quotas: Mapping[str, float]) -> None:
        self._table = table
        self._groups = bool(settings.groups)
        self._priority = priority
        self._group_of = group_of
        self._usage = usage
        self._own_usage = own_usage
        self._quotas = quotas
        self._row_keys: np.ndarray | None = None                 # see _claim_keys
        self._keys: list[tuple[str, float | None]] = []
        self._user_ids: dict[str, int] = {}
        self._key_users = np.zeros(0, dtype=np.int64)

    def __call__(self, autocluster: Autocluster, rows: np.ndarray) -> PreemptionInserts:
        submitter = autocluster.submitter
        group = self._group_of(submitter)
        priority = self._priority(submitter)
        job: dict[str, object] = {
            "SubmittorPrio": priority, "SubmitterUserPrio": priority,
            "SubmitterUserResourcesInUse": self._usage.get(submitter, 0.0),
            "SubmitterNegotiatingGroup": group, "SubmitterAutoregroup": False,
        }
        if self._groups:
            job.update(SubmitterGroup=group, SubmitterGroupResourcesInUse=self._own_usage.get(group, 0.0),
                       SubmitterGroupQuota=self._quotas.get(group, 0.0))
        # one mapping per customer and PreemptingRank: the figures are the same for its slots
        keys = self._claim_keys()[rows]
        assert (keys >= 0).all()     # asked of claimed slots only
        mappings = {key: self._remote(*self._keys[key]) for key in np.unique(keys).tolist()}
        users = self._key_users[keys]
        return PreemptionInserts(job, [mappings[key] for key in keys.tolist()],
                                 users != self._user_ids.get(submitter, -1), self._remote_of, VARYING)

    def _claim_keys(self) -> np.ndarray:
        """Each table row's (customer, PreemptingRank) as an index into ``_keys`` (-1: no claim),
        worked out for the whole table at the first question."""
        if self._row_keys is None:
            index: dict[tuple[str, float | None], int] = {}
            found = []
            for slot in self._table.slots:
                claim = slot.claim
                found.append(-1 if claim is None else
                             index.setdefault((claim.remote_user, claim.preempting_rank), len(index)))
            self._keys = list(index)
            self._user_ids = {user: number for number, user in enumerate(dict.fromkeys(u for u, _ in self._keys))}
            self._key_users = np.array([self._user_ids[user] for user, _ in self._keys], dtype=np.int64)
            self._row_keys = np.array(found, dtype=np.int64)
        return self._row_keys

    def _remote_of(self, row: int) -> dict[str, object]:
        claim = self._table.slots[row].claim
        assert claim is not None     # asked of claimed slots only
        return self._remote(claim.remote_user, claim.preempting_rank)

    def _remote(self, user: str, preempting_rank: float | None) -> dict[str, object]:
        inserted: dict[str, object] = {
            "RemoteUserPrio": self._priority(user), "RemoteUserResourcesInUse": self._usage.get(user, 0.0),
        }
        if preempting_rank is not None:
            inserted["CurrentRank"] = preempting_rank
        if self._groups:
            group = self._group_of(user)
            inserted.update(RemoteGroup=group, RemoteGroupResourcesInUse=self._own_usage.get(group, 0.0),
                            RemoteGroupQuota=self._quotas.get(group, 0.0))
        return inserted


class Preemptor:
    """The cycle's claimed candidates: for a request's next job, the claimed slot it takes
    instead of its best idle one, if any.

    HTCondor's two rules live in :class:`PreemptionList`. Another rule (fair sharing across
    groups) answers the same question here, for the same request and claimed slots, and hands
    back a :class:`PreemptingCandidate` naming its rule and strategy; the cycle commits any
    candidate alike (usage moves, the slot is taken, the preemption is reported).
    """

    def __init__(self, table: SlotTable, pool: PoolColumns, settings: Settings, evaluator: PairEvaluator,
                 inserts: Inserts, trimmed: frozenset[int] = frozenset(),
                 preemptable: np.ndarray | None = None) -> None:
        self.claimed = ClaimedSlots(table, pool.weights, settings, trimmed, preemptable)
        self._pool = pool
        self._evaluator = evaluator
        self._inserts = inserts
        self._lists: dict[int, PreemptionList] = {}

    def best(self, autocluster: Autocluster, idle: Candidate | None) -> Candidate | None:
        """``idle``, or a :class:`PreemptingCandidate` that HTCondor's order puts before it."""
        if not len(self.claimed):
            return idle
        found = self._list(autocluster).best(idle, self._inserts)
        return idle if found is None else found

    def may_outrank(self, autocluster: Autocluster, idle_rank: tuple[float, ...] | None) -> bool:
        """Whether a claimed slot still open that matches ``autocluster`` ranks above
        ``idle_rank`` (any such slot when None: no idle candidate is left), whatever the rules
        would answer; if not, no job of it takes a claimed slot before that idle one."""
        if not len(self.claimed):
            return False
        best = self._list(autocluster).best_open_rank()
        return best is not None and (idle_rank is None or best > idle_rank)

    def take(self, candidate: PreemptingCandidate) -> None:
        for row in candidate.victim_rows:
            self.claimed.take(row)

    def refuse(self, autocluster: Autocluster, row: int) -> None:
        """``autocluster``'s jobs may not take the claimed slot (or p-slot) at ``row`` this cycle."""
        self._list(autocluster).refused.add(row)

    def _list(self, autocluster: Autocluster) -> PreemptionList:
        found = self._lists.get(autocluster.id)
        if found is None:
            found = self._lists[autocluster.id] = PreemptionList(autocluster, self._evaluator, self.claimed,
                                                                 self._pool, self._inserts)
        return found
