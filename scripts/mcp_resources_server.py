"""An MCP server on stdio (standard library only) with the resources and
prompts the official conformance suite reads by name, for
scripts/check_mcp_conformance.sh to put behind the gateway
(`toolreg serve --config`).

Resources: test://static-text, test://static-binary, the template
test://template/{id}/data. Prompts: test_simple_prompt,
test_prompt_with_arguments (arg1, arg2), test_prompt_with_embedded_resource
(resourceUri), test_prompt_with_image. No tools.
"""
import json
import sys

RED_PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

RESOURCES = [
    {"uri": "test://static-text", "name": "static_text", "mimeType": "text/plain"},
    {"uri": "test://static-binary", "name": "static_binary", "mimeType": "image/png"},
    {"uri": "test://watched-resource", "name": "watched_resource", "mimeType": "text/plain"},
]
TEMPLATES = [{"uriTemplate": "test://template/{id}/data", "name": "template_data", "mimeType": "application/json"}]
PROMPTS = [
    {"name": "test_simple_prompt", "description": "A simple prompt."},
    {"name": "test_prompt_with_arguments", "description": "A prompt with arguments.", "arguments": [
        {"name": "arg1", "description": "First test argument", "required": True},
        {"name": "arg2", "description": "Second test argument", "required": True}]},
    {"name": "test_prompt_with_embedded_resource", "description": "A prompt with a resource.", "arguments": [
        {"name": "resourceUri", "description": "URI of the resource to embed", "required": True}]},
    {"name": "test_prompt_with_image", "description": "A prompt with an image."},
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def user(content):
    return {"role": "user", "content": content}


def text(words):
    return {"type": "text", "text": words}


def read(uri):
    if uri == "test://static-text":
        return [{"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."}]
    if uri == "test://watched-resource":
        return [{"uri": uri, "mimeType": "text/plain", "text": "A resource to subscribe to."}]
    if uri == "test://static-binary":
        return [{"uri": uri, "mimeType": "image/png", "blob": RED_PIXEL}]
    parts = uri.split("/")
    if uri.startswith("test://template/") and len(parts) == 5 and parts[4] == "data" and parts[3]:
        id = parts[3]
        body = json.dumps({"id": id, "templateTest": True, "data": "Data for ID: " + id}, separators=(",", ":"))
        return [{"uri": uri, "mimeType": "application/json", "text": body}]
    return None


def prompt(name, args):
    if name == "test_simple_prompt":
        return [user(text("This is a simple prompt for testing."))]
    if name == "test_prompt_with_arguments":
        return [user(text("Prompt with arguments: arg1='%s', arg2='%s'" % (args.get("arg1"), args.get("arg2"))))]
    if name == "test_prompt_with_embedded_resource":
        resource = {"uri": args.get("resourceUri", ""), "mimeType": "text/plain",
                    "text": "Embedded resource content for testing."}
        return [user({"type": "resource", "resource": resource}),
                user(text("Please process the embedded resource above."))]
    if name == "test_prompt_with_image":
        return [user({"type": "image", "data": RED_PIXEL, "mimeType": "image/png"}),
                user(text("Please analyze the image above."))]
    return None


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    message = json.loads(line)
    method, id, params = message.get("method"), message.get("id"), message.get("params") or {}
    if id is None:
        continue
    if method == "initialize":
        answer = {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                  "capabilities": {"resources": {"subscribe": True}, "prompts": {}},
                  "serverInfo": {"name": "conformance-resources", "version": "1"}}
    elif method == "ping":
        answer = {}
    elif method == "tools/list":
        answer = {"tools": []}
    elif method == "resources/list":
        answer = {"resources": RESOURCES}
    elif method == "resources/templates/list":
        answer = {"resourceTemplates": TEMPLATES}
    elif method in ("resources/subscribe", "resources/unsubscribe"):
        answer = {}
    elif method == "resources/read":
        contents = read(params.get("uri", ""))
        if contents is None:
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32002, "message": "no resource " + params.get("uri", "")}})
            continue
        answer = {"contents": contents}
    elif method == "prompts/list":
        answer = {"prompts": PROMPTS}
    elif method == "prompts/get":
        messages = prompt(params.get("name"), params.get("arguments") or {})
        if messages is None:
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "no prompt " + str(params.get("name"))}})
            continue
        answer = {"messages": messages}
    else:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no method " + str(method)}})
        continue
    send({"jsonrpc": "2.0", "id": id, "result": answer})
