"""Every command evaluates ClassAds under HTCondor's old semantics.

HTCondor's daemons run with ``STRICT_CLASSAD_EVALUATION = False`` (its default, HTCondor manual,
"Configuration macros"), which turns on the ClassAd library's old semantics: an unscoped name the
ad lacks is looked up in the other ad of the match. The manual's ``PREEMPTION_REQUIREMENTS``
examples rely on it (``RemoteUserPrio > SubmitterUserPrio * 1.2``: ``SubmitterUserPrio`` is
inserted into the job ad, the expression evaluated with the slot as MY). classad2 alone switches
to them only once something parses an old-syntax ad (that configures HTCondor's library), so a
trace replay, which builds its ads itself, ran under the strict semantics and such an expression
never held. Importing negotiatord configures the library, and so puts the process in HTCondor's
mode before any command runs (negotiatord/classad/library.py).
"""

from __future__ import annotations

import subprocess
import sys

from tests.replay.conftest import CONFIG, TRACE
from tests.service_harness import ROOT

PROBE = """
import sys
from negotiatord.classad.semantics import old_semantics
from negotiatord.cli import main
status = main(sys.argv[1:])
print(status, old_semantics())
"""


def test_a_replay_evaluates_unscoped_names_in_the_other_ad(tmp_path):
    (tmp_path / "replay.conf").write_text(CONFIG)
    (tmp_path / "hand.swf").write_text(TRACE)
    done = subprocess.run([sys.executable, "-c", PROBE, "replay", "--config", str(tmp_path / "replay.conf"),
                           "--trace", str(tmp_path / "hand.swf"), "--out", str(tmp_path / "out")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["0", "True"]


def test_importing_negotiatord_makes_preemption_requirements_read_the_job():
    """The manual's unscoped form, evaluated by classad2 with the slot as MY and the job as
    TARGET, in a fresh process: under classad2's strict semantics (classad2 alone, HTCondor not
    configured) ``SubmitterUserPrio`` is undefined; once negotiatord is imported, HTCondor's
    default semantics find it in the job ad."""
    probe = """
import classad2
slot, job = classad2.ClassAd({"RemoteUserPrio": 600.0}), classad2.ClassAd({"SubmitterUserPrio": 100.0})
requirements = classad2.ExprTree("RemoteUserPrio > SubmitterUserPrio * 1.2")
before = requirements.eval(slot, job)
import negotiatord
print(before is classad2.Value.Undefined, requirements.eval(slot, job))
"""
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
