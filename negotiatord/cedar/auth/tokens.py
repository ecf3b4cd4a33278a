"""IDTOKENS: proving who we are with a token the pool signed, as ``Condor_Auth_Passwd`` (version 2)
does on the client side (``src/condor_io/condor_auth_passwd.cpp``).

The token is a JWT signed with HMAC by a key only the pool's daemons hold. The client sends its
header and payload but never the signature; the signature is the secret both sides share (the
daemon recomputes it from its signing key). The exchange is AKEP2:

1. the client sends its status, its name (the token's ``sub``), the unsigned token and a random
   ``RA`` of 256 bytes;
2. the daemon answers with its status, the client's name, its own name, ``RA``, a random ``RB`` and
   ``HMAC-SHA1(K, "client server\\0" RA RB)``;
3. the client checks that MAC and answers with its status, its name, ``RB`` and
   ``HMAC-SHA1(K, "client\\0" RB)``.

``K`` comes from HKDF-SHA256 over the signature, salted with a 256-byte seed fixed in HTCondor's
source followed by the unsigned token, info ``master ka``. Either side may be in error; both then
complete the three messages with empty fields, as HTCondor does, and the method fails.

Tokens are found as ``findTokens`` finds them: those given in ``SEC_TOKEN`` first, then each file of
``SEC_TOKEN_DIRECTORY`` in name order (names matching ``LOCAL_CONFIG_DIR_EXCLUDE_REGEXP``'s default
skipped), one token per non-comment line. A token is used only if its key id is one the daemon
named (``IssuerKeys``) and its issuer is the daemon's trust domain. As ``read_secure_file``
requires, a token file must be owned by this process's user and closed to everyone else.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from negotiatord.cedar.auth.channel import Channel, MethodFailed
from negotiatord.cedar.auth.seeds import SEED_KA
from negotiatord.cedar.keys import hkdf_sha256
from negotiatord.cedar.policy import ClientSecurity
from negotiatord.cedar.wire import MessageWriter, WireError

NONCE_BYTES = 256        # AUTH_PW_KEY_LEN
KEY_BYTES = 32           # AUTH_PW_KEY_STRENGTH
MAX_NAME_BYTES = 1024    # AUTH_PW_MAX_NAME_LEN
STATUS_OK, STATUS_ERROR = 0, -1
EXCLUDED_FILES = re.compile(r"^((\..*)|(.*\.pl)|(.*\.py)|(.*\.sh)|(.*~)|(#.*)|(.*\.rpmsave)|(.*\.rpmnew)|"
                            r"(.*\.dpkg-old)|(.*\.dpkg-dist)|(.*\.cfsaved))$")


@dataclass(frozen=True)
class Token:
    source: str          # where it was found, for messages
    subject: str         # the identity it proves (``sub``, else ``jti``)
    unsigned: str        # header.payload, as written in the token
    signature: bytes
    key_id: str
    issuer: str
    expires: float | None


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def parse_token(text: str, source: str) -> Token:
    """The token in ``text``; raises ValueError saying what is wrong with it."""
    parts = text.strip().split(".")
    if len(parts) != 3:
        raise ValueError(f"{source}: not a JWT (three dot-separated parts)")
    try:
        header, payload = json.loads(_b64url(parts[0])), json.loads(_b64url(parts[1]))
        signature = _b64url(parts[2])
    except (binascii.Error, ValueError) as error:
        raise ValueError(f"{source}: not a JWT: {error}") from None
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise ValueError(f"{source}: not a JWT")
    subject = payload.get("sub") or payload.get("jti")
    if not isinstance(subject, str) or not subject:
        raise ValueError(f"{source}: the token names no subject")
    expires = payload.get("exp")
    return Token(source=source, subject=subject, unsigned=f"{parts[0]}.{parts[1]}", signature=signature,
                 key_id=str(header.get("kid", "")), issuer=str(payload.get("iss", "")),
                 expires=float(expires) if isinstance(expires, (int, float)) else None)


def find_tokens(security: ClientSecurity) -> tuple[list[Token], list[str]]:
    """Every token this side could present, in HTCondor's order, and why any file was passed over."""
    tokens, skipped = [], []
    for index, text in enumerate(security.tokens):
        try:
            tokens.append(parse_token(text, f"SEC_TOKEN #{index + 1}"))
        except ValueError as error:
            skipped.append(str(error))
    directory = security.token_directory
    if directory is None or not directory.is_dir():
        if directory is not None:
            skipped.append(f"SEC_TOKEN_DIRECTORY {directory} is not a directory")
        return tokens, skipped
    for path in sorted(directory.iterdir()):
        if path.is_dir() or EXCLUDED_FILES.match(path.name):
            continue
        problem = _insecure(path)
        if problem:
            skipped.append(problem)
            continue
        for line in path.read_text(errors="replace").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                try:
                    tokens.append(parse_token(line, str(path)))
                except ValueError as error:
                    skipped.append(str(error))
    return tokens, skipped


