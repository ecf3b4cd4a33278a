"""IDTOKENS on the daemon's side: checking a client's token with the pool's signing keys, as
``Condor_Auth_Passwd`` (version 2) does as a server (``src/condor_io/condor_auth_passwd.cpp``).

The client sends its status, its name, its token without the signature and a random ``RA``
(:mod:`~negotiatord.cedar.auth.tokens` is that side). The daemon

1. reads the signing key the token's ``kid`` names (``getTokenSigningKey``, ``store_cred.cpp``):
   ``POOL`` is the file ``SEC_TOKEN_POOL_SIGNING_KEY_FILE``, any other key the file of that name in
   ``SEC_PASSWORD_DIRECTORY``; the bytes are un-scrambled (XOR with ``DE AD BE EF``,
   ``simple_scramble``) and the POOL key is then doubled, as HTCondor reads it;
2. derives the JWT key from it with HKDF-SHA256 (salt ``htcondor``, info ``master jwt``), signs
   ``header.payload`` with the token's HMAC algorithm and checks the token's claims
   (``analyze_token``): not expired, not older than ``SEC_TOKEN_MAX_AGE``, an issuer, an id, a
   subject, not revoked by ``SEC_TOKEN_REVOCATION_EXPR``; ``condor:/LEVEL`` scopes limit the levels
   the identity may use (``LimitAuthorization``);
3. derives ``K`` from that signature as the client does and answers with its status, the
   client's name, its own name (``condor@password``), ``RA``, a random ``RB`` and
   ``HMAC-SHA1(K, "client server\\0" RA RB)``;
4. reads the client's proof ``HMAC-SHA1(K, "client\\0" RB)``; the client is then the token's
   subject, and must have said so in its first message.

A token signed with another key yields another signature, so the client's check of step 3 fails
and the method with it: the signature itself never crosses the wire.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import classad2

from negotiatord.cedar.auth.channel import Channel, MethodFailed, OutOfStep
from negotiatord.cedar.auth.seeds import SEED_KA
from negotiatord.cedar.auth.tokens import KEY_BYTES, MAX_NAME_BYTES, NONCE_BYTES, STATUS_ERROR, STATUS_OK, mac
from negotiatord.cedar.keys import hkdf_sha256
from negotiatord.cedar.wire import MessageWriter, WireError

POOL_KEY = "POOL"
SERVER_NAME = "condor@password"            # CONDOR_PASSWORD_FQU, what a 23.9+ daemon calls itself
_SCRAMBLE = bytes.fromhex("deadbeef")
_ALGORITHMS = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}
SCOPE_PREFIX = "condor:/"


@dataclass(frozen=True)
class TokenKeys:
    """Where the daemon's signing keys are (``SEC_TOKEN_POOL_SIGNING_KEY_FILE``,
    ``SEC_PASSWORD_DIRECTORY``), and how tokens are vetted."""

    pool_key_file: Path | None = None
    password_directory: Path | None = None
    max_age_s: float | None = None         # SEC_TOKEN_MAX_AGE
    revocation: str | None = None          # SEC_TOKEN_REVOCATION_EXPR

    def key_names(self) -> list[str]:
        """What the daemon announces in ``IssuerKeys``: POOL if its file is readable, and each
        readable file of the password directory (``IssuerNameCache::NameList``)."""
        names = set()
        if self.pool_key_file is not None and os.access(self.pool_key_file, os.R_OK):
            names.add(POOL_KEY)
        if self.password_directory is not None and self.password_directory.is_dir():
            names.update(path.name for path in self.password_directory.iterdir()
                         if path.is_file() and not path.name.startswith(".") and os.access(path, os.R_OK))
        return sorted(names)

    def signing_key(self, key_id: str) -> bytes:
        """The key ``key_id`` names, as HTCondor reads it; raises MethodFailed saying why not."""
        if not key_id:
            raise MethodFailed("the token has no key id (kid)")
        if key_id == POOL_KEY:
            path, knob = self.pool_key_file, "SEC_TOKEN_POOL_SIGNING_KEY_FILE"
        else:
            directory, knob = self.password_directory, "SEC_PASSWORD_DIRECTORY"
            if "/" in key_id or key_id in (".", ".."):
                raise MethodFailed(f"the token names an impossible key {key_id!r}")
            path = directory / key_id if directory is not None else None
        if path is None:
            raise MethodFailed(f"the token is signed with key {key_id!r}, and {knob} is not set")
        try:
            scrambled = path.read_bytes()
        except OSError as error:
            raise MethodFailed(f"the token is signed with key {key_id!r}, and {path} ({knob}) cannot be read: "
                               f"{error.strerror}") from None
        key = bytes(byte ^ _SCRAMBLE[at % 4] for at, byte in enumerate(scrambled))
        return key + key if key_id == POOL_KEY else key


@dataclass(frozen=True)
class VerifiedToken:
    subject: str
    issuer: str
    token_id: str
    limits: tuple[str, ...] = ()          # condor:/LEVEL scopes; empty: no limit
    scopes: tuple[str, ...] = ()
    expires: float | None = None
    claims: dict = field(default_factory=dict, compare=False)


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def verify(unsigned: str, keys: TokenKeys, now: float | None = None) -> tuple[VerifiedToken, bytes]:
    """The checked claims of the token ``header.payload``, and its signature by the daemon's key;
    raises MethodFailed saying what is wrong with it."""
    parts = unsigned.split(".")
    if len(parts) != 2:
        raise MethodFailed("the client sent no token (IDTOKENS needs one)")
    try:
        header, claims = json.loads(_b64url(parts[0])), json.loads(_b64url(parts[1]))
    except (binascii.Error, ValueError):
        raise MethodFailed("the client's token is not a JWT") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise MethodFailed("the client's token is not a JWT")
    digest = _ALGORITHMS.get(str(header.get("alg", "")))
    if digest is None:
        raise MethodFailed(f"the token is signed with {header.get('alg')!r}; HTCondor tokens use HS256, HS384 "
                           "or HS512")
    jwt_key = hkdf_sha256(keys.signing_key(str(header.get("kid", ""))), b"htcondor", b"master jwt", KEY_BYTES)
    signature = hmac.new(jwt_key, unsigned.encode(), digest).digest()
    return _analyzed(claims, keys, time.time() if now is None else now), signature


def _analyzed(claims: dict, keys: TokenKeys, now: float) -> VerifiedToken:
    """``Condor_Auth_Passwd::analyze_token``."""
    issued, expires = claims.get("iat"), claims.get("exp")
    if keys.max_age_s is not None and keys.max_age_s >= 0 and isinstance(issued, (int, float)) \
            and now - issued > keys.max_age_s:
        raise MethodFailed(f"the token is {now - issued:.0f} s old; SEC_TOKEN_MAX_AGE is {keys.max_age_s:g} s")
    if isinstance(expires, (int, float)) and expires < now:
        raise MethodFailed(f"the token expired {now - expires:.0f} s ago")
    issuer, token_id, subject = (str(claims.get(name) or "") for name in ("iss", "jti", "sub"))
    if not issuer:
        raise MethodFailed("the token names no issuer")
    if not token_id:
        raise MethodFailed("the token has no id (jti)")
    if not subject or claims.get("cap"):
        raise MethodFailed("the token names no subject (capability tokens are not accepted)")
    scopes = tuple(str(claims.get("scope") or "").replace(",", " ").split())
    if _revoked(claims, keys.revocation):
        raise MethodFailed(f"the token {token_id} is revoked by SEC_TOKEN_REVOCATION_EXPR")
    return VerifiedToken(subject, issuer, token_id,
                         tuple(scope[len(SCOPE_PREFIX):] for scope in scopes if scope.startswith(SCOPE_PREFIX)),
                         scopes, float(expires) if isinstance(expires, (int, float)) else None, claims)


def _revoked(claims: dict, expression: str | None) -> bool:
    """``isTokenRevoked``: the expression over the token's claims; anything but false revokes."""
    if not expression:
        return False
    ad = classad2.ClassAd({name: value for name, value in claims.items()
                           if isinstance(value, (bool, int, float, str))})
    try:
        value = classad2.ExprTree(expression).eval(ad)
    except (classad2.ClassAdException, ValueError):
        return True
    # IsBooleanValueEquiv: a boolean, or a number (non-zero is true); anything else revokes
    if isinstance(value, classad2.Value) or not isinstance(value, (bool, int, float)):
        return True
    return bool(value)


