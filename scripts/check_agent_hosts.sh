#!/usr/bin/env bash
# Drive `toolreg serve` with the agent hosts people use, each run by a
# scripted model (scripts/agent_hosts/model.py) instead of a real one:
#
#   codex (@openai/codex), Claude Code (@anthropic-ai/claude-code), Gemini
#   CLI (@google/gemini-cli) and opencode (opencode-ai) from npm; the OpenAI
#   Agents SDK (openai-agents), Pydantic AI (pydantic-ai-slim) and the FastMCP
#   client (fastmcp) from PyPI (scripts/agent_hosts/python_hosts.py).
#
# Each host talks to toolreg over stdio and over streamable HTTP, through two
# scripts: `basic` (the model calls `read_file` on a file of the served root
# and answers with the secret only that file holds) and `deferred` (`serve
# --deferred-past 0`: the model calls `search_tools`, then `call_tool` with
# `read_file`). A run passes when the host prints the final answer with the
# secret, the model endpoint saw the secret in a tool result the host sent
# back, and the host did not warn about the tools' schemas. The endpoint
# refuses, as OpenAI does, a tool marked `strict` whose schema strict mode
# does not take.
#
# The hosts run offline but for the endpoint: a home directory of their own
# per run, API-key modes with dummy keys, telemetry, update checks and
# downloads turned off. Every version is pinned; the hosts are installed
# under target/agent-hosts (npm and a virtualenv) the first time, and kept.
# Each run's files (host output, the endpoint's log and requests) stay in
# target/agent-hosts/runs/HOST-TRANSPORT-SCRIPT until the next check.
#
# Usage: scripts/check_agent_hosts.sh [HOST...]   (default: every host)
# TRANSPORTS="stdio" or SCRIPTS="basic" narrow the runs.
set -euo pipefail
cd "$(dirname "$0")/.."

CODEX_VERSION=0.171.0
CLAUDE_CODE_VERSION=2.1.332
GEMINI_CLI_VERSION=0.61.0
OPENCODE_VERSION=1.18.33
PYTHON_HOSTS=(openai-agents==0.24.0 "pydantic-ai-slim[openai]==2.68.0" fastmcp==4.2.3)
HOSTS="codex claude-code gemini-cli opencode openai-agents pydantic-ai fastmcp"
# Seconds one host run may take.
RUN_TIMEOUT=120

target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
base="$target/agent-hosts"
npm_prefix="$base/npm"
venv="$base/venv"
scripts="$PWD/scripts/agent_hosts"
python="${PYTHON:-python3}"

# ---------------------------------------------------------------- installs

npm_packages="@openai/codex@$CODEX_VERSION @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION
    @google/gemini-cli@$GEMINI_CLI_VERSION opencode-ai@$OPENCODE_VERSION"
stamp="$npm_prefix/.installed-$(echo $npm_packages | tr ' /@' '_+-')"
if [ ! -f "$stamp" ]; then
    rm -rf "$npm_prefix"
    mkdir -p "$npm_prefix"
    # No install scripts (some build native modules the hosts do not need),
    # but Claude Code's and opencode's, which put the platform binary (an
    # optional dependency) in place, from local files.
    npm install --prefix "$npm_prefix" --silent --no-audit --no-fund --ignore-scripts $npm_packages >/dev/null 2>&1 \
        && (cd "$npm_prefix/node_modules/@anthropic-ai/claude-code" && node install.cjs >/dev/null) \
        && (cd "$npm_prefix/node_modules/opencode-ai" && node postinstall.mjs >/dev/null) \
        || { echo "could not install the agent hosts from npm ($npm_packages)" >&2; exit 1; }
    touch "$stamp"
fi
stamp="$venv/.installed-$(echo "${PYTHON_HOSTS[*]}" | tr ' []=' '_+-')"
if [ ! -f "$stamp" ]; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "${PYTHON_HOSTS[@]}" \
        || { echo "could not install the Python agent hosts from PyPI (${PYTHON_HOSTS[*]})" >&2; exit 1; }
    touch "$stamp"
fi
nbin="$npm_prefix/node_modules/.bin"

cargo build --quiet -p toolreg-cli
toolreg="$target/debug/toolreg"

# ---------------------------------------------------------------- helpers

