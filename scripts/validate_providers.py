#!/usr/bin/env python3
"""Check toolreg's exported provider JSON with the providers' own SDK types.

Usage: validate_providers.py DIR

DIR holds what `scripts/check_providers.sh` exports (the Rust tests
`official_validators` in toolreg and `export` in toolreg-mcp): one file per
provider with the declarations toolreg renders (`<provider>.tools.json`) and
one with a tool-call exchange (`<provider>.exchange.json`: the calls as the
provider sends them and the results toolreg renders).

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

    tool_ta = TypeAdapter(chat.ChatCompletionFunctionToolParam)
    for tool in load(dir, "openai_chat.tools.json"):
        name = tool["function"]["name"]
        check(f"openai_chat tool {name}", lambda t=tool: tool_ta.validate_python(t, strict=True))
        if tool["function"].get("strict"):
            check(f"openai_chat strict schema {name}", lambda t=tool: strict_fixpoint(t["function"]["parameters"]))
    ex = load(dir, "openai_chat.exchange.json")
    msg_ta = TypeAdapter(chat.ChatCompletionMessageParam)
    check("openai_chat response", lambda: chat.ChatCompletion.model_validate(ex["response"]))
    check("openai_chat assistant message", lambda: msg_ta.validate_python(ex["response"]["choices"][0]["message"]))
    for r in ex["results"]:
        check(f"openai_chat result {r['tool_call_id']}", lambda r=r: TypeAdapter(chat.ChatCompletionToolMessageParam).validate_python(r, strict=True))

    fn_ta = TypeAdapter(responses.FunctionToolParam)
    for tool in load(dir, "openai_responses.tools.json"):
        check(f"openai_responses tool {tool['name']}", lambda t=tool: fn_ta.validate_python(t, strict=True))
        if tool.get("strict"):
            check(f"openai_responses strict schema {tool['name']}", lambda t=tool: strict_fixpoint(t["parameters"]))
    ex = load(dir, "openai_responses.exchange.json")
    for item in ex["response"]["output"]:
        if item["type"] == "function_call":
            check("openai_responses call", lambda i=item: responses.ResponseFunctionToolCall.model_validate(i))
    for r in ex["results"]:
        check(f"openai_responses result {r['call_id']}", lambda r=r: TypeAdapter(FunctionCallOutput).validate_python(r, strict=True))

    # Anthropic.
    import anthropic
    from anthropic.types import Message, ToolParam, ToolResultBlockParam

    at = TypeAdapter(ToolParam)
    for file in ["anthropic.tools.json", "anthropic_strict.tools.json"]:
        for tool in load(dir, file):
            check(f"{file} {tool['name']}", lambda t=tool: at.validate_python(t, strict=True))
            if tool.get("strict"):
                def fixpoint(t=tool):
                    again = anthropic.transform_schema(copy.deepcopy(t["input_schema"]))
                    if again != t["input_schema"]:
                        raise ValueError(f"not a fixpoint of transform_schema:\n{json.dumps(again)}\n!=\n{json.dumps(t['input_schema'])}")
                check(f"{file} strict schema {tool['name']}", fixpoint)
    ex = load(dir, "anthropic.exchange.json")
    check("anthropic response", lambda: Message.model_validate(ex["response"]))
    rt = TypeAdapter(ToolResultBlockParam)
    for r in ex["results"]["content"]:
        check(f"anthropic result {r['tool_use_id']}", lambda r=r: rt.validate_python(r, strict=True))

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
        check(f"openai_chat tool_choice {c}", lambda c=c: TypeAdapter(chat.ChatCompletionToolChoiceOptionParam).validate_python(c, strict=True))
    for c in choices["openai_responses"]:
        check(f"openai_responses tool_choice {c}", lambda c=c: TypeAdapter(ResponsesToolChoice).validate_python(c, strict=True))
    for c in choices["anthropic"]:
        check(f"anthropic tool_choice {c}", lambda c=c: TypeAdapter(ToolChoiceParam).validate_python(c, strict=True))
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
        check(f"ollama tool {tool['function']['name']}", lambda t=tool: tool_ta.validate_python(t, strict=True))


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
