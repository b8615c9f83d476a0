"""Write tests/data/render-hash-golden.json: upstream's rendered-config names for a corpus.

Cases: every MachineConfig spec in the repo's examples and test corpora, mcd's own renders
of the example pools and of the e2e configs, and specs generated from a fixed seed (tricky
scalars, long strings, unicode, natural-sort keys, nested Ignition configs). The Go oracle
(run.sh) names each; the suite then checks mcd's Python against the file without Go.

Run from the repository root: .venv/bin/python tests/oracles/renderhash/make_golden.py
"""

from __future__ import annotations

import json
import pathlib
import random
import re
import string
import subprocess
import sys
from typing import Any

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from mcd.model.pool import render as mcd_render  # noqa: E402

OUT = ROOT / "tests" / "data" / "render-hash-golden.json"
SEED = 32

ATOMS = [
    "", " ", "yes", "Yes", "YES", "on", "On", "off", "y", "Y", "n", "N", "no", "No", "~",
    "null", "Null", "NULL", "true", "True", "false", "FALSE", "0x1F", "0X1f", "0o17", "0O17",
    "0b101", "0b", "0x", "-0b11", "0b+11", "1e3", "1E3", "1e+3", "1e-3", ".5", ".5e3", ".inf",
    "-.inf", "+.INF", ".nan", ".NaN", "+1", "-1", "007", "08", "0.5", "1_000", "1__0", "_1",
    "1_", "._5", ".5_5", "1_0.5", "0x_1F", "+.5", "-.5e-3", "5.", "1.5e", "0.0", "-0.0", "-0",
    "+0", "0", "1e400", ".1e400", "123456789012345678901", "18446744073709551615",
    "18446744073709551616", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "-9223372036854775809", "0xFFFFFFFFFFFFFFFF",
    "0x1FFFFFFFFFFFFFFFF", "1:20", "190:20:30", "-1:30", "1:60", "1:20.5", "12:30",
    "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14T21:59:43Z", "2001-12-14 21:59:43.10",
    "2001-12-14T21:59:43", "2001-02-29", "2000-02-29", "2001-13-01", "2001-1-1", "20011-1-1",
    "2001-12-14T25:00:00Z", "2001-12-14 1:2:3", "2001-12-14T1:2:3+24:00", "<<", "=", "-", "- a",
    "-a", "?", "? a", "?a", ":", ": a", ":a", "a: b", "a:b", "a:", "#", "a #b", "a#b", "[a]",
    "{a}", "a,b", "*a", "&a", "!a", "|", "|a", ">", "'quoted'", '"dq"', "it's", "%x", "@x", "`x",
    "---", "...", "--- a", "a\tb", "\t", "tab\t", "a ", "  a", "a  b", "a\nb", "a\n", "\n",
    "\n\n", "a\n\n", "a\n ", "a \nb", " \na", "a\n\nb", "\na", "\ra", "a\r\nb", "a\u2028b",
    "\x85", "a\x85b", "\xa0", "é", "日本語", "😀", "a😀b", "\ufeffbom", "a\ufeff", "\x00", "\x07",
    "\x7f", "\u0080", "\ud7ff", "\ue000", "\ufffd", "\ufffe", "3.2.0", "data:,hello%20world",
    "data:text/plain;base64,aGVsbG8=", "y2k", "oN", "ON", "Off", "a'b", 'a"b', "a\\b", "\\",
    "\"", "'", "a: ", "- ", "a - b", "key=value", "console=ttyS0,115200n8",
    "quay.io/openshift/os@sha256:" + "ab" * 32, "1.5", "-2", "+", "++1", "0.", "0..1",
]  # fmt: skip

KEYS = [
    "a1", "a10", "a2", "a01", "a001", "a", "A", "b", "_x", "0", "00", "01", "1", "10", "9", "a0b",
    "a00b", "é", "Z", "z", "aB", "ab", "a٣", "a\u0663b", "x-1", "x_1", "x.1", "", "yes", "on",
    "k" * 129, "k" * 1022, "k" * 1023, "<" * 200, "<" * 171, "long key with spaces", "a\nb", " lead",
]  # fmt: skip

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "x",
    "longerwordhere",
    "\u03b1",
    "日本",
    "a:b",
    "#c",
    "'q'",
    '"d"',
]


