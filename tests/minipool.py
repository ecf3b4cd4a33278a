"""A real HTCondor 25.14 pool on loopback, for the tests that need real daemons.

``../shared/htcondor/minipool`` starts a collector, a schedd and a startd (and, if asked,
HTCondor's own negotiator), secured with IDTOKENS, as an unprivileged user. A test that needs the
pool and cannot start it fails: nothing here skips.

negotiatord's credentials are those an administrator would give it: a token for
``negotiatord@minipool`` (which the pool authorizes at the NEGOTIATOR level) in a token directory
of its own, owned by the user negotiatord runs as and closed to others, as HTCondor requires.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
HTCONDOR = ROOT.parent / "shared" / "htcondor"
MINIPOOL = HTCONDOR / "minipool"
IDENTITY = "negotiatord@minipool"
T = TypeVar("T")


class PoolError(RuntimeError):
    pass


@dataclass
class MiniPool:
    """A running pool in ``directory``."""

    directory: Path
    shared_port: bool = True
    started: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int((self.directory / "port").read_text())

    @property
    def collector(self) -> str:
        return f"<127.0.0.1:{self.port}>"

    @property
    def config(self) -> Path:
        return self.directory / "condor_config"

    def env(self) -> dict[str, str]:
        """The environment of HTCondor's tools for this pool (run as this process's user)."""
        return {**os.environ, "CONDOR_CONFIG": str(self.config),
                "PATH": f"{HTCONDOR / 'bin'}:{HTCONDOR / 'sbin'}:{os.environ.get('PATH', '')}",
                "LD_LIBRARY_PATH": str(HTCONDOR / "lib"), "_CONDOR_SEC_CLIENT_AUTHENTICATION_METHODS": "FS"}

    def token_directory(self, identity: str = IDENTITY) -> Path:
        """A directory holding a token for ``identity``, owned by this process's user, mode 0700."""
        made = Path(_run(MINIPOOL, "token", str(self.directory), identity).strip())
        target = self.directory / "negotiatord-tokens" / identity
        target.mkdir(parents=True, exist_ok=True)
        os.chmod(target, 0o700)
        shutil.copyfile(made, target / "token")
        os.chmod(target / "token", 0o600)
        return target

    def condor(self, tool: str, *args: str) -> str:
        """Run one of HTCondor's tools against the pool; its standard output."""
        path = HTCONDOR / "bin" / tool
        return _run(path if path.exists() else HTCONDOR / "sbin" / tool, *args, env=self.env())

    def client(self, *args: str) -> object:
        """``tests.pool_client`` against this pool: HTCondor's Python bindings, in a child process."""
        env = {**self.env(), "PYTHONPATH": str(ROOT)}
        return json.loads(_run(sys.executable, "-m", "tests.pool_client", *args, env=env))

    def submit(self, count: int, *, schedd: str | None = None, **description: str) -> int:
        """Submit ``count`` jobs as the pool's user; their cluster id."""
        job = {"executable": "/bin/sleep", "arguments": "1", "request_cpus": "1", "request_memory": "16",
               "request_disk": "1024", **description}
        extra = [schedd] if schedd else []
        answer = self.client("submit", json.dumps(job), str(count), *extra)
        assert isinstance(answer, dict)
        return int(answer["cluster"])

    def jobs(self, constraint: str = "true") -> list[dict]:
        return self.jobs_at(None, constraint)

    def jobs_at(self, schedd: str | None, constraint: str = "true") -> list[dict]:
        """The jobs of the schedd named ``schedd`` (None: the pool's first) that meet ``constraint``."""
        answer = self.client("jobs", constraint, *([schedd] if schedd else []))
        assert isinstance(answer, list)
        return answer

    def idle_jobs_advertised(self) -> dict[str, int]:
        """Idle jobs per submitter (``Name@ScheddName``) as the schedds have advertised them to the
        collector: what a negotiator can see."""
        counts: dict[str, int] = {}
        for line in self.condor("condor_status", "-submitters", "-af", "Name", "ScheddName", "IdleJobs").splitlines():
            name, schedd, idle = line.split()
            counts[f"{name}@{schedd}"] = int(idle)
        return counts

    def wait_until_advertised(self, *submitters: str, idle: int = 1, schedd: str = "vm") -> None:
        """Wait until the collector lists each of ``submitters`` at ``schedd`` with idle jobs."""
        wait_for(lambda: all(self.idle_jobs_advertised().get(f"{name}@{schedd}", 0) >= idle for name in submitters),
                 60, f"the schedd to advertise {', '.join(submitters)}")

    def remove_all(self) -> None:
        """Remove every job of every schedd, and wait until the startd has no claim left: the next
        test starts from an idle pool."""
        for address in self.condor("condor_status", "-schedd", "-af", "MyAddress").split():
            # exits 1 when there is nothing (left) to remove
            subprocess.run([str(HTCONDOR / "bin" / "condor_rm"), "-addr", address, "-all"], env=self.env(),
                           capture_output=True, timeout=60)
        wait_for(lambda: "Claimed" not in self.condor("condor_status", "-af", "State"), 90,
                 "the startd to have no claim left")

    def daemon_pid_of(self, program: str) -> int:
        """The pid of the pool's one ``program`` (a child of its master)."""
        master = (self.directory / "run" / "master.pid").read_text().strip()
        found = subprocess.run(["pgrep", "-P", master, "-x", program[:15]], capture_output=True, text=True)
        pids = [int(pid) for pid in found.stdout.split() if pid.strip()]
        if len(pids) != 1:
            raise PoolError(f"expected one {program}, found {pids}")
        return pids[0]

    def daemon_pid(self, local_name: str) -> int:
        """The pid of the pool's daemon started with ``-local-name local_name`` (a child of its master)."""
        master = (self.directory / "run" / "master.pid").read_text().strip()
        found = subprocess.run(["pgrep", "-P", master, "-f", "--", f"-local-name {local_name}"],
                               capture_output=True, text=True)
        pids = [int(pid) for pid in found.stdout.split() if pid.strip()]
        if len(pids) != 1:
            raise PoolError(f"expected one daemon named {local_name}, found {pids}")
        return pids[0]

    def history(self) -> list[dict]:
        answer = self.client("history")
        assert isinstance(answer, list)
        return answer

    def add_config(self, name: str, text: str) -> None:
        (self.directory / "config.d" / name).write_text(text)

    def reconfig(self) -> None:
        """Have every daemon read its config again: SIGHUP to the master, as ``condor_reconfig``
        asks of it, without depending on the collector to find it."""
        master = int((self.directory / "run" / "master.pid").read_text().strip())
        os.kill(master, signal.SIGHUP)

    def stop(self) -> None:
        subprocess.run([str(MINIPOOL), "stop", str(self.directory)], capture_output=True, timeout=90)


