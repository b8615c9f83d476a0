"""Write tests/data/render-merge-golden.json: upstream's rendered config for sets of MachineConfigs.

Cases: every MachineConfig of the repo's examples and test corpora alone, the example pool
together, corpus pairs, and sets generated from a fixed seed (overlapping files, links,
directories, units, dropins, users and SSH keys; spec 2.2 and 3.0-3.5 mixed; kernel
arguments, extensions, fips, kernelType, osImageURL, generated configs, role labels). The
Go oracle (run.sh: upstream's own MergeMachineConfigs) renders each; the suite then checks
mcd's render against the file without Go.

Run from the repository root: .venv/bin/python tests/oracles/merge/make_merge_golden.py
"""

from __future__ import annotations

import copy
import json
import pathlib
import random
import subprocess
from typing import Any

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
OUT = ROOT / "tests" / "data" / "render-merge-golden.json"
SEED = 3232
ROLE = "machineconfiguration.openshift.io/role"
GENERATED = "machineconfiguration.openshift.io/generated-by-controller-version"

PATHS = ["/etc/a.conf", "/etc/b.conf", "/etc/sub/c", "/var/d", "/etc/sub"]
UNITS = ["a.service", "b.service", "c.timer"]
KEYS = ["ssh-ed25519 AAAAC3Nz one", "ssh-ed25519 AAAAC3Nz two", "ssh-rsa AAAAB3Nz three"]
KARGS = ["quiet", "nosmt", "console=ttyS0,115200n8", "a=b", "quiet"]
EXTENSIONS = ["usbguard", "kernel-devel", "sysstat", "kerberos", "not-an-extension"]
IMAGES = ["", "quay.io/os@sha256:" + "0f" * 32, "quay.io/os:tag"]


def data_url(rng: random.Random) -> str:
    return rng.choice(["data:,one", "data:,two%0A", "data:;base64,dGhyZWUK", "data:,"])


def v3_config(rng: random.Random, version: str) -> dict[str, Any]:
    doc: dict[str, Any] = {"ignition": {"version": version}}
    storage: dict[str, Any] = {}
    used: set[str] = set()
    for kind in ("files", "files", "directories", "links"):
        for _ in range(rng.randint(0, 2)):
            path = rng.choice(PATHS)
            if path in used:
                continue
            used.add(path)
            entry: dict[str, Any] = {"path": path}
            if kind == "files":
                if rng.random() < 0.8:
                    entry["contents"] = {"source": data_url(rng)}
                    if rng.random() < 0.2:
                        entry["contents"]["compression"] = ""
                if rng.random() < 0.2 and version >= "3.1.0":
                    entry["append"] = [{"source": data_url(rng)}]
                if rng.random() < 0.5:
                    entry["mode"] = rng.choice([420, 384, 493])
            elif kind == "directories":
                entry["mode"] = 493
            else:
                entry["target"] = "/etc/target"
                if rng.random() < 0.5:
                    entry["hard"] = False
            if rng.random() < 0.4:
                entry["overwrite"] = rng.choice([True, False])
            if rng.random() < 0.2:
                entry["user"] = {"name": "root"}
            storage.setdefault(kind, []).append(entry)
    if storage:
        doc["storage"] = storage
    units = []
    for name in rng.sample(UNITS, rng.randint(0, 2)):
        unit: dict[str, Any] = {"name": name}
        if rng.random() < 0.7:
            unit["contents"] = f"[Unit]\nDescription={rng.choice(['x', 'y'])}\n"
        if rng.random() < 0.5:
            unit["enabled"] = rng.choice([True, False])
        if rng.random() < 0.3:
            unit["mask"] = rng.choice([True, False])
        if rng.random() < 0.4:
            unit["dropins"] = [
                {"name": d, "contents": "[Service]\nX=" + rng.choice("12") + "\n"}
                for d in rng.sample(["10-a.conf", "20-b.conf"], rng.randint(1, 2))
            ]
        units.append(unit)
    if units:
        doc["systemd"] = {"units": units}
    if rng.random() < 0.4:
        doc["passwd"] = {
            "users": [{"name": "core", "sshAuthorizedKeys": rng.sample(KEYS, rng.randint(0, 2))}]
        }
    if rng.random() < 0.15 and version >= "3.3.0":
        doc["kernelArguments"] = {"shouldExist": ["nosmt"], "shouldNotExist": ["quiet"]}
    return doc


