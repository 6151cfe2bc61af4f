#!/usr/bin/env python3
"""Check toolreg's exported provider JSON with the providers' own SDK types.

Usage: validate_providers.py DIR

DIR holds what `scripts/check_providers.sh` exports (the Rust tests
`official_validators` in toolreg and `export` in toolreg-mcp): one file per
provider with the declarations toolreg renders (`<provider>.tools.json`) and
one with a tool-call exchange (`<provider>.exchange.json`: the calls as the
provider sends them and the results toolreg renders), and one with results
holding every content block type (`<provider>.blocks.json`: images, audio,
files, links and resources, as each format renders them or falls back).

The SDKs are installed into a virtualenv under target/provider-venv (reused
when present and complete). The script re-runs itself inside it.
"""

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

# Pinned, so CI checks against the same SDKs every run; raise them on purpose.
REQUIREMENTS = [
    "openai==3.54.0",
    "anthropic==2.12.0",
    "google-genai==3.4.0",
    "mcp==2.3.0",
    "botocore==1.44.5",
    "mistral-common==1.13.1",
    "ollama==0.6.3",
]
ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "provider-venv"
STAMP = VENV / "toolreg-requirements.txt"


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv() -> None:
    """Create the virtualenv and install the SDKs, unless already done."""
    wanted = "\n".join(REQUIREMENTS)
    if venv_python().exists() and STAMP.exists() and STAMP.read_text() == wanted:
        return
    if not venv_python().exists():
        print(f"creating virtualenv {VENV}", file=sys.stderr)
        try:
            venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
        except Exception as e:  # noqa: BLE001 - venv raises CalledProcessError, OSError, ...
            sys.exit(f"could not create the virtualenv {VENV} ({e}); Python's venv and ensurepip are needed "
                     "(on Debian and Ubuntu: apt-get install python3-venv)")
    print("installing provider SDKs: " + ", ".join(REQUIREMENTS), file=sys.stderr)
    cmd = [str(venv_python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *REQUIREMENTS]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(
            "could not install the provider SDKs with pip (PyPI must be reachable):\n"
            f"  {' '.join(cmd)}\n{proc.stdout}{proc.stderr}"
        )
    STAMP.write_text(wanted)


def in_venv() -> bool:
    try:
        return Path(sys.prefix).resolve() == VENV.resolve()
    except OSError:
        return False


FAILURES: list[str] = []
CHECKED = 0


def check(label: str, fn) -> None:
    global CHECKED
    CHECKED += 1
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - every SDK raises its own kind
        FAILURES.append(f"{label}: {type(e).__name__}: {e}")


def force(value):
    """`value` with every lazy iterator pydantic returns for an `Iterable`
    field consumed: their items are only validated when read."""
    if isinstance(value, dict):
        return {k: force(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [force(v) for v in value]
    if hasattr(value, "__next__"):
        return [force(v) for v in value]
    return value


def strict(type_, value):
    """Validate `value` as `type_` strictly, nested iterables included."""
    from pydantic import TypeAdapter

    # The adapter must outlive the iterators it returns (pydantic-core
    # panics reading them otherwise).
    adapter = TypeAdapter(type_)
    return force(adapter.validate_python(value, strict=True))


def load(dir: Path, name: str):
    return json.loads((dir / name).read_text())


def validate(dir: Path) -> None:
    import copy
    import warnings

    # google-genai only warns about enum values it does not know (types, modes).
    warnings.filterwarnings("error", message=r".* is not a valid ")

    from pydantic import TypeAdapter

    # OpenAI Chat Completions and Responses.
    import openai.types.chat as chat
    import openai.types.responses as responses
    from openai.lib._pydantic import _ensure_strict_json_schema
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    def strict_fixpoint(schema):
        again = _ensure_strict_json_schema(copy.deepcopy(schema), path=(), root=copy.deepcopy(schema))
        if again != schema:
            raise ValueError(f"not a fixpoint of _ensure_strict_json_schema:\n{json.dumps(again)}\n!=\n{json.dumps(schema)}")

    for tool in load(dir, "openai_chat.tools.json"):
        name = tool["function"]["name"]
        check(f"openai_chat tool {name}", lambda t=tool: strict(chat.ChatCompletionFunctionToolParam, t))
        if tool["function"].get("strict"):
            check(f"openai_chat strict schema {name}", lambda t=tool: strict_fixpoint(t["function"]["parameters"]))
    ex = load(dir, "openai_chat.exchange.json")
    msg_ta = TypeAdapter(chat.ChatCompletionMessageParam)
    check("openai_chat response", lambda: chat.ChatCompletion.model_validate(ex["response"]))
    check("openai_chat assistant message", lambda: force(msg_ta.validate_python(ex["response"]["choices"][0]["message"])))
    for r in ex["results"]:
        check(f"openai_chat result {r['tool_call_id']}", lambda r=r: strict(chat.ChatCompletionToolMessageParam, r))
    for tool in load(dir, "openai_responses.tools.json"):
        check(f"openai_responses tool {tool['name']}", lambda t=tool: strict(responses.FunctionToolParam, t))
        if tool.get("strict"):
            check(f"openai_responses strict schema {tool['name']}", lambda t=tool: strict_fixpoint(t["parameters"]))
    ex = load(dir, "openai_responses.exchange.json")
    for item in ex["response"]["output"]:
        if item["type"] == "function_call":
            check("openai_responses call", lambda i=item: responses.ResponseFunctionToolCall.model_validate(i))
    for r in ex["results"]:
        check(f"openai_responses result {r['call_id']}", lambda r=r: strict(FunctionCallOutput, r))
    # Native (client-executed) tool search: the `tool_search` tool and the
    # deferred functions, the model's `tool_search_call` as it reads in a
    # response and as it goes back in `input`, and the `tool_search_output`.
    from openai.types.responses.response_input_item_param import ToolSearchCall
    native = load(dir, "openai_responses.native_search.json")
    from openai.types.responses.response_function_tool_call_param import ResponseFunctionToolCallParam
    for tool in native["tools"]:
        if tool["type"] == "tool_search":
            check("openai_responses native search tool_search", lambda t=tool: strict(responses.ToolSearchToolParam, t))
        elif tool["type"] == "namespace":
            check(f"openai_responses native search namespace {tool['name']}",
                  lambda t=tool: strict(responses.NamespaceToolParam, t))
        else:
            check(f"openai_responses native search tool {tool['name']}", lambda t=tool: strict(responses.FunctionToolParam, t))
    check("openai_responses native search response", lambda: responses.Response.model_validate(native["response"]))
    for item in native["response"]["output"]:
        if item["type"] == "function_call":
            check("openai_responses namespaced call", lambda i=item: responses.ResponseFunctionToolCall.model_validate(i))
        else:
            check("openai_responses tool_search_call", lambda i=item: responses.ResponseToolSearchCall.model_validate(i))
    for item in native["calls"]:
        if item["type"] == "function_call":
            check("openai_responses namespaced call input", lambda i=item: strict(ResponseFunctionToolCallParam, i))
        else:
            check("openai_responses tool_search_call input", lambda i=item: strict(ToolSearchCall, i))
    for item in native["results"]:
        if item["type"] == "function_call_output":
            check(f"openai_responses namespaced result {item['call_id']}", lambda r=item: strict(FunctionCallOutput, r))
            continue
        check("openai_responses tool_search_output",
              lambda i=item: strict(responses.ResponseToolSearchOutputItemParamParam, i))
        for tool in item["tools"]:
            if tool["type"] == "namespace":
                check(f"openai_responses tool_search_output namespace {tool['name']}",
                      lambda t=tool: strict(responses.ToolSearchOutputNamespaceToolParam, t))
            else:
                check(f"openai_responses tool_search_output tool {tool['name']}",
                      lambda t=tool: strict(responses.FunctionToolParam, t))

    # Anthropic.
    import anthropic
    from anthropic.types import Message, ToolParam, ToolResultBlockParam
    for file in ["anthropic.tools.json", "anthropic_strict.tools.json"]:
        for tool in load(dir, file):
            check(f"{file} {tool['name']}", lambda t=tool: strict(ToolParam, t))
            if tool.get("strict"):
                def fixpoint(t=tool):
                    again = anthropic.transform_schema(copy.deepcopy(t["input_schema"]))
                    if again != t["input_schema"]:
                        raise ValueError(f"not a fixpoint of transform_schema:\n{json.dumps(again)}\n!=\n{json.dumps(t['input_schema'])}")
                check(f"{file} strict schema {tool['name']}", fixpoint)
    native = load(dir, "anthropic.native_search.json")
    for tool in native["tools"]:
        check(f"anthropic native search tool {tool['name']}", lambda t=tool: strict(ToolParam, t))
    for r in native["results"]["content"]:
        check(f"anthropic native search result {r['tool_use_id']}", lambda r=r: strict(ToolResultBlockParam, r))
    ex = load(dir, "anthropic.exchange.json")
    check("anthropic response", lambda: Message.model_validate(ex["response"]))
    for r in ex["results"]["content"]:
        check(f"anthropic result {r['tool_use_id']}", lambda r=r: strict(ToolResultBlockParam, r))

    # Gemini.
    from google.genai import types as gtypes

    for file in ["gemini.tools.json", "gemini_json_schema.tools.json"]:
        for tool in load(dir, file):
            check(f"{file}", lambda t=tool: gtypes.Tool.model_validate(t))
            for fd in tool["functionDeclarations"]:
                if "parameters" in fd:
                    check(f"{file} {fd['name']} parameters", lambda fd=fd: gtypes.Schema.model_validate(fd["parameters"]))
    ex = load(dir, "gemini.exchange.json")
    check("gemini response", lambda: gtypes.GenerateContentResponse.model_validate(ex["response"]))
    check("gemini results content", lambda: gtypes.Content.model_validate(ex["results"]))

    # MCP.
    import mcp.types as mt

    for tool in load(dir, "mcp.tools.json"):
        check(f"mcp tool {tool['name']}", lambda t=tool: mt.Tool.model_validate(t, strict=True))
    ex = load(dir, "mcp.exchange.json")
    for req in ex["requests"]:
        check(f"mcp request {req['id']}", lambda req=req: mt.CallToolRequest.model_validate(req))
    for resp in ex["responses"]:
        if "result" in resp:
            check(f"mcp result {resp['id']}", lambda r=resp: mt.CallToolResult.model_validate(r["result"], strict=True))
        else:
            check(f"mcp error {resp['id']}", lambda r=resp: mt.JSONRPCError.model_validate(r))
    check("mcp tools/list page", lambda: mt.ListToolsResult.model_validate(ex["list_page"]))
    check("mcp tools/list page (2026-07-28)", lambda: mt.ListToolsResult.model_validate(ex["list_page_2026"], strict=True))
    for resp in ex["responses_2026"]:
        if "result" in resp:
            def complete(r=resp):
                parsed = mt.CallToolResult.model_validate(r["result"], strict=True)
                if parsed.result_type != "complete":
                    raise ValueError(f"resultType {parsed.result_type}")
            check(f"mcp result (2026-07-28) {resp['id']}", complete)

    # Bedrock Converse.
    import botocore.session
    from botocore.validate import ParamValidator

    shape = botocore.session.get_session().get_service_model("bedrock-runtime").operation_model("Converse").input_shape
    ex = load(dir, "bedrock.exchange.json")
    request = {
        "modelId": "anthropic.claude-sonnet",
        "messages": [
            {"role": "user", "content": [{"text": "Please use the tools."}]},
            ex["response"]["output"]["message"],
            ex["results"],
        ],
        "toolConfig": {"tools": load(dir, "bedrock.tools.json")},
    }

    def bedrock():
        report = ParamValidator().validate(request, shape)
        if report.has_errors():
            raise ValueError(report.generate_report())

    check("bedrock Converse request", bedrock)

    # Mistral.
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.protocol.instruct.validator import MistralRequestValidatorV3

    ex = load(dir, "mistral.exchange.json")
    tools = load(dir, "mistral.tools.json")

    def mistral():
        assistant = ex["response"]["choices"][0]["message"]
        assistant = {"role": "assistant", "content": None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
            for c in ex["calls"]
        ]}
        request = ChatCompletionRequest.model_validate({
            "model": "mistral-large-latest",
            "messages": [{"role": "user", "content": "Please use the tools."}, assistant, *ex["results"]],
            "tools": tools,
        })
        MistralRequestValidatorV3().validate_request(request)

    check("mistral request", mistral)

    # Tool choices.
    from anthropic.types import ToolChoiceParam
    from mistral_common.protocol.instruct.request import ChatCompletionRequest as MistralRequest
    from openai.types.responses.response_create_params import ToolChoice as ResponsesToolChoice

    choices = load(dir, "tool_choices.json")
    for c in choices["openai_chat"]:
        check(f"openai_chat tool_choice {c}", lambda c=c: strict(chat.ChatCompletionToolChoiceOptionParam, c))
    for c in choices["openai_responses"]:
        check(f"openai_responses tool_choice {c}", lambda c=c: strict(ResponsesToolChoice, c))
    for c in choices["anthropic"]:
        check(f"anthropic tool_choice {c}", lambda c=c: strict(ToolChoiceParam, c))
    for c in choices["gemini"]:
        check(f"gemini toolConfig {c}", lambda c=c: gtypes.ToolConfig.model_validate(c))
    for c in choices["bedrock"]:
        def bedrock_choice(c=c):
            req = {**request, "toolConfig": {"tools": request["toolConfig"]["tools"], "toolChoice": c}}
            report = ParamValidator().validate(req, shape)
            if report.has_errors():
                raise ValueError(report.generate_report())
        check(f"bedrock toolChoice {c}", bedrock_choice)
    for c in choices["mistral"]:
        check(f"mistral tool_choice {c}", lambda c=c: MistralRequest.model_validate({
            "messages": [{"role": "user", "content": "hi"}], "tools": tools, "tool_choice": c}))

    # Ollama takes the OpenAI function shape.
    for tool in load(dir, "ollama.tools.json"):
        check(f"ollama tool {tool['function']['name']}", lambda t=tool: strict(chat.ChatCompletionFunctionToolParam, t))

    validate_blocks(dir)


def validate_blocks(dir: Path) -> None:
    """Results with every content block type, checked with each SDK's own types."""
    import base64
    import json as jsonlib

    def b64(text):
        base64.b64decode(text, validate=True)

    def data_url(url):
        head, _, data = url.partition(";base64,")
        if not head.startswith("data:") or not data:
            raise ValueError(f"not a base64 data URL: {url[:40]}")
        b64(data)

    # OpenAI Chat Completions: text-only tool messages, then one user message.
    import openai.types.chat as chat

    ex = load(dir, "openai_chat.blocks.json")
    *tool_messages, follow_up = ex["messages"]
    for m in tool_messages:
        check(f"openai_chat blocks tool message {m['tool_call_id']}",
              lambda m=m: strict(chat.ChatCompletionToolMessageParam, m))
    check("openai_chat blocks user message",
          lambda: strict(chat.ChatCompletionUserMessageParam, follow_up))
    def all_kinds():
        kinds = {part["type"] for part in follow_up["content"]}
        if kinds != {"text", "image_url", "input_audio", "file"}:
            raise ValueError(f"part types {kinds}")
    check("openai_chat blocks user message parts", all_kinds)
    for part in follow_up["content"]:
        if part["type"] == "image_url":
            check("openai_chat image data URL", lambda p=part: data_url(p["image_url"]["url"]))
        if part["type"] == "file":
            check("openai_chat file data URL", lambda p=part: data_url(p["file"]["file_data"]))
        if part["type"] == "input_audio":
            check("openai_chat audio base64", lambda p=part: b64(p["input_audio"]["data"]))
    assistant = {"role": "assistant", "content": None, "tool_calls": [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": "{}"}} for c in ex["calls"]]}
    check("openai_chat blocks conversation",
          lambda: [strict(chat.ChatCompletionMessageParam, m)
                   for m in [{"role": "user", "content": "Show me."}, assistant, *ex["messages"]]])

    # OpenAI Responses: `output` as a list of input_text / input_image / input_file.
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    ex = load(dir, "openai_responses.blocks.json")
    for item in ex["messages"]:
        check(f"openai_responses blocks {item['call_id']}",
              lambda i=item: strict(FunctionCallOutput, i))
        if isinstance(item["output"], list):
            for part in item["output"]:
                if part["type"] == "input_image":
                    check("openai_responses image data URL", lambda p=part: data_url(p["image_url"]))
                if part["type"] == "input_file":
                    check("openai_responses file data URL", lambda p=part: data_url(p["file_data"]))

    # Anthropic: tool_result content arrays of text, image and document blocks.
    from anthropic.types import MessageParam, ToolResultBlockParam

    ex = load(dir, "anthropic.blocks.json")
    turn = ex["messages"][0]
    check("anthropic blocks user turn", lambda: strict(MessageParam, turn))
    for block in turn["content"]:
        check(f"anthropic blocks {block['tool_use_id']}",
              lambda b=block: strict(ToolResultBlockParam, b))
        if isinstance(block["content"], list):
            for part in block["content"]:
                if part.get("source", {}).get("type") == "base64":
                    check("anthropic base64 source", lambda p=part: b64(p["source"]["data"]))

    # Gemini: functionResponse with multimodal parts (bytes as base64 in JSON).
    from google.genai import types as gtypes

    ex = load(dir, "gemini.blocks.json")
    check("gemini blocks content", lambda: gtypes.Content.model_validate_json(jsonlib.dumps(ex["messages"][0])))
    def gemini_parts():
        content = gtypes.Content.model_validate_json(jsonlib.dumps(ex["messages"][0]))
        blobs = [p.inline_data for part in content.parts for p in (part.function_response.parts or [])]
        if not blobs or not all(b.data and b.mime_type for b in blobs):
            raise ValueError(f"function response parts lost: {blobs}")
    check("gemini blocks inlineData", gemini_parts)

    # Bedrock Converse: toolResult content blocks in a whole request.
    import botocore.session
    from botocore.validate import ParamValidator

    shape = botocore.session.get_session().get_service_model("bedrock-runtime").operation_model("Converse").input_shape
    ex = load(dir, "bedrock.blocks.json")
    def bedrock():
        assistant = {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": c["id"], "name": c["name"], "input": {}}} for c in ex["calls"]]}
        request = {"modelId": "anthropic.claude-sonnet", "messages": [
            {"role": "user", "content": [{"text": "Show me."}]}, assistant, ex["messages"][0]]}
        report = ParamValidator().validate(request, shape)
        if report.has_errors():
            raise ValueError(report.generate_report())
    check("bedrock blocks Converse request", bedrock)
    # botocore's validator leaves enums and patterns to the service: check them here.
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    image_formats = model.shape_for("ImageFormat").enum
    document_formats = model.shape_for("DocumentFormat").enum
    def bedrock_enums():
        import re
        for block in ex["messages"][0]["content"]:
            for c in block["toolResult"]["content"]:
                if "image" in c and c["image"]["format"] not in image_formats:
                    raise ValueError(f"image format {c['image']['format']}")
                if "document" in c:
                    if c["document"]["format"] not in document_formats:
                        raise ValueError(f"document format {c['document']['format']}")
                    # The API reference: letters, digits, single spaces, hyphens, parentheses, brackets.
                    if not re.fullmatch(r"[A-Za-z0-9\-()\[\]]+( [A-Za-z0-9\-()\[\]]+)*", c["document"]["name"]):
                        raise ValueError(f"document name {c['document']['name']!r}")
                for media in ("image", "document"):
                    if media in c:
                        b64(c[media]["source"]["bytes"])
    check("bedrock blocks formats and names", bedrock_enums)

    # Mistral: tool messages, then one user message with image and audio chunks
    # (audio needs a v7+ tokenizer: the v11 validator).
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.protocol.instruct.validator import MistralRequestValidatorV11

    ex = load(dir, "mistral.blocks.json")
    def mistral():
        assistant = {"role": "assistant", "content": None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": "{}"}} for c in ex["calls"]]}
        request = ChatCompletionRequest.model_validate({
            "model": "mistral-small-latest",
            "messages": [{"role": "user", "content": "Show me."}, assistant, *ex["messages"]],
        })
        MistralRequestValidatorV11().validate_request(request)
    check("mistral blocks request", mistral)

    # Ollama: the client's own message model turns the request into what it sends.
    from ollama import Message
    from ollama._client import _copy_messages

    ex = load(dir, "ollama.blocks.json")
    def ollama():
        sent = [m.model_dump(exclude_none=True) for m in _copy_messages(ex["messages"])]
        if sent != ex["messages"]:
            raise ValueError(f"the client would send something else:\n{sent}\n!=\n{ex['messages']}")
        if not any(m.get("images") for m in sent):
            raise ValueError("no images")
    check("ollama blocks messages", ollama)


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if not in_venv():
        ensure_venv()
        os.execv(str(venv_python()), [str(venv_python()), __file__, *sys.argv[1:]])
    try:
        validate(Path(sys.argv[1]))
    except FileNotFoundError as e:
        sys.exit(f"missing export file {e.filename}; scripts/check_providers.sh writes them")
    except ImportError as e:
        STAMP.unlink(missing_ok=True)
        sys.exit(f"a provider SDK is missing from {VENV} ({e}); run again to reinstall")
    if FAILURES:
        print(f"{len(FAILURES)} of {CHECKED} checks failed:", file=sys.stderr)
        for f in FAILURES:
            print(f"  - {f}", file=sys.stderr)
        sys.exit(1)
    print(f"all {CHECKED} checks passed")


if __name__ == "__main__":
    main()
