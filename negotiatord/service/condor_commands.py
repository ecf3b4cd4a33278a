"""HTCondor's commands, as negotiatord serves them on its command port: what ``condor_userprio``,
``condor_reschedule``, ``condor_ping``, ``condor_reconfig`` and ``condor_off`` ask of a negotiator.

Each is registered at the level HTCondor's negotiator registers it (``Matchmaker::initialize``,
``src/condor_negotiator.V6/matchmaker.cpp``; DaemonCore's own in ``daemon_core_main.cpp``) and
reads and answers what its handler there does:

* READ: ``GET_PRIORITY``, ``GET_PRIORITY_ROLLUP`` (the accountant in one ad), ``GET_RESLIST`` (a
  submitter's slots), ``QUERY_ACCOUNTING_ADS`` (one ad per customer, for ``condor_userprio
  -negotiator``, ``-allusers`` or named users);
* WRITE: ``SET_PRIORITYFACTOR``, which then also requires ADMINISTRATOR, or a
  ``PRIORITY_FACTOR_AUTHORIZATION`` user map that lets the client's identity set that submitter's
  factor, and answers with an error ad;
* ADMINISTRATOR: ``SET_PRIORITY``, ``SET_ACCUMUSAGE``, ``SET_BEGINTIME``, ``SET_LASTTIME``,
  ``SET_CEILING``, ``SET_FLOOR``, ``RESET_USAGE``, ``RESET_ALL_USAGE``, ``DELETE_USER`` (no answer:
  ``condor_userprio`` expects none), and DaemonCore's ``DC_RECONFIG_FULL`` (read the config again,
  as SIGHUP does) and ``DC_OFF_GRACEFUL`` / ``DC_OFF_FAST`` (stop);
* DAEMON, or ADVERTISE_SCHEDD or ADMINISTRATOR: ``RESCHEDULE``;
* each level's ``DC_NOP_<LEVEL>``, which ``condor_ping`` names to test a level.

The leased ceilings, floors and factors of ``condor_userprio -duration`` (``MANAGE_*``) are not
served: such a request is refused as an unknown command, and the daemon's log says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import classad2

from negotiatord.accountant import UnknownCustomer
from negotiatord.cedar import commands as numbers
from negotiatord.cedar.authorization import Level
from negotiatord.cedar.classads import get_classad, put_classad
from negotiatord.cedar.server import Command, CommandServer
from negotiatord.cedar.wire import MessageReader
from negotiatord.classad.user_maps import map_user
from negotiatord.service.accounting_ads import accounting_ads, answer_query, priority_report, resource_list

if TYPE_CHECKING:
    from negotiatord.service.daemon import Daemon

_NOPS = {
    numbers.DC_NOP_READ: Level.READ, numbers.DC_NOP_WRITE: Level.WRITE, numbers.DC_NOP_NEGOTIATOR: Level.NEGOTIATOR,
    numbers.DC_NOP_ADMINISTRATOR: Level.ADMINISTRATOR, numbers.DC_NOP_OWNER: Level.ADMINISTRATOR,
    numbers.DC_NOP_CONFIG: Level.CONFIG, numbers.DC_NOP_DAEMON: Level.DAEMON,
    numbers.DC_NOP_ADVERTISE_STARTD: Level.ADVERTISE_STARTD,
    numbers.DC_NOP_ADVERTISE_SCHEDD: Level.ADVERTISE_SCHEDD,
    numbers.DC_NOP_ADVERTISE_MASTER: Level.ADVERTISE_MASTER,
}
# the accountant write each command makes, and what it reads after the submitter's name
Write = Callable[[str, float], None]
_VALUE_READERS: dict[str, Callable[[MessageReader], float]] = {
    "double": MessageReader.get_double, "int": lambda reader: float(reader.get_int())}


class NegotiatorCommands:
    """The handlers, bound to the daemon they serve."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.log = daemon.log

    def register(self, server: CommandServer) -> None:
        accountant = self.daemon.accountant
        server.register(numbers.DC_NOP, Level.ALLOW, _nothing)
        for number, level in _NOPS.items():
            server.register(number, level, _nothing)
        server.register(numbers.GET_PRIORITY, Level.READ, self._priorities)
        server.register(numbers.GET_PRIORITY_ROLLUP, Level.READ, self._priorities)
        server.register(numbers.GET_RESLIST, Level.READ, self._resource_list)
        server.register(numbers.QUERY_ACCOUNTING_ADS, Level.READ, self._accounting_ads)
        server.register(numbers.SET_PRIORITYFACTOR, Level.WRITE, self._set_factor)
        edits: dict[int, tuple[str, str, Write]] = {
            numbers.SET_PRIORITY: ("priority", "double", accountant.set_priority),
            numbers.SET_ACCUMUSAGE: ("accumulated usage", "double", accountant.set_accumulated_usage),
            numbers.SET_BEGINTIME: ("begin usage time", "int", accountant.set_begin_time),
            numbers.SET_LASTTIME: ("last usage time", "int", accountant.set_last_time),
            numbers.SET_CEILING: ("ceiling", "int", accountant.set_ceiling),
            numbers.SET_FLOOR: ("floor", "int", accountant.set_floor),
        }
        for number, (what, kind, write) in edits.items():
            server.register(number, Level.ADMINISTRATOR, self._setter(what, _VALUE_READERS[kind], write))
        server.register(numbers.RESET_USAGE, Level.ADMINISTRATOR, self._reset_usage)
        server.register(numbers.RESET_ALL_USAGE, Level.ADMINISTRATOR, self._reset_all_usage)
        server.register(numbers.DELETE_USER, Level.ADMINISTRATOR, self._delete)
        server.register(numbers.RESCHEDULE, Level.DAEMON, self._reschedule,
                        alternates=(Level.ADVERTISE_SCHEDD, Level.ADMINISTRATOR))
        server.register(numbers.DC_RECONFIG, Level.ADMINISTRATOR, self._reconfig)
        server.register(numbers.DC_RECONFIG_FULL, Level.ADMINISTRATOR, self._reconfig)
        for off in (numbers.DC_OFF_GRACEFUL, numbers.DC_OFF_FAST, numbers.DC_OFF_PEACEFUL, numbers.DC_OFF_FORCE):
            server.register(off, Level.ADMINISTRATOR, self._off)

    # -- reads -----------------------------------------------------------------------------------

    async def _priorities(self, command: Command) -> None:
        """``GET_PRIORITY_commandHandler``, ``GET_PRIORITY_ROLLUP_commandHandler``."""
        document = await self.daemon.accountant_report()
        rollup = command.number == numbers.GET_PRIORITY_ROLLUP
        await command.send_ad(priority_report(document, self.daemon.settings.group_tree, rollup), types=False)

    async def _resource_list(self, command: Command) -> None:
        """``GET_RESLIST_commandHandler``."""
        submitter = (await command.receive()).get_string()
        slots = self.daemon.store.view().slots.values()
        await command.send_ad(resource_list(slots, submitter, self.daemon.settings.group_tree), types=False)

    async def _accounting_ads(self, command: Command) -> None:
        """``QUERY_ADS_commandHandler``: the ads the query asks for, each after a 1, then a 0."""
        query = get_classad(await command.receive())
        ads = answer_query(accounting_ads(await self.daemon.accountant_report()), query)
        message = command.message()
        for ad in ads:
            message.put_int(1)
            put_classad(message, ad, private=False)
        await command.send(message.put_int(0))

    # -- writes ----------------------------------------------------------------------------------

    async def _set_factor(self, command: Command) -> None:
        """``SET_PRIORITYFACTOR_commandHandler``: the factor, if the client is also an
        administrator; the answer says why not."""
        reader = await command.receive()
        submitter, factor = reader.get_string(), reader.get_double()
        answer = classad2.ClassAd({"ErrorCode": 0})
        try:
            self._may_set_factor(command, submitter)
            await asyncio.to_thread(self.daemon.accountant.set_factor, submitter, factor)
        except (PermissionError, ValueError) as error:
            answer = classad2.ClassAd({"ErrorCode": 4 if isinstance(error, PermissionError) else 1,
                                       "ErrorString": str(error)})
            self.log.warning("priority factor not set", submitter=submitter, factor=factor, by=command.who,
                             reason=str(error))
        else:
            self.log.info("priority factor set", submitter=submitter, factor=factor, by=command.who)
        await command.send_ad(answer)

    def _may_set_factor(self, command: Command, submitter: str) -> None:
        """Raise PermissionError unless the client is an administrator, or the
        ``PRIORITY_FACTOR_AUTHORIZATION`` map gives its identity a comma list of prefixes one of
        which starts ``submitter``'s name (``SET_PRIORITYFACTOR_commandHandler``)."""
        administrator = command.holds(Level.ADMINISTRATOR)
        if administrator.allowed:
            return
        refused = f"{command.who} may not set the priority factor of {submitter}: not an administrator " \
                  f"({administrator.reason})"
        if not self.daemon.settings.service.pool.has_user_map("PRIORITY_FACTOR_AUTHORIZATION"):
            raise PermissionError(f"{refused}, and no PRIORITY_FACTOR_AUTHORIZATION map is configured "
                                  "(NEGOTIATOR_CLASSAD_USER_MAP_NAMES)")
        if not command.user:
            raise PermissionError(f"{refused}, and not authenticated")
        prefixes = map_user("PRIORITY_FACTOR_AUTHORIZATION", command.user) or ""
        if not any(prefix.strip() and submitter.startswith(prefix.strip()) for prefix in prefixes.split(",")):
            raise PermissionError(f"{refused}, and PRIORITY_FACTOR_AUTHORIZATION maps {command.user} to "
                                  f"{prefixes or 'nothing'}, no prefix of {submitter}")

    def _setter(self, what: str, read: Callable[[MessageReader], float], write: Write) -> Callable[
            [Command], Awaitable[None]]:
        async def handler(command: Command) -> None:
            reader = await command.receive()
            submitter, value = reader.get_string(), read(reader)
            try:
                await asyncio.to_thread(write, submitter, value)
            except ValueError as error:
                self.log.warning(f"{what} not set", submitter=submitter, value=value, by=command.who,
                                 reason=str(error))
                return
            self.log.info(f"{what} set", submitter=submitter, value=value, by=command.who)
        return handler

    async def _reset_usage(self, command: Command) -> None:
        submitter = (await command.receive()).get_string()
        try:
            await asyncio.to_thread(self.daemon.accountant.reset_usage, submitter, self.daemon.clock.now())
        except UnknownCustomer as error:
            self.log.warning("usage not reset", submitter=submitter, by=command.who, reason=str(error))
            return
        self.log.info("accumulated usage reset", submitter=submitter, by=command.who)

    async def _reset_all_usage(self, command: Command) -> None:
        names = await asyncio.to_thread(self.daemon.accountant.reset_all_usage, self.daemon.clock.now())
        self.log.info("accumulated usage reset", customers=len(names), by=command.who)

    async def _delete(self, command: Command) -> None:
        submitter = (await command.receive()).get_string()
        try:
            await asyncio.to_thread(self.daemon.accountant.delete_customer, submitter)
        except UnknownCustomer as error:
            self.log.warning("record not deleted", submitter=submitter, by=command.who, reason=str(error))
            return
        self.log.info("accountant record deleted", submitter=submitter, by=command.who)

    # -- the daemon ------------------------------------------------------------------------------

    async def _reschedule(self, command: Command) -> None:
        self.daemon.reschedule()
        self.log.info("reschedule requested", by=command.who)

    async def _reconfig(self, command: Command) -> None:
        self.log.info("reconfig requested", by=command.who)
        asyncio.ensure_future(self.daemon.reload())

    async def _off(self, command: Command) -> None:
        self.log.info("shutdown requested", command=command.name, by=command.who)
        self.daemon.stop()


async def _nothing(command: Command) -> None:
    """``handle_nop``: the command's authorization was the point."""
