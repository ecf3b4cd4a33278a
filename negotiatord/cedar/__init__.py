"""HTCondor's wire protocol, CEDAR, on asyncio: what negotiatord needs to talk to HTCondor's daemons.

The package knows nothing of negotiation. Its parts, bottom up:

* :mod:`~.wire`: the encoding of integers, doubles, strings, bytes and secrets in a message
  (``src/condor_io/stream.cpp``);
* :mod:`~.classads`: ClassAds in a message, private attributes included
  (``src/condor_utils/classad_oldnew.cpp``);
* :mod:`~.packets`: message framing and AES-GCM packet encryption (``src/condor_io/reli_sock.cpp``,
  ``condor_crypt_aesgcm.cpp``);
* :mod:`~.sinful` and :mod:`~.shared_port`: daemon addresses, including those behind
  ``condor_shared_port`` (``shared_port_client.cpp``);
* :mod:`~.policy`, :mod:`~.keys`, :mod:`~.handshake` and :mod:`~.auth`: DaemonCore's command
  protocol with its security negotiation, the authentication methods, and reused sessions
  (``condor_secman.cpp``, ``authentication.cpp``, ``condor_auth_*.cpp``);
* :mod:`~.client`: opening an authenticated, encrypted command stream to a daemon;
* :mod:`~.updates`: sending ads to a collector, as DaemonCore's updates.

No code is copied from HTCondor; where a module follows HTCondor's behaviour it says which.
"""