def _insecure(path: Path) -> str | None:
    """Why HTCondor's ``read_secure_file`` would refuse ``path``, if it would."""
    try:
        info = path.stat()
    except OSError as error:
        return f"{path}: {error.strerror}"
    if info.st_uid != os.getuid():
        return (f"{path}: owned by uid {info.st_uid}; a token file must be owned by uid {os.getuid()}, "
                "which runs negotiatord")
    if info.st_mode & 0o077:
        return f"{path}: mode {stat.filemode(info.st_mode)}; a token file must not be readable by others (chmod 600)"
    if not os.access(path, os.R_OK):
        return f"{path}: not readable"
    return None


def choose_token(security: ClientSecurity, trust_domain: str, issuer_keys: str) -> tuple[Token | None, str]:
    """The first token the daemon can check, and, when there is none, why."""
    keys = {key.strip() for key in issuer_keys.replace(",", " ").split() if key.strip()}
    tokens, skipped = find_tokens(security)
    passed_over = list(skipped)
    for token in tokens:
        if not token.key_id:
            passed_over.append(f"{token.source}: the token has no key id (kid)")
        elif keys and token.key_id not in keys:
            passed_over.append(f"{token.source}: signed with key {token.key_id!r}, which the daemon does not hold "
                               f"(it holds {', '.join(sorted(keys))})")
        elif trust_domain and token.issuer != trust_domain:
            passed_over.append(f"{token.source}: issued by {token.issuer!r}, not the daemon's trust domain "
                               f"{trust_domain!r}")
        else:
            return token, ""
    where = security.token_directory or "no SEC_TOKEN_DIRECTORY"
    return None, "no usable token (looked in SEC_TOKEN and " + f"{where}" + (
        "; " + "; ".join(passed_over) if passed_over else ": none found") + ")"


def mac(key: bytes, *parts: bytes) -> bytes:
    """HMAC-SHA1 of ``parts`` under ``key`` (``Condor_Auth_Passwd::hmac``)."""
    return hmac.new(key, b"".join(parts), hashlib.sha1).digest()


async def authenticate_token(channel: Channel, security: ClientSecurity, facts: dict[str, str]) -> str:
    """Run the client's side; returns the daemon's name. Raises :class:`MethodFailed`."""
    token, why_none = choose_token(security, facts.get("TrustDomain", ""), facts.get("IssuerKeys", ""))
    status, name, nonce = STATUS_ERROR, "", b""
    key = b""
    if token is not None:
        status, name, nonce = STATUS_OK, token.subject, os.urandom(NONCE_BYTES)
        key = hkdf_sha256(token.signature, SEED_KA + token.unsigned.encode(), b"master ka", KEY_BYTES)
    first = MessageWriter().put_int(status).put_int(len(name.encode())).put_string(name)
    first.put_string(token.unsigned if token else "").put_int(len(nonce)).put_bytes(nonce)
    await channel.send(first)

    reply = await channel.receive()
    try:
        server_status = reply.get_int32()
        reply.get_int32()
        echoed_name = reply.get_string()
        reply.get_int32()
        server_name = reply.get_string()
        echoed_nonce = reply.get_bytes(_bounded(reply.get_int32(), NONCE_BYTES))
        server_nonce = reply.get_bytes(_bounded(reply.get_int32(), NONCE_BYTES))
        server_mac = reply.get_bytes(_bounded(reply.get_int32(), 64))
    except WireError as error:
        raise MethodFailed(f"the daemon's answer is malformed: {error}") from None

    failure = why_none
    if not failure and server_status != STATUS_OK:
        failure = _refused(token)
    if not failure and (echoed_name != name or echoed_nonce != nonce or len(server_nonce) != NONCE_BYTES):
        failure = "the daemon's answer does not echo what we sent"
    if not failure and not hmac.compare_digest(
            server_mac, mac(key, f"{name} {server_name}".encode(), b"\0", nonce, server_nonce)):
        failure = ("the token's signature and the daemon's signing key disagree: a token signed by another "
                   "pool or key, or a damaged token")

    last = MessageWriter()
    if failure:
        last.put_int(STATUS_ERROR).put_int(0).put_string("").put_int(0).put_int(0)
    else:
        proof = mac(key, name.encode(), b"\0", server_nonce)
        last.put_int(STATUS_OK).put_int(len(name.encode())).put_string(name)
        last.put_int(len(server_nonce)).put_bytes(server_nonce).put_int(len(proof)).put_bytes(proof)
    await channel.send(last)
    if failure:
        raise MethodFailed(failure)
    return server_name


def _bounded(length: int, limit: int) -> int:
    if not 0 <= length <= limit:
        raise WireError(f"field of {length} bytes (at most {limit})")
    return length


def _refused(token: Token | None) -> str:
    assert token is not None
    said = f"the daemon refused the token in {token.source} (identity {token.subject}, key {token.key_id!r}"
    if token.expires is not None and token.expires < time.time():
        said += f", expired {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(token.expires))}"
    return said + "): it is revoked, expired, or signed with a key the daemon no longer holds"
