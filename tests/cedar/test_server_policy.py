"""The daemon's side of the security negotiation, reconciled as ``SecMan::ReconcileSecurityPolicyAds``
(``src/condor_io/condor_secman.cpp``) does, with the table of ``ReconcileSecurityAttribute``."""

from __future__ import annotations

import classad2
import pytest

from negotiatord.cedar.policy import Requirement
from negotiatord.cedar.server_policy import LevelPolicy, PolicyMismatch, reconcile

R, P, OPT, N = Requirement.REQUIRED, Requirement.PREFERRED, Requirement.OPTIONAL, Requirement.NEVER


def client(**attributes: object) -> classad2.ClassAd:
    ad = classad2.ClassAd({"AuthMethods": "TOKEN,FS", "CryptoMethods": "AES", "SessionDuration": "60",
                           "SessionLease": 3600})
    for name, value in attributes.items():
        ad[name] = value
    return ad


@pytest.mark.parametrize("theirs, ours, on", [
    # ReconcileSecurityAttribute's chart: client, server -> result
    ("REQUIRED", R, True), ("REQUIRED", P, True), ("REQUIRED", OPT, True),
    ("PREFERRED", P, True), ("PREFERRED", OPT, True), ("PREFERRED", N, False),
    ("OPTIONAL", R, True), ("OPTIONAL", P, True), ("OPTIONAL", OPT, False), ("OPTIONAL", N, False),
    ("NEVER", P, False), ("NEVER", OPT, False), ("NEVER", N, False),
])
def test_each_feature_follows_the_chart(theirs, ours, on):
    # the client does not authenticate, so AES-GCM does not force integrity on (see below)
    answer = reconcile(client(Integrity=theirs, AuthenticationNew="NEVER"), LevelPolicy(integrity=ours), None, [])
    assert answer["Integrity"] == ("YES" if on else "NO")


@pytest.mark.parametrize("theirs, ours", [("REQUIRED", N), ("NEVER", R)])
def test_required_against_never_fails(theirs, ours):
    with pytest.raises(PolicyMismatch, match="encryption"):
        reconcile(client(Encryption=theirs, AuthenticationNew="OPTIONAL"), LevelPolicy(encryption=ours), None, [])


def test_methods_in_the_daemons_order_and_aes_gcm_when_authenticating():
    answer = reconcile(client(AuthenticationNew="REQUIRED", Encryption="OPTIONAL"),
                       LevelPolicy(methods=("FS", "TOKEN")), "minipool", ["POOL"])
    assert (answer["AuthMethodsList"], answer["AuthMethods"]) == ("FS,TOKEN", "FS")
    # with authentication and AES first, AES-GCM encrypts and checks integrity whatever was asked
    assert (answer["Authentication"], answer["Encryption"], answer["Integrity"]) == ("YES", "YES", "YES")
    assert (answer["TrustDomain"], answer["IssuerKeys"], answer["Enact"]) == ("minipool", "POOL", "YES")


def test_the_shorter_duration_and_lease_win():
    answer = reconcile(client(SessionDuration="60", SessionLease=7200),
                       LevelPolicy(session_duration_s=86400, session_lease_s=3600), None, [])
    assert (answer["SessionDuration"], answer["SessionLease"]) == ("60", 3600)


def test_optional_authentication_is_not_required_if_it_fails():
    answer = reconcile(client(AuthenticationNew="OPTIONAL"), LevelPolicy(authentication=P), None, [])
    assert answer["Authentication"] == "YES" and answer["AuthRequired"] is False


def test_an_invalid_policy_is_named():
    # ReconcileSecurityDependency, in FillInSecurityPolicyAd's order: encryption raises
    # authentication, which negotiation NEVER then rules out
    with pytest.raises(ValueError, match="authentication is REQUIRED but negotiation is NEVER"):
        LevelPolicy(encryption=R, negotiation=N).reconciled_levels()
