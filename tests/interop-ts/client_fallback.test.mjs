// duet's client (crates/duet-client, through its `call` example) against a server that
// speaks only the handshake era (handshake_server.mjs, on the official TypeScript SDK):
// Negotiate::Auto asks server/discover, is refused, and falls back to initialize; the
// caller's listing and call are the same as in 2026. The example is built by
// `cargo build --workspace --all-targets` (test.sh) into the target directory.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const target = process.env.CARGO_TARGET_DIR ?? path.join(here, '..', '..', 'target');
const CALL = process.env.DUET_CLIENT_CALL ?? path.join(target, 'debug', 'examples', 'call');

test("duet's client falls back to initialize with a handshake-era server", async () => {
  const server = `${process.execPath} ${path.join(here, 'handshake_server.mjs')}`;
  const { stdout } = await promisify(execFile)(CALL, [server, 'echo', '{"text": "hé"}'], { timeout: 60000 });
  assert.match(stdout, /^speaking 2025-11-25$/m, stdout);
  assert.match(stdout, /^echo: Returns `text`\.$/m, stdout);
  assert.match(stdout, /"text": "hé"/, stdout);
});
