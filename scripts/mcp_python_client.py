"""Drive `toolreg serve` with the official MCP Python SDK's client.

Usage: mcp_python_client.py TOOLREG_BINARY

Runs the same checks over stdio and over streamable HTTP (with sessions and
without, and with a bearer token), each printing one line; exits non-zero on
the first failure with the reason.
"""
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import anyio
import httpx2 as httpx
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
import mcp.types as types

BIN = sys.argv[1]


def check(condition, what, detail=""):
    if not condition:
        print(f"FAIL  {what}: {detail}")
        sys.exit(1)
    print(f"ok    {what}")


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)


def sleeping(marker):
    out = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True)
    return [pid for pid in out.stdout.split() if pid]


async def exercise(label, make_client, root, dangerous_allowed):
    key = "".join(c if c.isalnum() else "-" for c in label) + "-plan"
    async with make_client() as client:
        tools = await client.list_tools()
        by_name = {tool.name: tool for tool in tools.tools}
        check({"read_file", "write_file", "store_set", "store_get"} <= set(by_name), f"{label}: tools/list", sorted(by_name))
        read = by_name["read_file"]
        check(read.input_schema.get("type") == "object" and "path" in read.input_schema.get("properties", {}),
              f"{label}: read_file inputSchema", read.input_schema)
        check(read.annotations and read.annotations.read_only_hint is True, f"{label}: read_file readOnlyHint", read.annotations)
        write = by_name["write_file"]
        check(write.annotations and write.annotations.destructive_hint is True, f"{label}: write_file destructiveHint",
              write.annotations)

        stored = await client.call_tool("store_set", {"key": key, "value": json.dumps({"steps": [1, 2, 3]})})
        check(not stored.is_error, f"{label}: store_set", text_of(stored))
        got = await client.call_tool("store_get", {"key": key})
        check(not got.is_error and json.loads(text_of(got))["value"] == {"steps": [1, 2, 3]}, f"{label}: store_get round trip",
              text_of(got))

        read_result = await client.call_tool("read_file", {"path": "hello.txt"})
        check(not read_result.is_error and "hello from the root" in text_of(read_result), f"{label}: read_file",
              text_of(read_result))

        bad = await client.call_tool("read_file", {"path": 42})
        check(bad.is_error and "/path" in text_of(bad), f"{label}: bad arguments are an isError result", text_of(bad))
        outside = await client.call_tool("read_file", {"path": "../../etc/passwd"})
        check(outside.is_error, f"{label}: path traversal refused", text_of(outside))

        try:
            await client.call_tool("no_such_tool", {})
            check(False, f"{label}: unknown tool", "no error raised")
        except MCPError as error:
            check(error.code == -32602, f"{label}: unknown tool is error -32602", error)

        written = await client.call_tool("write_file", {"path": "new.txt", "content": "x"})
        if dangerous_allowed:
            check(not written.is_error and os.path.exists(os.path.join(root, "new.txt")), f"{label}: --allow-dangerous runs write_file",
                  text_of(written))
        else:
            check(written.is_error and "approval" in text_of(written) and not os.path.exists(os.path.join(root, "new.txt")),
                  f"{label}: dangerous tool refused without approval", text_of(written))

        if dangerous_allowed:
            marker = f"{30 + (os.getpid() % 1000) / 1000:.3f}"
            started = time.monotonic()
            with anyio.move_on_after(1.5):
                await client.call_tool("shell", {"command": f"sleep {marker}"})
            check(time.monotonic() - started < 10, f"{label}: the cancelled call returned", time.monotonic() - started)
            pong = await client.call_tool("store_get", {"key": key})
            check(not pong.is_error, f"{label}: serving after a cancellation", text_of(pong))
            deadline = time.monotonic() + 10
            while sleeping(marker) and time.monotonic() < deadline:
                await anyio.sleep(0.1)
            check(not sleeping(marker), f"{label}: cancellation killed the shell command", sleeping(marker))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http(root, *extra, env=None):
    port = free_port()
    proc = subprocess.Popen([BIN, "serve", "--root", root, "--http", f"127.0.0.1:{port}", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit(f"FAIL  toolreg serve --http did not start on port {port}")


async def main():
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "hello.txt"), "w") as f:
            f.write("hello from the root\n")

        def stdio(*extra):
            params = StdioServerParameters(command=BIN, args=["serve", "--root", root, *extra])
            return lambda: Client(params)

        await exercise("stdio", stdio(), root, dangerous_allowed=False)
        await exercise("stdio --allow-dangerous", stdio("--allow-dangerous"), root, dangerous_allowed=True)
        os.remove(os.path.join(root, "new.txt"))

        for label, extra in [("http", ()), ("http --stateless", ("--stateless",))]:
            proc, url = start_http(root, *extra)
            try:
                await exercise(label, lambda: Client(url), root, dangerous_allowed=False)
            finally:
                proc.kill()
                proc.wait()

        # Approval of a dangerous call by the client's user: a handshake-era
        # connection is asked with elicitation/create during the call, a
        # 2026-07-28 one with an input_required result the SDK answers and
        # retries (Multi Round-Trip Requests); either way the answer decides.
        for mode in ("legacy", None):
            for approve in (True, False):
                label = f"stdio ({mode or 'default'} connection), user {'approves' if approve else 'declines'}"
                name = f"approved-{mode or 'default'}-{approve}.txt"
                asked = []

                async def on_approve(context, params, approve=approve, asked=asked):
                    asked.append(params.message)
                    if approve:
                        return types.ElicitResult(action="accept", content={"approve": True})
                    return types.ElicitResult(action="decline")

                params = StdioServerParameters(command=BIN, args=["serve", "--root", root])
                async with Client(params, elicitation_callback=on_approve, **({"mode": mode} if mode else {})) as client:
                    written = await client.call_tool("write_file", {"path": name, "content": "x"})
                check(len(asked) == 1 and name in asked[0], f"{label}: asked once, with the arguments", asked)
                wrote = os.path.exists(os.path.join(root, name))
                check(written.is_error != approve and wrote == approve, f"{label}: the answer decides", text_of(written))

        # The gateway: a remote server's tool list changes; the client hears of it.
        fake = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "toolreg-mcp", "tests",
                            "servers", "fake_server.py")
        config = os.path.join(root, "servers.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {"fake": {"command": sys.executable, "args": ["-u", fake]}}}, f)
        heard = []

        async def on_message(message):
            if "ToolListChanged" in type(getattr(message, "root", message)).__name__ or "list_changed" in repr(message):
                heard.append(message)

        params = StdioServerParameters(command=BIN, args=["serve", "--no-shell", "--root", root, "--config", config])
        # mode="legacy": the initialize handshake, where list_changed is sent unasked
        # (2026-07-28 connections deliver it on a subscriptions/listen stream instead).
        async with Client(params, message_handler=on_message, mode="legacy") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            check("fake__echo" in names and "read_file" in names, "gateway: built-ins and imported tools in one list",
                  sorted(names))
            changed = await client.call_tool("fake__change", {})
            check(not changed.is_error, "gateway: an imported tool runs", text_of(changed))
            deadline = time.monotonic() + 10
            while not heard and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            check(heard, "gateway: notifications/tools/list_changed reaches the client")
            names = {tool.name for tool in (await client.list_tools()).tools}
            check("fake__added" in names, "gateway: the new tool is listed", sorted(names))

        # A 2026-07-28 connection hears of the change on a subscriptions/listen stream.
        async with Client(params) as client:
            events = []
            with anyio.move_on_after(10):
                async with client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("fake__change", {})
                    async for event in subscription:
                        events.append(event)
                        break
            check(events and "ToolsListChanged" in type(events[0]).__name__,
                  f"gateway ({client.protocol_version}): tools list change on subscriptions/listen", events)

        # Deferred mode (--deferred): the imported server's tools are left out of
        # the list and found with search_tools; on a session the tools found join
        # the list (announced with list_changed), and call_tool runs any tool.
        deferred_args = ["serve", "--no-shell", "--root", root, "--config", config, "--deferred"]
        deferred = StdioServerParameters(command=BIN, args=deferred_args)

        def short(names, label):
            check({"search_tools", "call_tool", "read_file"} <= names and not any(n.startswith("fake__") for n in names),
                  f"{label}: the short list (built-ins, search_tools, call_tool)", sorted(names))

        heard.clear()
        async with Client(deferred, message_handler=on_message, mode="legacy") as client:
            short({tool.name for tool in (await client.list_tools()).tools}, "deferred (legacy)")
            early = await client.call_tool("fake__echo", {"text": "hi"})
            check(early.is_error and "search_tools" in text_of(early), "deferred (legacy): a tool not searched for is refused",
                  text_of(early))
            found = await client.call_tool("search_tools", {"query": "echo the arguments"})
            hits = (found.structured_content or {}).get("tools", [])
            check(not found.is_error and hits and hits[0]["name"] == "fake__echo" and "inputSchema" in hits[0],
                  "deferred (legacy): search_tools finds the tool, with its schema", found.structured_content)
            deadline = time.monotonic() + 10
            while not heard and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            check(heard, "deferred (legacy): list_changed after the search")
            names = {tool.name for tool in (await client.list_tools()).tools}
            check("fake__echo" in names and "fake__wipe" not in names, "deferred (legacy): the found tool is listed", sorted(names))
            direct = await client.call_tool("fake__echo", {"text": "hi"})
            check(not direct.is_error and direct.structured_content == {"text": "hi"}, "deferred (legacy): called by name",
                  text_of(direct))
            via = await client.call_tool("call_tool", {"name": "fake__echo", "arguments": {"text": "via"}})
            check(not via.is_error and via.structured_content == {"text": "via"}, "deferred (legacy): call_tool runs it",
                  text_of(via))
            unknown = await client.call_tool("call_tool", {"name": "fake__nope", "arguments": {}})
            check(unknown.is_error and "unknown tool" in text_of(unknown), "deferred (legacy): call_tool of an unknown tool",
                  text_of(unknown))
            # The imported server's list changes: its new tool is searchable.
            await client.call_tool("call_tool", {"name": "fake__change", "arguments": {}})
            # The gateway reads the changed list on a task of its own: search until it has.
            deadline = time.monotonic() + 10
            while True:
                added = await client.call_tool("search_tools", {"query": "added at run time"})
                found = [t["name"] for t in (added.structured_content or {}).get("tools", [])][:1]
                if found == ["fake__added"] or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.05)
            check(found == ["fake__added"], "deferred (legacy): a tool the remote server added is found",
                  added.structured_content)

        # A 2026-07-28 connection hears of its loaded tools on subscriptions/listen.
        async with Client(deferred) as client:
            short({tool.name for tool in (await client.list_tools()).tools}, f"deferred ({client.protocol_version})")
            events = []
            with anyio.move_on_after(10):
                async with client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("search_tools", {"query": "echo the arguments"})
                    async for event in subscription:
                        events.append(event)
                        break
            check(events and "ToolsListChanged" in type(events[0]).__name__,
                  f"deferred ({client.protocol_version}): list change on subscriptions/listen after a search", events)
            names = {tool.name for tool in (await client.list_tools()).tools}
            check("fake__echo" in names, f"deferred ({client.protocol_version}): the found tool is listed", sorted(names))
            direct = await client.call_tool("fake__echo", {"text": "hi"})
            check(not direct.is_error, f"deferred ({client.protocol_version}): called by name", text_of(direct))

        # Stateless HTTP has no session: search_tools, then call_tool.
        proc, url = start_http(root, "--stateless", "--no-shell", "--config", config, "--deferred")
        try:
            async with Client(url) as client:
                short({tool.name for tool in (await client.list_tools()).tools}, "deferred (http --stateless)")
                found = await client.call_tool("search_tools", {"query": "echo the arguments"})
                hits = (found.structured_content or {}).get("tools", [])
                check(hits and hits[0]["name"] == "fake__echo", "deferred (http --stateless): search_tools",
                      found.structured_content)
                short({tool.name for tool in (await client.list_tools()).tools}, "deferred (http --stateless) after search")
                via = await client.call_tool("call_tool", {"name": "fake__echo", "arguments": {"text": "via"}})
                check(not via.is_error and via.structured_content == {"text": "via"},
                      "deferred (http --stateless): call_tool runs it", text_of(via))
        finally:
            proc.kill()
            proc.wait()

        # The gateway in front of a server written with the official SDK: what its
        # client receives is what that server sent, block for block, and the
        # server's progress reaches the client.
        blocks_server = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp_blocks_server.py")
        direct = StdioServerParameters(command=sys.executable, args=[blocks_server])
        async with Client(direct) as client:
            sent = await client.call_tool("blocks", {})
        sdk_config = os.path.join(root, "sdk_servers.json")
        with open(sdk_config, "w") as f:
            json.dump({"mcpServers": {"sdk": {"command": sys.executable, "args": [blocks_server]}}}, f)
        gateway = StdioServerParameters(command=BIN, args=["serve", "--no-shell", "--root", root, "--config", sdk_config])

        def dump(blocks):
            return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in blocks]

        for mode in ("legacy", None):
            label = f"gateway ({mode or 'default'} connection)"
            async def on_elicit(context, params):
                return types.ElicitResult(action="accept", content={"name": "Ada"})

            async with Client(gateway, elicitation_callback=on_elicit, **({"mode": mode} if mode else {})) as client:
                got = await client.call_tool("sdk__blocks", {})
                check(not got.is_error and len(got.content) == 6, f"{label}: the SDK server's six blocks arrive", dump(got.content))
                for sent_block, got_block in zip(dump(sent.content), dump(got.content)):
                    check(sent_block == got_block, f"{label}: {sent_block['type']} block unchanged", (sent_block, got_block))
                check(got.structured_content == {"points": 3}, f"{label}: structuredContent unchanged", got.structured_content)
                reports = []

                async def on_progress(progress, total, message):
                    reports.append((progress, total, message))

                done = await client.call_tool("sdk__progress", {}, progress_callback=on_progress)
                check(text_of(done) == "done" and reports == [(1, 2, "step 1"), (2, 2, "step 2")],
                      f"{label}: the SDK server's progress reaches the client", (text_of(done), reports))

                asked = await client.call_tool("sdk__ask", {})
                # A handshake-era client is asked during the call; a 2026-07-28 one
                # with an input_required result the SDK answers and retries.
                check(not asked.is_error and text_of(asked) == "accept: Ada",
                      f"{label}: the SDK server's elicitation reaches the client and its answer the server", text_of(asked))

                resources = await client.list_resources()
                uris = [resource.uri for resource in resources.resources]
                check(uris == ["toolreg://sdk/mem://notes"], f"{label}: the SDK server's resources, namespaced", uris)
                read = await client.read_resource("toolreg://sdk/mem://notes")
                check([c.text for c in read.contents] == ["three points"], f"{label}: a resource read through the gateway",
                      read.contents)
                templates = await client.list_resource_templates()
                check([t.uri_template for t in templates.resource_templates] == ["toolreg://sdk/mem://notes/{id}"],
                      f"{label}: the SDK server's resource templates, namespaced", templates.resource_templates)
                expanded = await client.read_resource("toolreg://sdk/mem://notes/7")
                check([c.text for c in expanded.contents] == ["note 7"], f"{label}: an expanded template read", expanded.contents)
                prompts = await client.list_prompts()
                check([p.name for p in prompts.prompts] == ["sdk__greet"], f"{label}: the SDK server's prompts, namespaced",
                      prompts.prompts)
                prompt = await client.get_prompt("sdk__greet", {"who": "Ada"})
                check([m.content.text for m in prompt.messages] == ["Hello, Ada"], f"{label}: a prompt got through the gateway",
                      prompt.messages)

        # Code mode (--code-mode): run_code with search, a program over the
        # built-ins, and a dangerous call inside it approved by the client's user
        # (asked with elicitation during the call on a handshake-era connection;
        # on a 2026-07-28 one with an input_required result, the program's
        # record of calls kept in the sealed requestState: the retried program
        # replays its read instead of running it again).
        for mode, approve in (("legacy", True), ("legacy", False), (None, True), (None, False)):
            asked = []

            async def on_code_approval(context, params, approve=approve, asked=asked):
                asked.append(params.message)
                if approve:
                    return types.ElicitResult(action="accept", content={"approve": True})
                return types.ElicitResult(action="decline")

            audit = os.path.join(root, f"code-audit-{mode}-{approve}.jsonl")
            code = StdioServerParameters(command=BIN, args=["serve", "--no-shell", "--root", root, "--code-mode",
                                                             "--audit", audit])
            name = f"from-program-{mode}-{approve}.txt"
            async with Client(code, elicitation_callback=on_code_approval, **({"mode": mode} if mode else {})) as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                check(names == ["run_code", "search_tools", "call_tool"], "code mode: run_code, search_tools, call_tool", names)
                program = (
                    "const read = await tools.read_file({path: 'hello.txt'});\n"
                    f"let wrote = 'yes';\ntry {{ await tools.write_file({{path: '{name}', content: read.value.content}}); }} "
                    "catch (e) { wrote = e.kind; }\nreturn {lines: read.value.total_lines, wrote};"
                )
                ran = await client.call_tool("run_code", {"code": program})
                result = (ran.structured_content or {}).get("result", {})
                expected = "yes" if approve else "denied"
                check(not ran.is_error and result == {"lines": 1, "wrote": expected},
                      f"code mode: a program reads, and its write is {'approved' if approve else 'declined'} by the user",
                      text_of(ran))
                check(len(asked) == 1 and name in asked[0], "code mode: the user was asked once, with the arguments", asked)
                check(os.path.exists(os.path.join(root, name)) == approve, "code mode: the answer decides", name)
            with open(audit) as f:
                ran = [json.loads(line) for line in f]
            reads = [r for r in ran if r["tool"] == "read_file" and r["outcome"] == "ok"]
            check(len(reads) == 1 and reads[0]["call_id"].endswith("/1"),
                  f"code mode ({mode or 'default'}): the program's read ran once, as call <id>/1", ran)

        env = dict(os.environ, TOOLREG_MCP_TOKEN="s3cret-token")
        proc, url = start_http(root, env=env)
        try:
            async with httpx.AsyncClient() as http:
                response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                           headers={"accept": "application/json, text/event-stream"})
                check(response.status_code == 401, "http: a request without the bearer token is 401", response.status_code)
            headers = {"Authorization": "Bearer s3cret-token"}
            async with httpx.AsyncClient(headers=headers) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    tools = await client.list_tools()
                    check(len(tools.tools) > 0, "http: with the bearer token the tools are listed", len(tools.tools))
        finally:
            proc.kill()
            proc.wait()
    print("MCP Python SDK client: every check passed")


asyncio.run(main())
