#!/usr/bin/env bash
# Drive `toolreg serve` with the official MCP Python SDK's client, over stdio
# and streamable HTTP (scripts/mcp_python_client.py), and as the gateway
# (`toolreg serve --config`) in front of a fixture server written with the
# same SDK (scripts/mcp_blocks_server.py): every content block type and
# progress, passed on unchanged. Approval of a dangerous call is answered by
# the SDK client's user on a handshake-era and on a 2026-07-28 connection.
# The gateway in deferred mode (`--deferred`) is listed, searched, told of
# what a search loads, and called through `call_tool`.
#
# The SDK is installed into a virtualenv under target/mcp-venv by
# scripts/mcp_venv.sh (reused while the pinned version is unchanged). Needs
# Python 3 with venv and pip, and PyPI reachable the first time.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/mcp_venv.sh

cargo build --quiet -p toolreg-cli
"$venv/bin/python" scripts/mcp_python_client.py "$target/debug/toolreg"
