#!/usr/bin/env python3
"""The table of a scripts/peer_bench.sh output directory.

    peer_bench_table.py OUT [LABEL ...]

For every label (default: every directory of OUT holding runs), the criterion
median of each case, the fastest over the label's runs (a shared machine only
ever adds time); each toolreg case as a ratio to its reference in the same
group (rmcp's text or object call, rmcp's listing, or the Tokio floor); with
two or more labels, the last label's median over the first's. Then the
register_100k lines of each label's logs.
"""

import json
import os
import re
import sys


def medians(label_dir):
    """{(group, function): fastest median in ns} over every run of a label."""
    found = {}
    for run in sorted(os.listdir(label_dir)):
        home = os.path.join(label_dir, run, "criterion")
        if not run.startswith("run") or not os.path.isdir(home):
            continue
        for root, _dirs, files in os.walk(home):
            if os.path.basename(root) != "new" or "estimates.json" not in files:
                continue
            with open(os.path.join(root, "benchmark.json")) as f:
                bench = json.load(f)
            with open(os.path.join(root, "estimates.json")) as f:
                median = json.load(f)["median"]["point_estimate"]
            key = (bench["group_id"], bench.get("function_id") or "")
            found[key] = min(found.get(key, median), median)
    return found


def reference(group, function, functions):
    """The case a toolreg case is compared with, in the same group."""
    if not function.startswith("toolreg"):
        return None
    if "text" in function and "rmcp_text" in functions:
        return "rmcp_text"
    if "value" in function and "rmcp_object" in functions:
        return "rmcp_object"
    for candidate in sorted(functions):
        if candidate.startswith("rmcp") or candidate.startswith("tokio_floor"):
            return candidate
    return None


def show(ns):
    if ns is None:
        return "—"
    if ns >= 1e6:
        return f"{ns / 1e6:,.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:,.2f} µs"
    return f"{ns:,.0f} ns"


def ratio(a, b):
    return "—" if a is None or b is None else f"{a / b:.2f}x"


def main():
    out = sys.argv[1]
    labels = sys.argv[2:] or sorted(
        d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d)) and any(
            r.startswith("run") for r in os.listdir(os.path.join(out, d))))
    data = {label: medians(os.path.join(out, label)) for label in labels}
    keys = []
    for label in labels:
        for key in data[label]:
            if key not in keys:
                keys.append(key)
    order = ["execute", "bad_arguments", "engine", "declare_1000", "list_1000", "batch_10k_sleeping_20ms"]
    keys.sort(key=lambda k: (next((i for i, p in enumerate(order) if k[0].startswith(p)), len(order)), k))

    head = ["case"]
    for label in labels:
        head += [label, f"{label} / ref"]
    if len(labels) > 1:
        head.append(f"{labels[-1]} / {labels[0]}")
    head.append("ref")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" + "---:|" * (len(head) - 2) + "---|")
    for group, function in keys:
        functions = {f for label in labels for (g, f) in data[label] if g == group}
        ref = reference(group, function, functions)
        row = [f"{group}/{function}"]
        for label in labels:
            mine = data[label].get((group, function))
            row += [show(mine), ratio(mine, data[label].get((group, ref))) if ref else ""]
        if len(labels) > 1:
            row.append(ratio(data[labels[-1]].get((group, function)), data[labels[0]].get((group, function))))
        row.append(ref or "")
        print("| " + " | ".join(row) + " |")

    for label in labels:
        label_dir = os.path.join(out, label)
        for run in sorted(os.listdir(label_dir)):
            log = os.path.join(label_dir, run, "bench.log")
            if os.path.isfile(log):
                with open(log, errors="replace") as f:
                    for line in f:
                        if line.startswith("register_100k/"):
                            print(f"\n{label} {run}: {line.strip()}", end="")
    print()


if __name__ == "__main__":
    main()
