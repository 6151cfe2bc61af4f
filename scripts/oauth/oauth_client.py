"""`toolreg serve` as an OAuth 2.1 resource server, driven by the official MCP Python SDK.

Usage: oauth_client.py TOOLREG_BINARY NODE ISSUER_MJS

Starts the authorization server (scripts/oauth/issuer.mjs: oidc-provider) and
two `toolreg serve --http --issuer` servers in front of it: A, and B with
`--required-scope files`. Tokens come from oidc-provider's token endpoint
(client_credentials, with `resource`); the MCP traffic is the SDK's client
over streamable HTTP with `Authorization: Bearer`, and, once, the SDK's own
OAuth client-credentials flow (discovery from the 401 onwards). Prints one
PASS or FAIL line per check and a closing count; exits 1 on any failure.
"""
import base64
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

import anyio
import httpx2 as httpx
import jwt as pyjwt
from cryptography.hazmat.primitives.asymmetric import ec
from mcp import Client
from mcp.client.auth import TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client

BIN, NODE, ISSUER_MJS = sys.argv[1:4]
SECRET_TEXT = f"the root's secret {secrets.token_hex(8)}"
OTHER_RESOURCE = "http://127.0.0.1:1/other"
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "check_oauth", "version": "1"}},
}

passed = 0
failed = []


def check(condition, what, detail=""):
    global passed
    if condition:
        passed += 1
        print(f"PASS  {what}", flush=True)
    else:
        failed.append(what)
        print(f"FAIL  {what}: {detail}", flush=True)
    return condition


def note(text):
    print(f"      {text}", flush=True)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def parts(token):
    header, payload, signature = token.split(".")
    return json.loads(unb64url(header)), json.loads(unb64url(payload)), signature


def challenge(response):
    """The WWW-Authenticate parameters of a response, as a dict (scheme under "scheme")."""
    value = response.headers.get("www-authenticate", "")
    found = dict(re.findall(r'([a-z_]+)="([^"]*)"', value))
    found["scheme"] = value.split(" ", 1)[0]
    return found


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, proc, what, log):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    print(f"FAIL  {what} did not start on port {port}; its log:")
    with open(log) as f:
        print(f.read()[-4000:])
    sys.exit(1)


class Memory(TokenStorage):
    def __init__(self):
        self.tokens, self.client = None, None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)


async def use_tools(label, url, http, mode="auto"):
    """Connect with the SDK client, list the tools and call two read-only ones; check each step."""
    with anyio.fail_after(30):
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            check(client.protocol_version is not None,
                  f"{label}: {'initialize' if mode == 'legacy' else 'connect'} (protocol {client.protocol_version})")
            names = {tool.name for tool in (await client.list_tools()).tools}
            check({"read_file", "list_files"} <= names, f"{label}: tools/list", sorted(names))
            read = await client.call_tool("read_file", {"path": "hello.txt"})
            check(not read.is_error and SECRET_TEXT in text_of(read), f"{label}: read_file (read-only) runs", text_of(read))
            listed = await client.call_tool("list_files", {})
            check(not listed.is_error and "hello.txt" in text_of(listed), f"{label}: list_files (read-only) runs",
                  text_of(listed))


async def sdk_refused(url, token):
    """Whether the SDK client, given `token`, fails to connect (as it must when the server refuses it)."""
    try:
        with anyio.fail_after(30):
            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    await client.list_tools()
        return False, "connected and listed the tools"
    except TimeoutError:
        return False, "timed out"
    except Exception as error:  # noqa: BLE001 - any refusal the SDK raises will do
        return True, repr(error)[:200]


async def main():
    work = tempfile.mkdtemp(prefix="toolreg-oauth-")
    procs = []
    try:
        await run(work, procs)
    except Exception as error:  # noqa: BLE001 - reported as a failure, with the servers' logs
        traceback.print_exc()
        check(False, "the check ran to its end", repr(error)[:300])
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        if failed:
            for name in os.listdir(work):
                if name.endswith(".log"):
                    print(f"----- {name} (last lines)")
                    with open(os.path.join(work, name)) as f:
                        print("".join(f.readlines()[-30:]), end="")
        shutil.rmtree(work, ignore_errors=True)


