"""Image mode end to end (issue 17): ``desiredImage`` on the Node drives a rebase to that
image on the rpm-ostree stand-in (a real OSTree sysroot where the machine has ostree), the
config's files are still written, ``currentImage`` is reported with ``currentConfig`` after
the reboot; removing ``desiredImage`` rebases back to the config's ``osImageURL``; a hostile
``desiredImage`` is refused in one line and nothing changes."""

from __future__ import annotations

import json

from click.testing import CliRunner

from mcd.agent.boot.bootstrap import INITIAL_ANNOTATIONS, INITIAL_ANNOTATIONS_BAK
from mcd.cli import cli
from mcd.host.osupdate.rpmostree import RETRY_ENV
from mcd.model.osupdate.imagemode import CURRENT_IMAGE_PATH
from mcd.model.vocabulary import CURRENT_CONFIG_PATH, Annotation
from tests.e2e.configs import APP_CONF, worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import IMAGE_A, AgentNode, create_config
from tests.e2e.scenarios import blocked_update, boot_on, release_and_reboot, update_to
from tests.fakes import rpm_ostree
from tests.fakes.kubecluster import TestCluster

OCL_IMAGE = (
    "image-registry.openshift-image-registry.svc:5000/openshift-machine-config-operator/"
    "os-image@sha256:" + "c" * 64
)


def status(node: AgentNode, cluster: TestCluster) -> str:
    result = CliRunner().invoke(
        cli, ["status", "--node", node.name, "--kubeconfig", str(cluster.kubeconfig)]
    )
    return result.output


def booted(node: object) -> dict[str, object]:
    return next(d for d in node.rpm()["deployments"] if d["booted"])  # type: ignore[attr-defined]


def assert_on_image(node: AgentNode, image: str) -> None:
    """Booted from ``image`` and saying so: the Node's currentImage, the file beside the
    current config, and rpm-ostree's booted deployment."""
    assert node.annotations()[Annotation.CURRENT_IMAGE] == image
    assert node.path(CURRENT_IMAGE_PATH).read_text() == image
    assert booted(node)["container-image-reference"] == f"ostree-unverified-registry:{image}"


