"""10,000 generated MachineConfigs applied to a node root (hypothesis).

Each example is a MachineConfig document built from hostile parts (paths with
``..``, kernel filesystems, ``/usr``, the root's escape and loop symlinks; modes
with setuid bits; broken base64, unknown compressions, gzip; odd unit and dropin
names; non-core users; sections the daemon never changes), serialised as JSON or
YAML and sometimes cut short. It is applied with ``once_from`` over the base
config, on a fresh copy of a provisioned root.

Whatever the input: no exception but a refusal (``ConfigError``, ``UpdateError``),
no hang, nothing written beside the root, and the node is either exactly on the
new config or still exactly on the old one, with no update journal left.
``MCD_GENERATED_CONFIGS`` sets the count: 2,000 in the test suite, 10,000 in ``make faults``,
run as ``SHARDS`` tests of an equal share each (independent random draws), so the workers of
``make unit`` apply them side by side.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import string
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcd.agent.commands.once import once_from
from mcd.agent.update.handles import Node
from mcd.agent.update.journal import JOURNAL
from mcd.agent.update.transaction import Outcome, UpdateError
from mcd.host.effects import HostEffects
from mcd.host.ondisk.validation import validate_on_disk
from mcd.host.rootfs import Root
from mcd.model.errors import ConfigError
from mcd.model.ignition.dataurl import encode_data_url
from mcd.model.machineconfig import MachineConfig, load_machine_config
from mcd.model.planning.applicability import COREOS  # (no rpm-ostree client here)
from tests.e2e.harness import IMAGE_A, make_root
from tests.fakes.memory_systemd import MemorySystemd
from tests.integration.test_bad_corpus import BASE, Snapshot, deadline, rhcos_links, snapshot

COUNT = int(os.environ.get("MCD_GENERATED_CONFIGS", "2000"))
SHARDS = 4
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBaseKey core@base"

RESPELLED = [
    "/etc//app/app.conf", "/etc/./new.conf", "//proc/sysrq-trigger", "/./dev/sda", "//usr/bin/x",
    "/run//machine-config-daemon-force", "/etc/app/.", "/etc/gen/x/../y", "/etc/" + "n" * 250,
]  # fmt: skip
"""Other spellings of paths (the gate refuses them all: Ignition's clean paths)."""
RHCOS_PARENTS = [
    "/var/run/machine-config-daemon-force", "/var/run/gen.conf", "/run/gen.conf", "/lib/x.so",
    "/bin/tool", "/var/run/machine-config-daemon.lock", "/etc/machine-config-daemon/currentconfig",
    "/etc/systemd/system/b.service", "/etc/systemd/system/app.service.d/x.conf",
]  # fmt: skip
"""Paths through RHCOS's top-level symlinks (the base root has ``/var/run -> ../run``,
``/lib -> usr/lib``, ``/bin -> usr/bin``), and mcd's own places."""
segment = st.sampled_from(["..", ".", "escape", "loop", "app", "a.conf", "x", ""]) | st.text(
    string.ascii_letters + string.digits + "._-", min_size=1, max_size=10
)
safe_paths = st.lists(
    st.text(string.ascii_lowercase + "._-", min_size=1, max_size=8).filter(lambda p: p.strip(".")),
    min_size=1,
    max_size=3,
).map(lambda parts: "/etc/gen/" + "/".join(parts))
paths = st.one_of(
    safe_paths,
    safe_paths,
    safe_paths,
    safe_paths,
    st.sampled_from([
        "/etc/app/app.conf", "/etc/new.conf", "etc/relative", "/etc/../x", "/../outside/x",
        "/proc/sysrq-trigger", "/sys/x", "/dev/sda", "/usr/bin/x", "/usr/local/bin/x",
        "/etc/escape/x", "/etc/loop/x", "/etc/escape", "/etc/systemd/system/a.service",
        "/run/machine-config-daemon-force", "/var/lib/kubelet/config.json", "/", "",
        "/etc/app", "/etc/app/app.conf/inside", "/home/core/.ssh/authorized_keys.d/ignition",
    ]),
    st.sampled_from(RESPELLED + RHCOS_PARENTS),
    st.lists(segment, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts)),
    st.text(max_size=20),
)  # fmt: skip
sources = st.one_of(
    st.binary(max_size=300).map(encode_data_url),
    st.binary(max_size=300).map(encode_data_url),
    st.binary(max_size=300).map(encode_data_url),
    st.sampled_from(["data:;base64,@@@", "data:;base64,aGVsbG8", "http://192.0.2.1/x", "data:",
                     "", "s3://b/k", "data:,%ZZ", "data:text/plain;charset=utf-8,hi%0A"]),
    st.text(max_size=30),
)  # fmt: skip
modes = st.one_of(
    st.sampled_from([None, 0o644, 0o600, 0o755, 0o640, 0o400]),
    st.sampled_from([None, 0o644, 0o600, 0o755, 0o640, 0o400]),
    st.sampled_from([0o4777, 0o1777]) | st.integers(-2, 0o10000),
)
owners: st.SearchStrategy[dict[str, Any] | None] = st.one_of(
    st.none(),
    st.sampled_from(["root", "core", "mallory"]).map(lambda name: {"name": name}),
    st.integers(-2, 70000).map(lambda uid: {"id": uid}),
    st.sampled_from([2**32 - 2, 2**32 - 1, 2**32, 2**63]).map(lambda uid: {"id": uid}),
)


