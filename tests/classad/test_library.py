"""HTCondor's library is configured when negotiatord is imported, from no config file: the ClassAd
bindings do not keep a log line in memory for every ClassAd and expression the process frees, and a
config HTCondor rejects cannot end the process.

The reference is HTCondor's own source: classad2's ``_handle_dealloc``
(src/python-bindings/common2/py_handle.cpp) logs a D_ALWAYS line per freed handle, and dprintf
keeps every line logged before it is configured (``_condor_save_dprintf_line``,
src/condor_utils/dprintf.cpp). Each check runs in a fresh interpreter, as the daemon starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Looks up an expression and makes an empty ClassAd 200,000 times, after a warm-up, and prints
# how many bytes of resident memory each round added. Kept in memory, each logged line would
# add about 150 bytes a handle: two handles a round, ~57 MiB in all.
GROWTH = """
import classad2
def resident():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
ad = classad2.ClassAd({"Cpus": 4})
ad["START"] = classad2.ExprTree("Cpus > 2 && Memory > TARGET.RequestMemory")
def rounds(count):
    for _ in range(count):
        ad.lookup("START")
        classad2.ClassAd()
rounds(20_000)
before = resident()
rounds(200_000)
print((resident() - before) / 200_000)
"""


def _run(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ if env is None else env, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True,
                          timeout=120, check=False)


def test_freed_classads_and_expressions_leave_no_memory_behind() -> None:
    done = _run("import negotiatord\n" + GROWTH)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 16, f"{float(done.stdout):.0f} bytes kept a round"
    assert done.stderr == ""        # the freed handles' lines are not written out either


def test_the_import_reads_no_htcondor_config_and_leaves_the_environment_as_it_was(tmp_path) -> None:
    """A config HTCondor rejects ends the process that reads it (its parser exits): classad2 alone
    read ``CONDOR_CONFIG`` at its first old-syntax parse. negotiatord reads its settings in a
    child, so a process that imported it survives the parse, and keeps the environment for the
    child to read."""
    broken = tmp_path / "condor_config"
    broken.write_text("FOO = $(\n")
    env = {**os.environ, "CONDOR_CONFIG": str(broken), "_CONDOR_QUERY_TIMEOUT": "$("}
    done = _run("import os, json, classad2, negotiatord\n"
                "classad2.parseOne('A = 1\\n', classad2.ParserType.Old)\n"
                "print(json.dumps({k: v for k, v in os.environ.items() if 'CONDOR' in k.upper()}))", env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"CONDOR_CONFIG": str(broken), "_CONDOR_QUERY_TIMEOUT": "$("}

    done = _run("import os, negotiatord\nprint('CONDOR_CONFIG' in os.environ)",
                {k: v for k, v in os.environ.items() if k != "CONDOR_CONFIG"})
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr
