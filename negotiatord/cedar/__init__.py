"""HTCondor's wire protocol, CEDAR, on asyncio: what negotiatord needs to talk to HTCondor's daemons.

The package knows nothing of negotiation. Its parts, bottom up:

* :mod:`~.wire`: the encoding of integers, doubles, strings, bytes and secrets in a message
  (``src/condor_io/stream.cpp``);
* :mod:`~.classads`: ClassAds in a message, private attributes included
  (``src/condor_utils/classad_oldnew.cpp``);
* :mod:`~.packets`: message framing and AES-GCM packet encryption (``src/condor_io/reli_sock.cpp``,
  ``condor_crypt_aesgcm.cpp``);
* :mod:`~.sinful`: daemon addresses, including those behind ``condor_shared_port``
  (``shared_port_client.cpp``, in :mod:`~.client`);
* :mod:`~.policy`, :mod:`~.keys`, :mod:`~.handshake` and :mod:`~.auth`: DaemonCore's command
  protocol with its security negotiation, the authentication methods, and reused sessions
  (``condor_secman.cpp``, ``authentication.cpp``, ``condor_auth_*.cpp``);
* :mod:`~.client`: opening an authenticated, encrypted command stream to a daemon;
* :mod:`~.updates`: sending ads to a collector, as DaemonCore's updates.

And the daemon's side of the same protocol, for serving HTCondor's tools:

* :mod:`~.authorization`: the authorization levels and the ``ALLOW_*``/``DENY_*`` lists
  (``condor_ipverify.cpp``);
* :mod:`~.server_policy` and :mod:`~.server_handshake`: the daemon's security policy per level and
  its half of ``DC_AUTHENTICATE``, new and resumed sessions (``daemon_command.cpp``), with the
  daemon's halves of IDTOKENS and FS in :mod:`~.auth`;
* :mod:`~.server`: the command server, to which the service layer registers the commands it serves;
* :mod:`~.endpoint`, :mod:`~.inherit` and :mod:`~.parent`: life as ``condor_master``'s child, behind
  ``condor_shared_port``, with the sockets and sessions the master hands down and the keep-alives
  it expects.

No code is copied from HTCondor; where a module follows HTCondor's behaviour it says which.
"""