def long_text(rng: random.Random) -> str:
    target = rng.choice([70, 79, 80, 81, 100, 160, 300])
    words: list[str] = []
    while len(" ".join(words)) < target:
        words.append(rng.choice(WORDS) * rng.randint(1, 3))
    sep = rng.choice([" ", " ", "  ", " \t"])
    text = sep.join(words)
    if rng.random() < 0.2:
        text = " " + text
    if rng.random() < 0.2:
        text = text.replace(" ", "\n", 2)
    if rng.random() < 0.1:
        text = "\x01" + text
    return text


def text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(ATOMS)
    if roll < 0.7:
        return long_text(rng)
    if roll < 0.85:
        return "".join(rng.choice(ATOMS) for _ in range(rng.randint(2, 4)))
    pool = string.printable + "éß日😀\u2028\x85\xa0\ufeff"
    return "".join(rng.choice(pool) for _ in range(rng.randint(1, 40)))


def number(rng: random.Random) -> Any:
    return rng.choice(
        [0, 1, -1, 420, 493, 2**31, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64, 10**21,
         1.5, 0.1, 1e21, 1e-7, 100000.0, 1000000.0, 123456.789, -0.0, 1e300, 2.5e-5]
    )  # fmt: skip


def anything(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 0 and roll < 0.25:
        extra = [t for t in (text(rng) for _ in range(3)) if not re.search("[0-9]{19}", t)]
        keys = rng.sample(KEYS + extra, rng.randint(0, 8))
        return {k: anything(rng, depth - 1) for k in keys}
    if depth > 0 and roll < 0.4:
        return [anything(rng, depth - 1) for _ in range(rng.randint(0, 4))]
    if roll < 0.5:
        return number(rng)
    if roll < 0.55:
        return rng.choice([True, False, None])
    return text(rng)


def data_url(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "data:," + "".join(rng.choice("abc%20xyz09") for _ in range(rng.randint(0, 120)))
    return "data:;base64," + "QUJD" * rng.randint(0, 40)


def maybe(rng: random.Random, value: Any) -> Any:
    return value if rng.random() < 0.6 else None


def ignition(rng: random.Random) -> dict[str, Any]:
    version = rng.choice(["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"])
    doc: dict[str, Any] = {"ignition": {"version": version}}
    files = []
    for i in range(rng.randint(0, 4)):
        entry: dict[str, Any] = {"path": f"/etc/{text(rng).strip() or 'x'}/{i}"}
        if rng.random() < 0.8:
            entry["contents"] = {"source": data_url(rng)}
            if rng.random() < 0.2:
                entry["contents"]["compression"] = rng.choice(["", "gzip"])
        for key, value in (("mode", rng.choice([420, 384, 493, 0])),
                           ("overwrite", rng.choice([True, False])),
                           ("user", {"name": "core"}), ("group", {"id": 0})):  # fmt: skip
            if rng.random() < 0.5:
                entry[key] = value
        files.append(entry)
    units = []
    for i in range(rng.randint(0, 3)):
        unit: dict[str, Any] = {"name": f"u{i}-{rng.randint(0, 99)}.service"}
        if rng.random() < 0.7:
            unit["contents"] = "[Service]\nExecStart=/bin/echo " + text(rng) + "\n"
        if rng.random() < 0.5:
            unit["enabled"] = rng.choice([True, False])
        if rng.random() < 0.3:
            unit["dropins"] = [{"name": "10-a.conf", "contents": "[Unit]\n" + long_text(rng)}]
        units.append(unit)
    if files or rng.random() < 0.3:
        doc["storage"] = {"files": files}
        if rng.random() < 0.3:
            doc["storage"]["directories"] = [{"path": "/var/d", "mode": 493}]
        if rng.random() < 0.3:
            doc["storage"]["links"] = [{"path": "/etc/l", "target": "/etc/t", "hard": False}]
    if units or rng.random() < 0.3:
        doc["systemd"] = {"units": units}
    if rng.random() < 0.4:
        keys = [f"ssh-ed25519 AAAA{rng.randint(0, 10**6)} {text(rng)}" for _ in range(2)]
        doc["passwd"] = {"users": [{"name": "core", "sshAuthorizedKeys": keys}]}
    if rng.random() < 0.2:
        doc["kernelArguments"] = {"shouldExist": [rng.choice(ATOMS)], "shouldNotExist": ["quiet"]}
    return doc


def spec(rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    roll = rng.random()
    if roll < 0.55:
        out["config"] = ignition(rng)
    elif roll < 0.85:
        out["config"] = (
            anything(rng, 4)
            if rng.random() < 0.3
            else {k: anything(rng, 3) for k in rng.sample(KEYS, rng.randint(1, 12))}
        )
    for key in ("osImageURL", "baseOSExtensionsContainerImage", "kernelType"):
        if rng.random() < 0.6:
            out[key] = rng.choice([text(rng), "", "default", "realtime", "64k-pages",
                                   "quay.io/os@sha256:" + "0f" * 32])  # fmt: skip
    for key in ("kernelArguments", "extensions"):
        roll = rng.random()
        if roll < 0.2:
            out[key] = None
        elif roll < 0.4:
            out[key] = []
        elif roll < 0.8:
            out[key] = [text(rng) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.6:
        out["fips"] = rng.choice([True, False])
    return out


def corpus() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    machine_configs: list[dict[str, Any]] = []
    paths = sorted((ROOT / "examples").rglob("*.yaml")) + sorted(
        (ROOT / "tests" / "data").rglob("*.yaml")
    )
    for path in paths:
        if "bomb" in path.name:
            continue  # alias and nesting bombs: no spec, only memory
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
            json.dumps(docs)
        except Exception:  # hostile corpus files that are not JSON data
            continue
        for doc in docs:
            if isinstance(doc, dict) and isinstance(doc.get("spec"), dict):
                cases.append(
                    {"pool": "worker", "spec": doc["spec"], "from": str(path.relative_to(ROOT))}
                )
                if doc.get("kind") == "MachineConfig" and path.parent.name != "bad":
                    machine_configs.append(doc)
    for mc in machine_configs:
        try:
            rendered = mcd_render.render("worker", [mc])
        except mcd_render.RenderError:
            continue
        cases.append(
            {
                "pool": "worker",
                "spec": rendered.spec,
                "from": "mcd render of " + mc["metadata"]["name"],
            }
        )
    pool = [mc for mc in machine_configs if "rendered" not in mc["metadata"]["name"]]
    rendered = mcd_render.render("infra", pool)
    cases.append({"pool": "infra", "spec": rendered.spec, "from": "mcd render of the example pool"})
    return cases


def main() -> None:
    rng = random.Random(SEED)
    cases = corpus()
    for i, atom in enumerate(ATOMS + KEYS):  # every tricky scalar as a value and as a key
        spec_ = {"osImageURL": atom, "kernelArguments": [atom], "config": {atom: atom, "k": [atom]}}
        cases.append({"pool": "worker", "spec": spec_, "from": f"atom {i}"})
    for i in range(600):
        cases.append(
            {
                "pool": rng.choice(["worker", "master", "infra", "rt-01"]),
                "spec": spec(rng),
                "from": f"generated {i}",
            }
        )
    payload = json.dumps(
        [{"pool": c["pool"], "spec": c["spec"]} for c in cases], ensure_ascii=False
    )
    runs = [
        json.loads(
            subprocess.run(
                [str(ROOT / "tests" / "oracles" / "renderhash" / "run.sh")],
                input=payload.encode(),
                capture_output=True,
                check=True,
            ).stdout
        )
        for _ in range(3)
    ]
    vectors = []
    skipped = unstable = 0
    for case, answer, *again in zip(cases, *runs, strict=True):
        if not answer["name"]:
            if answer["error"].startswith("error converting JSON to YAML"):
                # yaml.v2 cannot read Go's JSON back: upstream cannot name it, nor may mcd
                vectors.append(
                    {
                        "from": case["from"],
                        "pool": case["pool"],
                        "spec": case["spec"],
                        "refused": answer["error"],
                    }
                )
            else:
                skipped += 1  # Go's types refuse the spec: not a spec mcd renders
            continue
        if any(other != answer for other in again):
            # Keys on which yaml.v2's order is no total order (e.g. digit runs past int64)
            # come out in Go's random map order: upstream itself has no stable name.
            unstable += 1
            continue
        vector = {
            "from": case["from"],
            "pool": case["pool"],
            "spec": case["spec"],
            "name": answer["name"],
            "yaml": answer["yaml"],
        }
        if answer["shapedName"]:
            vector["shapedConfig"] = answer["shapedConfig"]
            vector["shapedName"] = answer["shapedName"]
        vectors.append(vector)
    lines = ",\n".join(json.dumps(v, ensure_ascii=False, sort_keys=True) for v in vectors)
    OUT.write_text(
        '{"generator": "tests/oracles/renderhash/make_golden.py", "vectors": [\n' + lines + "\n]}\n"
    )
    print(
        f"{len(vectors)} vectors ({skipped} refused by Go, {unstable} unstable) -> {OUT.relative_to(ROOT)}"
    )


if __name__ == "__main__":
    main()
