#!/usr/bin/env python3
"""Time `toolreg serve` over stdio, as an MCP client sees it, for one or more
builds side by side.

    scripts/serve_bench.py [-r ROUNDS] [-n CALLS] LABEL=TOOLREG_BINARY ...

e.g. scripts/serve_bench.py -r 3 before=../before/target/release/toolreg \
         after=target/release/toolreg

For each binary, in turn and ROUNDS times over (before, after, before, ...,
so a slow phase of a shared machine falls on every side):

- start-up: from starting the process to the `initialize` answer (the
  median of 10 starts);
- throughput: CALLS `tools/call store_get` (a built-in tool, read-only, on
  the binary's SQLite store) with 64 in flight, in calls per second;
- round trip: one `store_get` in flight at a time, the median of 500.

Each server runs in a fresh temporary root and state directory. The table
takes, per figure and binary, the best round (the least disturbed). The
client is this script: its own cost is in every figure, the same for every
binary.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(i):
    return {
        "jsonrpc": "2.0",
        "id": i,
        "method": "tools/call",
        "params": {"name": "store_get", "arguments": {"key": f"k{i % 16}"}},
    }


def line(message):
    return (json.dumps(message) + "\n").encode()


class Server:
    def __init__(self, binary):
        self.dir = tempfile.TemporaryDirectory()
        env = dict(os.environ, TOOLREG_STATE_DIR=os.path.join(self.dir.name, "state"))
        env.pop("TOOLREG_STORE", None)
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [binary, "serve", "--root", self.dir.name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )

    def send(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read(self):
        text = self.proc.stdout.readline()
        if not text:
            raise RuntimeError("the server closed its output")
        return json.loads(text)

    def initialize(self):
        self.send(line(INIT))
        answer = self.read()
        took = time.perf_counter() - self.started
        if "result" not in answer:
            raise RuntimeError(f"initialize failed: {answer}")
        self.send(line(INITIALIZED))
        return took

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        self.dir.cleanup()


def start_up(binary):
    times = []
    for _ in range(10):
        server = Server(binary)
        times.append(server.initialize())
        server.close()
    return statistics.median(times)


def throughput(binary, calls, in_flight=64):
    server = Server(binary)
    server.initialize()
    started = time.perf_counter()
    sent = 0
    while sent < min(in_flight, calls):
        server.send(line(call(sent)))
        sent += 1
    for _ in range(calls):
        answer = server.read()
        if "result" not in answer:
            raise RuntimeError(f"a call failed: {answer}")
        if sent < calls:
            server.send(line(call(sent)))
            sent += 1
    took = time.perf_counter() - started
    server.close()
    return calls / took


def round_trip(binary, calls=500):
    server = Server(binary)
    server.initialize()
    times = []
    for i in range(calls):
        started = time.perf_counter()
        server.send(line(call(i)))
        answer = server.read()
        times.append(time.perf_counter() - started)
        if "result" not in answer:
            raise RuntimeError(f"a call failed: {answer}")
    server.close()
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-r", "--rounds", type=int, default=3)
    parser.add_argument("-n", "--calls", type=int, default=6400)
    parser.add_argument("builds", nargs="+", metavar="LABEL=BINARY")
    args = parser.parse_args()
    builds = [b.split("=", 1) for b in args.builds]
    best = {label: {"start": [], "rate": [], "rtt": []} for label, _ in builds}
    for round_ in range(args.rounds):
        for label, binary in builds:
            figures = best[label]
            figures["start"].append(start_up(binary))
            figures["rate"].append(throughput(binary, args.calls))
            figures["rtt"].append(round_trip(binary))
            print(
                f"round {round_ + 1} {label}: start {figures['start'][-1] * 1e3:.2f} ms, "
                f"{figures['rate'][-1]:,.0f} calls/s, round trip {figures['rtt'][-1] * 1e6:.0f} µs",
                file=sys.stderr,
            )
    print("| figure | " + " | ".join(label for label, _ in builds) + " |")
    print("|---|" + "---:|" * len(builds))
    print("| start to `initialize` answer (median of 10) | "
          + " | ".join(f"{min(best[l]['start']) * 1e3:.2f} ms" for l, _ in builds) + " |")
    print(f"| {args.calls:,} `store_get` calls, 64 in flight | "
          + " | ".join(f"{max(best[l]['rate']):,.0f} calls/s" for l, _ in builds) + " |")
    print("| one call in flight, round trip (median of 500) | "
          + " | ".join(f"{min(best[l]['rtt']) * 1e6:.0f} µs" for l, _ in builds) + " |")


if __name__ == "__main__":
    main()
