"""A collector query over negotiatord's CEDAR, for the tests against real daemons."""

from __future__ import annotations

import classad2

from negotiatord.cedar.classads import get_classad, put_classad
from negotiatord.cedar.client import CommandStream, open_command
from negotiatord.cedar.handshake import SessionCache
from negotiatord.cedar.policy import ClientSecurity


async def query(address: str, command: int, security: ClientSecurity,
                sessions: SessionCache) -> tuple[CommandStream, list[classad2.ClassAd]]:
    """Every ad ``command`` (a QUERY_*_ADS) returns for a query matching all; the stream it came on."""
    stream = await open_command(address, command, security, sessions, 20.0, name="collector")
    query = classad2.ClassAd({"MyType": "Query", "TargetType": "Machine", "Requirements": classad2.ExprTree("true")})
    message = stream.message()
    put_classad(message, query)
    await stream.send(message)
    reader = await stream.receive()
    ads = []
    while reader.get_int() == 1:
        ads.append(get_classad(reader))
    stream.close()
    return stream, ads
