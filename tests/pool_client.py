"""HTCondor's Python bindings against a test pool, in a child process of the test.

Importing negotiatord configures HTCondor's library with no config at all (so that its debug log is
not kept in memory), so a test cannot use ``htcondor2`` in its own process to reach a pool. It
runs this module instead, with the pool's ``CONDOR_CONFIG``::

    python -m tests.pool_client submit '{"executable": "/bin/sleep", ...}' COUNT [SCHEDD]
    python -m tests.pool_client jobs [CONSTRAINT [SCHEDD]]
    python -m tests.pool_client history
    python -m tests.pool_client remove CONSTRAINT

and reads its JSON answer on stdout.
"""

from __future__ import annotations

import json
import sys

import htcondor2

JOB_FIELDS = ["ClusterId", "ProcId", "JobStatus", "RemoteHost", "LastRemoteHost", "NumJobStarts", "User",
              "AcctGroup", "ExitCode", "JobRunCount"]


def main(argv: list[str]) -> int:
    command, *args = argv
    named = {"submit": 2, "jobs": 1}.get(command)
    schedd_name = args[named] if named is not None and len(args) > named else None
    schedd = htcondor2.Schedd(htcondor2.Collector().locate(htcondor2.DaemonType.Schedd, schedd_name)
                              if schedd_name else None)
    if command == "submit":
        result = schedd.submit(htcondor2.Submit(json.loads(args[0])), count=int(args[1]))
        print(json.dumps({"cluster": result.cluster()}))
    elif command == "jobs":
        ads = schedd.query(constraint=args[0] if args else "true", projection=JOB_FIELDS)
        print(json.dumps([{key: ad.get(key) for key in JOB_FIELDS} for ad in ads], default=str))
    elif command == "history":
        ads = schedd.history(constraint="true", projection=JOB_FIELDS)
        print(json.dumps([{key: ad.get(key) for key in JOB_FIELDS} for ad in ads], default=str))
    elif command == "remove":
        schedd.act(htcondor2.JobAction.Remove, args[0])
        print("{}")
    else:
        print(f"unknown command {command}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
