"""The negotiator's ClassAd user maps loaded into HTCondor's library, and GROUP_PREFIX's renaming
of a submitter ad (``Matchmaker::TransformSubmitterAd``, ``src/condor_negotiator.V6/matchmaker.cpp``).
The reference for what a map gives is the library's own ``userMap`` function."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import classad2
import pytest

from negotiatord.classad.user_maps import UserMap, UserMapError, install_user_maps, map_user
from negotiatord.schedds.submitters import submitter_from_ad, with_group_prefix


@pytest.fixture(autouse=True)
def no_maps_left() -> Iterator[None]:
    yield
    install_user_maps(())


def test_maps_from_data_and_file_replace_those_loaded_before(tmp_path):
    (tmp_path / "authorization.map").write_text("* /^bob@(.*)$/ group_a.,group_\\1.\n")
    install_user_maps([UserMap("GROUP_PREFIX", data="* example.org group_a\n* /^(.*)\\.edu$/ group_\\1\n"),
                       UserMap("PRIORITY_FACTOR_AUTHORIZATION", file=tmp_path / "authorization.map")])
    assert map_user("GROUP_PREFIX", "example.org") == "group_a"
    assert map_user("GROUP_PREFIX", "wisc.edu") == "group_wisc"
    assert map_user("GROUP_PREFIX", "other.org") is None
    assert map_user("PRIORITY_FACTOR_AUTHORIZATION", "bob@b") == "group_a.,group_b."
    # a reconfig that lists fewer maps drops the others
    install_user_maps([UserMap("GROUP_PREFIX", data="* other.org group_o\n")])
    assert map_user("GROUP_PREFIX", "other.org") == "group_o" and map_user("GROUP_PREFIX", "example.org") is None
    assert map_user("PRIORITY_FACTOR_AUTHORIZATION", "bob@b") is None
    # the data went through a private file, removed once read
    assert not list(Path(tempfile.gettempdir()).glob("negotiatord-usermap-*"))


def test_a_map_file_that_cannot_be_read_is_named_by_its_knob(tmp_path):
    with pytest.raises(UserMapError, match=r"CLASSAD_USER_MAPFILE_GROUP_PREFIX = .*gone.map"):
        install_user_maps([UserMap("GROUP_PREFIX", file=tmp_path / "gone.map")])


def _submitter(name: str) -> classad2.ClassAd:
    return classad2.ClassAd({"Name": name, "ScheddIpAddr": "<127.0.0.1:9618>", "ScheddName": "s",
                             "SubmitterTag": "", "CondorVersion": "$CondorVersion: 25.14.0 $"})


def test_group_prefix_renames_a_mapped_submitter_and_keeps_its_name_for_the_schedd():
    install_user_maps([UserMap("GROUP_PREFIX", data="* example.org group_a\n")])
    ad = _submitter("alice@example.org")
    submitter = submitter_from_ad(with_group_prefix(ad))
    assert (submitter.name, submitter.owner) == ("group_a.alice@example.org", "alice@example.org")
    assert ad["Name"] == "alice@example.org"     # the feed's ad is left as it was
    # the accounting domain is what follows the last @; unmapped domains and names without one stay
    assert with_group_prefix(_submitter("x@y@example.org"))["Name"] == "group_a.x@y@example.org"
    for name in ("carol@other.org", "nodomain"):
        unchanged = _submitter(name)
        assert with_group_prefix(unchanged) is unchanged
