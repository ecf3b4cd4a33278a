"""The Negotiator and Accounting ads negotiatord sends its collector, as HTCondor's negotiator makes them.

References: matchmaker.cpp ``forwardAccountingData`` (a submitter's ad: its accountant record with
``Name``, ``NegotiatorName``, ``Priority`` the effective priority, ``IsAccountingGroup``,
``AccountingGroup`` its group, ``LastUpdate``), ``forwardGroupAccounting`` (a group's: its
parent's name as ``AccountingGroup``, ``<none>``'s own name, ``SurplusPolicy`` "no", "regroup" or
"byquota"), ``invalidateNegotiatorAd``; Accountant.cpp ``AddMatch`` (``ResourcesUsed`` counts
slots); user_prio.cpp ``CollectInfo``, which reads these names; and collector.cpp
``setAttrLastHeardFrom``, which evaluates an invalidation's ``Requirements`` in each ad alone. The
ads go through negotiatord's CEDAR encoding and back, as the collector reads them.
"""

from __future__ import annotations

from dataclasses import replace

import classad2

from negotiatord.accountant import AccountantState, CustomerRecord
from negotiatord.cedar.classads import get_classad, put_classad
from negotiatord.cedar.wire import MessageReader, MessageWriter
from negotiatord.classad.conversion import satisfies
from negotiatord.service.accounting import accountant_document
from negotiatord.service.collector_ads import (
    DaemonIdentity,
    accounting_ads,
    invalidate_accounting,
    invalidate_negotiator,
    negotiator_ad,
)
from tests.builders import group, jobs, settings, static_slot
from tests.cycle.test_preemption import claimed, cycle

NOW = 1_790_000_000


def _on_the_wire(ad: dict | classad2.ClassAd) -> classad2.ClassAd:
    writer = MessageWriter(crypto=True)
    put_classad(writer, ad if isinstance(ad, classad2.ClassAd) else classad2.ClassAd(ad))
    return get_classad(MessageReader(writer.payload(), crypto=True))


def test_each_customer_and_group_is_an_accounting_ad_with_htcondors_names():
    config = settings(groups=(group("physics", quota=2, surplus=True), group("physics.theory", dynamic=0.5)),
                      accept_surplus=False)
    tree = config.group_tree
    # alice runs on one of three slots and gets the other two this cycle
    result = cycle([claimed("s0", "physics.alice@site", AccountingGroup="physics.alice@site"),
                    static_slot("s1"), static_slot("s2")], jobs("alice", 2, group="physics"), config)
    records = [CustomerRecord(name, 0.5, None, usage, 7200.0, NOW - 3600, NOW - 60, NOW)
               for name, usage in (("physics.alice@site", 3.0), ("physics", 3.0), ("<none>", 3.0))]
    records.append(CustomerRecord("bob@site", 2.0, 10.0, 0.0, 0.0, None, None, NOW))
    document = accountant_document(AccountantState(records), config, result.groups, NOW, result.slots_in_use(tree))
    ads = {ad["Name"]: _on_the_wire(ad) for ad in accounting_ads(document, "shard_one@cm", tree)}
    assert set(ads) == {"physics.alice@site", "physics", "<none>", "bob@site"}
    for ad in ads.values():
        assert ad["MyType"] == "Accounting" and ad["NegotiatorName"] == "shard_one@cm" and ad["LastUpdate"] == NOW

    alice = ads["physics.alice@site"]
    assert (alice["IsAccountingGroup"], alice["AccountingGroup"]) == (False, "physics")
    assert alice["ResourcesUsed"] == 3 and isinstance(alice["ResourcesUsed"], int)     # slots, not weights
    assert alice["Priority"] == 0.5 * 1000 and alice["PriorityFactor"] == 1000.0       # effective priority
    assert (alice["WeightedResourcesUsed"], alice["WeightedAccumulatedUsage"]) == (3.0, 7200.0)
    assert (alice["BeginUsageTime"], alice["LastUsageTime"]) == (NOW - 3600, NOW - 60)
    bob = ads["bob@site"]          # never used anything: 0, as HTCondor's unset usage times read
    assert (bob["Priority"], bob["ResourcesUsed"], bob["LastUsageTime"]) == (20.0, 0, 0)
    assert bob["AccountingGroup"] == "<none>"
    # a submitter's ad carries its ceiling and floor (forwardAccountingData: -1 and 0 for none),
    # a group's none (forwardGroupAccounting)
    assert (alice["Ceiling"], alice["Floor"]) == (-1, 0)
    assert "Ceiling" not in ads["physics"] and "Floor" not in ads["<none>"]

    physics = ads["physics"]
    assert (physics["IsAccountingGroup"], physics["AccountingGroup"]) == (True, "<none>")
    assert physics["SurplusPolicy"] == "byquota"
    assert (physics["ConfigQuota"], physics["ResourcesUsed"]) == (2.0, 3)
    root = ads["<none>"]
    assert (root["IsAccountingGroup"], root["AccountingGroup"], root["ResourcesUsed"]) == (True, "<none>", 3)


