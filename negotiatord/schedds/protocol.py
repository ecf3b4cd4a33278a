"""The messages of a ``NEGOTIATE`` session, the negotiator's side (``NEGOTIATE_PROTOCOL.md`` beside
HTCondor's build has them with file and line).

* The session opens with the ``NEGOTIATE`` command (through DaemonCore's handshake on a new
  connection, as the bare integer on a connection the schedd kept from an earlier session) and an
  ad naming the submitter (``Owner``, ``SubmitterTag``), the job attributes the negotiator reads
  (``AutoClusterAttrs``) and the negotiator's name (``Matchmaker::startNegotiateProtocol``).
* ``SEND_RESOURCE_REQUEST_LIST`` and a count asks for up to that many requests (``SEND_JOB_INFO``
  for one); the schedd answers each with ``JOB_INFO`` and a request ad, and ``NO_MORE_JOBS`` when
  it has none left (``ResourceRequestList::fetchRequestsFromSchedd``).
* A match is ``PERMISSION_AND_AD``, the claim id as a secret, and the slot ad without its private
  attributes; a request the cycle could not serve is ``REJECTED_WITH_REASON`` and the reason
  (``Matchmaker::matchmakingProtocol``, ``negotiate``).
* ``END_NEGOTIATE`` ends the session; the schedd keeps the connection for the next one.
"""

from __future__ import annotations

import classad2

from negotiatord.cedar.classads import get_classad, put_classad
from negotiatord.cedar.client import CommandStream
from negotiatord.cedar.commands import (
    END_NEGOTIATE,
    JOB_INFO,
    NEGOTIATE,
    NO_MORE_JOBS,
    PERMISSION_AND_AD,
    REJECTED,
    REJECTED_WITH_REASON,
    SEND_JOB_INFO,
    SEND_RESOURCE_REQUEST_LIST,
)
from negotiatord.cedar.errors import ProtocolError
from negotiatord.cedar.wire import WireError
from negotiatord.schedds.submitters import Submitter


def start_session(stream: CommandStream, submitter: Submitter, significant_attributes: str,
                  negotiator_name: str, *, command_sent: bool) -> None:
    """Queue the opening of a session for ``submitter``: the command integer unless the handshake
    carried it, then the negotiation ad."""
    message = stream.message()
    if not command_sent:
        message.put_int(NEGOTIATE)
    ad = classad2.ClassAd()
    ad["Owner"] = submitter.owner
    ad["AutoClusterAttrs"] = significant_attributes
    ad["SubmitterTag"] = submitter.tag
    # negotiatord neither matches claimed partitionable slots nor sends diagnostic ads, so it says
    # so (schedd.cpp reads both, defaulting to false)
    ad["MatchClaimedPslots"] = False
    ad["NegotiatorName"] = negotiator_name
    put_classad(message, ad)
    stream.write(message)


async def fetch_requests(stream: CommandStream, batch: int) -> tuple[list[classad2.ClassAd], bool]:
    """Ask for up to ``batch`` requests; returns them, and whether the schedd said it has no more."""
    if batch > 1:
        await stream.send(stream.message().put_int(SEND_RESOURCE_REQUEST_LIST).put_int(batch))
    else:
        await stream.send(stream.message().put_int(SEND_JOB_INFO))
    requests: list[classad2.ClassAd] = []
    for _ in range(batch):
        reader = await stream.receive()
        try:
            operation = reader.get_int32()
            if operation == NO_MORE_JOBS:
                return requests, True
            if operation != JOB_INFO:
                raise ProtocolError(stream.peer, f"the schedd answered a request for jobs with {operation}")
            requests.append(get_classad(reader))
        except WireError as error:
            raise ProtocolError(stream.peer, f"a resource request that is not one: {error}") from None
    return requests, False


def write_offer(stream: CommandStream, claim_id: str, offer: classad2.ClassAd) -> None:
    message = stream.message().put_int(PERMISSION_AND_AD).put_secret(claim_id)
    put_classad(message, offer, private=False)
    stream.write(message)


def write_rejection(stream: CommandStream, reason: str, diagnostics: int) -> None:
    """A refused request: with its reason when the request asked for diagnostics
    (``WantMatchDiagnostics``), bare otherwise."""
    if diagnostics:
        stream.write(stream.message().put_int(REJECTED_WITH_REASON).put_string(reason))
    else:
        stream.write(stream.message().put_int(REJECTED))


def write_end(stream: CommandStream) -> None:
    stream.write(stream.message().put_int(END_NEGOTIATE))
