"""The MachineConfigs of the e2e tests: a rendered worker config and its variations."""

from __future__ import annotations

import copy
from typing import Any

from tests.builders import file_entry, mc_doc
from tests.e2e.harness import IMAGE_A

Obj = dict[str, Any]

UNIT = "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
PULL_SECRET = "/var/lib/kubelet/config.json"
APP_CONF = "/etc/app/app.conf"
KEY_A = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyA core@a"
KEY_B = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyB core@b"


def worker(
    name: str,
    *,
    app: str = "threads=4\n",
    secret: str = '{"auths":{"registry.example.com":{"auth":"c2VjcmV0"}}}',
    key: str = KEY_A,
    image: str = IMAGE_A,
    kargs: list[str] | None = None,
    extra_files: list[Obj] | None = None,
    **spec: Any,
) -> Obj:
    files = [
        file_entry(APP_CONF, app, 0o644),
        file_entry(PULL_SECRET, secret, 0o600),
        *(extra_files or []),
    ]
    doc = mc_doc(
        name,
        files=files,
        units=[{"name": "app.service", "contents": UNIT, "enabled": True}],
        users=[{"name": "core", "sshAuthorizedKeys": [key]}],
        osImageURL=image,
        kernelArguments=list(kargs or []),
        **spec,
    )
    doc["metadata"]["labels"] = {"mcd-test": "true"}
    return doc


def renamed(doc: Obj, name: str) -> Obj:
    out = copy.deepcopy(doc)
    out["metadata"]["name"] = name
    return out