def test_slots_in_use_are_claims_plus_matches_less_preemptions():
    """Accountant::AddMatch counts a claimed slot once for its customer, whatever its weight."""
    config = settings(preemption_requirements="True")
    result = cycle([claimed("s0", "bob@site", Cpus=4, SlotWeight=classad2.ExprTree("Cpus")),
                    claimed("s1", "bob@site"), static_slot("s2")],
                   jobs("alice", 2), config)
    # alice takes the idle s2, then bob's 4-cpu s0 by preemption
    assert [(m.slot, m.preempts) for m in result.matches] == [("s2", None), ("s0", "bob@site#s0")]
    in_use = result.slots_in_use(config.group_tree)
    assert (result.usage["bob@site"], in_use["bob@site"]) == (1.0, 1)
    assert (result.usage["alice@site"], in_use["alice@site"]) == (5.0, 2)
    assert in_use["<none>"] == 3


def test_the_negotiator_ad_and_the_invalidations():
    identity = DaemonIdentity("shard_one@cm", "cm", "http://127.0.0.1:9680", "<127.0.0.1:9618?sock=n>", "0.1",
                              NOW - 100)
    ad = _on_the_wire(negotiator_ad(identity, {"LastNegotiationCycleMatches0": 4}, NOW, 7))
    # where HTCondor's tools find the negotiator's command port (Matchmaker::init_public_ad)
    assert ad["MyAddress"] == ad["NegotiatorIpAddr"] == "<127.0.0.1:9618?sock=n>"
    without_port = replace(identity, address="")
    assert "MyAddress" not in negotiator_ad(without_port, {}, NOW, 7)
    assert (ad["MyType"], ad["Name"], ad["Machine"], ad["DaemonStartTime"], ad["MyCurrentTime"]) == (
        "Negotiator", "shard_one@cm", "cm", NOW - 100, NOW)
    assert (ad["UpdateSequenceNumber"], ad["LastNegotiationCycleMatches0"]) == (7, 4)
    # the Negotiator ad goes by Name (makeNegotiatorAdHashKey); Requirements as HTCondor writes it
    query = _on_the_wire(invalidate_negotiator('shard "one"@cm'))
    assert (query["MyType"], query["TargetType"], query["Name"]) == ("Query", "Negotiator", 'shard "one"@cm')
    assert str(query.lookup("Requirements")) == 'TARGET.Name == "shard \\"one\\"@cm"'
    # the Accounting ads by NegotiatorName alone: evaluated in each ad, it selects this negotiator's
    query = _on_the_wire(invalidate_accounting("shard_one@cm"))
    assert "Name" not in query and query["TargetType"] == "Accounting"
    requirements = str(query.lookup("Requirements"))
    mine = classad2.ClassAd({"Name": "alice@site", "NegotiatorName": "shard_one@cm"})
    theirs = classad2.ClassAd({"Name": "alice@site", "NegotiatorName": "shard_two@cm"})
    assert satisfies(mine, requirements) and not satisfies(theirs, requirements)
