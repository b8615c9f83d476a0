"""Drain decision (upstream TestIsDrainRequired, 16 cases) and the registries.conf analysis."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.disruption.policy import NONE, REBOOT, SPECIAL, Action, reload
from mcd.model.disruption.registries import RegistriesConfError
from mcd.model.errors import ConfigError
from mcd.model.ignition.dataurl import encode_data_url
from mcd.model.planning.actions import drain_decision
from mcd.model.planning.diff import file_changes
from mcd.model.planning.plan import make_plan
from tests.builders import file_entry, mc

REG = "/etc/containers/registries.conf"

BASE = """
unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]

[[registry]]
prefix = ""
location = "quay.io/openshift"
mirror-by-digest-only = true

[[registry.mirror]]
location = "mirror.example.com/openshift"

[[registry]]
prefix = ""
location = "registry.example.com/app"
blocked = false

[[registry.mirror]]
location = "mirror.example.com/app"
pull-from-mirror = "digest-only"
"""

DIGEST_ONLY_MIRRORS_ONLY = BASE.replace(
    'location = "mirror.example.com/openshift"',
    'location = "mirror.example.com/openshift"\n\n[[registry.mirror]]\n'
    'location = "mirror2.example.com/openshift"',
)
REMOVED_REGISTRY = BASE.split(
    '[[registry]]\nprefix = ""\nlocation = "registry.example.com/app"', maxsplit=1
)[0]
REMOVED_MIRROR = BASE.replace('[[registry.mirror]]\nlocation = "mirror.example.com/app"\n'
                              'pull-from-mirror = "digest-only"\n', "")  # fmt: skip
REORDERED_SEARCH = BASE.replace(
    '["registry.access.redhat.com", "docker.io"]', '["docker.io", "registry.access.redhat.com"]'
)
REMOVED_SEARCH = BASE.replace('["registry.access.redhat.com", "docker.io"]', '["docker.io"]')
APPENDED_SEARCH = BASE.replace(
    '["registry.access.redhat.com", "docker.io"]',
    '["registry.access.redhat.com", "docker.io", "quay.io"]',
)
PREFIX_CHANGED = BASE.replace('prefix = ""\nlocation = "quay.io/openshift"',
                              'prefix = "quay.io"\nlocation = "quay.io/openshift"')  # fmt: skip
BLOCKED_CHANGED = BASE.replace("blocked = false", "blocked = true")
DIGEST_ONLY_CHANGED = BASE.replace("mirror-by-digest-only = true", "mirror-by-digest-only = false")
TAG_MIRROR_ADDED = BASE + '\n[[registry.mirror]]\nlocation = "tags.example.com/app"\n'
NEW_MIRROR_ON_DIGEST_ONLY_REGISTRY = DIGEST_ONLY_MIRRORS_ONLY
NEW_REGISTRY_DIGEST_ONLY = BASE + (
    '\n[[registry]]\nlocation = "new.example.com"\n\n[[registry.mirror]]\n'
    'location = "m.example.com"\npull-from-mirror = "digest-only"\n'
)
NEW_REGISTRY_ALL_PULLS = BASE + (
    '\n[[registry]]\nlocation = "new.example.com"\n\n[[registry.mirror]]\n'
    'location = "m.example.com"\n'
)
PULL_FROM_MIRROR_TO_ALL = BASE.replace(
    'pull-from-mirror = "digest-only"', 'pull-from-mirror = "all"'
)

CASES: list[tuple[str, tuple[Action, ...], str | None, bool]] = [
    ("none", (NONE,), None, False),
    ("none and reboot", (NONE, REBOOT), None, True),
    ("digest-only mirror added", (SPECIAL,), DIGEST_ONLY_MIRRORS_ONLY, False),
    ("registry removed", (SPECIAL,), REMOVED_REGISTRY, True),
    ("mirror removed", (SPECIAL,), REMOVED_MIRROR, True),
    ("search registries reordered", (SPECIAL,), REORDERED_SEARCH, True),
    ("search registry removed", (SPECIAL,), REMOVED_SEARCH, True),
    ("search registry appended", (SPECIAL,), APPENDED_SEARCH, False),
    ("prefix changed", (SPECIAL,), PREFIX_CHANGED, True),
    ("blocked changed", (SPECIAL,), BLOCKED_CHANGED, True),
    # isSafeContainerRegistryConfChanges never compares mirror-by-digest-only itself
    ("mirror-by-digest-only changed", (SPECIAL,), DIGEST_ONLY_CHANGED, False),
    ("mirror for tag pulls added", (SPECIAL,), TAG_MIRROR_ADDED, True),
    ("new mirror on mirror-by-digest-only registry", (SPECIAL,),
     NEW_MIRROR_ON_DIGEST_ONLY_REGISTRY, False),
    ("new registry with digest-only mirrors", (SPECIAL,), NEW_REGISTRY_DIGEST_ONLY, False),
    ("new registry with mirrors for all pulls", (SPECIAL,), NEW_REGISTRY_ALL_PULLS, True),
    ("pull-from-mirror changed to all", (SPECIAL,), PULL_FROM_MIRROR_TO_ALL, True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("title", "actions", "new_conf", "drain"), CASES, ids=[c[0] for c in CASES]
)
def test_drain_required(
    title: str, actions: tuple[Action, ...], new_conf: str | None, drain: bool
) -> None:
    old = mc("old", files=[file_entry(REG, BASE)])
    new = mc("new", files=[file_entry(REG, new_conf if new_conf is not None else BASE)])
    decision = drain_decision(actions, old, new, file_changes(old, new))
    assert decision.required is drain, decision.reason
    # The legacy path (reload crio) reaches the same verdict for registries changes.
    if actions == (SPECIAL,):
        legacy = drain_decision((reload("crio.service"),), old, new, file_changes(old, new), True)
        assert legacy.required is drain


# isSafeContainerRegistryConfChanges, rule by rule, where a reading of the rules differs
# from upstream's code: (title, old registries.conf, new registries.conf, drain?).
MIRROR = 'location = "r.example.com"\n\n[[registry.mirror]]\nlocation = "m.example.com"\n'
UPSTREAM_RULES: list[tuple[str, str, str, bool]] = [
    # "insecure value for registry %s has changed": the registry's own flag is checked
    ("registry insecure changed", f"[[registry]]\n{MIRROR}",
     f"[[registry]]\ninsecure = true\n{MIRROR}", True),
    # a mirror's insecure is not compared (only location and pull-from-mirror)
    ("mirror insecure changed", f"[[registry]]\n{MIRROR}",
     f"[[registry]]\n{MIRROR}insecure = true\n", False),
    # "pull-from-mirror value for mirror %s has changed": safe only towards digest-only
    ("pull-from-mirror set to digest-only", f"[[registry]]\n{MIRROR}",
     f'[[registry]]\n{MIRROR}pull-from-mirror = "digest-only"\n', False),
    ("pull-from-mirror emptied on a digest-only registry",
     f'[[registry]]\nmirror-by-digest-only = true\n{MIRROR}pull-from-mirror = "all"\n',
     f"[[registry]]\nmirror-by-digest-only = true\n{MIRROR}", True),
    # an added mirror is fine when it is digest-only OR the registry is mirror-by-digest-only
    ("mirror for all pulls added on a mirror-by-digest-only registry",
     f"[[registry]]\nmirror-by-digest-only = true\n{MIRROR}",
     f'[[registry]]\nmirror-by-digest-only = true\n{MIRROR}\n[[registry.mirror]]\n'
     'location = "n.example.com"\npull-from-mirror = "all"\n', False),
    # allDigestOnlyMirror: with mirrors, only each mirror's pull-from-mirror counts
    ("new mirror-by-digest-only registry whose mirror sets nothing", "",
     f"[[registry]]\nmirror-by-digest-only = true\n{MIRROR}", True),
    # allDigestOnlyMirror: without mirrors, the registry's flag decides
    ("new registry without mirrors, mirror-by-digest-only", "",
     '[[registry]]\nlocation = "r.example.com"\nmirror-by-digest-only = true\n', False),
    ("new registry without mirrors", "", '[[registry]]\nlocation = "r.example.com"\n', True),
    # registries are keyed by prefix when it is set
    ("location changed under the same prefix",
     '[[registry]]\nprefix = "p.io"\nlocation = "a.io"\n',
     '[[registry]]\nprefix = "p.io"\nlocation = "b.io"\n', True),
    # a V1 file decodes to an empty V2RegistriesConf: nothing removed, nothing added
    ("v1 format", "", '[registries.search]\nregistries = ["docker.io"]\n', False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("title", "before", "after", "drain"), UPSTREAM_RULES, ids=[c[0] for c in UPSTREAM_RULES]
)
def test_registries_rules_as_upstream(title: str, before: str, after: str, drain: bool) -> None:
    old = mc("old", files=[file_entry(REG, before)])
    new = mc("new", files=[file_entry(REG, after)])
    decision = drain_decision((SPECIAL,), old, new, file_changes(old, new))
    assert decision.required is drain, decision.reason
    if drain:
        assert decision.reason.startswith(f"{REG}: ")


def test_unsafe_reason_is_upstream_log_line() -> None:
    old = mc("old", files=[file_entry(REG, BASE)])
    new = mc("new", files=[file_entry(REG, REMOVED_REGISTRY)])
    reason = drain_decision((SPECIAL,), old, new, file_changes(old, new)).reason
    assert reason == f"{REG}: registry registry.example.com/app has been removed"


@pytest.mark.parametrize(
    ("title", "entry", "message"),
    [
        # GetIgnitionFileDataByPath decodes the data URL but never gunzips
        (
            "gzip",
            {
                "path": REG,
                "contents": {
                    "source": encode_data_url(BASE.encode(), compress=True),
                    "compression": "gzip",
                },
            },
            f"failed decoding TOML content from file {REG}: ",
        ),
        (
            "invalid TOML",
            file_entry(REG, "this is [not toml"),
            f"failed decoding TOML content from file {REG}: ",
        ),
        # BurntSushi/toml refuses a value of the wrong type for the Go field
        (
            "wrong type",
            file_entry(REG, '[[registry]]\nlocation = "a.io"\ninsecure = "yes"\n'),
            f"failed decoding TOML content from file {REG}: (last key 'insecure'): "
            "incompatible types: TOML value has type string; destination has type boolean",
        ),
        (
            "registry not an array",
            file_entry(REG, '[registry]\nlocation = "a.io"\n'),
            f"failed decoding TOML content from file {REG}: ",
        ),
        (
            "bad data URL",
            {"path": REG, "contents": {"source": "data:;base64,%%%"}},
            "failed decoding Data URL scheme string ",
        ),
    ],
)
def test_unparseable_registries_conf_fails_the_update(
    title: str, entry: dict[str, Any], message: str
) -> None:
    """isSafeContainerRegistryConfChanges returns an error: the update fails, no drain."""
    old = mc("old", files=[file_entry(REG, BASE)])
    new = mc("new", files=[entry])
    with pytest.raises(RegistriesConfError) as e:
        drain_decision((SPECIAL,), old, new, file_changes(old, new))
    assert str(e.value).startswith(message)
    if title == "bad data URL":  # upstream's newMachineConfigDiff (Ignition's parser) refuses it
        with pytest.raises(ConfigError, match=r"^could not calculate config diff: parsing new "):
            make_plan(old, new)
    else:
        with pytest.raises(RegistriesConfError):
            make_plan(old, new)
    # A reboot drains anyway: the file is never decoded (isDrainRequiredForNodeDisruptionActions)
    assert drain_decision((REBOOT,), old, new, file_changes(old, new)).required


def test_safe_change_reason_matches_upstream_log() -> None:
    old = mc("old", files=[file_entry(REG, BASE)])
    new = mc("new", files=[file_entry(REG, APPENDED_SEARCH)])
    reason = drain_decision((SPECIAL,), old, new, file_changes(old, new)).reason
    assert reason == "/etc/containers/registries.conf: changes made are safe to skip drain"
