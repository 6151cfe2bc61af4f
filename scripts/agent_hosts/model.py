"""A scripted model endpoint for driving real agent hosts against `toolreg serve`.

It speaks each model API as the hosts use it: OpenAI Chat Completions and
Responses (JSON or SSE), Anthropic Messages (JSON or SSE, and token counting)
and Gemini generateContent / streamGenerateContent / countTokens. Every turn is
decided from the conversation the host sends, never from memory of earlier
requests, so a host may retry or send side requests (titles, summaries,
routing, token counts) in any order:

- a request that offers the script's tools is a turn of the conversation: with
  no tool result yet the model calls the first tool of the script; the basic
  script calls `read_file {"path": "secret.txt"}`, the deferred one
  `search_tools {"query": ...}` and then `call_tool {"name": "read_file", ...}`;
  once the script's calls have results, it answers with a final text that
  quotes the secret, but only when a tool result carried it;
- any other request (no tools, or none of the script's) gets a short benign
  answer (JSON where the host asked for JSON);
- as OpenAI does, a request with a tool marked `strict` whose schema strict
  mode refuses is answered 400, with the reason.

The host names MCP tools its own way (`mcp__toolreg__read_file`,
`toolreg_read_file`, ...): the tool is found in the request's tools by suffix.

Every request is logged as one JSON line (`--log`): the API, whether it was a
turn, the tools offered, what was answered and whether a tool result carried
the secret. The check reads that log.

Usage: model.py --port-file FILE --log FILE --secret VALUE --script basic|deferred [--bare-names]
"""

import argparse
import json
import os
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FILE = "secret.txt"
# Each script: the calls the model makes in order, as (tool, arguments).
SCRIPTS = {
    "basic": [("read_file", {"path": FILE})],
    "deferred": [
        ("search_tools", {"query": "read a text file"}),
        ("call_tool", {"name": "read_file", "arguments": {"path": FILE}}),
    ],
}


def final_text(secret_seen, secret):
    if secret_seen:
        return f"The file says {secret}."
    return "No tool result carried the secret."


# ---------------------------------------------------------------- conversations


