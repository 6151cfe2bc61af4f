"""Run one conversation through a Python agent host, connected to `toolreg serve`.

The hosts, as their users set them up:

- `openai-agents`: the OpenAI Agents SDK's `Agent` and `Runner`, on the
  Responses API (its default), with `MCPServerStdio` or
  `MCPServerStreamableHttp`;
- `pydantic-ai`: a Pydantic AI `Agent` on `OpenAIChatModel` (Chat
  Completions) with an `MCPToolset`;
- `fastmcp`: the FastMCP `Client`, with the few lines of agent loop an
  application writes around it: list the tools, offer them to the model
  (Chat Completions), call what the model calls, until it answers.

The model is the scripted endpoint (model.py) at --base-url. The final answer
is printed on stdout.

Usage: python_hosts.py HOST --base-url URL --prompt TEXT (--http URL | -- COMMAND ARGS...)
"""

import argparse
import asyncio
import json
import os
import sys
import urllib.request


def log_quietly():
    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


async def openai_agents(args):
    from agents import Agent, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
    from agents.models.openai_responses import OpenAIResponsesModel
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    model = OpenAIResponsesModel(model="scripted", openai_client=AsyncOpenAI(base_url=args.base_url, api_key="dummy"))
    if args.http:
        server = MCPServerStreamableHttp({"url": args.http}, name="toolreg", client_session_timeout_seconds=30)
    else:
        command, *rest = args.command
        server = MCPServerStdio({"command": command, "args": rest, "cwd": os.getcwd()}, name="toolreg",
                                client_session_timeout_seconds=30)
    async with server:
        agent = Agent(name="assistant", instructions="Use the tools to answer.", mcp_servers=[server], model=model)
        result = await Runner.run(agent, args.prompt, max_turns=6)
        return str(result.final_output)


async def pydantic_ai(args):
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("scripted", provider=OpenAIProvider(base_url=args.base_url, api_key="dummy"))
    if args.http:
        toolset = MCPToolset(args.http)
    else:
        command, *rest = args.command
        toolset = MCPToolset(StdioTransport(command=command, args=rest, cwd=os.getcwd()))
    agent = Agent(model, toolsets=[toolset], instructions="Use the tools to answer.")
    async with agent:
        result = await agent.run(args.prompt)
    return str(result.output)


def chat(base_url, messages, tools):
    body = json.dumps({"model": "scripted", "messages": messages, "tools": tools}).encode()
    request = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer dummy"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["choices"][0]["message"]


async def fastmcp_client(args):
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    if args.http:
        client = Client(args.http)
    else:
        command, *rest = args.command
        client = Client(StdioTransport(command=command, args=rest, cwd=os.getcwd()))
    messages = [{"role": "user", "content": args.prompt}]
    async with client:
        for _ in range(6):
            tools = [
                {"type": "function",
                 "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema}}
                for t in await client.list_tools()
            ]
            message = await asyncio.to_thread(chat, args.base_url, messages, tools)
            messages.append(message)
            if not message.get("tool_calls"):
                return message.get("content") or ""
            for call in message["tool_calls"]:
                result = await client.call_tool(call["function"]["name"], json.loads(call["function"]["arguments"]),
                                                raise_on_error=False)
                text = "\n".join(block.text for block in result.content if getattr(block, "text", None) is not None)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
    return "the model did not answer"


HOSTS = {"openai-agents": openai_agents, "pydantic-ai": pydantic_ai, "fastmcp": fastmcp_client}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("host", choices=sorted(HOSTS))
    parser.add_argument("--base-url", required=True, help="the model endpoint, with /v1")
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--http", help="the MCP server's URL (default: start COMMAND over stdio)")
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[: len(argv) - len(command) - 1] if command else argv)
    args.command = command
    if not args.http and not args.command:
        parser.error("give --http URL or a command")
    log_quietly()
    print(asyncio.run(HOSTS[args.host](args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
