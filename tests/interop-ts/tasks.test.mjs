// 2025-11-25's experimental tasks, driven by the official TypeScript SDK's client (pinned in
// package-lock.json) against `duet serve --fixtures conformance` over Streamable HTTP. The
// client lists the tools (their execution.taskSupport), calls them as tasks with
// callToolStream (which polls tasks/get and reads tasks/result), answers the elicitation a
// task asks on the tasks/result stream, and lists, reads and cancels tasks. duet is started
// here and stopped by its PID.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

const DUET = process.env.DUET_BIN;
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

let duet;
let client;
/** The elicitation requests the client received. */
const asked = [];

/** Starts duet on a free port; resolves with its MCP endpoint once it says it listens. */
function startDuet() {
  assert.ok(DUET, 'DUET_BIN names the duet binary');
  duet = spawn(DUET, ['serve', '--fixtures', 'conformance', '--transport', 'http', '--host', '127.0.0.1', '--port', '0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`duet did not start: ${seen}`)), 15000);
    duet.stderr.on('data', (chunk) => {
      seen += chunk;
      const found = seen.match(/listening on (http:\/\/\S+)/);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    duet.on('exit', (code) => reject(new Error(`duet exited (${code}): ${seen}`)));
  });
}

/** Everything a callToolStream yields, in order. */
async function drain(stream) {
  const messages = [];
  for await (const message of stream) {
    messages.push(message);
  }
  return messages;
}

before(async () => {
  const url = await startDuet();
  client = new Client({ name: 'duet-ts-interop', version: '0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return { action: 'accept', content: { confirm: true } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
});

after(async () => {
  await client?.close();
  duet?.kill('SIGTERM');
});

test('duet declares tasks and lists which tools run as tasks', async () => {
  assert.deepEqual(client.getServerCapabilities().tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
  const { tools } = await client.listTools();
  const support = (name) => tools.find((t) => t.name === name)?.execution?.taskSupport;
  assert.equal(support('slow_compute'), 'optional');
  assert.equal(support('failing_job'), 'required');
  assert.equal(support('greet'), undefined);
});

test('a tool called as a task is polled to its result', async () => {
  const messages = await drain(
    client.experimental.tasks.callToolStream({ name: 'slow_compute', arguments: { seconds: 1, label: 'ts' } }),
  );
  const types = messages.map((m) => m.type);
  assert.equal(types[0], 'taskCreated', JSON.stringify(messages));
  assert.ok(types.includes('taskStatus'), JSON.stringify(types));
  const last = messages.at(-1);
  assert.equal(last.type, 'result', JSON.stringify(last));
  assert.equal(last.result.content[0].text, 'ts: done after 1 s');
  assert.deepEqual(last.result._meta[RELATED_TASK], { taskId: messages[0].task.taskId });
});

test('a task asks the client through tasks/result, and goes on with the answer', async () => {
  const messages = await drain(
    client.experimental.tasks.callToolStream({ name: 'confirm_delete', arguments: { filename: 'ts.txt' } }),
  );
  const taskId = messages[0].task.taskId;
  assert.equal(messages.at(-1).type, 'result', JSON.stringify(messages));
  assert.equal(messages.at(-1).result.content[0].text, 'Deleted ts.txt');
  const question = asked.find((params) => params._meta?.[RELATED_TASK]?.taskId === taskId);
  assert.ok(question, `the elicitation is tied to the task: ${JSON.stringify(asked)}`);
  assert.equal(question.message, 'Delete ts.txt?');
});

test('a tool error fails a task at 2025-11-25', async () => {
  const messages = await drain(client.experimental.tasks.callToolStream({ name: 'failing_job', arguments: {} }));
  const last = messages.at(-1);
  assert.equal(last.type, 'error', JSON.stringify(messages));
  assert.match(last.error.message, /failed/);
  const task = await client.experimental.tasks.getTask(messages[0].task.taskId);
  assert.equal(task.status, 'failed');
});

test('tasks are listed, read and cancelled', async () => {
  const stream = client.experimental.tasks.callToolStream({ name: 'slow_compute', arguments: { seconds: 60 } });
  const created = (await stream.next()).value;
  assert.equal(created.type, 'taskCreated');
  const taskId = created.task.taskId;
  const { tasks } = await client.experimental.tasks.listTasks();
  assert.ok(tasks.some((t) => t.taskId === taskId && t.status === 'working'), JSON.stringify(tasks));
  const cancelled = await client.experimental.tasks.cancelTask(taskId);
  assert.equal(cancelled.status, 'cancelled');
  assert.equal((await client.experimental.tasks.getTask(taskId)).status, 'cancelled');
  const rest = await drain(stream);
  assert.equal(rest.at(-1).type, 'error', JSON.stringify(rest));
  await assert.rejects(client.experimental.tasks.cancelTask(taskId), (error) => {
    assert.ok(error instanceof McpError);
    assert.equal(error.code, -32602, 'an ended task cannot be cancelled');
    return true;
  });
  await assert.rejects(client.experimental.tasks.getTask('no-such-task'), (error) => error.code === -32602);
});
