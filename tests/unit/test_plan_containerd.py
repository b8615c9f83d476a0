"""``mcd plan`` on a containerd node (issue 42): containerd's own files named with the action
each needs (hosts.toml read live, config.toml a drain and a restart of containerd), upstream's
no-drain registry rules carried over to hosts.toml, CRI-O's defaults as they stand on
containerd; and CRI-O's classification exactly as before, on a CRI-O node or an unknown one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mcd.cli import cli
from mcd.model.disruption.policy import DEFAULT_POLICIES, merge_policies, parse_user_policies
from mcd.model.planning.applicability import HostSupport, host_support_of, support_from_annotation
from mcd.model.planning.plan import make_plan
from tests.builders import file_entry, mc, mc_doc

HOSTS = "/etc/containerd/certs.d/quay.io/hosts.toml"
DIGEST_MIRROR = '[host."https://mirror.example.com"]\n  capabilities = ["pull"]\n'
TAG_MIRROR = '[host."https://mirror.example.com"]\n  capabilities = ["pull", "resolve"]\n'
CONTAINERD = HostSupport(os="Debian GNU/Linux 12 (bookworm)", container_runtime="containerd")


def containerd_root(tmp_path: Path) -> Path:
    """A node root as realnode's: crictl.yaml names containerd's socket in a place of its own."""
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/crictl.yaml").write_text(
        "runtime-endpoint: unix:///run/realnode/containerd.sock\n"
    )
    return root


def plan_cli(tmp_path: Path, old: list[tuple[str, str]], new: list[tuple[str, str]],
             *args: str) -> tuple[int, str]:  # fmt: skip
    paths = []
    for name, files in (("rendered-worker-1", old), ("rendered-worker-2", new)):
        doc = mc_doc(name, files=[file_entry(p, d) for p, d in [("/etc/foo", "a"), *files]])
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc))
        paths.append(str(path))
    done = CliRunner().invoke(cli, ["plan", *paths, *args])
    return done.exit_code, done.stdout + done.stderr


def test_a_digest_only_mirror_in_hosts_toml_is_applied_live_without_a_drain(tmp_path: Path) -> None:
    code, out = plan_cli(
        tmp_path, [], [(HOSTS, DIGEST_MIRROR)], "--root", str(containerd_root(tmp_path))
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[1].endswith("; container runtime: containerd)")
    assert "Policies: the default cluster policies, with containerd's defaults" in lines
    assert (f"  file {HOSTS}: containerd default policy for directory "
            "/etc/containerd/certs.d -> None") in lines  # fmt: skip
    assert "Actions: None" in lines
    assert "Drain: no (/etc/containerd/certs.d: changes made are safe to skip drain)" in lines
    assert "Reboot: no" in lines and "Cost: none" in lines


def test_a_tag_mirror_in_hosts_toml_drains_and_says_why(tmp_path: Path) -> None:
    code, out = plan_cli(
        tmp_path, [], [(HOSTS, TAG_MIRROR)], "--root", str(containerd_root(tmp_path))
    )
    assert code == 0
    assert (f"Drain: yes ({HOSTS}: mirror https://mirror.example.com has been added in registry "
            "quay.io that can resolve tags (capabilities without resolve make it digest-only))"
            ) in out.splitlines()  # fmt: skip
    assert "Reboot: no" in out.splitlines()


def test_containerds_config_drains_and_restarts_containerd(tmp_path: Path) -> None:
    new = [("/etc/containerd/config.toml", "version = 2\n")]
    code, out = plan_cli(tmp_path, [], new, "--root", str(containerd_root(tmp_path)), "--json")
    plan = json.loads(out)
    assert code == 0
    assert plan["actions"] == [{"type": "Drain"},
                               {"type": "Restart", "service": "containerd.service"}]  # fmt: skip
    assert (plan["drain"], plan["reboot"], plan["cost"]) == (True, False, "drain")
    assert plan["host"]["containerRuntime"] == "containerd"


def test_a_hosts_toml_containerd_would_ignore_fails_the_plan(tmp_path: Path) -> None:
    code, out = plan_cli(tmp_path, [], [(HOSTS, 'server = "https://quay.io"\n')],
                         "--root", str(containerd_root(tmp_path)))  # fmt: skip
    assert code == 1
    assert f"failed decoding TOML content from file {HOSTS}: invalid `host` tree" in out


def test_without_a_known_runtime_containerd_files_reboot_as_upstream(tmp_path: Path) -> None:
    code, out = plan_cli(tmp_path, [], [(HOSTS, DIGEST_MIRROR)])
    assert code == 0
    assert f"  file {HOSTS}: no policy matches -> Reboot" in out.splitlines()
    assert "Policies: the default cluster policies" in out.splitlines()


CRIO_FILES = [
    "/var/lib/kubelet/config.json",
    "/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
    "/etc/containers/policy.json",
    "/etc/containers/registries.conf",
    "/etc/containers/registries.d/a.yaml",
    "/etc/crio/policies/p.json",
    "/etc/nmstate/openshift/x.yaml",
    "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
    "/etc/kubernetes/credential-providers/x.yaml",
    "/etc/containerd/config.toml",
    HOSTS,
    "/etc/foo",
]
REGISTRIES = ('[[registry]]\nprefix = "quay.io"\nlocation = "quay.io"\n'
              '[[registry.mirror]]\nlocation = "m.io"\npull-from-mirror = "digest-only"\n')  # fmt: skip


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("path", CRIO_FILES)
@pytest.mark.parametrize("host", [None, HostSupport(container_runtime="cri-o"), HostSupport()])
def test_crios_classification_is_unchanged(
    path: str, host: HostSupport | None, legacy: bool
) -> None:
    data = REGISTRIES if path.endswith("registries.conf") else "x\n"
    old, new = mc("a"), mc("b", files=[file_entry(path, data)])
    want = make_plan(old, new, legacy=legacy)  # no node: as before containerd was known
    got = make_plan(old, new, host=host, legacy=legacy)
    assert (got.actions, got.decisions, got.drain, got.drain_reason, got.policy_source) == (
        want.actions, want.decisions, want.drain, want.drain_reason, want.policy_source)  # fmt: skip


@pytest.mark.parametrize(
    ("path", "actions"),
    [
        ("/etc/containers/registries.conf", "None"),
        ("/etc/containers/policy.json", "None"),
        ("/etc/crio/policies/p.json", "None"),
        ("/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
         "Restart coreos-update-ca-trust.service, Restart containerd.service"),
        ("/etc/containerd/conf.d/10-runtime.toml", "Drain, Restart containerd.service"),
        ("/var/lib/kubelet/config.json", "None"),
        ("/etc/foo", "Reboot"),
    ],
)  # fmt: skip
def test_crios_files_on_a_containerd_node(path: str, actions: str) -> None:
    data = REGISTRIES if path.endswith("registries.conf") else "x\n"
    plan = make_plan(mc("a"), mc("b", files=[file_entry(path, data)]), host=CONTAINERD)
    assert ", ".join(str(a) for a in plan.actions) == actions


def test_an_administrators_policy_outranks_containerds_default() -> None:
    user = parse_user_policies({"spec": {"nodeDisruptionPolicy": {"files": [
        {"path": "/etc/containerd/certs.d", "actions": [{"type": "Drain"}]},
        {"path": "/etc/containerd/config.toml",
         "actions": [{"type": "Restart", "restart": {"serviceName": "containerd.service"}}]},
    ]}}})  # fmt: skip
    policies = merge_policies(DEFAULT_POLICIES, user)
    new = mc("b", files=[file_entry(HOSTS, DIGEST_MIRROR),
                         file_entry("/etc/containerd/config.toml", "version = 2\n")])  # fmt: skip
    plan = make_plan(mc("a"), new, policies, host=CONTAINERD)
    assert [str(a) for a in plan.actions] == ["Drain", "Restart containerd.service"]
    assert plan.drain_reason == "a policy asks for a drain"
    user_only = merge_policies(DEFAULT_POLICIES, parse_user_policies({"spec": {
        "nodeDisruptionPolicy": {"files": [{"path": "/etc/containerd/certs.d",
                                            "actions": [{"type": "None"}]}]}}}))  # fmt: skip
    tagged = make_plan(mc("a"), mc("b", files=[file_entry(HOSTS, TAG_MIRROR)]), user_only,
                       host=CONTAINERD)  # fmt: skip
    assert not tagged.drain  # as upstream: a user policy for the file is taken as it stands


def test_the_host_support_annotation_carries_the_runtime_and_the_kubelet_outranks_it() -> None:
    assert support_from_annotation(CONTAINERD.annotation()) == CONTAINERD
    plain = HostSupport(os="RHCOS")
    assert "containerRuntime" not in plain.annotation()  # unchanged for a runtime not known
    node = {"metadata": {"annotations": {
        "machineconfiguration.openshift.io/mcd-host-support": plain.annotation()}},
        "status": {"nodeInfo": {"containerRuntimeVersion": "containerd://1.6.20"}}}  # fmt: skip
    support = host_support_of(node)
    assert support is not None and support.container_runtime == "containerd"


@pytest.mark.parametrize(
    ("path", "actions"),
    [
        ("/etc/containers/registries.conf", "None"),
        ("/etc/containers/policy.json", "None"),
        ("/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
         "Restart containerd.service"),
        (HOSTS, "Reboot"),  # not in the legacy table, as every file it does not name
        ("/var/lib/kubelet/config.json", "None"),
    ],
)  # fmt: skip
def test_the_legacy_table_on_a_containerd_node(path: str, actions: str) -> None:
    data = REGISTRIES if path.endswith("registries.conf") else DIGEST_MIRROR
    plan = make_plan(mc("a"), mc("b", files=[file_entry(path, data)]), host=CONTAINERD, legacy=True)
    assert ", ".join(str(a) for a in plan.actions) == actions
    if actions == "None":
        assert not plan.drain