def text_of(value):
    """Every string inside a JSON value, joined (tool results come in many shapes)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(text_of(v) for v in value)
    if isinstance(value, dict):
        return "\n".join(text_of(v) for v in value.values())
    return "" if value is None else str(value)


def openai_chat(body):
    """(tool names offered, tool result texts) of a Chat Completions request."""
    tools = [t.get("function", {}).get("name") or t.get("name") for t in body.get("tools") or []]
    results = [text_of(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "tool"]
    return tools, results


def namespaced(body):
    """Responses tools grouped in a `namespace` tool (codex's MCP servers), by
    the flat name the model is given here: `NAMESPACE__TOOL`."""
    names = {}
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace":
            for sub in tool.get("tools") or []:
                names[f"{tool.get('name')}__{sub.get('name')}"] = (tool.get("name"), sub.get("name"))
    return names


def openai_responses(body):
    tools = [t.get("name") for t in body.get("tools") or [] if t.get("name") and t.get("type") != "namespace"]
    tools += list(namespaced(body))
    items = body.get("input")
    results = []
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict) and item.get("type", "").endswith("call_output"):
                results.append(text_of(item.get("output")))
    return tools, results


def anthropic(body):
    tools = [t.get("name") for t in body.get("tools") or []]
    results = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results.append(text_of(block.get("content")))
    return tools, results


def gemini(body):
    tools = []
    for tool in body.get("tools") or []:
        for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or []:
            tools.append(decl.get("name"))
    results = []
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            response = part.get("functionResponse") or part.get("function_response")
            if response is not None:
                results.append(text_of(response.get("response")))
    return tools, results


def find_tool(offered, base, bare):
    """The offered name of the MCP tool `base`.

    Hosts with tools of their own name MCP tools after the server
    (`mcp__toolreg__read_file`, `toolreg_read_file`): only such a name counts,
    never the host's own `read_file`. Hosts that offer only the server's tools
    (`bare`) keep its names.
    """
    if bare:
        return base if base in offered else None
    for name in offered:
        if name and "toolreg" in name and re.search(r"[_\-.:]" + re.escape(base) + "$", name):
            return name
    return None


class Decision:
    """What the model does on one request."""

    def __init__(self, kind, text=None, tool=None, arguments=None):
        self.kind, self.text, self.tool, self.arguments = kind, text, tool, arguments

    def log(self):
        if self.kind == "call":
            return {"call": self.tool, "arguments": self.arguments}
        return {"text": self.text}


def decide(state, offered, results):
    script = SCRIPTS[state.script]
    first = find_tool(offered, script[0][0], state.bare)
    entry = {"offered": offered, "results": len(results)}
    if first is None:
        entry["turn"] = False
        return Decision("text", text="OK"), entry
    entry["turn"] = True
    seen = any(state.secret in r for r in results)
    entry["secret_in_result"] = seen
    if seen or len(results) >= len(script):
        return Decision("text", text=final_text(seen, state.secret)), entry
    base, arguments = script[len(results)]
    name = find_tool(offered, base, state.bare)
    if name is None:
        return Decision("text", text=f"The tool {base} is not offered."), entry
    return Decision("call", tool=name, arguments=arguments), entry


# ---------------------------------------------------------------- strict mode


def strict_error(schema, context=()):
    """Why OpenAI's strict mode refuses a function's parameters, or None.

    The rules every strict schema must keep, as the API states them when it
    answers 400: each schema has a type (or is an `anyOf`, a `$ref` or an
    enumeration), and each object closes `additionalProperties` and requires
    every property.
    """
    if not isinstance(schema, dict):
        return None
    where = f"In context={tuple(context)!r}, "
    if not any(k in schema for k in ("type", "anyOf", "$ref", "enum", "const")):
        return where + "schema must have a 'type' key."
    types = schema.get("type")
    types = types if isinstance(types, list) else [types]
    if "object" in types:
        if schema.get("additionalProperties") is not False:
            return where + "'additionalProperties' is required to be supplied and to be false."
        properties = schema.get("properties") or {}
        missing = [k for k in properties if k not in (schema.get("required") or [])]
        if missing:
            return (where + "'required' is required to be supplied and to be an array including every key in "
                    f"properties. Missing '{missing[0]}'.")
        for key, sub in properties.items():
            error = strict_error(sub, (*context, "properties", key))
            if error:
                return error
    for keyword in ("items",):
        error = strict_error(schema.get(keyword), (*context, keyword))
        if error:
            return error
    for keyword in ("anyOf",):
        for n, sub in enumerate(schema.get(keyword) or []):
            error = strict_error(sub, (*context, keyword, str(n)))
            if error:
                return error
    for keyword in ("$defs", "definitions"):
        for key, sub in (schema.get(keyword) or {}).items():
            error = strict_error(sub, (*context, keyword, key))
            if error:
                return error
    return None


def refused_tools(body):
    """OpenAI's 400 answer when a tool marked `strict` has a schema strict mode refuses."""
    for n, tool in enumerate(body.get("tools") or []):
        function = tool.get("function", tool)
        if function.get("strict") is True:
            error = strict_error(function.get("parameters"))
            if error:
                return {"error": {"message": f"Invalid schema for function '{function.get('name')}': {error}",
                                  "type": "invalid_request_error", "param": f"tools[{n}].function.parameters",
                                  "code": "invalid_function_parameters"}}
    return None


# ---------------------------------------------------------------- answers


def new_id(prefix):
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def chat_answer(body, decision):
    message = {"role": "assistant", "content": decision.text}
    finish = "stop"
    if decision.kind == "call":
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": new_id("call_"),
                    "type": "function",
                    "function": {"name": decision.tool, "arguments": json.dumps(decision.arguments)},
                }
            ],
        }
        finish = "tool_calls"
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    created = int(time.time())
    cid = new_id("chatcmpl-")
    model = body.get("model", "scripted")
    if not body.get("stream"):
        return "json", {
            "id": cid,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
    chunk = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
    events = [dict(chunk, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])]
    if decision.kind == "call":
        call = message["tool_calls"][0]
        delta = {"tool_calls": [{"index": 0, "id": call["id"], "type": "function", "function": call["function"]}]}
    else:
        delta = {"content": decision.text}
    events.append(dict(chunk, choices=[{"index": 0, "delta": delta, "finish_reason": None}]))
    events.append(dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append(dict(chunk, choices=[], usage=usage))
    return "sse", [(None, e) for e in events] + [(None, "[DONE]")]


def responses_answer(body, decision):
    rid = new_id("resp_")
    if decision.kind == "call":
        item = {
            "type": "function_call",
            "id": new_id("fc_"),
            "call_id": new_id("call_"),
            "name": decision.tool,
            "arguments": json.dumps(decision.arguments),
            "status": "completed",
        }
        if decision.tool in namespaced(body):
            item["namespace"], item["name"] = namespaced(body)[decision.tool]
    else:
        item = {
            "type": "message",
            "id": new_id("msg_"),
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": decision.text, "annotations": []}],
        }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    response = {
        "id": rid,
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": body.get("model", "scripted"),
        "output": [item],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }
    if not body.get("stream"):
        return "json", response
    started = dict(response, status="in_progress", output=[], usage=None)
    events = [
        ("response.created", {"type": "response.created", "response": started}),
        ("response.in_progress", {"type": "response.in_progress", "response": started}),
    ]
    if decision.kind == "call":
        events.append(
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                            "item": dict(item, arguments="", status="in_progress")})
        )
        events.append(
            ("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta",
                                                        "item_id": item["id"], "output_index": 0,
                                                        "delta": item["arguments"]})
        )
        events.append(
            ("response.function_call_arguments.done", {"type": "response.function_call_arguments.done",
                                                       "item_id": item["id"], "output_index": 0,
                                                       "arguments": item["arguments"]})
        )
    else:
        events.append(
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                            "item": dict(item, content=[], status="in_progress")})
        )
        part = {"type": "output_text", "text": "", "annotations": []}
        events.append(
            ("response.content_part.added", {"type": "response.content_part.added", "item_id": item["id"],
                                             "output_index": 0, "content_index": 0, "part": part})
        )
        events.append(
            ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                            "output_index": 0, "content_index": 0, "delta": decision.text})
        )
        events.append(
            ("response.output_text.done", {"type": "response.output_text.done", "item_id": item["id"],
                                           "output_index": 0, "content_index": 0, "text": decision.text})
        )
        events.append(
            ("response.content_part.done", {"type": "response.content_part.done", "item_id": item["id"],
                                            "output_index": 0, "content_index": 0,
                                            "part": dict(part, text=decision.text)})
        )
    events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": 0,
                                                  "item": item}))
    events.append(("response.completed", {"type": "response.completed", "response": response}))
    for n, (_, event) in enumerate(events):
        event["sequence_number"] = n
    return "sse", events


