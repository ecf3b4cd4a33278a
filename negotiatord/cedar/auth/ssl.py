"""SSL: a TLS handshake tunnelled through CEDAR messages, as ``Condor_Auth_SSL`` runs it on the
client side in HTCondor 25.x (``src/condor_io/condor_auth_ssl.cpp``, ``authenticate``, without
SciTokens mode). TLS itself is Python's :mod:`ssl` (OpenSSL) on memory buffers.

The exchange:

1. **Status.** The daemon sends its status, 0 if its certificate, key and CAs loaded and -1 if
   not; the client answers with its own. Either -1 ends the method there.
2. **Handshake rounds.** Each message holds a status, a length and that many bytes of TLS
   records (at most 1 MiB, ``AUTH_SSL_BUF_SIZE``). The client sends in odd rounds and the daemon
   in even ones, the client first. Before each round the client drives its TLS engine
   (``SSL_connect``) over what it has received and sends what the engine wrote, with its status:
   2 while the handshake wants more, 4 ("holding") once it is done, 3 ("quitting") when it failed,
   the TLS alert then being the data. The rounds end when both sides hold; either side quitting
   ends the method.
3. **Key rounds.** The daemon writes a random 256-byte key as TLS application data; now the
   daemon sends first. The client answers 4 once it has read the key (3 if it could not), and
   the rounds end when both hold. HTCondor 9.0 and later derive the session key by ECDH during
   the security negotiation, so this key only completes the exchange: it is read and dropped.

**Who we are.** The daemon names this side by the subject of its certificate in OpenSSL's
one-line form (``/O=.../CN=...``) and maps it with its ``CERTIFICATE_MAPFILE`` (method ``SSL``);
an unmapped subject is ``ssl@unmapped``. Without a certificate (``AUTH_SSL_CLIENT_CERTFILE`` and
``KEYFILE`` unset) the client is anonymous and the daemon sees ``unauthenticated@unmapped``:
HTCondor's clients try SSL with or without a certificate, and so does this one.

**Who the daemon is.** As HTCondor does, the client requires TLS 1.2 or later and a daemon
certificate that chains to a CA in ``AUTH_SSL_CLIENT_CAFILE``, ``AUTH_SSL_CLIENT_CADIR`` or
(unless ``AUTH_SSL_CLIENT_USE_DEFAULT_CAS`` is false) the system's default CAs, and that names
the host: the ``alias`` of the daemon's address (HTCondor's ``m_host_alias``), checked by OpenSSL
against the certificate's DNS subjectAltNames, or its common name where it has none. The method
returns the daemon's subject, one-line form. Where this differs from HTCondor, it is stricter or
checks something where HTCondor would refuse outright:

* an address without an alias: HTCondor refuses ("No SSL host name specified"); here the host
  the address names is checked instead, an IP address against the certificate's IP
  subjectAltNames;
* HTCondor also accepts a matching common name beside non-matching subjectAltNames, and a
  wildcard ending any label; here a common name counts only without subjectAltNames, and a
  wildcard only as a whole leftmost label (RFC 6125, OpenSSL's ``X509_check_host``);
* not followed: ``SSL_SKIP_HOST_CHECK``, and the ``known_hosts`` file with
  ``BOOTSTRAP_SSL_SERVER_TRUST`` (trust on first use): a daemon has nobody to ask, and a client
  that accepts whatever certificate it is shown has not authenticated the daemon;
* a configured certificate or key that cannot be read, or that do not belong together, is an
  error here; HTCondor passes over them and goes on anonymously.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from negotiatord.cedar.auth.channel import Channel, MethodFailed
from negotiatord.cedar.policy import ClientSecurity, SslFiles
from negotiatord.cedar.sinful import parse_sinful
from negotiatord.cedar.wire import MessageWriter, WireError

# AUTH_SSL_* in src/condor_includes/condor_auth_ssl.h (AUTH_SSL_SENDING never arises on memory buffers)
STATUS_ERROR, STATUS_OK, STATUS_RECEIVING, STATUS_QUITTING, STATUS_HOLDING = -1, 0, 2, 3, 4
BUFFER_BYTES = 1 << 20        # AUTH_SSL_BUF_SIZE
SESSION_KEY_BYTES = 256       # AUTH_SSL_SESSION_KEY_LEN
MAX_ROUNDS = 256              # HTCondor's limit on the key rounds, here on the handshake's too
# OpenSSL's short names where RFC 4514 has none (X509_NAME_oneline prints the short name)
_ONELINE_NAMES = {NameOID.EMAIL_ADDRESS: "emailAddress"}


@dataclass(frozen=True)
class Credentials:
    """A TLS client context as ``AUTH_SSL_CLIENT_*`` configure it, and what messages say of it."""

    context: ssl.SSLContext
    subject: str | None      # this side's certificate subject, one-line form; None: anonymous
    trusted: str             # where the daemon's CA is looked for, for messages


async def authenticate_ssl(channel: Channel, security: ClientSecurity, facts: dict[str, str]) -> str:
    """Run the client's side; returns the daemon's certificate subject. Raises :class:`MethodFailed`."""
    address = parse_sinful(channel.connect_address)
    host = address.alias or address.host
    try:
        credentials: Credentials | None = client_credentials(security.ssl)
        failure = ""
    except MethodFailed as error:
        credentials, failure = None, str(error)
    server_status = (await channel.receive()).get_int32()
    await channel.send(MessageWriter().put_int(STATUS_OK if credentials else STATUS_ERROR))
    if credentials is None:
        raise MethodFailed(failure)
    if server_status != STATUS_OK:
        raise MethodFailed("the daemon could not set up SSL: its AUTH_SSL_SERVER_CERTFILE, AUTH_SSL_SERVER_KEYFILE "
                           "or CA files did not load (its log says which, with D_SECURITY)")
    tunnel = _Tunnel(channel, credentials, host, "alias" if address.alias else "host")
    await tunnel.handshake()
    await tunnel.read_session_key()
    return tunnel.daemon_subject()


def client_credentials(files: SslFiles) -> Credentials:
    """The TLS context ``files`` configure; raises :class:`MethodFailed` naming a file that is unusable."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)   # verifies the chain and the host name
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    sources = []
    if files.ca_file is not None:
        try:
            context.load_verify_locations(cafile=str(files.ca_file))
        except OSError as error:
            raise MethodFailed(f"AUTH_SSL_CLIENT_CAFILE {files.ca_file}: {_said(error)}") from None
        sources.append(f"AUTH_SSL_CLIENT_CAFILE {files.ca_file}")
    if files.ca_dir is not None:
        if not files.ca_dir.is_dir():
            raise MethodFailed(f"AUTH_SSL_CLIENT_CADIR {files.ca_dir} is not a directory")
        context.load_verify_locations(capath=str(files.ca_dir))
        sources.append(f"AUTH_SSL_CLIENT_CADIR {files.ca_dir}")
    if files.use_default_cas:
        context.set_default_verify_paths()
        sources.append("the system's default CAs")
    if not sources:
        raise MethodFailed("no CA to check the daemon's certificate with: set AUTH_SSL_CLIENT_CAFILE or "
                           "AUTH_SSL_CLIENT_CADIR, or leave AUTH_SSL_CLIENT_USE_DEFAULT_CAS true")
    subject = None
    if files.cert_file is not None or files.key_file is not None:
        if files.cert_file is None or files.key_file is None:
            given, missing = (("AUTH_SSL_CLIENT_KEYFILE", "AUTH_SSL_CLIENT_CERTFILE") if files.cert_file is None
                              else ("AUTH_SSL_CLIENT_CERTFILE", "AUTH_SSL_CLIENT_KEYFILE"))
            raise MethodFailed(f"{given} is set but {missing} is not; a certificate needs its key")
        subject = _load_certificate(context, files.cert_file, files.key_file)
    return Credentials(context, subject, " and ".join(sources))


