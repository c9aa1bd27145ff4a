// A real authorization server for duet's OAuth tests: oidc-provider (a certified OpenID
// provider) on 127.0.0.1, with the client-credentials grant, resource indicators (RFC 8707)
// and introspection (RFC 7662). It issues access tokens for any http resource on the
// loopback interface, so a test can ask for duet's URL or another one.
//
//   node provider.mjs --keys FILE [--port N]
//
// Prints `listening on http://127.0.0.1:PORT` once it serves. The signing keys (RS256,
// ES256, EdDSA) live in FILE, made on first use, so a second instance started with the same
// FILE is another issuer with the same keys.
//
// Test hooks (not OAuth): `POST /_test/rotate` makes a new key of each kind and signs with
// it from then on, still publishing the old ones second; `GET /_test/stats` counts the JWKS
// downloads and the introspection requests; `POST /_test/sign` signs the JSON object it is
// sent as the claims of a JWT access token with the current RS256 key (claims no grant
// would give, such as none naming a subject). `/_test/interaction/UID` is where a person's
// authorization (the code flow, of a client registered dynamically) lands to log in and
// consent: it logs `alice` in and grants what the client asked, with no form, so a test's
// user agent only follows redirects.
//
// Clients (secret = `<id>-secret`): `duet-test` (JWT RS256), `short-lived` (RS256, 1 s),
// `es256-client`, `eddsa-client`, `opaque-client` (opaque tokens), `alice` (JWT RS256, so
// its tokens' `sub` is `alice`), and `duet-rs`, the resource server's own credentials for
// introspection.

import { createServer } from 'node:http';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { generateKeyPair, exportJWK, importJWK, SignJWT } from 'jose';
import Provider from 'oidc-provider';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const keysFile = option('keys');
if (!keysFile) {
  console.error('usage: node provider.mjs --keys FILE [--port N]');
  process.exit(2);
}
const port = Number(option('port', '0'));

const SCOPES = 'mcp:tools mcp:admin files:read files:write';

async function newKeys() {
  const stamp = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const make = async (alg, options, kid) => {
    const { privateKey } = await generateKeyPair(alg, { extractable: true, ...options });
    return { ...(await exportJWK(privateKey)), alg, use: 'sig', kid: `${kid}-${stamp}` };
  };
  return [await make('RS256', {}, 'rsa'), await make('ES256', {}, 'ec'), await make('EdDSA', { crv: 'Ed25519' }, 'ed')];
}

async function loadKeys() {
  if (existsSync(keysFile)) return JSON.parse(readFileSync(keysFile, 'utf8'));
  const keys = await newKeys();
  writeFileSync(keysFile, JSON.stringify(keys));
  return keys;
}

const ALG = { 'es256-client': 'ES256', 'eddsa-client': 'EdDSA' };

function client(id, extra = {}) {
  return {
    client_id: id,
    client_secret: `${id}-secret`,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    scope: SCOPES,
    ...extra,
  };
}

function configuration(keys) {
  return {
    clients: [
      client('duet-test'),
      client('short-lived'),
      client('es256-client'),
      client('eddsa-client'),
      client('opaque-client'),
      client('alice'),
      client('duet-rs'),
    ],
    scopes: ['openid', 'offline_access', ...SCOPES.split(' ')],
    jwks: { keys },
    interactions: { url: (_ctx, interaction) => `/_test/interaction/${interaction.uid}` },
    cookies: { keys: ['duet-oauth-tests'] },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo(ctx, resource, oauthClient) {
          const url = new URL(resource);
          if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') {
            throw new Provider.errors.InvalidTarget();
          }
          const id = oauthClient.clientId;
          if (id === 'opaque-client') {
            return { scope: SCOPES, accessTokenFormat: 'opaque', accessTokenTTL: 300 };
          }
          return {
            scope: SCOPES,
            accessTokenFormat: 'jwt',
            accessTokenTTL: id === 'short-lived' ? 1 : 300,
            jwt: { sign: { alg: ALG[id] ?? 'RS256' } },
          };
        },
      },
    },
  };
}

let keys = await loadKeys();
let provider;
let issuer;
let jwksDownloads = 0;
let introspections = 0;

function build() {
  provider = new Provider(issuer, configuration(keys));
  provider.on('server_error', (_ctx, error) => console.error('server_error', error));
  return provider.callback();
}

let handler;
const server = createServer(async (req, res) => {
  const path = new URL(req.url, issuer).pathname;
  if (path === '/_test/stats') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ jwks: jwksDownloads, introspections }));
    return;
  }
  if (path === '/_test/sign' && req.method === 'POST') {
    let body = '';
    for await (const chunk of req) body += chunk;
    const key = keys.find((k) => k.alg === 'RS256');
    const jwt = await new SignJWT(JSON.parse(body))
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt' })
      .sign(await importJWK(key, 'RS256'));
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ token: jwt }));
    return;
  }
  if (path === '/_test/rotate' && req.method === 'POST') {
    const fresh = await newKeys();
    keys = [...fresh, ...keys];
    writeFileSync(keysFile, JSON.stringify(keys));
    handler = build();
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ kids: fresh.map((k) => k.kid) }));
    return;
  }
  if (path.startsWith('/_test/interaction/')) {
    await finishInteraction(req, res);
    return;
  }
  if (path === '/jwks') jwksDownloads += 1;
  if (path === '/token/introspection') introspections += 1;
  handler(req, res);
});

// A person's turn at the authorization server, taken for them: `alice` logs in, and consents
// to every scope the client asked (for the resource it named).
async function finishInteraction(req, res) {
  const { prompt, grantId, session, params } = await provider.interactionDetails(req, res);
  if (prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: 'alice' } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = prompt.details;
  if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
  if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
  for (const [indicator, scope] of Object.entries(missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scope.join(' '));
  }
  await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
}

server.listen(port, '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  handler = build();
  console.log(`listening on ${issuer}`);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
