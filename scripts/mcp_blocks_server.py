"""A fixture MCP server written with the official MCP Python SDK, on stdio.

Used by scripts/mcp_python_client.py behind `toolreg serve --config`, to check
that the gateway passes a third-party server's results on block for block.

Tools:
- blocks: every content block type (text, image, audio, resource_link,
  embedded resource with text and with blob), annotated, with structuredContent;
- progress: reports progress twice (on the request's token), then answers;
- ask: asks the user for a name (elicitation) and answers with what it got.

Resources: mem://notes (text) and the template mem://notes/{id}; the prompt greet(who).
"""
import mcp.types as types
from pydantic import BaseModel
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("blocks")

FOR_USER = types.Annotations(audience=["user"], priority=0.25)
BLOCKS = [
    types.TextContent(type="text", text="The chart:", annotations=FOR_USER),
    types.ImageContent(type="image", data="iVBORw==", mime_type="image/png", annotations=FOR_USER),
    types.AudioContent(type="audio", data="AQI=", mime_type="audio/wav"),
    types.ResourceLink(type="resource_link", uri="file:///data.csv", name="data.csv", mime_type="text/csv",
                       annotations=types.Annotations(audience=["assistant"])),
    types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
        uri="mem://notes", mime_type="text/plain", text="three points")),
    types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
        uri="mem://raw", mime_type="application/octet-stream", blob="AP8="), annotations=types.Annotations(priority=1.0)),
]


@server.tool(description="Every content block type.")
def blocks() -> types.CallToolResult:
    return types.CallToolResult(content=BLOCKS, structured_content={"points": 3})


@server.tool(description="Reports progress twice.")
async def progress(ctx: Context) -> str:
    await ctx.report_progress(1, 2, "step 1")
    await ctx.report_progress(2, 2, "step 2")
    return "done"


class Name(BaseModel):
    name: str


@server.tool(description="Asks the user for a name.")
async def ask(ctx: Context) -> str:
    answer = await ctx.elicit("Your name?", schema=Name)
    return f"{answer.action}: {answer.data.name if answer.data else None}"


@server.resource("mem://notes", name="notes", mime_type="text/plain")
def notes() -> str:
    return "three points"


@server.resource("mem://notes/{id}", name="note", mime_type="text/plain")
def note(id: str) -> str:
    return f"note {id}"


@server.prompt(description="Greet someone.")
def greet(who: str) -> str:
    return f"Hello, {who}"


if __name__ == "__main__":
    server.run("stdio")
