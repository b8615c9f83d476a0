"""The gate's refusal as the agent and ``mcd restore`` show it (model/gate), and which files
would land on a read-only ``/usr`` (model/ignition/guards, validate)."""

from __future__ import annotations

import pytest

from mcd.model import gate
from mcd.model.ignition.guards import on_readonly_usr
from mcd.model.ignition.validate import readonly_usr_paths
from mcd.model.machineconfig import machine_config_from_object
from tests.builders import mc_doc


def test_a_refused_config_names_itself_and_every_problem() -> None:
    mc = machine_config_from_object(
        mc_doc("rendered-worker-9", kernelType="rt", extensions=["nope"])
    )
    with pytest.raises(gate.GateError) as e:
        gate.admit(mc)
    expected = (
        'validating new Ignition config from machineconfig "rendered-worker-9" failed: '
        'spec.kernelType: invalid kernelType "rt"; must be one of default, realtime, 64k-pages; '
        "spec.extensions: invalid extensions found: [nope]"
    )
    assert str(e.value) == expected
    assert e.value.args == (expected,)
    assert e.value.name == "rendered-worker-9"
    assert e.value.problems == (
        'spec.kernelType: invalid kernelType "rt"; must be one of default, realtime, 64k-pages',
        "spec.extensions: invalid extensions found: [nope]",
    )


def test_a_good_config_passes_the_gate() -> None:
    gate.admit(machine_config_from_object(mc_doc()))


@pytest.mark.parametrize(
    ("path", "readonly"),
    [("/usr/bin/tool", True), ("/usr", True), ("/usr/lib/x", True), ("/usr/local/bin/x", False),
     ("/usr/local", False), ("/usrx/a", False), ("/etc/usr/a", False), ("/usr/localx", True)],
)  # fmt: skip
def test_only_usr_outside_usr_local_is_read_only(path: str, readonly: bool) -> None:
    assert on_readonly_usr(path) is readonly


def test_the_files_a_config_would_put_on_a_read_only_usr() -> None:
    files = [{"path": p, "contents": {"source": "data:,x"}}
             for p in ("/usr/bin/a", "/etc/b", "/usr/local/c", "/usr/share/d")]  # fmt: skip
    mc = machine_config_from_object(mc_doc(storage={"files": files}))
    assert readonly_usr_paths(mc.ignition) == ["/usr/bin/a", "/usr/share/d"]