@st.composite
def file_entries(draw: st.DrawFn, wild: bool) -> dict[str, Any]:
    contents: dict[str, Any] = {}
    if draw(st.integers(0, 9)) == 0:
        contents = {"source": encode_data_url(gzip.compress(draw(st.binary(max_size=200))))}
        contents["compression"] = "gzip"
    elif not wild:
        contents = {"source": encode_data_url(draw(st.binary(max_size=300)))}
    else:
        contents = {"source": draw(sources)}
        compression = draw(st.sampled_from([None] * 8 + ["", "gzip", "xz"]))
        if compression is not None:
            contents["compression"] = compression
    entry: dict[str, Any] = {"path": draw(paths if wild else safe_paths), "contents": contents}
    mode = draw(modes if wild else st.sampled_from([None, 0o644, 0o600, 0o755, 0o640]))
    user = draw(owners if wild else st.sampled_from([None, {"name": "core"}, {"id": 0}]))
    if mode is not None:
        entry["mode"] = mode
    if user is not None:
        entry["user"] = user
    if wild and draw(st.integers(0, 29)) == 0:
        entry["append"] = [{"source": "data:,more"}]
    return entry


good_unit_names = st.sampled_from(
    ["app.service", "b.timer", "c.mount", "kubelet.service", "e.socket", "f.path", "g.target"]
)
unit_names = good_unit_names | good_unit_names | good_unit_names | st.sampled_from(
    ["evil", "x/y.service", "..", "", "d.txt"]
) | st.text(max_size=12)  # fmt: skip


@st.composite
def units(draw: st.DrawFn, wild: bool) -> dict[str, Any]:
    unit: dict[str, Any] = {"name": draw(unit_names if wild else good_unit_names)}
    if draw(st.booleans()):
        unit["contents"] = draw(
            st.sampled_from(["[Service]\nExecStart=/bin/true\n", ""]) | st.text(max_size=40)
        )
    enabled = draw(st.none() | st.booleans())
    if enabled is not None:
        unit["enabled"] = enabled
    if draw(st.integers(0, 9)) == 0:
        unit["mask"] = True
    dropin_names = [
        "10-a.conf",
        "20-b.conf",
        "10-a.conf",
        "30-c.conf",
        "../x.conf",
        "b.service",
        "",
    ]
    dropins = draw(
        st.lists(st.sampled_from(dropin_names if wild else dropin_names[:4]), max_size=2)
    )
    if dropins:
        unit["dropins"] = [{"name": n, "contents": "[Service]\n"} for n in dropins]
    return unit


core_keys = st.lists(st.sampled_from([KEY, "ssh-rsa AAAAB3 x@y", ""]), min_size=1, max_size=2)


def _core(keys: list[str]) -> list[dict[str, Any]]:
    return [{"name": "core", "sshAuthorizedKeys": keys}]


