"""The session key: an ECDH exchange on P-256, then HKDF, as HTCondor 9.0+ derives it.

``SecMan::GenerateKeyExchange`` makes a P-256 key pair per new session; each side sends its public
key in its security ad (``ECDHPublicKey``) as the base64 of OpenSSL's ``i2d_PublicKey``, the
uncompressed point. ``SecMan::FinishKeyExchange`` derives the shared secret and stretches it with
HKDF-SHA256, salt ``htcondor``, info ``keygen`` (``Condor_Crypt_Base::hkdf``), to the 32 bytes of
an AES-256-GCM key.
"""

from __future__ import annotations

import base64
import binascii

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

SESSION_KEY_BYTES = 32   # SEC_SESSION_KEY_LENGTH_V9


def hkdf_sha256(secret: bytes, salt: bytes, info: bytes, length: int) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(secret)


class KeyExchange:
    """This side's half of one session's key exchange."""

    def __init__(self) -> None:
        self._private = ec.generate_private_key(ec.SECP256R1())

    @property
    def public_key(self) -> str:
        point = self._private.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        return base64.b64encode(point).decode()

    def session_key(self, peer_public_key: str) -> bytes:
        """The AES-256-GCM key both sides derive; raises ValueError on a malformed peer key."""
        try:
            point = base64.b64decode(peer_public_key, validate=True)
        except binascii.Error as error:
            raise ValueError(f"the peer's ECDH public key is not base64: {error}") from None
        peer = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
        secret = self._private.exchange(ec.ECDH(), peer)
        return hkdf_sha256(secret, b"htcondor", b"keygen", SESSION_KEY_BYTES)
