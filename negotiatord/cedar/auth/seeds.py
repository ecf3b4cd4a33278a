"""The 256-byte seed of the IDTOKENS key ``K``.

A protocol constant, not code: ``Condor_Auth_Passwd::setup_seed``
(``src/condor_io/condor_auth_passwd.cpp``) fills the seed of ``K`` with these bytes, drawn at random
when the method was written, and both sides of a handshake must use the same ones. (The seed of
``K'`` keys only the method's wrapping of a session key, which an ECDH session never sends.)
"""

SEED_KA = bytes.fromhex(
    "3e4a502047d5f4e5dc7c69bb5210cbb6167add8084f7dd9ef3ad2cca71d283dd114a4fbb7b1ee90adfa862c44304de54"
    "73a3172f735c2cbb6e775b5d40d39face873182523f9252b623be0d4b167a3a8040cacfee9ee3da02c0abbf4d9d8b11f"
    "89004c943923ce5d9508bb3f04bc66a3fa20a13a416c5e6f4e0d3187d45fc78335c5e485db2c5a3717970cc26e7b6b9d"
    "1965b47a67df77a31f22f08a6c0ba57097a21a9ca7c60424f72739ab5cb915a4185bd109828e35e42108ab851c08a3df"
    "fde0e3b06f3d3938cdad6df6ef9a6f6dc2cb74f0228512eb7a3d6823010684b015c12ac3014c4f9f938e384dad1e3bd7"
    "45ff8c141fd70b465ba8af5d1b98b4b1"
)
