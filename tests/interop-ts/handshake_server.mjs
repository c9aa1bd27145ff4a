// A handshake-era server on the official TypeScript SDK (pinned in package-lock.json), over
// stdio: one tool, `echo`, which returns its `text`. It does not speak 2026-07-28, so a
// client that asks `server/discover` first must fall back to `initialize`
// (client_fallback.test.mjs).

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const server = new Server({ name: 'ts-handshake', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{ name: 'echo', description: 'Returns `text`.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => ({
  content: [{ type: 'text', text: String(request.params.arguments?.text ?? '') }],
}));
await server.connect(new StdioServerTransport());