def anthropic_answer(body, decision):
    mid = new_id("msg_")
    if decision.kind == "call":
        block = {"type": "tool_use", "id": new_id("toolu_"), "name": decision.tool, "input": decision.arguments}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": decision.text}
        stop = "end_turn"
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    message = {
        "id": mid,
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not body.get("stream"):
        return "json", message
    events = [("message_start", {"type": "message_start", "message": dict(message, content=[], stop_reason=None)})]
    if decision.kind == "call":
        events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": dict(block, input={})}))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "input_json_delta",
                                                         "partial_json": json.dumps(decision.arguments)}}))
    else:
        events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": {"type": "text", "text": ""}}))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta", "text": decision.text}}))
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": 5}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return "sse", events


def json_for_schema(schema):
    """A small value matching a JSON schema (Gemini hosts ask side questions in JSON)."""
    if not isinstance(schema, dict):
        return "ok"
    kind = str(schema.get("type", "")).lower()
    if "enum" in schema and schema["enum"]:
        # A "who speaks next" check: the user (the turn is over).
        return "user" if "user" in schema["enum"] else schema["enum"][0]
    if kind == "object" or "properties" in schema:
        return {k: json_for_schema(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return "ok"


def gemini_answer(body, decision, stream):
    if decision.kind == "call":
        part = {"functionCall": {"name": decision.tool, "args": decision.arguments}}
    else:
        config = body.get("generationConfig") or {}
        text = decision.text
        if config.get("responseMimeType") == "application/json" and decision.text == "OK":
            schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
            text = json.dumps(json_for_schema(schema))
        part = {"text": text}
    response = {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "scripted",
    }
    if stream:
        return "sse", [(None, response)]
    return "json", response


# ---------------------------------------------------------------- server


class State:
    def __init__(self, secret, script, bare, log, dump):
        self.secret, self.script, self.bare = secret, script, bare
        self.log_file = open(log, "a", encoding="utf-8")
        self.dump = open(dump, "a", encoding="utf-8") if dump else None
        self.lock = threading.Lock()

    def write(self, file, entry):
        with self.lock:
            file.write(json.dumps(entry) + "\n")
            file.flush()

    def log(self, entry):
        self.write(self.log_file, entry)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "scripted-model"

    def log_message(self, *args):
        pass

    def send_json(self, value, status=200):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events):
        data = b""
        for name, event in events:
            payload = event if isinstance(event, str) else json.dumps(event)
            if name:
                data += f"event: {name}\n".encode()
            data += f"data: {payload}\n\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        state = self.server.state
        state.log({"method": "GET", "path": self.path})
        path = self.path.split("?")[0]
        if path.endswith("/models"):
            self.send_json({"object": "list", "data": [{"id": "scripted", "object": "model", "created": 0,
                                                        "owned_by": "scripted"}], "models": []})
        else:
            self.send_json({})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding") == "zstd":
            state.log({"method": "POST", "path": self.path, "error": "zstd body"})
            self.send_json({"error": {"message": "compressed bodies are not supported"}}, 400)
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        if state.dump:
            state.write(state.dump, {"path": self.path, "headers": dict(self.headers), "body": body})
        path = self.path.split("?")[0]
        entry = {"method": "POST", "path": self.path, "t": round(time.time(), 2)}
        refused = refused_tools(body) if path.endswith(("/chat/completions", "/responses")) else None
        if refused:
            entry.update(api="openai", refused=refused["error"]["message"])
            state.log(entry)
            self.send_json(refused, 400)
            return
        if path.endswith("/chat/completions"):
            entry["api"] = "chat"
            decision, more = decide(state, *openai_chat(body))
            kind, answer = chat_answer(body, decision)
        elif path.endswith("/responses"):
            entry["api"] = "responses"
            decision, more = decide(state, *openai_responses(body))
            kind, answer = responses_answer(body, decision)
        elif path.endswith("/messages/count_tokens"):
            entry["api"] = "anthropic-count"
            state.log(entry)
            self.send_json({"input_tokens": 10})
            return
        elif path.endswith("/messages"):
            entry["api"] = "anthropic"
            decision, more = decide(state, *anthropic(body))
            kind, answer = anthropic_answer(body, decision)
        elif path.endswith(":countTokens"):
            entry["api"] = "gemini-count"
            state.log(entry)
            self.send_json({"totalTokens": 10})
            return
        elif path.endswith(":generateContent") or path.endswith(":streamGenerateContent"):
            entry["api"] = "gemini"
            decision, more = decide(state, *gemini(body))
            kind, answer = gemini_answer(body, decision, path.endswith(":streamGenerateContent"))
        else:
            entry["api"] = "unknown"
            state.log(entry)
            self.send_json({})
            return
        entry.update(more)
        entry.update(decision.log())
        state.log(entry)
        if kind == "json":
            self.send_json(answer)
        else:
            self.send_sse(answer)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--script", choices=sorted(SCRIPTS), required=True)
    parser.add_argument("--bare-names", action="store_true", help="the host offers the MCP tools by their own names")
    parser.add_argument("--dump", help="also append every request, headers and body, to this file")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = State(args.secret, args.script, args.bare_names, args.log, args.dump)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
