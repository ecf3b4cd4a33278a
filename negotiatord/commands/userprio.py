"""``negotiatord userprio``: condor_userprio against a running negotiatord.

Without an edit option it prints what ``condor_userprio`` prints by default, laid out as its
``PrintInfo`` does (user_prio.cpp): groups with their users indented below them, users by effective
priority; columns effective and configured quota, surplus policy, effective priority, priority
factor, weighted resources in use, total usage in weighted hours, and time since last usage. As in
HTCondor, only customers active in the last day are listed unless ``-allusers`` is given; unlike
it, a customer with resources in use counts as active even before its first priority update.
``-l`` prints the daemon's accountant document as JSON, not condor_userprio's long ClassAd form.

Edit options, condor_userprio's (``-setfactor``, ``-setprio``, ``-setaccum``, ``-setbegin``,
``-setlast``, ``-setceiling``, ``-setfloor``, ``-resetusage``, ``-resetall``, ``-delete``), go to the
daemon over HTTP with the bearer token, which stands for HTCondor's ADMINISTRATOR level (stock
``condor_userprio`` reaches the daemon's command port instead, and its ``ALLOW_ADMINISTRATOR``
decides). The daemon's address and token come from ``--url`` and ``--token-file``, else from
the config (``--config``, default ``$CONDOR_CONFIG``): a listing with ``--url`` reads no config.

Exit status: 0; 1 when the daemon refuses the request; 2 when it cannot be reached or asked.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from negotiatord.service.paths import StatePaths, StateDirError
from negotiatord.settings import ROOT_GROUP, ConfigError, load_settings

EXIT_REFUSED = 1
EXIT_UNREACHABLE = 2
ACTIVE_WINDOW_S = 24 * 3600   # user_prio.cpp MinLastUsageTime: "active in the last day"
TIMEOUT_S = 30.0


class _Unreachable(Exception):
    pass


class _Refused(Exception):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="the daemon's config (default: $CONDOR_CONFIG)")
    parser.add_argument("--url", help="the daemon's URL, e.g. http://127.0.0.1:9680 (default: from the config)")
    parser.add_argument("--token-file", type=Path, help="bearer token for edits (default: from the config)")
    parser.add_argument("--cafile", type=Path, help="CA certificate for HTTPS (default: the configured "
                                                     "NEGOTIATORD_TLS_CERTIFICATE when the config is read, "
                                                     "else the system's CAs)")
    parser.add_argument("-allusers", action="store_true", help="list every customer, active or not")
    parser.add_argument("-l", dest="long", action="store_true",
                        help="print the daemon's accountant document as JSON (not condor_userprio -l's "
                             "long ClassAd form)")
    edits = parser.add_mutually_exclusive_group()
    for option, (_, _, _, what) in SETTERS.items():
        edits.add_argument(f"-{option}", nargs=2, metavar=("USER", "VALUE"), help=f"set {what}")
    edits.add_argument("-resetusage", metavar="USER", help="reset a customer's accumulated usage")
    edits.add_argument("-resetall", action="store_true", help="reset every customer's accumulated usage")
    edits.add_argument("-delete", metavar="USER", help="delete a customer's accountant record")


# option -> (the daemon's setting, the body's key, how the value is said, what it sets), as
# condor_userprio takes each and prints what it did
SETTERS = {
    "setfactor": ("factor", "factor", "{:f}", "a priority factor (>= 1)"),
    "setprio": ("priority", "priority", "{:f}", "a real priority"),
    "setaccum": ("accumulated-usage", "usage", "{:f}", "the accumulated usage, in weighted seconds"),
    "setbegin": ("begin-time", "time", "{:.0f}", "the begin usage time (epoch seconds)"),
    "setlast": ("last-time", "time", "{:.0f}", "the last usage time (epoch seconds)"),
    "setceiling": ("ceiling", "ceiling", "{:.0f}", "a ceiling, in weighted resources (-1: none)"),
    "setfloor": ("floor", "floor", "{:.0f}", "a floor, in weighted resources (0: none)"),
}
_SAID = {"setfactor": "priority factor", "setprio": "priority", "setaccum": "Accumulated Usage",
         "setbegin": "Begin Usage Time", "setlast": "Last Usage Time", "setceiling": "ceiling", "setfloor": "floor"}


def run(args: argparse.Namespace) -> int:
    try:
        daemon = _Daemon.locate(args)
        setter = next((option for option in SETTERS if getattr(args, option)), None)
        if setter is not None:
            name, text = getattr(args, setter)
            setting, key, shown, _ = SETTERS[setter]
            value = _number(text)
            daemon.post(f"/v1/accountant/{setting}", {"customer": name, key: value})
            output = f"The {_SAID[setter]} of {name} was set to {shown.format(value)}"
        elif args.delete:
            daemon.post("/v1/accountant/delete", {"customer": args.delete})
            output = f"The accountant record named {args.delete} was deleted"
        elif args.resetusage:
            daemon.post("/v1/accountant/reset-usage", {"customer": args.resetusage})
            output = f"The accumulated usage of {args.resetusage} was reset"
        elif args.resetall:
            daemon.post("/v1/accountant/reset-usage", {"all": True})
            output = "The accumulated usage was reset for all users"
        else:
            document = daemon.get("/v1/accountant")
            output = json.dumps(document, indent=1) if args.long else render(document, args.allusers)
    except _Refused as error:
        print(f"negotiatord userprio: {error}", file=sys.stderr)
        return EXIT_REFUSED
    except (_Unreachable, ConfigError, StateDirError, OSError, ValueError) as error:
        print(f"negotiatord userprio: {error}", file=sys.stderr)
        return EXIT_UNREACHABLE
    # Printed outside the handlers above: a closed stdout (`| head`) is the command line's to
    # handle, not a daemon that cannot be reached.
    print(output)
    return 0


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"the value must be a number, got {text!r}") from None


@dataclass(frozen=True)
class _Daemon:
    url: str
    token_file: Path | None
    tls: ssl.SSLContext | None

    @classmethod
    def locate(cls, args: argparse.Namespace) -> _Daemon:
        """The daemon's address, token and CA: from the options, then from the config for what
        they leave out. ``$CONDOR_CONFIG`` is read only when the command needs something from
        it (the address, or the token for an edit): importing HTCondor's bindings sets it to
        /dev/null when they find no HTCondor config (htcondor2/__init__.py), and their child
        processes inherit that, yet a listing with ``--url`` needs no config at all."""
        url, token_file, cafile = args.url, args.token_file, args.cafile
        editing = any(getattr(args, option) for option in SETTERS) or bool(
            args.resetusage or args.resetall or args.delete)
        config = args.config
        needed = url is None or (editing and token_file is None)
        if config is None and needed and os.environ.get("CONDOR_CONFIG"):
            config = Path(os.environ["CONDOR_CONFIG"])
        if config is not None and (url is None or token_file is None):
            service = load_settings(config).service
            host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(service.http_address, service.http_address)
            host = f"[{host}]" if ":" in host else host
            scheme = "https" if service.tls_certificate else "http"
            url = url or f"{scheme}://{host}:{service.http_port}"
            cafile = cafile or service.tls_certificate
            if token_file is None:
                try:
                    token_file = StatePaths.resolve(service).token_file
                except StateDirError:
                    token_file = None
        if url is None:
            raise _Unreachable("say where the daemon is: --config FILE (or $CONDOR_CONFIG), or --url URL")
        tls = ssl.create_default_context(cafile=str(cafile)) if cafile and url.startswith("https") else None
        return cls(url.rstrip("/"), token_file, tls)

    def get(self, path: str) -> dict[str, Any]:
        return self._call(urllib.request.Request(self.url + path))

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.token_file is None:
            raise _Unreachable("edits need the daemon's bearer token: --token-file FILE or --config FILE")
        token = self.token_file.read_text().strip()
        request = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Authorization": f"Bearer {token}",
                                                  "Content-Type": "application/json"})
        try:
            return self._call(request)
        except _Refused as error:
            if error.status != 403:
                raise
            raise _Refused(f"{error}: the token in {self.token_file} is not the daemon's; the daemon names its "
                           f"token file at start (token_file in its \"negotiatord ready\" log line; under the "
                           f"systemd unit, /var/lib/negotiatord/token): give it with --token-file",
                           error.status) from None

    def _call(self, request: urllib.request.Request) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S, context=self.tls) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as error:
            try:
                reason = json.loads(error.read()).get("error", error.reason)
            except ValueError:
                reason = error.reason
            raise _Refused(f"{request.full_url}: {error.code}: {reason}", error.code) from None
        except urllib.error.URLError as error:
            raise _Unreachable(f"{request.full_url}: cannot reach the daemon: {error.reason}") from None


# -- condor_userprio's table -------------------------------------------------------------------

# (key, width, first heading line, second heading line), in user_prio.cpp's column order.
_QUOTA_COLUMNS = [("effective_quota", 9, "Effective", "Quota"), ("config_quota", 9, "Config", "Quota"),
                  ("surplus", 7, "Use", "Surplus")]
_COLUMNS = [("effective_priority", 12, "Effective", "Priority"), ("factor", 9, "Priority", "Factor"),
            ("weighted_in_use", 6, "Wghted", "In Use"), ("usage_hours", 12, "Total Usage", "(wghted-hrs)"),
            ("since_last_usage", 10, "Time Since", "Last Usage"), ("floor", 9, "Submitter", "Floor"),
            ("ceiling", 9, "Submitter", "Ceiling")]


def render(document: dict[str, Any], all_users: bool) -> str:
    """The accountant document as condor_userprio prints it (hierarchical display)."""
    now = document["now"]
    oldest = now - ACTIVE_WINDOW_S
    groups = [g for g in document["groups"]]
    with_quotas = len(groups) > 1   # only <none>: no groups are configured, no quota columns
    columns = (_QUOTA_COLUMNS if with_quotas else []) + _COLUMNS

    def active(customer: dict[str, Any]) -> bool:
        last = customer["last_usage_time"]
        return all_users or customer["weighted_in_use"] > 0 or (last is not None and last >= oldest)

    customers = [c for c in document["customers"] if active(c)]
    by_name = {c["name"].lower(): c for c in customers if c["is_group"]}
    rows: list[tuple[str, dict[str, str]]] = []
    for group in groups:
        record = by_name.get(group["name"].lower())
        members = sorted((c for c in customers if not c["is_group"] and c["group"] == group["name"]),
                         key=lambda c: (c["effective_priority"], c["name"]))
        if record is None and not members and not all_users:
            continue
        rows.append((group["name"], _group_cells(group, record, now)))
        prefix = "" if group["name"] == ROOT_GROUP else group["name"].lower() + "."
        for member in members:
            name = member["name"][len(prefix):] if member["name"].lower().startswith(prefix) else member["name"]
            rows.append(("  " + name, _user_cells(member, now)))
    users = [c for c in customers if not c["is_group"]]
    footer_name = f"Number of users: {len(users)}"
    footer = {
        "weighted_in_use": _fixed(sum(c["weighted_in_use"] for c in users), 6, 0),
        "usage_hours": _fixed(sum(c["accumulated_usage_s"] for c in users) / 3600, 12, 2),
        "since_last_usage": "" if all_users else _delta(now - oldest),
    }
    name_width = max([len(footer_name), 10, *(len(name) for name, _ in rows)]) + 2
    line = lambda name, cells: " ".join([name.ljust(name_width)] + [  # noqa: E731
        cells.get(key, "").rjust(width) for key, width, _, _ in columns])
    rule = " ".join(["-" * name_width] + ["-" * width for _, width, _, _ in columns])
    timers = [f"  {t['group']}: maximum {_amounts(t['maximum'])}, started {_date(t['started'])}, "
              + (f"due in {_delta(t['due_in_s'])}" if t["due_in_s"] > 0 else "due now")
              for t in document.get("quota_timers", [])]
    return "\n".join([
        f"Last Priority Update: {_date(document['last_update'])}",
        " ".join(["Group".ljust(name_width)] + [h1.center(w) for _, w, h1, _ in columns]).rstrip(),
        " ".join(["  User Name".ljust(name_width)] + [h2.center(w) for _, w, _, h2 in columns]).rstrip(),
        rule,
        *(line(name, cells).rstrip() for name, cells in rows),
        rule,
        line(footer_name, footer).rstrip(),
        *(["", "Quota preemption timers:", *timers] if timers else []),
    ])


def _amounts(amounts: dict[str, float]) -> str:
    return ", ".join(f"{resource}:{amount:g}" for resource, amount in sorted(amounts.items()))


def _group_cells(group: dict[str, Any], record: dict[str, Any] | None, now: float) -> dict[str, str]:
    cells = {
        "effective_quota": "" if group["effective_quota"] is None else _fixed(group["effective_quota"], 9, 2),
        "config_quota": "" if group["config_quota"] is None else _fixed(group["config_quota"], 9, 2),
        "surplus": group["surplus"],
    }
    if record is not None:  # a group's own priority means nothing in HTCondor's display: usage only
        cells.update(_usage_cells(record, now))
    return cells


def _user_cells(customer: dict[str, Any], now: float) -> dict[str, str]:
    """A submitter's cells; a floor or ceiling only where one is set (user_prio.cpp PrintInfo)."""
    bounds = {key: _fixed(customer[key], 9, 2) for key in ("floor", "ceiling") if customer.get(key) is not None}
    return {"effective_priority": _fixed(customer["effective_priority"], 12, 2),
            "factor": _fixed(customer["factor"], 9, 2), **_usage_cells(customer, now), **bounds}


def _usage_cells(customer: dict[str, Any], now: float) -> dict[str, str]:
    last = customer["last_usage_time"]
    return {"weighted_in_use": _fixed(customer["weighted_in_use"], 6, 0),
            "usage_hours": _fixed(customer["accumulated_usage_s"] / 3600, 12, 2),
            "since_last_usage": _delta(now - last) if last is not None else ""}


def _fixed(value: float, width: int, decimals: int) -> str:
    """user_prio.cpp FormatFloat: fixed point, or %g when that does not fit the column."""
    text = f"{value:.{decimals}f}"
    return text if len(text) <= width else f"{value:.{max(width - 6, 1)}g}"


def _delta(seconds: float) -> str:
    """format_time_nosecs: days+hh:mm; ``<now>`` when no time has passed."""
    if seconds <= 0:
        return "<now>"
    minutes = int(seconds) // 60
    return f"{minutes // 1440}+{minutes // 60 % 24:02d}:{minutes % 60:02d}"


def _date(epoch: float | None) -> str:
    return time.strftime("%m/%d %H:%M", time.localtime(epoch)) if epoch is not None else "never"