def _run(*command: object, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True, env=env, timeout=timeout)
    if done.returncode != 0:
        raise PoolError(f"{' '.join(map(str, command))} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


@contextmanager
def minipool(*, cpus: int = 8, pslots: int = 1, shared_port: bool = True, with_negotiator: bool = False,
             config: str = "", files: dict[str, bytes] | None = None, user: str | None = None) -> Iterator[MiniPool]:
    """A fresh pool for the block's life. It lives under /tmp, where the pool's user can reach it.

    ``files`` (relative path: content) are written into the pool's directory, mode 0600, before
    it starts; the pool's user then owns them, and ``config`` names them as ``$(LOCAL_DIR)/path``.
    ``user`` runs the pool as that user (``MINIPOOL_USER``; ``root``: the master and its daemons
    run as root, as a central manager's do)."""
    if not MINIPOOL.is_file():
        raise PoolError(f"{MINIPOOL} is missing: the tests need ../shared/htcondor beside the checkout")
    directory = Path(tempfile.mkdtemp(prefix="minipool-", dir="/tmp"))
    os.chmod(directory, 0o755)
    if config:
        (directory / "config.d").mkdir()
        (directory / "config.d" / "50-test.config").write_text(config)
    for name, content in (files or {}).items():
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        os.chmod(target, 0o600)
    args = ["start", str(directory), "--cpus", str(cpus), "--pslots", str(pslots),
            "--shared-port", "yes" if shared_port else "no", "--timeout", "120"]
    if with_negotiator:
        args.append("--with-negotiator")
    pool = MiniPool(directory, shared_port)
    environment = {**os.environ, **({"MINIPOOL_USER": user} if user else {})}
    try:
        _run(MINIPOOL, *args, env=environment, timeout=180)
        yield pool
    finally:
        pool.stop()
        shutil.rmtree(directory, ignore_errors=True)


def wait_for(check: Callable[[], T | None], timeout: float, what: str, every: float = 0.5) -> T:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)