async def serve_token(channel: Channel, keys: TokenKeys) -> VerifiedToken:
    """Run the daemon's side; returns the client's checked token. Raises MethodFailed."""
    first = await channel.receive()
    try:
        client_status = first.get_int32()
        first.get_int32()
        claimed = first.get_string()
        unsigned = first.get_string()
        nonce = first.get_bytes(_bounded(first.get_int32(), NONCE_BYTES))
    except WireError as error:
        raise MethodFailed(f"the client's first message is malformed: {error}") from None

    failure, token, key = "", None, b""
    if client_status != STATUS_OK:
        failure = "the client found no token it could use"
    elif len(nonce) != NONCE_BYTES or len(claimed.encode()) > MAX_NAME_BYTES:
        failure = "the client's first message is malformed"
    else:
        try:
            token, signature = verify(unsigned, keys)
            key = hkdf_sha256(signature, SEED_KA + unsigned.encode(), b"master ka", KEY_BYTES)
        except MethodFailed as error:
            failure = str(error)
    server_nonce = os.urandom(NONCE_BYTES)
    reply = MessageWriter()
    if failure:
        reply.put_int(STATUS_ERROR).put_int(0).put_string("").put_int(0).put_string("")
        reply.put_int(0).put_int(0).put_int(0)
    else:
        proof = mac(key, f"{claimed} {SERVER_NAME}".encode(), b"\0", nonce, server_nonce)
        reply.put_int(STATUS_OK).put_int(len(claimed.encode())).put_string(claimed)
        reply.put_int(len(SERVER_NAME)).put_string(SERVER_NAME)
        reply.put_int(len(nonce)).put_bytes(nonce).put_int(len(server_nonce)).put_bytes(server_nonce)
        reply.put_int(len(proof)).put_bytes(proof)
    await channel.send(reply)

    last = await channel.receive()
    try:
        last_status = last.get_int32()
        last.get_int32()
        echoed = last.get_string()
        echoed_nonce = last.get_bytes(_bounded(last.get_int32(), NONCE_BYTES))
        client_proof = last.get_bytes(_bounded(last.get_int32(), 64))
    except WireError as error:
        raise MethodFailed(f"the client's last message is malformed: {error}") from None
    if failure:
        raise MethodFailed(failure)
    assert token is not None
    if last_status != STATUS_OK:
        raise MethodFailed("the client could not check the daemon's proof: the token was not signed with this "
                           "daemon's key (another pool's, or a key since replaced)")
    # the client takes the method to have succeeded: a refusal now ends the connection
    if echoed != claimed or echoed_nonce != server_nonce or not hmac.compare_digest(
            client_proof, mac(key, claimed.encode(), b"\0", server_nonce)):
        raise OutOfStep("the client's proof of the token's signature is wrong")
    if claimed != token.subject:
        raise OutOfStep(f"the client calls itself {claimed!r} but its token is {token.subject!r}'s")
    return token


def _bounded(length: int, limit: int) -> int:
    if not 0 <= length <= limit:
        raise WireError(f"field of {length} bytes (at most {limit})")
    return length
