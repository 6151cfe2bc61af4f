"""A small MCP server on stdio (standard library only) that misbehaves on request.

Tools: echo (read-only), wipe (destructive), "odd name/with.dots", fail (isError),
die (exits mid-call), garbage (writes a line that is not JSON, then answers),
hang (never answers), slow (answers only if not cancelled: never), change (adds a
tool and sends notifications/tools/list_changed), cancelled (the ids cancelled so far),
env (its environment and working directory), huge (a 17 MiB answer), tasky (answers a plain call -32601, as a task-only tool must),
research (only as an MCP task: answers with a task, which tasks/get reports working with a status message, then
completed with "found: TOPIC"; with "forever": true it never ends; with "ask": true it is input_required with an
elicitation under the key "who" until tasks/update answers it, and then ends "found: TOPIC for ANSWER"; tasks/cancel
cancels it and is recorded in `cancelled` as "task:ID"),
blocks (every content block type, annotated, with structuredContent: BLOCKS below), bad_blocks (a good
block, an image whose data is not base64 and a block of an unknown type), progress (two
notifications/progress on the request's progress token, if it has one; answers with the token it got).

ask (sends elicitation/create to the client and answers with the client's answer as JSON: its
`result` or `error`), sample (the same with sampling/createMessage).

Resources: mem://notes (text), file:///data.csv (the link `blocks` returns), the template
mem://notes/{id}; prompts: greet (argument `who`). resources/subscribe is answered and followed at
once by notifications/resources/updated for that URI; mem://subscriptions (not listed) reads the
URIs subscribed to now, one per line.

Flags: --mute (never answers initialize), --slow-start SECONDS (sleeps before
reading anything), --fail-first FILE (exits at once unless FILE exists, creating
it: the next start succeeds), --endless-pages (tools/list always has a next page),
--same-cursor (tools/list always names the same next page), --many N (lists N
more tools), --on-exit FILE (when its input ends, writes "eof" to FILE and exits;
on SIGTERM it appends "term"), --stubborn (with --on-exit: when its input ends it
stays, and SIGTERM does not end it either), --augmented-tasks (speaks the 2025-11-25 revision's tasks
instead of the extension: declares capabilities.tasks.requests.tools.call, and lists survey, whose listing
says execution.taskSupport "required": a plain call is refused -32601 "requires task augmentation", as
server-everything's simulate-research-query is; a call with params.task answers {"task": {...}}, tasks/get
reports working twice with a status message, then completed; tasks/result then answers "surveyed: TOPIC";
with "forever": true it never ends; with "ask": true tasks/get reports input_required, and tasks/result first
asks the client (elicitation/create, "Who is asking?") and answers "surveyed: TOPIC for ANSWER"; tasks/cancel
cancels it, recorded in `cancelled` as "task:ID"; tasky, whose listing does not say it is task-only, then runs
as survey does when called with params.task).
"""
import json
import os
import signal
import sys
import time

flags = sys.argv[1:]
mute = "--mute" in flags
endless = "--endless-pages" in flags
same_cursor = "--same-cursor" in flags
if "--slow-start" in flags:
    time.sleep(float(flags[flags.index("--slow-start") + 1]))
on_exit = flags[flags.index("--on-exit") + 1] if "--on-exit" in flags else None
stubborn = "--stubborn" in flags
augmented = "--augmented-tasks" in flags


def note_exit(what):
    with open(on_exit, "a") as f:
        f.write(what + "\n")


if on_exit:
    def on_term(signum, frame):
        note_exit("term")
        if not stubborn:
            sys.exit(0)
    signal.signal(signal.SIGTERM, on_term)
if "--fail-first" in flags:
    marker = flags[flags.index("--fail-first") + 1]
    if not os.path.exists(marker):
        open(marker, "w").close()
        sys.exit(1)