def test_desired_image_rebases_reports_current_image_and_reverts(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node(fake_systemd=True)
    boot_on(node, kube_cluster)
    new = update_to(node, kube_cluster, desired_image=OCL_IMAGE, app="threads=8\n")
    node.wait_reboot()
    calls = [c["argv"] for c in node.rpm()["calls"]]
    assert ["rebase", "--experimental", f"ostree-unverified-registry:{OCL_IMAGE}"] in calls
    assert node.path(APP_CONF).read_text() == "threads=8\n"  # files written in image mode too
    assert Annotation.CURRENT_IMAGE not in node.annotations()  # not before the image boots
    node.reboot()
    node.wait_state("Done", new)
    assert_on_image(node, OCL_IMAGE)
    on_disk = json.loads(node.path(CURRENT_CONFIG_PATH).read_text())
    assert on_disk["metadata"]["name"] == new
    assert on_disk["spec"]["osImageURL"] == IMAGE_A  # the config as the cluster has it
    assert "annotations" not in on_disk["metadata"]
    assert f"Image:           {OCL_IMAGE}\n" in status(node, kube_cluster)

    # leave image mode: desiredImage removed -> back to the config's osImageURL
    third = kube_cluster.name("rendered-worker-3")
    create_config(kube_cluster, worker(third, app="threads=9\n"))
    kube_cluster.annotate(
        node.name, {Annotation.DESIRED_CONFIG: third, Annotation.DESIRED_IMAGE: None}
    )
    node.wait_reboot(2)
    calls = [c["argv"] for c in node.rpm()["calls"]]
    assert calls[-1] != ["rebase", "--experimental", f"ostree-unverified-registry:{OCL_IMAGE}"]
    assert ["rebase", "--experimental", f"ostree-unverified-registry:{IMAGE_A}"] in calls
    node.reboot()
    node.wait_state("Done", third)
    assert Annotation.CURRENT_IMAGE not in node.annotations()
    assert booted(node)["container-image-reference"] == f"ostree-unverified-registry:{IMAGE_A}"
    assert node.path(CURRENT_IMAGE_PATH).read_text() == ""
    assert node.path(APP_CONF).read_text() == "threads=9\n"


def test_a_hostile_desired_image_is_refused_in_one_line_and_nothing_changes(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node(fake_systemd=True)
    name = boot_on(node, kube_cluster)
    before = node.rpm()["deployments"]
    hostile = "docker://evil.example.com/x:latest\n--install=backdoor"
    kube_cluster.annotate(node.name, {Annotation.DESIRED_IMAGE: hostile})
    node.wait_state("Degraded")
    assert node.reason() == (
        "node annotation machineconfiguration.openshift.io/desiredImage: invalid image "
        'reference "docker://evil.example.com/x:latest\\n--install=backdoor": contains the '
        "control character U+000A at offset 34"
    )
    assert node.rpm()["deployments"] == before
    assert not [c for c in node.rpm()["calls"] if c["argv"][0] == "rebase"]
    assert node.reboots_requested() == 0
    shown = status(node, kube_cluster)
    assert "Image:           - -> docker://evil.example.com/x:latest\\n--install=backdoor" in shown
    assert "see docs/runbook.md#18-image-mode-and-extensions" in shown
    kube_cluster.annotate(node.name, {Annotation.DESIRED_IMAGE: "docker://evil.example.com/x"})
    node.wait_for(lambda: "has its own transport" in node.reason(), 15, "transport refused")
    assert node.reason() == (
        "node annotation machineconfiguration.openshift.io/desiredImage: invalid image "
        'reference "docker://evil.example.com/x": has its own transport "docker://"; '
        "give a registry pullspec"
    )
    kube_cluster.annotate(node.name, {Annotation.DESIRED_IMAGE: None})
    node.wait_state("Done", name)
    assert node.reboots_requested() == 0


def test_an_image_that_cannot_be_pulled_rolls_back_and_is_retried(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node(fake_systemd=True)
    node.base_env[RETRY_ENV] = "0.01"
    name = boot_on(node, kube_cluster)
    with rpm_ostree.edit(node.rpm_state) as state:
        state["fail"]["rebase"] = f"error: reading manifest in {OCL_IMAGE}: manifest unknown"
        state["fail_times"]["rebase"] = 10_000
    new = update_to(node, kube_cluster, desired_image=OCL_IMAGE, app="threads=8\n")
    node.wait_state("Degraded", timeout=60)
    assert node.reason().startswith(f"failed to update OS to {OCL_IMAGE} after retries: ")
    assert node.path(APP_CONF).read_text() == "threads=4\n"  # the pull failed before any write
    assert node.annotations()[Annotation.CURRENT_CONFIG] == name
    assert Annotation.CURRENT_IMAGE not in node.annotations()
    assert not [d for d in node.rpm()["deployments"] if d["staged"]]
    assert not node.path(CURRENT_IMAGE_PATH).exists()
    assert node.reboots_requested() == 0

    with rpm_ostree.edit(node.rpm_state) as state:  # the image is pushed: the retry goes through
        state["fail"].pop("rebase")
    node.wait_reboot(timeout=60)
    node.reboot()
    node.wait_state("Done", new)
    assert node.annotations()[Annotation.CURRENT_IMAGE] == OCL_IMAGE


def test_bootstrap_pivot_goes_to_the_current_image_of_node_annotations(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """checkStateOnFirstRun, bootstrapping an image-mode node: the target is the
    ``currentImage`` the machine-config-server wrote, not the config's osImageURL."""
    node = make_node(fake_systemd=True)
    name = kube_cluster.name("rendered-worker-1")
    node.provision(worker(name))  # installed from the boot image (IMAGE_A)
    create_config(kube_cluster, worker(name))
    node.path(CURRENT_CONFIG_PATH).unlink()
    initial = {
        Annotation.CURRENT_CONFIG: name, Annotation.DESIRED_CONFIG: name,
        Annotation.STATE: "Done", Annotation.CURRENT_IMAGE: OCL_IMAGE,
        Annotation.DESIRED_IMAGE: OCL_IMAGE,
    }  # fmt: skip
    node.path(INITIAL_ANNOTATIONS).write_text(json.dumps(initial))
    node.start()
    node.wait_reboot()
    assert "Bootstrap pivot required to: " + OCL_IMAGE in node.log()
    node.reboot()
    node.wait_for(lambda: node.path(INITIAL_ANNOTATIONS_BAK).exists(), 30, "bootstrap done")
    node.wait_state("Done", name)
    assert_on_image(node, OCL_IMAGE)
    assert node.reboots_requested() == 1


OCL_IMAGE_2 = OCL_IMAGE.replace("c" * 64, "d" * 64)


def retarget_during_the_drain(node: AgentNode, cluster: TestCluster, image: str | None) -> str:
    """An image-mode update (new config + desiredImage) whose drain a budget blocks; while
    it waits, desiredImage becomes ``image`` (removed: None); then the budget lets the drain
    go on. Returns the new config once its reboot is asked for."""
    ns, new = blocked_update(node, cluster, desired_image=OCL_IMAGE)
    cluster.annotate(node.name, {Annotation.DESIRED_IMAGE: image})
    node.wait_for(lambda: "desiredImage changed from" in node.log(), 15, "the retarget seen")
    release_and_reboot(node, cluster, ns)
    return new


def rebases(node: AgentNode) -> list[list[str]]:
    """The rebases that deploy (the pulls staged before the drain, ``--download-only``, not)."""
    return [c["argv"] for c in node.rpm()["calls"]
            if c["argv"][0] == "rebase" and "--download-only" not in c["argv"]]  # fmt: skip


def test_desired_image_changed_during_the_drain_rebases_to_the_new_image_once(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node(fake_systemd=True)
    new = retarget_during_the_drain(node, kube_cluster, OCL_IMAGE_2)  # a new build
    assert rebases(node) == [
        ["rebase", "--experimental", f"ostree-unverified-registry:{OCL_IMAGE_2}"]
    ]
    node.reboot()
    node.wait_state("Done", new)
    assert_on_image(node, OCL_IMAGE_2)
    assert node.reboots_requested() == 1


def test_desired_image_removed_during_the_drain_writes_the_config_without_a_rebase(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node(fake_systemd=True)
    new = retarget_during_the_drain(node, kube_cluster, None)  # layering turned off
    assert rebases(node) == []  # the config's osImageURL is the one booted
    assert node.path(APP_CONF).read_text() == "threads=8\n"
    node.reboot()
    node.wait_state("Done", new)
    assert Annotation.CURRENT_IMAGE not in node.annotations()
    assert not node.path(CURRENT_IMAGE_PATH).exists()
    assert booted(node)["container-image-reference"] == f"ostree-unverified-registry:{IMAGE_A}"
    assert node.reboots_requested() == 1


def test_an_extension_package_missing_after_the_reboot_degrades_until_it_is_installed(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """Upstream verifyExtensionPackages (OCPBUGS-65645): after the reboot, before the update
    is marked done, every extension's packages answer ``rpm -q`` in the booted deployment."""
    node = make_node(fake_systemd=True)
    boot_on(node, kube_cluster)
    new = update_to(node, kube_cluster, extensions=["kerberos", "usbguard"])
    node.wait_reboot()
    assert ["update", "--install", "krb5-workstation", "--install", "libkadm5", "--install",
            "usbguard"] in [c["argv"] for c in node.rpm()["calls"]]  # fmt: skip
    with rpm_ostree.edit(node.rpm_state) as state:  # staged, yet not in the booted rpm database
        state["rpmdb_missing"] = ["libkadm5"]
    node.reboot()
    node.wait_state("Degraded", timeout=30)
    assert node.reason() == (
        'extension package verification failed: extension "kerberos" verification failed: '
        "no valid package set is fully installed. Tried 1 package set(s), missing packages "
        "per set: [[libkadm5]]"
    )
    assert node.annotations()[Annotation.CURRENT_CONFIG] != new  # not marked done
    with rpm_ostree.edit(node.rpm_state) as state:
        state["rpmdb_missing"] = []
    node.wait_state("Done", new, timeout=60)
    assert node.reboots_requested() == 1


def test_force_file_on_a_layered_node_rebases_to_its_image_again_and_repairs_drift(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """Upstream: the force file skips validation and makes the OS an update
    (``osUpdate = oldOCLImage != newOCLImage || force``): a layered node is rebased to
    its image again (not to the config's osImageURL), its files rewritten, and rebooted."""
    node = make_node(fake_systemd=True)
    boot_on(node, kube_cluster)
    new = update_to(node, kube_cluster, desired_image=OCL_IMAGE, app="threads=8\n")
    node.wait_reboot()
    node.reboot()
    node.wait_state("Done", new)
    to_image = ["rebase", "--experimental", f"ostree-unverified-registry:{OCL_IMAGE}"]
    assert rebases(node) == [to_image]

    node.path(APP_CONF).write_text("threads=1\n")  # a hot-fix: drift
    node.wait_state("Degraded", timeout=10)
    assert "content mismatch for file" in node.reason()
    node.path("/run/machine-config-daemon-force").write_text("")
    node.wait_reboot(2, timeout=30)
    assert rebases(node) == [to_image, to_image]  # the image again, never IMAGE_A
    assert node.path(APP_CONF).read_text() == "threads=8\n"
    assert not node.path("/run/machine-config-daemon-force").exists()  # consumed
    node.reboot()
    node.wait_state("Done", new)
    assert_on_image(node, OCL_IMAGE)
    assert node.reboots_requested() == 2
