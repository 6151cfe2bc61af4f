// The authorization server scripts/check_oauth.sh puts in front of `toolreg
// serve`: oidc-provider (the npm package, pinned in package-lock.json), as an
// OAuth 2.1 issuer on http://127.0.0.1:PORT minting JWT access tokens with
// the client_credentials grant for the resource (RFC 8707) toolreg serves.
//
// Environment:
//   ISSUER_PORT       the port to listen on (127.0.0.1)
//   AUDIENCES         the canonical URIs of the toolreg servers it mints tokens
//                     for (http://127.0.0.1:TPORT/mcp), separated by spaces;
//                     the first is the default resource
//   AGENT_A_SECRET    client secret of agent-a (scope "tools files", client_secret_post)
//   AGENT_B_SECRET    client secret of agent-b (scope "tools", client_secret_basic)
//
// Resources (the `resource` parameter of a token request):
//   each of AUDIENCES                scope "tools files admin", JWT, 300 s
//   http://127.0.0.1:1/other         another resource server (aud is itself)
// and, each a token for the first audience with one thing wrong:
//   urn:toolreg:check:short-lived    expires 1 s after minting
//   urn:toolreg:check:expired        exp two minutes in the past
//   urn:toolreg:check:not-yet-valid  nbf ten minutes ahead
//   urn:toolreg:check:wrong-issuer   iss another issuer's
//   urn:toolreg:check:no-subject     no sub
// Any other resource is refused (invalid_target); no resource means the
// first audience. All are signed alike, with the current key (ES256).
//
// The signing keys (ES256) are made at start. Two endpoints of the test
// harness, outside oidc-provider's routes, on loopback only:
//   POST /test-admin/rotate         a new key signs from now on; the JWKS lists
//                                   the new key and the old ones
//   GET  /test-admin/jwks-fetches   when (ms since the epoch) and by whom the
//                                   JWKS was fetched, to time the rotation
// Prints one line per request on stdout.
import http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';

import { exportJWK, generateKeyPair } from 'jose';
import Provider, { errors } from 'oidc-provider';

const port = Number(process.env.ISSUER_PORT);
const audiences = (process.env.AUDIENCES || '').split(' ').filter(Boolean);
const [audience] = audiences;
if (!port || !audience || !process.env.AGENT_A_SECRET || !process.env.AGENT_B_SECRET) {
  console.error('issuer.mjs: set ISSUER_PORT, AUDIENCES, AGENT_A_SECRET and AGENT_B_SECRET');
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;
const ALG = 'ES256';

const OTHER = 'http://127.0.0.1:1/other';
const SHORT_LIVED = 'urn:toolreg:check:short-lived';
const EXPIRED = 'urn:toolreg:check:expired';
const NOT_YET_VALID = 'urn:toolreg:check:not-yet-valid';
const WRONG_ISSUER = 'urn:toolreg:check:wrong-issuer';
const NO_SUBJECT = 'urn:toolreg:check:no-subject';
const SCOPE = 'tools files admin';

function resourceServer(resource) {
  const jwt = { sign: { alg: ALG } };
  if (audiences.includes(resource) || resource === OTHER) {
    return { scope: SCOPE, accessTokenFormat: 'jwt', accessTokenTTL: 300, jwt };
  }
  switch (resource) {
    case SHORT_LIVED:
      return { scope: SCOPE, audience, accessTokenFormat: 'jwt', accessTokenTTL: 1, jwt };
    case EXPIRED:
    case NOT_YET_VALID:
    case WRONG_ISSUER:
    case NO_SUBJECT:
      return { scope: SCOPE, audience, accessTokenFormat: 'jwt', accessTokenTTL: 300, jwt };
    default:
      throw new errors.InvalidTarget(`unknown resource ${resource}`);
  }
}

async function signingKey() {
  const { privateKey } = await generateKeyPair(ALG, { extractable: true });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, kid: `es256-${randomUUID()}`, alg: ALG, use: 'sig' };
}

const cookieKeys = [randomBytes(32).toString('base64url')];

function makeProvider(keys) {
  const now = () => Math.floor(Date.now() / 1000);
  return new Provider(issuer, {
    jwks: { keys },
    cookies: { keys: cookieKeys },
    scopes: ['openid', 'offline_access', 'tools', 'files', 'admin'],
    clients: [
      {
        client_id: 'agent-a',
        client_secret: process.env.AGENT_A_SECRET,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        scope: 'tools files',
        token_endpoint_auth_method: 'client_secret_post',
      },
      {
        client_id: 'agent-b',
        client_secret: process.env.AGENT_B_SECRET,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        scope: 'tools',
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    clientDefaults: { id_token_signed_response_alg: ALG },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx, _client, oneOf) => oneOf || audience,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resource) => resourceServer(resource),
      },
    },
    ttl: {
      ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL || 300,
    },
    formats: {
      customizers: {
        // Tokens for the test resources whose times are off, signed like any other.
        jwt: async (_ctx, token, jwt) => {
          const resource = token.resourceServer?.identifier();
          if (resource === EXPIRED) {
            jwt.payload.iat = now() - 720;
            jwt.payload.exp = now() - 120;
          } else if (resource === NOT_YET_VALID) {
            jwt.payload.nbf = now() + 600;
          } else if (resource === WRONG_ISSUER) {
            jwt.payload.iss = `${issuer}/another-issuer`;
          } else if (resource === NO_SUBJECT) {
            delete jwt.payload.sub;
          }
        },
      },
    },
  });
}

let keys = [await signingKey()];
let provider = makeProvider(keys);
let handler = provider.callback();
const jwksFetches = [];

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const server = http.createServer(async (req, res) => {
  const started = Date.now();
  res.on('finish', () => {
    const agent = req.headers['user-agent'] || '-';
    console.log(`${new Date(started).toISOString()} ${req.method} ${req.url} ${res.statusCode} ${agent}`);
  });
  const path = req.url.split('?')[0];
  if (path === '/test-admin/rotate' && req.method === 'POST') {
    // The new key first: oidc-provider signs with the first key that fits.
    keys = [await signingKey(), ...keys];
    provider = makeProvider(keys);
    handler = provider.callback();
    json(res, 200, { signing: keys[0].kid, published: keys.map((k) => k.kid) });
    return;
  }
  if (path === '/test-admin/jwks-fetches' && req.method === 'GET') {
    json(res, 200, jwksFetches);
    return;
  }
  if (path === '/jwks' && req.method === 'GET') {
    jwksFetches.push({ at: started, user_agent: req.headers['user-agent'] || null });
  }
  handler(req, res);
});

server.listen(port, '127.0.0.1', () => {
  console.log(`issuer ${issuer} listening (oidc-provider, signing with ${keys[0].kid})`);
});