async def run(work, procs):
    started = time.monotonic()
    root = os.path.join(work, "root")
    os.mkdir(root)
    with open(os.path.join(root, "hello.txt"), "w") as f:
        f.write(SECRET_TEXT + "\n")

    iport, port_a, port_b = free_port(), free_port(), free_port()
    issuer = f"http://127.0.0.1:{iport}"
    aud_a, aud_b = f"http://127.0.0.1:{port_a}/mcp", f"http://127.0.0.1:{port_b}/mcp"
    secret = {"agent-a": secrets.token_urlsafe(24), "agent-b": secrets.token_urlsafe(24)}

    # ------------------------------------------------------------ the servers
    log = os.path.join(work, "issuer.log")
    env = dict(os.environ, ISSUER_PORT=str(iport), AUDIENCES=f"{aud_a} {aud_b}",
               AGENT_A_SECRET=secret["agent-a"], AGENT_B_SECRET=secret["agent-b"])
    procs.append(subprocess.Popen([NODE, ISSUER_MJS], stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env))
    wait_for_port(iport, procs[-1], "the issuer (oidc-provider)", log)

    def serve(name, port, audience, *extra):
        state = os.path.join(work, f"state-{name}")
        os.mkdir(state)
        env = {k: v for k, v in os.environ.items() if k != "TOOLREG_MCP_TOKEN"}
        env["TOOLREG_STATE_DIR"] = state
        audit = os.path.join(work, f"audit-{name}.jsonl")
        log = os.path.join(work, f"toolreg-{name}.log")
        args = [BIN, "serve", "--no-shell", "--root", root, "--http", f"127.0.0.1:{port}", "--issuer", issuer,
                "--audience", audience, "--audit", audit, *extra]
        procs.append(subprocess.Popen(args, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env))
        wait_for_port(port, procs[-1], f"toolreg serve ({name})", log)
        return procs[-1], audit

    server_a, audit_a = serve("A", port_a, aud_a)
    server_b, audit_b = serve("B", port_b, aud_b, "--required-scope", "files")
    note(f"issuer {issuer} (oidc-provider); toolreg A {aud_a}; toolreg B {aud_b} (--required-scope files)")

    async with httpx.AsyncClient(timeout=10) as http:

        async def mint(client_id, scope, resource, expect_error=False):
            data = {"grant_type": "client_credentials", "scope": scope}
            if resource:
                data["resource"] = resource
            if client_id == "agent-a":  # client_secret_post
                data.update(client_id=client_id, client_secret=secret[client_id])
                response = await http.post(f"{issuer}/token", data=data)
            else:  # client_secret_basic
                response = await http.post(f"{issuer}/token", data=data, auth=(client_id, secret[client_id]))
            if expect_error:
                return response
            if response.status_code != 200:
                raise AssertionError(f"token endpoint: {response.status_code} {response.text}")
            return response.json()["access_token"]

        async def jwks_fetches():
            return (await http.get(f"{issuer}/test-admin/jwks-fetches")).json()

        async def post(url, token=None, headers=None):
            headers = dict(MCP_HEADERS, **(headers or {}))
            if token is not None:
                headers["authorization"] = f"Bearer {token}"
            return await http.post(url, json=INITIALIZE, headers=headers)

        # A token that expires at once, minted first so that its expiry past the
        # 60 s leeway comes as early as can be (checked at the end).
        short_lived = await mint("agent-a", "tools files", "urn:toolreg:check:short-lived")
        short_exp = parts(short_lived)[1]["exp"]

        # -------------------------------------------------------- 1. discovery
        print("-- 1. discovery")
        metadata_url = {}
        for name, aud in (("A", aud_a), ("B", aud_b)):
            response = await post(aud)
            ch = challenge(response)
            metadata_url[name] = ch.get("resource_metadata")
            expected = aud.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
            check(response.status_code == 401 and ch["scheme"] == "Bearer" and metadata_url[name] == expected,
                  f"{name}: no token -> 401, WWW-Authenticate: Bearer resource_metadata={expected}",
                  (response.status_code, response.headers.get("www-authenticate")))
            check("error" not in ch, f"{name}: no token -> no error code in the challenge (RFC 6750 3.1)", ch)
        meta = {}
        for name, aud in (("A", aud_a), ("B", aud_b)):
            response = await http.get(metadata_url[name] or aud)
            meta[name] = response.json() if response.status_code == 200 else {}
            check(response.status_code == 200 and meta[name].get("resource") == aud
                  and meta[name].get("authorization_servers") == [issuer]
                  and meta[name].get("bearer_methods_supported") == ["header"],
                  f"{name}: resource metadata names resource {aud} and authorization server {issuer}",
                  (response.status_code, response.text))
        check(meta["B"].get("scopes_supported") == ["files"], "B: resource metadata scopes_supported is the required scope",
              meta["B"])
        check(meta["A"].get("scopes_supported") == [],
              "A (no --required-scope): resource metadata scopes_supported is empty (a client asks for no scope)",
              meta["A"])
        response = await http.get(f"{meta['A'].get('authorization_servers', [issuer])[0]}/.well-known/openid-configuration")
        discovery = response.json() if response.status_code == 200 else {}
        check(response.status_code == 200 and discovery.get("issuer") == issuer and discovery.get("jwks_uri")
              and "client_credentials" in discovery.get("grant_types_supported", [])
              and discovery.get("introspection_endpoint"),
              "the issuer's discovery document is reachable (issuer, jwks_uri, client_credentials, introspection)",
              (response.status_code, response.text[:300]))
        refused = await mint("agent-b", "tools files", aud_b, expect_error=True)
        check(refused.status_code == 400 and refused.json().get("error") == "invalid_scope",
              "issuer: agent-b may not have the files scope (invalid_scope)", (refused.status_code, refused.text))

        # ------------------------------------------ 2. agent-a's token works
        print("-- 2. agent-a's token on A")
        token_a = await mint("agent-a", "tools files", aud_a)
        header_a, claims_a, _ = parts(token_a)
        note(f"agent-a's token: alg {header_a['alg']}, kid {header_a['kid']}, sub {claims_a['sub']}, "
             f"scope '{claims_a.get('scope')}', aud {claims_a['aud']}")
        before = len(await jwks_fetches())
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token_a}"}) as bearer:
            await use_tools("agent-a on A (handshake)", aud_a, bearer, mode="legacy")
            await use_tools("agent-a on A (default connection)", aud_a, bearer)
        fetches = await jwks_fetches()
        check(len(fetches) == before + 1, "A fetched the issuer's JWKS once for its first token", fetches)
        token_b_on_a = await mint("agent-b", "tools", aud_a)
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token_b_on_a}"}) as bearer:
            await use_tools("agent-b on A (no required scope)", aud_a, bearer)

        # -------------------------------------- 3.-4. tokens A must refuse
        print("-- 3./4. tokens A must refuse (401 invalid_token)")
        header, claims, signature = parts(token_a)
        signing_input = token_a.rsplit(".", 1)[0]
        middle = len(signature) // 2
        flipped = signature[:middle] + ("A" if signature[middle] != "A" else "B") + signature[middle + 1:]
        attacker = ec.generate_private_key(ec.SECP256R1())
        alg_none_header = b64url(json.dumps(dict(header, alg="none")).encode())
        payload_b64 = signing_input.split(".")[1]
        hs_header = b64url(json.dumps(dict(header, alg="HS256")).encode())
        hs_input = f"{hs_header}.{payload_b64}"
        hs_signature = b64url(hmac.new(secret["agent-a"].encode(), hs_input.encode(), hashlib.sha256).digest())
        forged_claims = dict(claims, sub="admin", scope="tools files admin")
        forged_payload = b64url(json.dumps(forged_claims).encode())
        cases = [
            ("a token minted for another resource (aud http://127.0.0.1:1/other)",
             await mint("agent-a", "tools files", OTHER_RESOURCE)),
            ("B's token (aud B's URI)", await mint("agent-a", "tools files", aud_b)),
            ("a tampered signature (one character flipped)", f"{signing_input}.{flipped}"),
            ("a tampered payload (sub and scope changed, signature kept)",
             f"{signing_input.split('.')[0]}.{forged_payload}.{signature}"),
            ("alg none (no signature)", f"{alg_none_header}.{payload_b64}."),
            ("alg HS256, keyed with agent-a's client secret", f"{hs_input}.{hs_signature}"),
            ("signed with another key under the issuer's kid",
             pyjwt.encode(claims, attacker, algorithm="ES256", headers={"kid": header["kid"], "typ": "at+jwt"})),
            ("expired two minutes ago (issuer-signed)", await mint("agent-a", "tools files", "urn:toolreg:check:expired")),
            ("not valid for ten minutes yet (nbf, issuer-signed)",
             await mint("agent-a", "tools files", "urn:toolreg:check:not-yet-valid")),
            ("another issuer's iss (issuer-signed)", await mint("agent-a", "tools files", "urn:toolreg:check:wrong-issuer")),
            ("no sub (issuer-signed)", await mint("agent-a", "tools files", "urn:toolreg:check:no-subject")),
            ("not a JWT", "not-a-jwt"),
        ]
        for what, token in cases:
            response = await post(aud_a, token)
            ch = challenge(response)
            check(response.status_code == 401 and ch.get("error") == "invalid_token"
                  and ch.get("resource_metadata") == metadata_url["A"],
                  f"A refuses {what}: 401 invalid_token", (response.status_code, response.headers.get("www-authenticate")))
        ok, why = await sdk_refused(aud_a, f"{signing_input}.{flipped}")
        check(ok, "the SDK client with the tampered token does not get in", why)

        # Unknown kids: the keys are fetched again at most once per 30 s.
        before = len(await jwks_fetches())
        for i in range(5):
            unknown = pyjwt.encode(claims, attacker, algorithm="ES256", headers={"kid": f"unknown-{i}", "typ": "at+jwt"})
            response = await post(aud_a, unknown)
            check(response.status_code == 401 and challenge(response).get("error") == "invalid_token",
                  f"A refuses a token with an unknown kid ({i + 1}/5): 401 invalid_token", response.status_code)
        after = len(await jwks_fetches())
        check(after - before <= 1, f"five unknown kids made at most one JWKS fetch ({after - before})", after - before)

        # --------------------------------------------- 5. a required scope
        print("-- 5. B: --required-scope files")
        token_b = await mint("agent-b", "tools", aud_b)
        response = await post(aud_b, token_b)
        ch = challenge(response)
        check(response.status_code == 403 and ch.get("error") == "insufficient_scope" and ch.get("scope") == "files"
              and ch.get("resource_metadata") == metadata_url["B"],
              "B refuses agent-b (scope 'tools'): 403 insufficient_scope, scope=\"files\"",
              (response.status_code, response.headers.get("www-authenticate")))
        ok, why = await sdk_refused(aud_b, token_b)
        check(ok, "the SDK client with agent-b's token does not get into B", why)
        response = await post(aud_b, token_a)
        check(response.status_code == 401 and challenge(response).get("error") == "invalid_token",
              "B refuses A's token (another audience): 401 invalid_token", response.status_code)
        token_a_b = await mint("agent-a", "tools files", aud_b)
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token_a_b}"}) as bearer:
            await use_tools("agent-a on B", aud_b, bearer)

        # The SDK's own OAuth client: from the 401 on B, discovery of the
        # resource metadata and the issuer, a client_credentials token with
        # the scope B asks for and its `resource`, then the calls.
        def sdk_auth(client_id, method, server=aud_b):
            return ClientCredentialsOAuthProvider(server_url=server, storage=Memory(), client_id=client_id,
                                                  client_secret=secret[client_id], token_endpoint_auth_method=method,
                                                  issuer=issuer)
        # On A, which requires no scope, the SDK finds none to ask for.
        try:
            async with httpx.AsyncClient(auth=sdk_auth("agent-a", "client_secret_post", aud_a)) as oauth:
                await use_tools("agent-a on A, the SDK's OAuth client-credentials flow", aud_a, oauth)
        except Exception as error:  # noqa: BLE001
            check(False, "agent-a on A, the SDK's OAuth client-credentials flow", repr(error)[:400])
        try:
            async with httpx.AsyncClient(auth=sdk_auth("agent-a", "client_secret_post")) as oauth:
                await use_tools("agent-a on B, the SDK's OAuth client-credentials flow", aud_b, oauth)
        except Exception as error:  # noqa: BLE001
            check(False, "agent-a on B, the SDK's OAuth client-credentials flow", repr(error)[:400])
        # (The SDK logs the issuer's refusal with a traceback: expected here, so not shown.)
        oauth_log = logging.getLogger("mcp.client.auth.oauth2")
        oauth_log.disabled = True
        try:
            with anyio.fail_after(30):
                async with httpx.AsyncClient(auth=sdk_auth("agent-b", "client_secret_basic")) as oauth:
                    async with Client(streamable_http_client(aud_b, http_client=oauth)) as client:
                        await client.list_tools()
            check(False, "agent-b on B, the SDK's OAuth flow: refused", "it got in")
        except Exception as error:  # noqa: BLE001
            check("invalid_scope" in repr(error),
                  "agent-b on B, the SDK's OAuth flow: refused (the issuer will not grant files)", repr(error)[:300])
        finally:
            oauth_log.disabled = False

        # ------------------------------------------------- 6. key rotation
        print("-- 6. key rotation")
        rotated = (await http.post(f"{issuer}/test-admin/rotate")).json()
        jwks = (await http.get(discovery.get("jwks_uri", f"{issuer}/jwks"))).json()
        kids = [key["kid"] for key in jwks["keys"]]
        check(kids == [rotated["signing"], header_a["kid"]], "the issuer publishes the new key and the old one", kids)
        token_new = await mint("agent-a", "tools files", aud_a)
        check(parts(token_new)[0]["kid"] == rotated["signing"], "the issuer signs with the new key", parts(token_new)[0])
        # A fetched the keys last at the latest JWKS fetch; a new kid is looked
        # up once 30 s have passed since then.
        fetches = await jwks_fetches()
        last = max(f["at"] for f in fetches) / 1000
        wait = last + 31 - time.time()
        if wait > 0:
            note(f"waiting {wait:.0f} s: toolreg fetches the keys again at most once per 30 s")
            await anyio.sleep(wait)
        before = len(await jwks_fetches())
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token_new}"}) as bearer:
            await use_tools("agent-a on A with a token signed by the new key", aud_a, bearer)
        fetches = await jwks_fetches()
        check(len(fetches) == before + 1, "A fetched the JWKS once for the new kid", fetches[before:])
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token_a}"}) as bearer:
            await use_tools("agent-a on A with the token signed by the old key (still published)", aud_a, bearer)
        token_new_b = await mint("agent-a", "tools files", aud_b)
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token_new_b}"}) as bearer:
            await use_tools("agent-a on B with a token signed by the new key", aud_b, bearer)

        # ------------------------------------ expiry, for real, with leeway
        print("-- 4. (cont.) a token past its exp, within and beyond the 60 s leeway")
        # The short-lived token expired a second after it was minted: within
        # the leeway it is still taken (checked now, as A has been running),
        # and refused once exp + 60 s have passed.
        response = await post(aud_a, short_lived)
        late = time.time() - short_exp
        if late < 55:
            check(response.status_code == 200, f"A takes a token {late:.0f} s past its exp (within the 60 s leeway)",
                  (response.status_code, response.headers.get("www-authenticate")))
        else:
            note(f"not checked: the token within the leeway (already {late:.0f} s past its exp)")
        wait = short_exp + 62 - time.time()
        if wait > 0:
            note(f"waiting {wait:.0f} s for the short-lived token to pass exp + 60 s")
            await anyio.sleep(wait)
        response = await post(aud_a, short_lived)
        check(response.status_code == 401 and challenge(response).get("error") == "invalid_token",
              f"A refuses the token {time.time() - short_exp:.0f} s past its exp: 401 invalid_token",
              (response.status_code, response.headers.get("www-authenticate")))

    # ------------------------------------------------------------ 7. audit
    print("-- 7. the audit files")
    for proc in (server_a, server_b):
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()

    def records(path):
        try:
            with open(path) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def by(rows, subject):
        return [r for r in rows if (r.get("principal") or {}).get("subject") == subject]

    expected_source = {"kind": "token", "issuer": issuer}
    rows_a, rows_b = records(audit_a), records(audit_b)
    for name, rows, subject, scopes, tools in (
        ("A", rows_a, "agent-a", ["files", "tools"], {"read_file", "list_files"}),
        ("A", rows_a, "agent-b", ["tools"], {"read_file", "list_files"}),
        ("B", rows_b, "agent-a", None, {"read_file", "list_files"}),
    ):
        mine = by(rows, subject)
        principals = {json.dumps(r["principal"], sort_keys=True) for r in mine}
        check(mine and {r.get("tool") for r in mine} >= tools
              and all(r["principal"].get("source") == expected_source and r["principal"].get("client_id") == subject
                      # The SDK's own login on A asks for no scope (A requires none): a token without scopes.
                      and (scopes is None or r["principal"].get("scopes", []) in (scopes, [])) for r in mine)
              and (scopes is None or any(r["principal"].get("scopes") == scopes for r in mine)),
              f"audit {name}: {subject}'s calls name it as principal (client_id {subject}, source token from the issuer"
              + (f", scopes {scopes})" if scopes else ")"),
              sorted(principals) or rows[:3])
    note(f"audit A: {len(rows_a)} calls; e.g. {json.dumps(by(rows_a, 'agent-a')[:1])}")
    check(not by(rows_b, "agent-b"), "audit B: no call by agent-b (it was refused)", by(rows_b, "agent-b"))
    others = {(r.get("principal") or {}).get("subject") for r in rows_a + rows_b} - {"agent-a", "agent-b"}
    check(not others, "audit: no other principal (no refused token made a call)", others)
    note(f"the check took {time.monotonic() - started:.0f} s")


anyio.run(main)
print(f"check_oauth: {passed} passed, {len(failed)} failed")
if failed:
    print("failed: " + "; ".join(failed))
    sys.exit(1)
