"""Drain decision (upstream TestIsDrainRequired, 16 cases) and the registries.conf analysis."""

from __future__ import annotations

import pytest

from mcd.model.actions import drain_decision
from mcd.model.diff import file_changes
from mcd.model.policy import NONE, REBOOT, SPECIAL, Action, reload
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
    ("mirror-by-digest-only changed", (SPECIAL,), DIGEST_ONLY_CHANGED, True),
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


def test_unparseable_registries_conf_drains() -> None:
    old = mc("old", files=[file_entry(REG, BASE)])
    new = mc("new", files=[file_entry(REG, "this is [not toml")])
    decision = drain_decision((SPECIAL,), old, new, file_changes(old, new))
    assert decision.required
    assert "invalid registries.conf" in decision.reason


def test_safe_change_reason_matches_upstream_log() -> None:
    old = mc("old", files=[file_entry(REG, BASE)])
    new = mc("new", files=[file_entry(REG, APPENDED_SEARCH)])
    reason = drain_decision((SPECIAL,), old, new, file_changes(old, new)).reason
    assert reason == "/etc/containers/registries.conf changes made are safe to skip drain"
