"""Three `toolreg serve --http --stateless` replicas behind HAProxy
(deploy/haproxy.cfg, with free ports), driven by the official MCP Python
SDK's client: calls spread over the replicas, values written through one
read through the others, one replica killed with SIGKILL mid-load and
restarted. Prints a line per check and a summary (calls per second, p99,
failed calls); exits non-zero on any failed check.

usage: replica_check.py TOOLREG_BIN STORE ROOT
  STORE: what each replica gets as --store (a PostgreSQL URL, or one SQLite
  file when the replicas share a machine).
"""

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import anyio
from mcp import Client, types

BIN, STORE, ROOT = sys.argv[1], sys.argv[2], sys.argv[3]
HERE = os.path.dirname(os.path.abspath(__file__))
CALL_TIMEOUT = 15
failures = []


def check(ok, what, detail=""):
    print(("ok    " if ok else "FAIL  ") + what + ("" if ok else f": {detail}"), flush=True)
    if not ok:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)


class Replica:
    def __init__(self, n, port):
        self.n, self.port = n, port
        self.audit = os.path.join(ROOT, f"audit-{n}.jsonl")
        self.proc = None

    def start(self):
        env = dict(os.environ)
        self.proc = subprocess.Popen(
            [BIN, "serve", "--root", ROOT, "--store", STORE, "--no-shell", "--audit", self.audit,
             "--http", f"127.0.0.1:{self.port}", "--stateless"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        if not wait_port(self.port):
            sys.exit(f"FAIL  replica {self.n} did not start on port {self.port}")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def calls(self):
        try:
            with open(self.audit) as f:
                return sum(1 for _ in f)
        except FileNotFoundError:
            return 0

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/mcp"


def haproxy_config(lb_port, ports):
    """deploy/haproxy.cfg as written, on these ports."""
    with open(os.path.join(HERE, "..", "deploy", "haproxy.cfg")) as f:
        text = f.read()
    text = text.replace("bind 127.0.0.1:8080", f"bind 127.0.0.1:{lb_port}")
    for i, port in enumerate(ports, start=1):
        text = text.replace(f"127.0.0.1:808{i}", f"127.0.0.1:{port}")
    return text


async def call(client, name, args):
    """(ok, latency, result or error text); never longer than CALL_TIMEOUT."""
    started = time.monotonic()
    try:
        with anyio.fail_after(CALL_TIMEOUT):
            result = await client.call_tool(name, args)
        return (not result.is_error, time.monotonic() - started, text_of(result))
    except TimeoutError:
        return (None, time.monotonic() - started, "stuck: no answer in time")
    except Exception as error:  # a connection closed mid-call: a clean failure
        return (False, time.monotonic() - started, f"{type(error).__name__}: {error}")


async def load(url, n, concurrency, prefix, during=None):
    """n store_set calls (key prefix/i = i) over `concurrency` clients."""
    results = [None] * n
    queue = list(range(n))

    async def worker():
        while queue:
            try:
                async with Client(url) as client:
                    while queue:
                        i = queue.pop()
                        # Failed unless answered: the client's connection
                        # may break under it when a replica dies.
                        results[i] = (False, 0.0, "the connection broke during the call")
                        results[i] = await call(client, "store_set", {"key": f"{prefix}/{i}", "value": str(i)})
            except Exception:  # the client itself broke: a new one goes on
                await anyio.sleep(0.05)

    started = time.monotonic()
    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(worker)
        if during:
            group.start_soon(during)
    return results, time.monotonic() - started


def p99(results):
    latencies = sorted(r[1] for r in results if r and r[0])
    return latencies[int(len(latencies) * 0.99) - 1] if latencies else float("nan")


async def main():
    ports = [free_port() for _ in range(3)]
    replicas = [Replica(i + 1, port) for i, port in enumerate(ports)]
    for replica in replicas:
        replica.start()
    lb_port = free_port()
    config = os.path.join(ROOT, "haproxy.cfg")
    with open(config, "w") as f:
        f.write(haproxy_config(lb_port, ports))
    haproxy = subprocess.Popen(["haproxy", "-db", "-f", config], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if not wait_port(lb_port):
        sys.exit("FAIL  haproxy did not start: " + haproxy.stderr.read().decode(errors="replace"))
    lb = f"http://127.0.0.1:{lb_port}/mcp"
    summary = {}
    try:
        # One replica, directly: the baseline.
        results, took = await load(replicas[0].url, 600, 8, "one")
        ok = sum(1 for r in results if r[0])
        check(ok == 600, "600 calls to one replica all answered", [r for r in results if not r[0]][:3])
        summary["one replica: calls/s"] = round(600 / took, 1)
        summary["one replica: p99 ms"] = round(p99(results) * 1000, 1)

        # Three replicas through HAProxy.
        before = [r.calls() for r in replicas]
        results, took = await load(lb, 2000, 8, "three")
        ok = sum(1 for r in results if r[0])
        check(ok == 2000, "2000 calls through HAProxy all answered", [r for r in results if not r[0]][:3])
        spread = [r.calls() - b for r, b in zip(replicas, before)]
        check(all(s >= 400 for s in spread), "the calls were spread over the three replicas", spread)
        summary["three replicas: calls/s"] = round(2000 / took, 1)
        summary["three replicas: p99 ms"] = round(p99(results) * 1000, 1)
        summary["three replicas: calls per replica"] = spread

        # Written through one replica, read through each of the others.
        async with Client(replicas[0].url) as client:
            written = await call(client, "store_set", {"key": "shared", "value": json.dumps({"from": "replica1"})})
        check(written[0], "a value written through replica 1", written[2])
        for replica in replicas[1:]:
            async with Client(replica.url) as client:
                got = await call(client, "store_get", {"key": "shared"})
            value = json.loads(got[2]).get("value") if got[0] else None
            check(value == {"from": "replica1"}, f"... read through replica {replica.n}", got[2])

        # An approval asked as a Multi Round-Trip Request (a 2026-07-28
        # client): the question comes from one replica, and HAProxy's round
        # robin sends the retry that answers it to another, which opens the
        # state with the shared key; the store records its one use.
        asked = []

        async def on_approve(context, params):
            asked.append(params.message)
            return types.ElicitResult(action="accept", content={"approve": True})

        async with Client(lb, elicitation_callback=on_approve) as client:
            check(client.protocol_version == "2026-07-28", "the approval client speaks 2026-07-28", client.protocol_version)
            approved = [await call(client, "write_file", {"path": f"approved-{i}.txt", "content": "x"}) for i in range(3)]
        check(all(r[0] for r in approved) and len(asked) == 3, "3 approvals asked and answered through HAProxy",
              [r[2][:160] for r in approved])
        check(all(os.path.exists(os.path.join(ROOT, f"approved-{i}.txt")) for i in range(3)), "... and the files written")
        where = {}
        for replica in replicas:
            with open(replica.audit) as f:
                for line in f:
                    event = json.loads(line)
                    if event.get("tool") == "write_file":
                        where.setdefault(event.get("call_id"), []).append((event.get("decision"), replica.n))
        crossed = [rounds for rounds in where.values() if len({n for _, n in rounds}) > 1]
        check(crossed, "a question asked by one replica was answered through another", where)

        # Replica 2 killed with SIGKILL mid-load: only the calls in flight on
        # it fail, each cleanly; no client is stuck; no acknowledged write is
        # lost.
        concurrency = 16

        async def kill_one():
            await anyio.sleep(0.7)
            replicas[1].kill()

        results, took = await load(lb, 2000, concurrency, "kill", during=kill_one)
        stuck = [r for r in results if r[0] is None]
        failed = [r for r in results if r[0] is False]
        check(not stuck, "no call was left without an answer", stuck[:3])
        check(len(failed) <= concurrency, f"at most the calls in flight failed ({len(failed)} of 2000)", failed[:3])
        summary["kill: failed calls of 2000"] = len(failed)
        summary["kill: calls/s"] = round(2000 / took, 1)
        acknowledged = [i for i, r in enumerate(results) if r[0]]
        lost = []
        async with Client(lb) as client:
            for i in acknowledged:
                got = await call(client, "store_get", {"key": f"kill/{i}"})
                if not got[0] or json.loads(got[2]).get("value") != i:
                    lost.append((i, got[2][:120]))
        check(not lost, f"every acknowledged write is there ({len(acknowledged)} read back)", lost[:3])

        # Restarted: back in rotation.
        replicas[1].start()
        await anyio.sleep(2.0)
        before = replicas[1].calls()
        results, _ = await load(lb, 300, 4, "back")
        check(all(r[0] for r in results), "after the restart, 300 calls all answered", [r for r in results if not r[0]][:3])
        check(replicas[1].calls() - before >= 50, "the restarted replica is back in rotation", replicas[1].calls() - before)
    finally:
        haproxy.terminate()
        for replica in replicas:
            if replica.proc and replica.proc.poll() is None:
                replica.kill()
    print("summary " + json.dumps(summary))
    if failures:
        sys.exit(f"{len(failures)} replica check(s) failed")


asyncio.run(main())