def v2_config(rng: random.Random) -> dict[str, Any]:
    doc: dict[str, Any] = {"ignition": {"version": "2.2.0"}}
    files = []
    for _ in range(rng.randint(0, 3)):  # spec 2 allows duplicates: the last one wins
        entry: dict[str, Any] = {
            "filesystem": "root",
            "path": rng.choice(PATHS[:3]),
            "contents": {"source": data_url(rng)},
        }
        if rng.random() < 0.5:
            entry["mode"] = rng.choice([420, 493])
        files.append(entry)
    if files:
        doc["storage"] = {"files": files}
    units = []
    for _ in range(rng.randint(0, 3)):
        unit: dict[str, Any] = {"name": rng.choice(UNITS)}
        if rng.random() < 0.7:
            unit["contents"] = "[Unit]\nDescription=v2\n"
        if rng.random() < 0.4:
            unit["enabled"] = True
        if rng.random() < 0.4:
            unit["dropins"] = [
                {"name": rng.choice(["10-a.conf", "30-c.conf"]), "contents": "[Unit]\n"}
            ]
        units.append(unit)
    if units:
        doc["systemd"] = {"units": units}
    if rng.random() < 0.5:
        doc["passwd"] = {
            "users": [
                {"name": "core", "sshAuthorizedKeys": rng.sample(KEYS, rng.randint(1, 3))}
                for _ in range(rng.randint(1, 2))
            ]
        }
    return doc


