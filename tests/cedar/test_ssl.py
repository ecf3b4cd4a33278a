"""SSL authentication against a real HTCondor 25.14 collector (``Condor_Auth_SSL``,
``src/condor_io/condor_auth_ssl.cpp``): the TLS handshake tunnelled in CEDAR messages, the daemon's
certificate checked against our CA and its host name, our certificate mapped by the daemon's
``CERTIFICATE_MAPFILE``, and each refusal named.

The pool's collector has a host certificate for ``127.0.0.1`` and this host's names, signed by a
CA made here; it trusts that CA for client certificates, and maps negotiatord's certificate
subject to ``negotiatord@minipool``, the identity minipool grants NEGOTIATOR.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import re
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from negotiatord.cedar.auth import ssl as ssl_method
from negotiatord.cedar.auth.channel import MethodFailed
from negotiatord.cedar.auth.ssl import client_credentials, oneline
from negotiatord.cedar.client import open_command
from negotiatord.cedar.commands import DC_NOP_NEGOTIATOR, QUERY_STARTD_ADS, QUERY_STARTD_PVT_ADS
from negotiatord.cedar.errors import AuthenticationFailed, NotAuthorized
from negotiatord.cedar.handshake import SessionCache
from negotiatord.cedar.policy import ClientSecurity, Requirement, SslFiles
from tests.cedar.collector_query import query
from tests.minipool import MiniPool, minipool

HOST_NAMES = sorted({"vm", "localhost", socket.gethostname(), socket.getfqdn()})
CLIENT_SUBJECT = "/O=minipool/CN=negotiatord"


@dataclass(frozen=True)
class Issued:
    cert: bytes
    key: bytes


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "minipool"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _issue(subject: str, issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None = None, *,
           usage: x509.ObjectIdentifier | None = None, names: list[x509.GeneralName] | None = None,
           ) -> tuple[Issued, tuple[x509.Name, ec.EllipticCurvePrivateKey]]:
    """A certificate for ``subject``, signed by ``issuer`` (self-signed CA when None)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    signer_name, signer_key = issuer or (_name(subject), key)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(signer_name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    if issuer is not None:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer_key.public_key()), critical=False)
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(signer_key, hashes.SHA256())
    pem_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return Issued(cert.public_bytes(serialization.Encoding.PEM), pem_key), (_name(subject), key)


@dataclass(frozen=True)
class Pki:
    directory: Path                 # negotiatord's side: the CAs, its certificates and keys
    pool_files: dict[str, bytes]    # the collector's side, written into the pool's directory

    def path(self, name: str) -> Path:
        return self.directory / name

    def files(self, ca: str = "ca.crt", cert: str | None = "negotiatord", **changes: object) -> SslFiles:
        files = SslFiles(ca_file=self.path(ca), use_default_cas=False,
                         cert_file=self.path(f"{cert}.crt") if cert else None,
                         key_file=self.path(f"{cert}.key") if cert else None)
        return replace(files, **changes)