users = st.one_of(
    core_keys.map(_core),
    st.lists(
        st.fixed_dictionaries(
            {"name": st.sampled_from(["core", "mallory", "root"])},
            optional={"sshAuthorizedKeys": core_keys},
        ),
        max_size=2,
    ),
)


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    """Half the documents are wild (hostile values anywhere), half tame (valid values, any
    combination), so that the transaction runs, fails and rolls back often enough too."""
    wild = draw(st.booleans())
    files = draw(st.lists(file_entries(wild), max_size=4, unique_by=lambda f: f["path"]))
    storage: dict[str, Any] = {"files": files}
    if wild and draw(st.integers(0, 29)) == 0:
        section = draw(st.sampled_from(["disks", "raid", "filesystems", "directories", "links"]))
        storage[section] = [{"path": "/etc/d", "device": "/dev/sdb", "name": "md0"}]
    config: dict[str, Any] = {
        "ignition": {"version": draw(st.sampled_from(["3.4.0"] * 6 + ["3.2.0", "2.2.0", "9.9"]))},
        "storage": storage,
        "systemd": {
            "units": draw(st.lists(units(wild), max_size=2, unique_by=lambda u: u["name"]))
        },
        "passwd": {"users": draw(users if wild else core_keys.map(_core))},
    }
    spec: dict[str, Any] = {"osImageURL": IMAGE_A, "config": config}
    if wild and draw(st.integers(0, 9)) == 0:
        spec["kernelArguments"] = draw(
            st.lists(st.sampled_from(["nosmt", "a=b", "", "a\nb", "x\x00", "\x1b[2J"]), max_size=2)
        )
    if wild and draw(st.integers(0, 14)) == 0:
        spec["extensions"] = draw(st.lists(st.sampled_from(["usbguard", "emacs"]), max_size=2))
    if wild and draw(st.integers(0, 19)) == 0:
        spec["kernelType"] = draw(st.sampled_from(["default", "realtime", "bogus"]))
    if wild and draw(st.integers(0, 29)) == 0:
        spec["fips"] = True
    doc = {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": "generated"},
        "spec": spec,
    }
    text = (json.dumps(doc) if draw(st.booleans()) else yaml.safe_dump(doc)).encode()
    if wild and draw(st.integers(0, 19)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return text


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, MachineConfig]:
    top = tmp_path_factory.mktemp("generated-base")
    root = top / "root"
    make_root(root)
    node = Node(Root(root), HostEffects(Root(root), MemorySystemd(root)), host_support=COREOS)
    assert once_from(str(BASE), node, skip_reboot=True) == Outcome.REBOOT_PENDING
    (root / "etc/escape").symlink_to("../../outside")
    (root / "etc/loop").symlink_to("loop")
    rhcos_links(root)
    return root, load_machine_config(BASE.read_bytes())


@pytest.mark.parametrize("shard", range(SHARDS))
def test_generated_configs_never_crash_hang_escape_or_half_apply(
    shard: int,
    base: tuple[Path, MachineConfig],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    base_root, base_mc = base
    count = COUNT // SHARDS + (shard < COUNT % SHARDS)  # the shares add up to COUNT
    # Each example writes and fsyncs a fresh root: on tmpfs when the machine has one.
    scratch = Path(tempfile.mkdtemp(dir="/dev/shm")) if os.path.isdir("/dev/shm") else tmp_path
    request.addfinalizer(lambda: shutil.rmtree(scratch, ignore_errors=True))
    base_states = {"app.service": "enabled"}
    outcomes: Counter[str] = Counter()

    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(documents())
    def apply_one(data: bytes) -> None:
        case = scratch / "case"
        shutil.rmtree(case, ignore_errors=True)
        root = case / "root"
        shutil.copytree(base_root, root, symlinks=True)
        outside = case / "outside"
        outside.mkdir()
        (outside / "sentinel").write_text("not the node's\n")
        source = case / "generated.yaml"
        source.write_bytes(data)
        beside: Snapshot = snapshot(outside)
        systemd = MemorySystemd(root)
        systemd.states.update(base_states)
        node = Node(Root(root), HostEffects(Root(root), systemd), host_support=COREOS)
        with deadline(20, "one generated config"):
            try:
                outcome = once_from(str(source), node, skip_reboot=True).value
                target = load_machine_config(data)
            except ConfigError:
                outcome, target = "refused: bad document", base_mc
            except UpdateError as e:
                outcome, target = "refused: " + ("unreconcilable" if "reconcil" in str(e)
                                                 else "host check or rolled back"), base_mc  # fmt: skip
        outcomes[outcome] += 1
        assert sorted(p.name for p in case.iterdir()) == ["generated.yaml", "outside", "root"]
        assert snapshot(outside) == beside, "written outside the root"
        assert not (root / JOURNAL.lstrip("/")).exists(), "update journal left behind"
        report = validate_on_disk(target, Root(root), systemd)
        assert report.ok, f"{outcome}: the node is not exactly on {target.name}: {report.reasons()}"

    apply_one()
    with capsys.disabled():
        print(f"\n{sum(outcomes.values())} generated configs (share {shard + 1} of {SHARDS}):")
        for outcome, times in outcomes.most_common():
            print(f"  {times:>6}  {outcome}")
    assert sum(outcomes.values()) >= count * 0.99