def machine_config(rng: random.Random, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    roll = rng.random()
    if roll < 0.25:
        spec["config"] = v2_config(rng)
    elif roll < 0.9:
        spec["config"] = v3_config(
            rng, rng.choice(["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"])
        )
    if rng.random() < 0.3:
        spec["kernelArguments"] = rng.sample(KARGS, rng.randint(1, 3))
    if rng.random() < 0.2:
        spec["extensions"] = rng.sample(EXTENSIONS[:4] if rng.random() < 0.9 else EXTENSIONS, 1)
    if rng.random() < 0.15:
        spec["fips"] = True
    if rng.random() < 0.2:
        spec["kernelType"] = rng.choice(["", "default", "realtime", "64k-pages"])
    for key in ("osImageURL", "baseOSExtensionsContainerImage"):
        if rng.random() < 0.2:
            spec[key] = rng.choice(IMAGES)
    meta: dict[str, Any] = {
        "name": name,
        "labels": {ROLE: rng.choice(["worker", "worker", "infra"])},
    }
    if rng.random() < 0.15:
        meta["annotations"] = {GENERATED: "v1"}
    return {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
            "metadata": meta, "spec": spec}  # fmt: skip


def corpus_configs() -> list[tuple[str, dict[str, Any]]]:
    out = []
    paths = sorted((ROOT / "examples").rglob("*.yaml")) + sorted(
        (ROOT / "tests" / "data").rglob("*.yaml")
    )
    for path in paths:
        if "bomb" in path.name:
            continue
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
            json.dumps(docs)
        except Exception:  # hostile corpus files that are not JSON data
            continue
        for doc in docs:
            if (
                isinstance(doc, dict)
                and doc.get("kind") == "MachineConfig"
                and isinstance(doc.get("metadata"), dict)
                and isinstance(doc.get("spec"), dict)
                and not isinstance(doc["spec"].get("config"), str)
            ):
                out.append((str(path.relative_to(ROOT)), doc))
    return out


def _mc(name: str, config: Any = None, role: str = "worker", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec)
    if config is not None:
        body["config"] = config
    return {"metadata": {"name": name, "labels": {ROLE: role}}, "spec": body}


def _v(version: str, **sections: Any) -> dict[str, Any]:
    return {"ignition": {"version": version}, **sections}


def edge_cases() -> list[list[dict[str, Any]]]:
    """Hand-made sets for the rules a random set seldom reaches."""
    f: dict[str, Any] = {"path": "/etc/f", "contents": {"source": "data:,f"}}
    gz: dict[str, Any] = {"path": "/etc/f", "contents": {"source": "data:;base64,H4sIAAAAAAACA8vPSQEA5dRdPwMAAAA=",
                                          "compression": "gzip"}}  # fmt: skip
    return [
        [_mc("a", {})],
        [_mc("a", _v("3.2.0")), _mc("b", {})],
        [_mc("a", _v("3.4.0", storage={"files": [f]})), _mc("b", _v("3.4.0", storage={"links": [{"path": "/etc/f", "target": "/x"}]}))],
        [_mc("a", _v("3.4.0", storage={"links": [{"path": "/etc/f", "target": "/x"}]})), _mc("b", _v("3.4.0", storage={"files": [f]}))],
        [_mc("a", _v("3.4.0", storage={"files": [f]})), _mc("b", _v("3.4.0", storage={"directories": [{"path": "/etc/f"}]}))],
        [_mc("a", _v("3.4.0", storage={"files": [gz]})), _mc("b", _v("3.4.0", storage={"files": [f]}))],
        [_mc("a", _v("3.4.0", storage={"files": [f]})), _mc("b", _v("3.4.0", storage={"files": [gz]}))],
        [_mc("a", _v("3.4.0", storage={"files": [gz]}))],
        [_mc("a", _v("3.4.0", storage={"files": [{**f, "contents": {**f["contents"], "compression": ""}}]}))],
        [_mc("a", _v("3.4.0", storage={"files": [{**f, "contents": {**f["contents"], "compression": ""}}]})), _mc("b")],
        [_mc("a", _v("3.4.0", storage={"files": [{**f, "contents": {**f["contents"], "compression": ""}}]})), _mc("b", _v("3.1.0"))],
        [_mc("a", _v("3.3.0", kernelArguments={"shouldExist": ["a", "b"]})), _mc("b", _v("3.3.0", kernelArguments={"shouldNotExist": ["a"], "shouldExist": ["c"]}))],
        [_mc("a", _v("3.2.0", passwd={"users": [{"name": "core", "sshAuthorizedKeys": ["k1", "k2"]}]})), _mc("b", _v("3.2.0", passwd={"users": [{"name": "core", "sshAuthorizedKeys": ["k2", "k3"], "passwordHash": "$6$x"}]}))],
        [_mc("a", _v("3.2.0", passwd={"users": [{"name": "other"}]}))],
        [_mc("a", _v("3.2.0", passwd={"groups": [{"name": "g", "gid": 5}]}))],
        [_mc("a", _v("2.2.0", passwd={"users": [{"name": "core", "sshAuthorizedKeys": ["k1"]}, {"name": "core", "sshAuthorizedKeys": ["k2", "k1"], "passwordHash": "$6$x"}]}))],
        [_mc("a", _v("2.2.0", passwd={"users": [{"name": "core"}, {"name": "other"}]}))],
        [_mc("a", _v("2.2.0", passwd={"users": [{"name": "other"}]}))],
        [_mc("a", _v("2.2.0", systemd={"units": [{"name": "u.service", "enable": True, "enabled": False}, {"name": "v.service", "mask": False, "contents": ""}]}))],
        [_mc("a", _v("2.2.0", systemd={"units": [{"name": "u.service", "dropins": [{"name": "a.conf", "contents": "[Unit]"}]}, {"name": "u.service", "contents": "[Unit]", "dropins": [{"name": "b.conf"}]}, {"name": "u.service", "dropins": [{"name": "a.conf", "contents": "x"}, {"name": "c.conf"}]}]}))],
        [_mc("a", _v("2.2.0", storage={"files": [{"filesystem": "root", "path": "/etc/a", "append": True, "contents": {"source": "data:,a"}}, {"filesystem": "root", "path": "/etc//b/../c"}], "links": [{"filesystem": "root", "path": "/etc/l", "target": "/etc/a", "hard": False}], "directories": [{"filesystem": "root", "path": "/etc/d", "mode": 493}]}))],
        [_mc("a", _v("2.2.0", storage={"files": [{"filesystem": "root", "path": "/etc/a"}, {"filesystem": "root", "path": "etc/b/", "contents": {"source": "data:,b"}}]}))],
        [_mc("a", _v("3.5.0", storage={"links": [{"path": "/etc/l", "target": "d", "hard": True}], "directories": [{"path": "/etc/l/d"}]}))],
        [_mc("a", _v("2.2.0", storage={"files": [{"filesystem": "root", "path": "/etc/a", "overwrite": False, "contents": {"source": "data:,a", "compression": "", "verification": {"hash": "sha512-" + "0" * 128}}, "user": {"name": ""}, "group": {"id": 0}}]}))],
        [_mc("a", _v("3.0.0", storage={"files": [f]})), _mc("b", _v("2.2.0", storage={"files": [{"filesystem": "root", **f}]}))],
        [_mc("a", None, extensions=["usbguard"]), _mc("b", _v("3.1.0"), extensions=["wasm"])],
        [_mc("a", None, extensions=["emacs"])],
        [_mc("a", _v("3.1.0"), kernelType="realtime"), _mc("b", None, extensions=["kernel-devel"])],
        [_mc("a", _v("3.1.0"), kernelType="realtime"), _mc("b", _v("3.1.0"), kernelType="64k-pages"), _mc("c", _v("3.1.0"), kernelType="default")],
        [_mc("a", _v("3.1.0"), kernelType="rt")],
        [_mc("b", _v("3.1.0"), osImageURL="quay.io/b"), _mc("a", _v("3.1.0"), osImageURL="quay.io/a", role="infra")],
        [_mc("worker-z", _v("3.1.0", storage={"files": [f]})), _mc("infra-a", _v("3.1.0", storage={"files": [{**f, "mode": 384}]}), role="infra")],
        [_mc("a", _v("3.5.0", storage={"files": [{**f, "mode": 2541}]}))],
        [_mc("a", _v("3.5.0", storage={"files": [{**f, "overwrite": True, "contents": {}}]}))],
        [_mc("a", _v("3.5.0", systemd={"units": [{"name": "u.service", "enabled": None, "mask": False}]}))],
        [_mc("a", _v("3.5.0", storage={"directories": [{"path": "/etc/d", "overwrite": True}], "links": [{"path": "/etc/l", "target": "/etc/d", "hard": True}]}))],
    ]  # fmt: skip


def cases() -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    found = corpus_configs()
    out: list[dict[str, Any]] = []
    for where, found_mc in found:
        one = copy.deepcopy(found_mc)
        one["metadata"].setdefault("labels", {ROLE: "worker"})
        out.append({"from": where, "pool": "worker", "configs": [one], "base": ["", ""]})
    pool = [copy.deepcopy(mc) for where, mc in found if where.startswith("examples/pools")]
    out.append({"from": "the example pool", "pool": "infra", "configs": pool,
                "base": ["quay.io/base@sha256:" + "ab" * 32, "quay.io/ext@sha256:" + "cd" * 32]})  # fmt: skip
    good = [(w, mc) for w, mc in found if "/bad/" not in w]
    for i in range(60):
        picked = rng.sample(good, 2)
        configs = [copy.deepcopy(mc) for _, mc in picked]
        for n, mc in enumerate(configs):
            mc["metadata"]["name"] = f"{n:02d}-{mc['metadata'].get('name', '')}"
            mc["metadata"].setdefault("labels", {ROLE: "worker"})
        out.append({"from": f"corpus pair {i}: " + " + ".join(w for w, _ in picked),
                    "pool": "worker", "configs": configs, "base": ["", ""]})  # fmt: skip
    for i, configs in enumerate(edge_cases()):
        for mc in configs:
            mc.update(apiVersion="machineconfiguration.openshift.io/v1", kind="MachineConfig")
        out.append({"from": f"edge {i}", "pool": "infra", "configs": configs,
                    "base": ["quay.io/base", "quay.io/ext"]})  # fmt: skip
    for i in range(500):
        names = rng.sample(["00-a", "01-b", "10-c", "50-d", "99-e", "99-worker-ssh", "a", "B"],
                           rng.randint(1, 5))  # fmt: skip
        configs = [machine_config(rng, name) for name in names]
        base = rng.choice([("", ""), (IMAGES[1], "quay.io/ext@sha256:" + "cd" * 32)])
        out.append({"from": f"generated {i}", "pool": rng.choice(["worker", "infra"]),
                    "configs": configs, "base": list(base)})  # fmt: skip
    return out


def main() -> None:
    todo = cases()
    payload = json.dumps(
        [{k: c[k] for k in ("pool", "configs", "base")} for c in todo], ensure_ascii=False
    ).encode()
    runs = [
        json.loads(
            subprocess.run(
                [str(ROOT / "tests" / "oracles" / "merge" / "run.sh")],
                input=payload, capture_output=True, check=True,
            ).stdout
        )
        for _ in range(2)
    ]  # fmt: skip
    vectors = []
    unstable = 0
    for case, answer, again in zip(todo, *runs, strict=True):
        if answer != again:
            unstable += 1  # Go's random map order reached the output: no stable answer
            continue
        vector = dict(case)
        if answer.get("error"):
            vector["refused"] = answer["error"]
        else:
            vector["name"] = answer["name"]
            vector["spec"] = answer["spec"]
        vectors.append(vector)
    lines = ",\n".join(json.dumps(v, ensure_ascii=False, sort_keys=True) for v in vectors)
    OUT.write_text(
        '{"generator": "tests/oracles/merge/make_merge_golden.py", "vectors": [\n'
        + lines
        + "\n]}\n"
    )
    refused = sum(1 for v in vectors if "refused" in v)
    print(
        f"{len(vectors)} vectors ({refused} refused, {unstable} unstable) -> {OUT.relative_to(ROOT)}"
    )


if __name__ == "__main__":
    main()