free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# Both wait up to 30 s (a loaded machine starts processes slowly).
wait_for_port() {
    for _ in $(seq 300); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
wait_for_file() {
    for _ in $(seq 300); do
        [ -s "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# The environment every host runs in: its own home, nothing inherited that
# names a real account or endpoint, no update checks or telemetry.
# Sets `clean` to the command prefix.
host_env() { # home
    local home=$1
    mkdir -p "$home/tmp"
    clean=(env -i "PATH=$PATH" "HOME=$home" "USER=${USER:-ci}" "LANG=C.UTF-8" "TERM=dumb"
        "XDG_CONFIG_HOME=$home/.config" "XDG_DATA_HOME=$home/.local/share" "XDG_CACHE_HOME=$home/.cache"
        "XDG_STATE_HOME=$home/.local/state" "TMPDIR=$home/tmp" "NO_UPDATE_NOTIFIER=1" "DO_NOT_TRACK=1" "CI=1")
}

# ---------------------------------------------------------------- hosts
# Each `run_HOST` is called in the run's directory with: the transport
# (stdio|http), the script (basic|deferred), the model endpoint's base URL
# (no path), the MCP URL (http) and the server's arguments (stdio), the
# prompt. It prints the host's output.

PROMPT="Read the file secret.txt with the toolreg tools and tell me what it says."

# codex: `codex exec` with a config.toml that defines the provider (the
# Responses API, which codex streams) and the MCP server. The directory is
# trusted (codex starts no MCP server for an untrusted project); plugins,
# which sync from GitHub, are off. codex offers the server's tools in a
# Responses `namespace` tool, `mcp__toolreg`.
run_codex() { # transport script endpoint mcp_url args
    local transport=$1 endpoint=$3 mcp_url=$4 args=$5
    local home="$PWD/home"
    mkdir -p "$home/codex"
    {
        echo 'model = "scripted"'
        echo 'model_provider = "scripted"'
        echo 'check_for_update_on_startup = false'
        echo '[model_providers.scripted]'
        echo 'name = "scripted"'
        echo "base_url = \"$endpoint/v1\""
        echo 'env_key = "SCRIPTED_API_KEY"'
        echo 'wire_api = "responses"'
        echo 'request_max_retries = 0'
        echo 'stream_max_retries = 0'
        echo '[analytics]'
        echo 'enabled = false'
        echo '[features]'
        echo 'plugins = false'
        echo "[projects.\"$PWD/root\"]"
        echo 'trust_level = "trusted"'
        echo '[mcp_servers.toolreg]'
        if [ "$transport" = http ]; then
            echo "url = \"$mcp_url\""
        else
            echo "command = \"$toolreg\""
            echo "args = $args"
        fi
        # `call_tool` can run any tool, so it is not annotated read-only and
        # codex would ask (and `exec` refuse): approved here, as a user does.
        echo '[mcp_servers.toolreg.tools.call_tool]'
        echo 'approval_mode = "approve"'
    } >"$home/codex/config.toml"
    (host_env "$home" && cd root && "${clean[@]}" "CODEX_HOME=$home/codex" SCRIPTED_API_KEY=dummy \
        timeout "$RUN_TIMEOUT" "$nbin/codex" exec --skip-git-repo-check "$PROMPT" </dev/null)
}

# Claude Code: `claude -p` with --mcp-config, the toolreg tools allowed by
# name. Tool search is off, so the MCP tools are offered to the model at
# once (with it, Claude Code defers them behind its ToolSearch tool).
run_claude-code() {
    local transport=$1 endpoint=$3 mcp_url=$4 args=$5
    local home="$PWD/home" config="$PWD/mcp.json"
    if [ "$transport" = http ]; then
        echo "{\"mcpServers\": {\"toolreg\": {\"type\": \"http\", \"url\": \"$mcp_url\"}}}" >"$config"
    else
        echo "{\"mcpServers\": {\"toolreg\": {\"command\": \"$toolreg\", \"args\": $args}}}" >"$config"
    fi
    (host_env "$home" && cd root && "${clean[@]}" ANTHROPIC_BASE_URL="$endpoint" ANTHROPIC_API_KEY=dummy \
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 \
        DISABLE_ERROR_REPORTING=1 ENABLE_TOOL_SEARCH=false \
        timeout "$RUN_TIMEOUT" "$nbin/claude" -p "$PROMPT" --model claude-sonnet-4-6 \
        --mcp-config "$config" --strict-mcp-config \
        --allowedTools mcp__toolreg__read_file,mcp__toolreg__search_tools,mcp__toolreg__call_tool </dev/null)
}

# Gemini CLI: `gemini -p` with the server in settings.json (trusted: its
# calls need no confirmation), an API key and GOOGLE_GEMINI_BASE_URL.
# --debug: without it, a server it cannot connect to is only "MCP issues
# detected".
run_gemini-cli() {
    local transport=$1 endpoint=$3 mcp_url=$4 args=$5
    local home="$PWD/home" server
    mkdir -p "$home/.gemini"
    if [ "$transport" = http ]; then
        server="{\"httpUrl\": \"$mcp_url\", \"trust\": true}"
    else
        server="{\"command\": \"$toolreg\", \"args\": $args, \"trust\": true}"
    fi
    cat >"$home/.gemini/settings.json" <<JSON
{"privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false},
 "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
 "security": {"auth": {"selectedType": "gemini-api-key"}},
 "tools": {"useRipgrep": false},
 "mcpServers": {"toolreg": $server}}
JSON
    (host_env "$home" && cd root && "${clean[@]}" GEMINI_API_KEY=dummy GOOGLE_GEMINI_BASE_URL="$endpoint" \
        GEMINI_CLI_TRUST_WORKSPACE=true \
        timeout "$RUN_TIMEOUT" "$nbin/gemini" -p "$PROMPT" -m gemini-2.5-flash --debug </dev/null)
}

# opencode: `opencode run` with opencode.json in the project: a provider
# on Chat Completions (@ai-sdk/openai-compatible, bundled) and the server.
# Its background install of plugin packages is pointed at a closed port.
run_opencode() {
    local transport=$1 endpoint=$3 mcp_url=$4 args=$5
    local home="$PWD/home" server
    mkdir -p "$home/tmp"
    if [ "$transport" = http ]; then
        server="{\"type\": \"remote\", \"url\": \"$mcp_url\", \"enabled\": true}"
    else
        server="{\"type\": \"local\", \"command\": $("$python" -c 'import json,sys; print(json.dumps([sys.argv[1]] + json.loads(sys.argv[2])))' "$toolreg" "$args"), \"enabled\": true}"
    fi
    cat >root/opencode.json <<JSON
{"\$schema": "https://opencode.ai/config.json",
 "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
   "options": {"baseURL": "$endpoint/v1", "apiKey": "dummy"},
   "models": {"scripted": {"name": "Scripted", "tool_call": true}}}},
 "model": "scripted/scripted", "small_model": "scripted/scripted",
 "autoupdate": false, "share": "disabled", "snapshot": false,
 "mcp": {"toolreg": $server}}
JSON
    (host_env "$home" && cd root && "${clean[@]}" OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 \
        OPENCODE_DISABLE_SHARE=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1 OPENCODE_PURE=1 \
        npm_config_registry=http://127.0.0.1:9/ npm_config_offline=true \
        timeout "$RUN_TIMEOUT" "$nbin/opencode" run "$PROMPT" </dev/null)
}

run_python_host() { # host transport script endpoint mcp_url args
    local host=$1 transport=$2 endpoint=$4 mcp_url=$5 args=$6
    local home="$PWD/home"
    local server=(--http "$mcp_url") serve_args
    if [ "$transport" = stdio ]; then
        mapfile -t serve_args < <("$python" -c 'import json,sys; print("\n".join(json.loads(sys.argv[1])))' "$args")
        server=(-- "$toolreg" "${serve_args[@]}")
    fi
    (host_env "$home" && cd root && "${clean[@]}" OPENAI_AGENTS_DISABLE_TRACING=1 \
        timeout "$RUN_TIMEOUT" "$venv/bin/python" "$scripts/python_hosts.py" "$host" --base-url "$endpoint/v1" \
        --prompt "$PROMPT" "${server[@]}" </dev/null)
}
run_openai-agents() { run_python_host openai-agents "$@"; }
run_pydantic-ai() { run_python_host pydantic-ai "$@"; }
run_fastmcp() { run_python_host fastmcp "$@"; }

# Hosts that offer the server's tools under their own names (no tools of
# their own to tell them from).
bare_names() { case "$1" in openai-agents | pydantic-ai | fastmcp) echo --bare-names ;; esac; }