def _load_certificate(context: ssl.SSLContext, cert_file: Path, key_file: Path) -> str:
    """Load this side's certificate chain and key; the certificate's subject, one-line form."""
    cert_knob, key_knob = f"AUTH_SSL_CLIENT_CERTFILE {cert_file}", f"AUTH_SSL_CLIENT_KEYFILE {key_file}"
    try:
        chain = x509.load_pem_x509_certificates(_read(cert_file, cert_knob))
    except ValueError:
        raise MethodFailed(f"{cert_knob}: holds no PEM certificate") from None
    try:
        key = serialization.load_pem_private_key(_read(key_file, key_knob), password=None)
    except TypeError:
        raise MethodFailed(f"{key_knob}: the key is protected by a passphrase, which negotiatord cannot be given; "
                           "store it unencrypted, readable only by negotiatord's user") from None
    except (ValueError, UnsupportedAlgorithm):
        raise MethodFailed(f"{key_knob}: holds no PEM private key") from None
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(*spki) != chain[0].public_key().public_bytes(*spki):
        raise MethodFailed(f"{key_knob}: not the key of the certificate in {cert_file}")
    try:
        # an empty passphrase, so that OpenSSL never prompts on a terminal
        context.load_cert_chain(str(cert_file), str(key_file), password=b"")
    except ssl.SSLError as error:
        raise MethodFailed(f"{cert_knob} with {key_knob}: OpenSSL refused them: {_said(error)}") from None
    return oneline(chain[0].subject)


