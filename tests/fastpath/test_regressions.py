"""Regressions of the fast path against classad2, each once seen in a random differential run."""

from __future__ import annotations

import classad2

from negotiatord.fastpath.probe import evaluate, evaluate_over
from tests.fastpath.test_differential import NOW, _ad, reference, same


def test_classad2_steps_over_job_and_slot_values_do_not_read_an_earlier_evaluation():
    """``substr(TARGET.Cpus, Cpus)`` is a classad2 step over a job value and a slot literal: its
    result is a dynamic input the kernel reads. The probe never computed it, so the kernel read
    the frame's default dynamic-input array, a module-level array every frame shared as its
    default registers too: ``-(TARGET.b)`` (a job-only plan run in those registers) left ERROR
    there, and the next probe answered ERROR where classad2 says UNDEFINED."""
    cases = [
        ("-((TARGET.b))", {}, {"b": "x"}),                                    # leaves ERROR in its registers
        ("((substr(TARGET.Cpus, Cpus)))", {"Cpus": -2.84184632669918e-46}, {}),
        ("-((TARGET.b))", {}, {"b": "x"}),
        ("substr(TARGET.a, a)", {"a": 1}, {"a": "abcd"}),
        ("strcat(TARGET.a, a)", {"a": "x"}, {"a": "abcd"}),
        ("stringListMember(a, TARGET.a)", {"a": "b"}, {"a": "a,b,c"}),
        ("substr(TARGET.a, a) == TARGET.b", {"a": -2}, {"a": "abcd", "b": "CD"}),
    ]
    for text, my, target in cases:
        my_ad, target_ad = _ad(my), _ad(target)
        mine = evaluate(text, my_ad, target_ad, NOW)
        assert same(mine, reference(text, my_ad, target_ad)), (text, mine)


def test_classad2_steps_over_many_slots_against_one_job():
    """The same step over several slots at once: each slot gets the value of its own literal."""
    text = "substr(TARGET.a, MY.a)"
    slots = [_ad({"a": value}) for value in (0, 1, 2, -1, 7, "x", 1.5)] + [classad2.ClassAd()]
    job = _ad({"a": "abcd"})
    for slot, mine in zip(slots, evaluate_over(text, None, slots, job, NOW)):
        assert mine is not None and same(mine, reference(text, slot, job)), (slot, mine)