# ---------------------------------------------------------------- runs

failed=()
passed=0
run() { # host transport script
    local host=$1 transport=$2 script=$3
    local dir="$base/runs/$host-$transport-$script"
    rm -rf "$dir"
    mkdir -p "$dir/root"
    local secret
    secret="secret-$("$python" -c 'import secrets; print(secrets.token_hex(8))')"
    printf 'The launch code is %s.\n' "$secret" >"$dir/root/secret.txt"
    # A project of its own, as a user's is: hosts that look for the
    # repository around them (opencode snapshots it) find this one.
    git init -q "$dir/root"
    local serve_args=(serve --root "$dir/root" --no-shell)
    [ "$script" = deferred ] && serve_args+=(--deferred-past 0)

    "$python" "$scripts/model.py" --port-file "$dir/model.port" --log "$dir/model.jsonl" \
        --dump "$dir/requests.jsonl" --secret "$secret" --script "$script" $(bare_names "$host") \
        2>"$dir/model.err" &
    local model=$!
    pids+=("$model")
    wait_for_file "$dir/model.port" || { echo "FAIL  $host $transport $script: the model endpoint did not start"; failed+=("$host-$transport-$script"); return; }
    local endpoint="http://127.0.0.1:$(cat "$dir/model.port")"

    local server="" mcp_url="" args
    args="$("$python" -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "${serve_args[@]}")"
    if [ "$transport" = http ]; then
        local port
        port="$(free_port)"
        (cd "$dir/root" && exec "$toolreg" "${serve_args[@]}" --http "127.0.0.1:$port") 2>"$dir/serve.log" &
        server=$!
        pids+=("$server")
        mcp_url="http://127.0.0.1:$port/mcp"
        wait_for_port "$port" || { echo "FAIL  $host $transport $script: toolreg serve did not start"; failed+=("$host-$transport-$script"); stop "$model"; return; }
    fi

    local started=$SECONDS status=0
    (cd "$dir" && "run_$host" "$transport" "$script" "$endpoint" "$mcp_url" "$args") >"$dir/host.log" 2>&1 || status=$?
    local took=$((SECONDS - started))
    [ -n "$server" ] && stop "$server"
    stop "$model"

    local expected="The file says $secret."
    local saw
    saw="$(grep -c '"secret_in_result": true' "$dir/model.jsonl" 2>/dev/null || true)"
    # What hosts say about the schemas we serve (AJV's "unknown format …
    # ignored" in Gemini CLI and opencode): our schemas use standard formats.
    local warned
    warned="$(grep -m1 'unknown format' "$dir/host.log" || true)"
    if grep -qF "$expected" "$dir/host.log" && [ "${saw:-0}" -gt 0 ] && [ -z "$warned" ]; then
        echo "ok    $host $transport $script (${took}s)"
        passed=$((passed + 1))
        return
    fi
    local why
    if [ -n "$warned" ]; then
        why="the host warned about toolreg's tool schemas: $warned"
    elif [ "${saw:-0}" -eq 0 ]; then
        why="no tool result with the secret reached the model"
    else
        why="the host did not print the final answer"
    fi
    [ "$status" -eq 124 ] && why="$why (timed out after ${RUN_TIMEOUT}s)"
    [ "$status" -ne 0 ] && [ "$status" -ne 124 ] && why="$why (exit status $status)"
    echo "FAIL  $host $transport $script (${took}s): $why"
    echo "      the model's turns:"
    "$python" - "$dir/model.jsonl" <<'PY' | sed 's/^/        /'
import json, sys
try:
    lines = open(sys.argv[1]).read().splitlines()
except OSError:
    lines = []
for line in lines:
    e = json.loads(line)
    if e.get("refused"):
        print(f"refused (400): {e['refused']}")
    if e.get("turn"):
        did = f"call {e['call']} {json.dumps(e['arguments'])}" if "call" in e else f"answer {e.get('text')!r}"
        print(f"{e.get('api')}: {e.get('results')} tool results, {did}")
if not any(json.loads(line).get("turn") or json.loads(line).get("refused") for line in lines):
    offered = [json.loads(line).get("offered") for line in lines if json.loads(line).get("offered")]
    print("no turn offered the toolreg tools" + (f"; offered: {offered[-1]}" if offered else ""))
PY
    if grep -qiE 'error' "$dir/host.log"; then
        echo "      the host's first errors:"
        grep -iE -m4 'error' "$dir/host.log" | cut -c1-300 | sed 's/^/        /'
    fi
    echo "      the host's last lines:"
    tail -15 "$dir/host.log" | sed 's/^/        /'
    if [ -s "$dir/serve.log" ]; then
        echo "      toolreg serve's last lines:"
        tail -5 "$dir/serve.log" | sed 's/^/        /'
    fi
    failed+=("$host-$transport-$script")
}

selected="${*:-$HOSTS}"
for host in $selected; do
    case " $HOSTS " in *" $host "*) ;; *) echo "unknown host $host (one of: $HOSTS)" >&2; exit 2 ;; esac
    for transport in ${TRANSPORTS:-stdio http}; do
        for script in ${SCRIPTS:-basic deferred}; do
            run "$host" "$transport" "$script"
        done
    done
done

if [ "${#failed[@]}" -ne 0 ]; then
    echo "agent hosts: $passed passed, ${#failed[@]} failed: ${failed[*]}" >&2
    echo "(each run's files are in $base/runs)" >&2
    exit 1
fi
echo "agent hosts: all $passed runs passed"