def _read(path: Path, knob: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise MethodFailed(f"{knob}: {error.strerror}") from None


def oneline(name: x509.Name) -> str:
    """A certificate name as OpenSSL's ``X509_NAME_oneline`` prints it: how HTCondor names an SSL
    identity in its logs and matches it in ``CERTIFICATE_MAPFILE``."""
    return "".join(f"/{_ONELINE_NAMES.get(attribute.oid, attribute.rfc4514_attribute_name)}={attribute.value!s}"
                   for attribute in name)


def _said(error: OSError) -> str:
    """What OpenSSL or the system said, without the source line."""
    if isinstance(error, ssl.SSLCertVerificationError):
        return str(error.verify_message)
    reason = getattr(error, "reason", None)   # set on the errors OpenSSL raised
    if reason:
        return str(reason).replace("_", " ").lower()
    return error.strerror or str(error)


class _Tunnel:
    """One TLS client whose records travel in the method's messages."""

    def __init__(self, channel: Channel, credentials: Credentials, host: str, host_source: str) -> None:
        self.channel = channel
        self.credentials = credentials
        self.host = host
        self.host_source = host_source   # which part of the daemon's address named the host
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = credentials.context.wrap_bio(self.incoming, self.outgoing, server_hostname=host)

    async def send(self, status: int) -> None:
        records = self.outgoing.read(BUFFER_BYTES)
        await self.channel.send(MessageWriter().put_int(status).put_int(len(records)).put_bytes(records))

    async def receive(self) -> int:
        """The daemon's status; the records it sent go to the TLS engine."""
        reader = await self.channel.receive()
        try:
            status, length = reader.get_int32(), reader.get_int32()
            if not 0 <= length <= BUFFER_BYTES:
                raise WireError(f"{length} bytes of TLS records (at most {BUFFER_BYTES})")
            self.incoming.write(reader.get_bytes(length))
        except WireError as error:
            raise MethodFailed(f"the daemon's message is malformed: {error}") from None
        return status

    async def handshake(self) -> None:
        """The handshake rounds: ``SSL_connect`` until both sides hold; the client sends first."""
        await self._rounds(self._connect, client_first=True, when="during the TLS handshake")

    async def read_session_key(self) -> None:
        """The key rounds: the daemon sends first; the key is dropped (the session's comes from ECDH)."""
        await self._rounds(self._read_key, client_first=False, when="after the TLS handshake")

    def _connect(self) -> None:
        self.tls.do_handshake()

    def _read_key(self) -> None:
        if not self.tls.read(SESSION_KEY_BYTES):   # b"": the daemon closed TLS (SSL_ERROR_ZERO_RETURN)
            raise ssl.SSLZeroReturnError(0, "the daemon closed TLS without sending its key")

    async def _rounds(self, step: Callable[[], None], *, client_first: bool, when: str) -> None:
        """Rounds of messages as ``Condor_Auth_SSL::authenticate`` runs them on the client side:
        before each round, unless it already holds, the client runs ``step`` on its TLS engine
        (holding once it returns); then it sends its status and records, or receives the
        daemon's. The rounds end when both sides hold."""
        ours = theirs = STATUS_RECEIVING
        failure: ssl.SSLError | None = None
        for round_number in range(1, MAX_ROUNDS + 1):
            if ours != STATUS_HOLDING:
                try:
                    step()
                    ours = STATUS_HOLDING
                except ssl.SSLWantReadError:
                    ours = STATUS_RECEIVING
                except ssl.SSLError as error:
                    ours, failure = STATUS_QUITTING, error
            if (round_number % 2 == 1) == client_first:
                await self.send(ours)
            else:
                theirs = await self.receive()
            if failure is not None:
                raise MethodFailed(self._our_refusal(failure, when))
            if theirs in (STATUS_QUITTING, STATUS_ERROR):
                raise MethodFailed(self._their_refusal(when))
            if ours == theirs == STATUS_HOLDING:
                return
        raise MethodFailed(f"TLS did not finish {when} in {MAX_ROUNDS} rounds")

    def daemon_subject(self) -> str:
        der = self.tls.getpeercert(binary_form=True)
        return oneline(x509.load_der_x509_certificate(der).subject) if der else ""

    def _our_refusal(self, error: ssl.SSLError, when: str) -> str:
        if isinstance(error, ssl.SSLCertVerificationError) and "mismatch" in str(error.verify_message).lower():
            return (f"the daemon's certificate does not name {self.host} (the {self.host_source} in its address "
                    f"{self.channel.connect_address}): {_said(error)}")
        if isinstance(error, ssl.SSLCertVerificationError):
            return (f"the daemon's certificate is not trusted: {_said(error)} "
                    f"(its CA was looked for in {self.credentials.trusted})")
        return f"TLS failed {when}: {_said(error)}"

    def _their_refusal(self, when: str) -> str:
        """Why the daemon quit, from the TLS alert it sent if it sent one."""
        alert = ""
        try:
            self.tls.read(1)
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLError as error:
            alert = _said(error)
        who = (f"this side's certificate ({self.credentials.subject})" if self.credentials.subject
               else "this side, which has no certificate (AUTH_SSL_CLIENT_CERTFILE and AUTH_SSL_CLIENT_KEYFILE)")
        if "unknown ca" in alert or "bad certificate" in alert:
            return (f"the daemon refused {who} {when}: TLS alert \"{alert}\" (its AUTH_SSL_SERVER_CAFILE or "
                    "AUTH_SSL_SERVER_CADIR must hold the CA that signed the certificate)")
        if alert:
            return f"the daemon ended TLS {when}: TLS alert \"{alert}\""
        return (f"the daemon ended SSL authentication {when} and did not accept {who}: with "
                "AUTH_SSL_REQUIRE_CLIENT_CERTIFICATE or AUTH_SSL_REQUIRE_CLIENT_MAPPING it refuses a client it "
                "cannot name or map (CERTIFICATE_MAPFILE); its log says why")