def _make_pki(directory: Path) -> Pki:
    """Our CA with a host and two client certificates, one mapped; a stranger CA with a client certificate."""
    ca, ca_signer = _issue("minipool CA")
    host, _ = _issue("vm", ca_signer, usage=ExtendedKeyUsageOID.SERVER_AUTH,
                     names=[*map(x509.DNSName, HOST_NAMES), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    client, _ = _issue("negotiatord", ca_signer, usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    unmapped, _ = _issue("someone", ca_signer, usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    stranger_ca, stranger_signer = _issue("stranger CA")
    stranger, _ = _issue("negotiatord", stranger_signer, usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    ours = {"ca.crt": ca.cert, "stranger-ca.crt": stranger_ca.cert, "negotiatord.crt": client.cert,
            "negotiatord.key": client.key, "someone.crt": unmapped.cert, "someone.key": unmapped.key,
            "stranger.crt": stranger.cert, "stranger.key": stranger.key}
    for name, content in ours.items():
        (directory / name).write_bytes(content)
        (directory / name).chmod(0o600)
    # the mapfile's key is a regular expression (CERTIFICATE_MAPFILE_ASSUME_HASH_KEYS is false)
    mapfile = f'SSL "^{re.escape(CLIENT_SUBJECT)}$" negotiatord@minipool\n'.encode()
    pool_files = {"ssl/ca.crt": ca.cert, "ssl/host.crt": host.cert, "ssl/host.key": host.key, "ssl/mapfile": mapfile}
    return Pki(directory, pool_files)


SSL_CONFIG = """
AUTH_SSL_SERVER_CERTFILE = $(LOCAL_DIR)/ssl/host.crt
AUTH_SSL_SERVER_KEYFILE = $(LOCAL_DIR)/ssl/host.key
AUTH_SSL_SERVER_CAFILE = $(LOCAL_DIR)/ssl/ca.crt
AUTH_SSL_SERVER_USE_DEFAULT_CAS = False
CERTIFICATE_MAPFILE = $(LOCAL_DIR)/ssl/mapfile
SEC_DEFAULT_AUTHENTICATION_METHODS = SSL, IDTOKENS, FS
COLLECTOR_BOOTSTRAP_SSL_CERTIFICATE = False
SCHEDD.AUTH_SSL_REQUIRE_CLIENT_MAPPING = True
"""


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    return _make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def pool(pki) -> Iterator[MiniPool]:
    with minipool(cpus=2, config=SSL_CONFIG, files=pki.pool_files) as running:
        yield running


def _security(files: SslFiles, methods: tuple[str, ...] = ("SSL",), tokens: Path | None = None) -> ClientSecurity:
    return ClientSecurity(methods=methods, ssl=files, token_directory=tokens, trust_domain="minipool",
                          authentication=Requirement.REQUIRED, encryption=Requirement.REQUIRED,
                          integrity=Requirement.REQUIRED)


def _collector_address(pool: MiniPool) -> str:
    return pool.condor("condor_status", "-collector", "-af", "MyAddress").strip()


def test_private_slot_ads_come_over_an_ssl_session_with_aes_gcm(pki, pool):
    # QUERY_STARTD_PVT_ADS is registered at NEGOTIATOR level (collector.cpp). The collector names
    # us by our subject, one-line form (Condor_Auth_SSL::get_peer_identity), and maps it with
    # CERTIFICATE_MAPFILE, method SSL (Authentication::map_authentication_name_to_canonical_name)
    stream, ads = asyncio.run(query(pool.collector, QUERY_STARTD_PVT_ADS, _security(pki.files()), SessionCache()))
    session = stream.session
    assert (session.method, session.user, session.peer_identity) == ("SSL", "negotiatord@minipool", "/O=minipool/CN=vm")
    assert stream.stream.crypto and session.key is not None and session.crypto_method == "AES"
    assert [ad["Name"] for ad in ads] == ["slot1@vm"] and ads[0]["ClaimIdList"]


def test_a_tls_1_2_handshake_takes_a_round_more_and_ends_the_same(pki, pool, monkeypatch):
    # with TLS 1.2 the daemon finishes first and the client holds one round later; the rounds
    # end only when both hold (Condor_Auth_SSL::authenticate, both roles)
    def tls_1_2(files: SslFiles) -> ssl_method.Credentials:
        credentials = client_credentials(files)
        credentials.context.maximum_version = ssl.TLSVersion.TLSv1_2
        return credentials

    versions = []
    handshake = ssl_method._Tunnel.handshake

    async def recorded(tunnel: ssl_method._Tunnel) -> None:
        await handshake(tunnel)
        versions.append(tunnel.tls.version())

    monkeypatch.setattr(ssl_method, "client_credentials", tls_1_2)
    monkeypatch.setattr(ssl_method._Tunnel, "handshake", recorded)
    stream, ads = asyncio.run(query(pool.collector, QUERY_STARTD_PVT_ADS, _security(pki.files()), SessionCache()))
    assert versions == ["TLSv1.2"]
    assert (stream.session.method, stream.session.user) == ("SSL", "negotiatord@minipool") and len(ads) == 1


def test_the_daemon_address_alias_is_the_host_name_checked(pki, pool):
    # Condor_Auth_SSL::authenticate takes the host to check from the connect address's alias
    address = _collector_address(pool)
    alias = re.search(r"[?&]alias=([^&>]+)", address)
    assert alias and alias.group(1) in HOST_NAMES
    stream, ads = asyncio.run(query(address, QUERY_STARTD_ADS, _security(pki.files()), SessionCache()))
    assert stream.session.method == "SSL" and len(ads) == 1
    elsewhere = address.replace(f"alias={alias.group(1)}", "alias=elsewhere.example.org")
    with pytest.raises(AuthenticationFailed) as refused:
        asyncio.run(query(elsewhere, QUERY_STARTD_ADS, _security(pki.files()), SessionCache()))
    assert "does not name elsewhere.example.org (the alias in its address" in str(refused.value)
    assert "Hostname mismatch" in str(refused.value)


def test_a_daemon_certificate_from_another_ca_is_refused_naming_where_the_ca_was_looked_for(pki, pool):
    # the collector sends its CA with its certificate (OpenSSL builds the chain from
    # AUTH_SSL_SERVER_CAFILE), a CA that the client's AUTH_SSL_CLIENT_CAFILE does not hold
    files = pki.files(ca="stranger-ca.crt")
    with pytest.raises(AuthenticationFailed) as refused:
        asyncio.run(query(pool.collector, QUERY_STARTD_ADS, _security(files), SessionCache()))
    said = str(refused.value)
    assert "SSL: the daemon's certificate is not trusted: self-signed certificate in certificate chain" in said
    assert f"AUTH_SSL_CLIENT_CAFILE {pki.path('stranger-ca.crt')}" in said


def test_after_ssl_fails_the_daemon_and_we_move_on_to_the_next_method(pki, pool):
    # Authentication::authenticate_continue: a failed method leaves both sides at the method
    # handshake, and the client's next bitmask omits it
    security = _security(pki.files(ca="stranger-ca.crt"), methods=("SSL", "IDTOKENS"), tokens=pool.token_directory())
    stream, _ = asyncio.run(query(pool.collector, QUERY_STARTD_PVT_ADS, security, SessionCache()))
    assert (stream.session.method, stream.session.user) == ("IDTOKENS", "negotiatord@minipool")


def test_a_ca_file_that_cannot_be_read_is_named_and_the_daemon_is_told(pki, pool):
    # the client's status -1 (client_share_status) ends SSL at the daemon too; IDTOKENS then runs
    missing = pki.path("no-such-ca.crt")
    security = _security(pki.files(ca="no-such-ca.crt"), methods=("SSL", "IDTOKENS"), tokens=pool.token_directory())
    stream, _ = asyncio.run(query(pool.collector, QUERY_STARTD_ADS, security, SessionCache()))
    assert stream.session.method == "IDTOKENS"
    with pytest.raises(AuthenticationFailed, match=f"AUTH_SSL_CLIENT_CAFILE {missing}: No such file or directory"):
        asyncio.run(query(pool.collector, QUERY_STARTD_ADS, _security(pki.files(ca="no-such-ca.crt")),
                           SessionCache()))


def test_a_client_certificate_the_daemon_does_not_trust_is_refused_with_its_alert(pki, pool):
    # the collector verifies our certificate with AUTH_SSL_SERVER_CAFILE (setup_ssl_ctx, SSL_VERIFY_PEER)
    with pytest.raises(AuthenticationFailed) as refused:
        asyncio.run(query(pool.collector, QUERY_STARTD_ADS, _security(pki.files(cert="stranger")), SessionCache()))
    said = str(refused.value)
    assert f"the daemon refused this side's certificate ({CLIENT_SUBJECT})" in said
    assert '"tlsv1 alert unknown ca"' in said and "AUTH_SSL_SERVER_CAFILE" in said


def test_without_a_certificate_the_daemon_sees_an_anonymous_client(pki, pool):
    # Condor_Auth_SSL::authenticate_finish: no client certificate is "unauthenticated", which
    # Authentication maps to unauthenticated@unmapped; minipool grants it READ (ALLOW_READ = *)
    # but not NEGOTIATOR
    anonymous = _security(pki.files(cert=None))
    stream, ads = asyncio.run(query(pool.collector, QUERY_STARTD_ADS, anonymous, SessionCache()))
    assert (stream.session.method, stream.session.user) == ("SSL", "unauthenticated@unmapped") and len(ads) == 1
    with pytest.raises(NotAuthorized, match="DENIED: authenticated by SSL as unauthenticated@unmapped"):
        asyncio.run(query(pool.collector, QUERY_STARTD_PVT_ADS, anonymous, SessionCache()))


def test_a_daemon_that_requires_a_mapping_refuses_an_unmapped_certificate_after_the_handshake(pki, pool):
    # Condor_Auth_SSL::post_connection_check, server role: with AUTH_SSL_REQUIRE_CLIENT_MAPPING (the
    # schedd's here) a subject CERTIFICATE_MAPFILE does not map ends the method before the key rounds
    schedd = pool.condor("condor_status", "-schedd", "-af", "MyAddress").strip()

    async def nop(files: SslFiles) -> str:
        stream = await open_command(schedd, DC_NOP_NEGOTIATOR, _security(files), SessionCache(), 20.0)
        stream.close()
        return stream.session.user

    assert asyncio.run(nop(pki.files())) == "negotiatord@minipool"
    with pytest.raises(AuthenticationFailed) as refused:
        asyncio.run(nop(pki.files(cert="someone")))
    assert ("the daemon ended SSL authentication after the TLS handshake and did not accept this side's "
            "certificate (/O=minipool/CN=someone)") in str(refused.value)


def test_a_certificate_and_key_that_do_not_belong_together_are_named(pki):
    files = pki.files(key_file=pki.path("stranger.key"))
    with pytest.raises(MethodFailed, match=f"AUTH_SSL_CLIENT_KEYFILE {pki.path('stranger.key')}: not the key of "
                                           f"the certificate in {pki.path('negotiatord.crt')}"):
        client_credentials(files)
    with pytest.raises(MethodFailed, match="AUTH_SSL_CLIENT_CERTFILE is set but AUTH_SSL_CLIENT_KEYFILE is not"):
        client_credentials(replace(files, key_file=None))


def test_no_ca_at_all_is_a_configuration_error():
    # setup_ssl_ctx would build a context that trusts nothing; the daemon could never be verified
    with pytest.raises(MethodFailed, match="no CA to check the daemon's certificate with"):
        client_credentials(SslFiles(use_default_cas=False))


def test_a_key_behind_a_passphrase_is_refused_without_prompting(pki, tmp_path):
    key = serialization.load_pem_private_key(pki.path("negotiatord.key").read_bytes(), password=None)
    locked = tmp_path / "locked.key"
    locked.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.BestAvailableEncryption(b"secret")))
    with pytest.raises(MethodFailed, match="protected by a passphrase"):
        client_credentials(pki.files(key_file=locked))


def test_subjects_read_as_openssl_prints_them():
    # X509_NAME_oneline, as HTCondor logs an SSL identity and matches it in CERTIFICATE_MAPFILE
    name = x509.Name([x509.NameAttribute(NameOID.DOMAIN_COMPONENT, "org"),
                      x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "People"),
                      x509.NameAttribute(NameOID.EMAIL_ADDRESS, "a@b.org")])
    assert oneline(name) == "/DC=org/OU=People/emailAddress=a@b.org"