TOOLS = [
    {"name": "echo", "description": "Echo the arguments.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
     "annotations": {"readOnlyHint": True, "destructiveHint": False}},
    {"name": "wipe", "description": "Wipe everything.", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": True}},
    {"name": "odd name/with.dots", "description": "A name no provider accepts.", "inputSchema": {"type": "object"}},
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object"}},
    {"name": "die", "description": "Exits mid-call.", "inputSchema": {"type": "object"}},
    {"name": "garbage", "description": "Writes garbage first.", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object"}},
    {"name": "change", "description": "Adds a tool.", "inputSchema": {"type": "object"}},
    {"name": "cancelled", "description": "Ids cancelled so far.", "inputSchema": {"type": "object"}},
    {"name": "env", "description": "Its environment and directory.", "inputSchema": {"type": "object"}},
    {"name": "huge", "description": "Answers with 17 MiB.", "inputSchema": {"type": "object"}},
    {"name": "research", "description": "Only as an MCP task.", "inputSchema": {"type": "object"},
     "execution": {"taskSupport": "required"}},
    {"name": "tasky", "description": "A task-only tool whose listing does not say so.", "inputSchema": {"type": "object"}},
    {"name": "blocks", "description": "Every block type.", "inputSchema": {"type": "object"},
     "outputSchema": {"type": "object", "properties": {"points": {"type": "integer"}}}},
    {"name": "bad_blocks", "description": "Blocks that cannot be read.", "inputSchema": {"type": "object"}},
    {"name": "progress", "description": "Reports progress.", "inputSchema": {"type": "object"}},
    {"name": "ask", "description": "Asks the user.", "inputSchema": {"type": "object"}},
    {"name": "sample", "description": "Asks the client's model.", "inputSchema": {"type": "object"}},
    {"name": "maybe", "description": "As a task or not.", "inputSchema": {"type": "object"},
     "execution": {"taskSupport": "optional"}},
]
if "--many" in flags:
    for i in range(int(flags[flags.index("--many") + 1])):
        TOOLS.append({"name": "t%d" % i, "inputSchema": {"type": "object"}})
cancelled = []
FOR_USER = {"audience": ["user"], "priority": 0.25, "lastModified": "2026-01-02T03:04:05Z"}
BLOCKS = [
    {"type": "text", "text": "The chart:", "annotations": FOR_USER},
    {"type": "image", "data": "iVBORw==", "mimeType": "image/png", "annotations": FOR_USER},
    {"type": "audio", "data": "AQI=", "mimeType": "audio/wav"},
    {"type": "resource_link", "uri": "file:///data.csv", "name": "data.csv", "title": "The data",
     "description": "Three points", "mimeType": "text/csv", "size": 42, "annotations": {"audience": ["assistant"]}},
    {"type": "resource", "resource": {"uri": "mem://notes", "mimeType": "text/plain", "text": "three points"}},
    {"type": "resource", "resource": {"uri": "mem://raw", "mimeType": "application/octet-stream", "blob": "AP8="},
     "annotations": {"priority": 1.0}},
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(id, value):
    send({"jsonrpc": "2.0", "id": id, "result": value})


def text(id, body, is_error=False, structured=None):
    value = {"content": [{"type": "text", "text": body}], "isError": is_error}
    if structured is not None:
        value["structuredContent"] = structured
    result(id, value)


def ask_client(method, params):
    """Send a request to the client and wait for its answer (other messages meanwhile are dropped)."""
    asked = "ask-%d" % len(cancelled + [0]) + method
    send({"jsonrpc": "2.0", "id": asked, "method": method, "params": params})
    for reply in sys.stdin:
        reply = json.loads(reply)
        if reply.get("id") == asked and "method" not in reply:
            return {key: reply[key] for key in ("result", "error") if key in reply}
    return {"error": "stdin closed"}


subscribed = set()
tasks = {}
NOW = "2026-01-01T00:00:00Z"


if augmented:
    TOOLS.append({"name": "survey", "description": "Only with task augmentation.", "inputSchema": {"type": "object"},
                  "execution": {"taskSupport": "required"}})


def augmented_task(task_id, status, message=None):
    fields = {"taskId": task_id, "status": status, "createdAt": NOW, "lastUpdatedAt": NOW, "ttl": 60000,
              "pollInterval": 10}
    if message:
        fields["statusMessage"] = message
    return fields


def task_fields(task_id, status):
    return {"taskId": task_id, "status": status, "createdAt": NOW, "lastUpdatedAt": NOW, "ttlMs": 60000,
            "pollIntervalMs": 10}


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    message = json.loads(line)
    method = message.get("method")
    id = message.get("id")
    params = message.get("params") or {}
    if method == "initialize" and mute:
        continue
    if method == "initialize":
        result(id, {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                    "capabilities": dict({"tools": {"listChanged": True}, "resources": {"subscribe": True}, "prompts": {}},
                                         **({"tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}
                                            if augmented else {"extensions": {"io.modelcontextprotocol/tasks": {}}})),
                    "serverInfo": {"name": "fake", "version": "1"}})
    elif method == "notifications/cancelled":
        cancelled.append(params.get("requestId"))
    elif method == "tools/list" and (endless or same_cursor):
        page = int(params.get("cursor") or "0")
        result(id, {"tools": [dict(TOOLS[0], name="echo%d" % page)],
                    "nextCursor": "1" if same_cursor else str(page + 1)})
    elif method == "tools/list":
        result(id, {"tools": TOOLS})
    elif method == "resources/list":
        result(id, {"resources": [{"uri": "mem://notes", "name": "notes", "mimeType": "text/plain"}]})
    elif method == "resources/templates/list":
        result(id, {"resourceTemplates": [{"uriTemplate": "mem://notes/{id}", "name": "note"}]})
    elif method == "resources/subscribe":
        subscribed.add(params.get("uri"))
        result(id, {})
        send({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": params.get("uri")}})
    elif method == "resources/unsubscribe":
        subscribed.discard(params.get("uri"))
        result(id, {})
    elif method == "resources/read" and params.get("uri") == "mem://subscriptions":
        text_contents = "\n".join(sorted(subscribed))
        result(id, {"contents": [{"uri": "mem://subscriptions", "mimeType": "text/plain", "text": text_contents}]})
    elif method == "resources/read":
        uri = params.get("uri")
        if uri in ("mem://notes", "file:///data.csv") or uri.startswith("mem://notes/"):
            result(id, {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "contents of " + uri}]})
        else:
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32002, "message": "no resource " + str(uri)}})
    elif method == "prompts/list":
        result(id, {"prompts": [{"name": "greet", "description": "Greet someone.",
                                 "arguments": [{"name": "who", "required": True}]}]})
    elif method == "prompts/get":
        who = (params.get("arguments") or {}).get("who", "nobody")
        result(id, {"messages": [{"role": "user", "content": {"type": "text", "text": "Hello, " + who}}]})
    elif method == "ping":
        result(id, {})
    elif method == "tasks/update":
        task = tasks.get(params.get("taskId"))
        if task is None:
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "unknown task"}})
        else:
            answer = (params.get("inputResponses") or {}).get("who")
            if answer is not None:
                task["who"] = answer
            result(id, {"resultType": "complete"})
    elif method in ("tasks/get", "tasks/cancel", "tasks/result") and (tasks.get(params.get("taskId")) or {}).get("legacy"):
        task_id = params.get("taskId")
        task = tasks[task_id]
        if method == "tasks/cancel":
            task["cancelled"] = True
            cancelled.append("task:" + task_id)
            result(id, augmented_task(task_id, "cancelled"))
        elif method == "tasks/get":
            task["polls"] += 1
            if task["cancelled"]:
                result(id, augmented_task(task_id, "cancelled"))
            elif task["forever"] or task["polls"] < 3:
                result(id, augmented_task(task_id, "working", "step %d" % task["polls"]))
            elif task["ask"]:
                result(id, augmented_task(task_id, "input_required", "waiting for an answer"))
            else:
                result(id, augmented_task(task_id, "completed"))
        elif task["cancelled"]:
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "task cancelled"}})
        else:
            asker = ""
            if task["ask"]:
                answer = ask_client("elicitation/create", {"mode": "form", "message": "Who is asking?", "requestedSchema": {
                    "type": "object", "properties": {"name": {"type": "string"}}},
                    "_meta": {"io.modelcontextprotocol/related-task": {"taskId": task_id}}})
                asker = " for " + json.dumps(answer.get("result"), sort_keys=True)
            result(id, {"content": [{"type": "text", "text": "surveyed: " + task["topic"] + asker}], "isError": False,
                        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": task_id}}})
    elif method in ("tasks/get", "tasks/cancel"):
        task_id = params.get("taskId")
        task = tasks.get(task_id)
        if task is None:
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "unknown task " + str(task_id)}})
        elif method == "tasks/cancel":
            task["cancelled"] = True
            cancelled.append("task:" + task_id)
            result(id, {"resultType": "complete"})
        else:
            task["polls"] += 1
            if task["cancelled"]:
                result(id, dict(task_fields(task_id, "cancelled"), resultType="complete"))
            elif task["ask"] and task["who"] is None:
                result(id, dict(task_fields(task_id, "input_required"), resultType="complete", inputRequests={
                    "who": {"method": "elicitation/create", "params": {
                        "mode": "form", "message": "Who is asking?",
                        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}}))
            elif task["forever"] or task["polls"] < 3:
                result(id, dict(task_fields(task_id, "working"), resultType="complete",
                                statusMessage="step %d" % task["polls"]))
            else:
                asker = "" if task["who"] is None else " for " + json.dumps(task["who"], sort_keys=True)
                result(id, dict(task_fields(task_id, "completed"), resultType="complete", result={
                    "content": [{"type": "text", "text": "found: " + task["topic"] + asker}], "isError": False}))
    elif method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "research":
            task_id = "task-%d" % (len(tasks) + 1)
            tasks[task_id] = {"polls": 0, "topic": str(args.get("topic", "")), "cancelled": False,
                              "forever": bool(args.get("forever")), "ask": bool(args.get("ask")), "who": None}
            result(id, dict(task_fields(task_id, "working"), resultType="task"))
        elif name in ("survey", "tasky") and augmented and "task" not in params:
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601,
                  "message": "Tool survey requires task augmentation (taskSupport: 'required')"}})
        elif name == "survey" or (name == "tasky" and augmented):
            task_id = "survey-%d" % (len(tasks) + 1)
            tasks[task_id] = {"legacy": True, "polls": 0, "topic": str(args.get("topic", "")), "cancelled": False,
                              "forever": bool(args.get("forever")), "ask": bool(args.get("ask"))}
            result(id, {"task": augmented_task(task_id, "working")})
        elif name == "echo":
            text(id, json.dumps(args), structured=args)
        elif name == "tasky":
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "tools/call needs task augmentation"}})
        elif name == "wipe" or name == "odd name/with.dots":
            text(id, "done " + name)
        elif name == "fail":
            text(id, "the disk is on fire", is_error=True)
        elif name == "die":
            os._exit(3)
        elif name == "garbage":
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
            text(id, "after garbage")
        elif name in ("hang", "slow"):
            pass
        elif name == "change":
            TOOLS.append({"name": "added", "description": "Added at run time.", "inputSchema": {"type": "object"}})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            text(id, "changed")
        elif name == "cancelled":
            text(id, json.dumps(cancelled))
        elif name == "huge":
            text(id, "x" * (17 * 1024 * 1024))
        elif name == "blocks":
            result(id, {"content": BLOCKS, "structuredContent": {"points": 3}, "isError": False})
        elif name == "bad_blocks":
            result(id, {"content": [
                {"type": "text", "text": "before"},
                {"type": "image", "data": "not base64!", "mimeType": "image/png"},
                {"type": "hologram", "data": "AQI="},
            ], "isError": False})
        elif name == "progress":
            token = (params.get("_meta") or {}).get("progressToken")
            if token is not None:
                for step in (1, 2):
                    send({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": token, "progress": step, "total": 2, "message": "step %d" % step}})
            text(id, json.dumps({"token": token}))
        elif name == "ask":
            answer = ask_client("elicitation/create", {"mode": "form", "message": "Your name?", "requestedSchema": {
                "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}})
            text(id, json.dumps(answer))
        elif name == "sample":
            answer = ask_client("sampling/createMessage", {"messages": [
                {"role": "user", "content": {"type": "text", "text": "Say hi"}}], "maxTokens": 10})
            text(id, json.dumps(answer))
        elif name == "env":
            value = {"env": dict(os.environ), "cwd": os.getcwd()}
            text(id, json.dumps(value), structured=value)
        else:
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "unknown tool " + str(name)}})
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no method " + str(method)}})

if on_exit:
    note_exit("eof")
    while stubborn:
        time.sleep(1)
