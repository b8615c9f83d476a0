"""The rendered config carries the ControllerConfig's base images where no MachineConfig sets
one (upstream's ``GetBaseImageContainer``), so on OpenShift mcd's merged spec, and therefore
its name, is upstream's; a user's MachineConfig still overrides; no ControllerConfig (plain
Kubernetes) leaves both empty."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.cluster.api import ApiError
from mcd.cluster.controllerconfig import CONTROLLER_CONFIG, base_images
from mcd.controller.preview import preview_pool
from mcd.model.pool.render import GENERATED_BY, render
from tests.unit.test_controller_sync import Writer, mc, pool, sync

Obj = dict[str, Any]
OS = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + "1" * 64
EXT = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + "2" * 64


class Kube:
    def __init__(self, controller_config: Obj | None) -> None:
        self.controller_config = controller_config
        self.paths: list[str] = []

    def request(self, method: str, path: str, *_a: Any, **_k: Any) -> Obj:
        self.paths.append(path)
        if path == CONTROLLER_CONFIG and self.controller_config is not None:
            return self.controller_config
        raise ApiError(404, "NotFound", "not found")


def created_spec(configs: list[Obj], controller_config: Obj | None) -> Obj:
    kube = Kube(controller_config)
    original = Writer.__init__

    def with_kube(self: Writer) -> None:
        original(self)
        self.kube = kube  # type: ignore[attr-defined]

    Writer.__init__ = with_kube  # type: ignore[method-assign]
    try:
        w, _status = sync(pool(), configs, [])
    finally:
        Writer.__init__ = original  # type: ignore[method-assign]
    ((_name, obj),) = w.of("create")
    assert CONTROLLER_CONFIG in kube.paths
    return dict(obj["spec"])


CC = {"spec": {"baseOSContainerImage": OS, "baseOSExtensionsContainerImage": EXT}}


def test_the_controller_configs_images_fill_what_no_config_sets() -> None:
    generated = mc("00-worker", osImageURL="ignored-generated")
    generated["metadata"]["annotations"] = {GENERATED_BY: "v1"}
    spec = created_spec([generated], CC)
    assert (spec["osImageURL"], spec["baseOSExtensionsContainerImage"]) == (OS, EXT)
    assert spec == render("worker", [generated], (OS, EXT)).spec


def test_a_users_config_still_overrides_the_base_image() -> None:
    spec = created_spec([mc("00-worker"), mc("99-mine", osImageURL="quay.io/me/os:1")], CC)
    assert (spec["osImageURL"], spec["baseOSExtensionsContainerImage"]) == ("quay.io/me/os:1", EXT)


def test_without_a_controller_config_there_is_no_base_image() -> None:
    spec = created_spec([mc("00-worker")], None)
    assert (spec["osImageURL"], spec["baseOSExtensionsContainerImage"]) == ("", "")


def test_the_preview_renders_with_the_same_base_images_as_the_controller() -> None:
    """``mcd plan --pool`` (:func:`preview_pool`) given what :func:`base_images` read names the
    config the controller's render names; given none, the config rendered without them."""
    configs = {"00-worker": mc("00-worker")}
    p = pool()
    with_base = preview_pool(p, [p], configs, [], base=base_images(Kube(CC)))  # type: ignore[arg-type]
    assert with_base.target == render("worker", list(configs.values()), (OS, EXT)).name
    without = preview_pool(p, [p], configs, [], base=base_images(Kube(None)))  # type: ignore[arg-type]
    assert without.target == render("worker", list(configs.values())).name != with_base.target


def test_base_images_are_none_where_the_controller_config_is_absent_or_forbidden() -> None:
    class Refusing(Kube):
        def __init__(self, status: int) -> None:
            super().__init__(None)
            self.status = status

        def request(self, method: str, path: str, *_a: Any, **_k: Any) -> Obj:
            raise ApiError(self.status, "Refused", "no")

    assert base_images(Refusing(403)) == base_images(Refusing(404)) == ("", "")  # type: ignore[arg-type]
    with pytest.raises(ApiError):
        base_images(Refusing(500))  # type: ignore[arg-type]
