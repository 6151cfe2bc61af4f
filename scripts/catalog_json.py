#!/usr/bin/env python3
"""Write the catalog bench's hand-written data in the formats `toolreg
search-eval` reads: the tools of benches/catalog/data/tools.txt as a JSON
catalog of MCP tool lists by server, and each labelled set (queries.txt,
heldout.txt, heldout2.txt, tuning2.txt) as JSON lines.

    scripts/catalog_json.py OUT_DIR

writes OUT_DIR/catalog.json and OUT_DIR/{queries,heldout,heldout2,tuning2}.jsonl.
A labelled set's `# == KIND ==` section headers become each request's
`kind`. The parsing follows benches/catalog/src/lib.rs (`parse_tools`,
`schema`, the labelled format `request => server__tool, server__tool`).
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "benches", "catalog", "data")
TYPES = {
    "string": {"type": "string"},
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "object": {"type": "object"},
    "string[]": {"type": "array", "items": {"type": "string"}},
}


def schema(params, where):
    properties, required = {}, []
    for param in (p.strip() for p in params.split(";")):
        if not param:
            continue
        fields = param.split(":", 2)
        if len(fields) != 3:
            sys.exit(f"{where}: parameter `{param}`: expected name:type:description")
        name, ty, description = fields
        optional = name.endswith("?")
        name = name.rstrip("?")
        if ty not in TYPES:
            sys.exit(f"{where}: parameter `{name}`: unknown type `{ty}`")
        properties[name] = dict(TYPES[ty], description=description.strip())
        if not optional:
            required.append(name)
    out = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


def catalog(path):
    servers, server = {}, None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("@server "):
                server = line[len("@server "):].strip()
                servers.setdefault(server, [])
                continue
            parts = [p.strip() for p in line.split("|", 2)]
            if server is None or len(parts) != 3:
                sys.exit(f"{path}:{n}: expected `name | description | params` after an @server line")
            name, description, params = parts
            servers[server].append(
                {"name": name, "description": description, "inputSchema": schema(params, f"{path}:{n}")}
            )
    return servers


def labelled(path):
    requests, kind = [], None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            header = re.fullmatch(r"#\s*==\s*(.+?)\s*==", line)
            if header:
                kind = header.group(1)
                continue
            if not line or line.startswith("#"):
                continue
            if "=>" not in line:
                sys.exit(f"{path}:{n}: expected `request => server__tool, ...`")
            request, answers = line.rsplit("=>", 1)
            entry = {"request": request.strip(), "tools": [a.strip() for a in answers.split(",") if a.strip()]}
            if kind:
                entry["kind"] = kind
            requests.append(entry)
    return requests


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "catalog.json"), "w") as f:
        json.dump(catalog(os.path.join(DATA, "tools.txt")), f, indent=1)
    for name in ("queries", "heldout", "heldout2", "tuning2"):
        source = os.path.join(DATA, f"{name}.txt")
        if not os.path.exists(source):
            continue
        with open(os.path.join(out, f"{name}.jsonl"), "w") as f:
            for entry in labelled(source):
                f.write(json.dumps(entry) + "\n")


if __name__ == "__main__":
    main()
