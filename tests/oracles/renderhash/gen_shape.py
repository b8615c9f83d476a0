"""Print the field tables of mcd/model/ignition/goshape.py from Ignition's v3_5 types/schema.go.

Usage: git --git-dir=<mco mirror> show HEAD:vendor/github.com/coreos/ignition/v2/config/v3_5/types/schema.go \
           | python3 tests/oracles/renderhash/gen_shape.py
"""

import re
import sys

text = sys.stdin.read()
structs: dict[str, list[tuple[str, str, bool]]] = {}
aliases: dict[str, str] = {}
for name, body in re.findall(r"^type (\w+) struct \{\n(.*?)^\}", text, re.S | re.M):
    fields = []
    for line in body.splitlines():
        parts = line.split()
        if len(parts) == 1:
            fields.append(("", parts[0], False))  # embedded struct: its fields are inlined
            continue
        gotype = parts[1]
        tag = re.search(r'json:"([^"]*)"', line)
        assert tag, line
        jname, _, opts = tag.group(1).partition(",")
        fields.append((jname, gotype, opts == "omitempty"))
    structs[name] = fields
for name, gotype in re.findall(r"^type (\w+) (\[\]\w+|string)$", text, re.M):
    aliases[name] = gotype
print("STRUCTS = {")
for name, fields in structs.items():
    spec = " ".join(
        f"+{gotype}" if not jname else f"{jname}:{gotype}{'?' if omit else ''}"
        for jname, gotype, omit in fields
    )
    lines, line = [], ""
    for word in spec.split():
        if line and len(line) + len(word) > 80:
            lines.append(line)
            line = ""
        line += word + " "
    lines.append(line.rstrip())
    if len(lines) == 1:
        print(f"    {name!r}: {lines[0]!r},")
    else:
        print(f"    {name!r}: (")
        for part in lines:
            print(f"        {part!r}")
        print("    ),")
print("}")
print("ALIASES = {")
for name, gotype in aliases.items():
    print(f"    {name!r}: {gotype!r},")
print("}")
