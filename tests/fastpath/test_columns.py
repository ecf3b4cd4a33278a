"""Slot columns (fastpath/compiler/cells.py) read each slot ad as the classad2 reference sees it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from negotiatord.classad.values import INT
from negotiatord.fastpath.compiler.cells import CellTable, SlotColumns, current_time_cell, current_time_description
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
from negotiatord.fastpath.probe import AdAsSlot
from negotiatord.fastpath.strings import StringTable
from tests.builders import expr, pslot

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from pool_generator import generate_pool  # noqa: E402

NOW = 1_700_000_000


def test_the_clock_an_expression_read_names_is_the_one_the_whole_ad_names():
    """An ad that reads ``CurrentTime`` without defining it is given the cycle's clock, as the
    classad2 reference's frozen_ad does: it searches the ad's whole text (printOld), string
    literals included. The columns settle it from an expression already read where they can;
    the answer must be the whole text's, for OSPool glidein ads (their START reads the clock)
    and for ads that name it only in a string, under a longer name, in an escaped string, or
    not at all."""
    pool = generate_pool(300, 300, 0, scenario="fill")
    crafted = [
        pslot("reads", Start=expr("CurrentTime < GLIDEIN_ToDie"), GLIDEIN_ToDie=NOW),
        pslot("string only", Start=expr('Note == "CurrentTime"'), Note="x"),
        pslot("escaped string", Start=expr('strcat("a\\\\", MyCurrentTime) == "b"'), Note=expr('"\\"CurrentTime"')),
        pslot("longer name", Start=expr("MyCurrentTime > 5"), MyCurrentTime=7),
        pslot("never", Start=expr("Cpus > 0")),
        pslot("own", Start=expr("CurrentTime > 5"), CurrentTime=9),
        pslot("other case", Start=expr("CURRENTTIME > 5 && Cpus > 0")),
    ]
    ads = [*pool.slot_ads, *crafted]
    cells = CellTable(StringTable())
    columns = SlotColumns(tuple(AdAsSlot(ad) for ad in ads), {}, cells, NOW, AdDescriptions())
    rows = np.arange(len(ads))
    for name in sorted({key.lower() for ad in ads for key in ad.keys()} - {"currenttime"}):
        columns.column(name, rows)
    clock = columns.column("currenttime", rows).tolist()
    assert clock == [current_time_cell(current_time_description(ad), cells, NOW) for ad in ads]
    frozen, absent = cells.literal((INT, NOW)), cells.absent
    assert clock[len(pool.slot_ads):] == [frozen, frozen, frozen, absent, absent, cells.literal((INT, 9)), frozen]
    assert clock[:len(pool.slot_ads)].count(frozen) > 200
