// Approvals over MCP: `agenthost mcp --approval ask` asks the client,
// with an elicitation request, before a call that may change something
// runs. The official TypeScript SDK drives the built binary over stdio:
//
//   make build && cd tests/mcp-client && npm ci && npm test
//
// AGENTHOST_BIN and AGENTHOST_PLUGINS_DIR override where the binary and its
// plugins are (default: ../../bin/agenthost and ../../bin/plugins).

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, existsSync, readFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, process.env.AGENTHOST_BIN || '../../bin/agenthost');
const PLUGINS = resolve(here, process.env.AGENTHOST_PLUGINS_DIR || '../../bin/plugins');

const REQUEST_TIMEOUT_MS = 15_000;
const STARTUP_TIMEOUT_MS = 15_000;
const TEST_TIMEOUT_MS = 60_000;
const reqOpts = { timeout: REQUEST_TIMEOUT_MS };

function textOf(result) {
  assert.ok(Array.isArray(result.content), `content is not an array: ${JSON.stringify(result)}`);
  return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
}

// session starts `agenthost mcp --approval ask` over stdio in a root of
// its own, with a client that declares elicitation and answers with
// answer(request) when answer is given, and declares nothing otherwise.
// It returns the client, the root, the requests the client was asked,
// and close().
async function session(name, answer) {
  assert.ok(existsSync(BIN), `agenthost binary not found at ${BIN}: run make build (or set AGENTHOST_BIN)`);
  assert.ok(existsSync(PLUGINS), `plugins directory not found at ${PLUGINS}: run make build (or set AGENTHOST_PLUGINS_DIR)`);
  // realpath: on some systems the temp dir is behind a symlink.
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'agenthost-mcp-approval-')));
  const asked = [];
  const client = new Client({ name, version: '1.0.0' }, answer ? { capabilities: { elicitation: { form: {} } } } : {});
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params);
      return answer(request.params);
    });
  }
  let stderr = '';
  const transport = new StdioClientTransport({
    command: BIN,
    args: ['mcp', '--approval', 'ask', '--plugins', PLUGINS, '--root', root],
    cwd: root,
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (d) => { stderr += d; });
  try {
    await client.connect(transport, { timeout: STARTUP_TIMEOUT_MS });
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw new Error(`stdio connect failed: ${err.message}\nserver stderr:\n${stderr}`);
  }
  return {
    client,
    root,
    asked,
    stderr: () => stderr,
    async close() {
      const pid = transport.pid;
      await client.close().catch(() => {});
      if (pid) { try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ } }
      rmSync(root, { recursive: true, force: true });
    },
  };
}

function write(s, path) {
  return s.client.callTool({ name: 'write_file', arguments: { path, content: 'approved\n' } }, undefined, reqOpts);
}

describe('approval over MCP: a client that approves', { timeout: TEST_TIMEOUT_MS }, () => {
  let s;
  before(async () => {
    s = await session('agenthost-ts-approver', () => ({ action: 'accept', content: { decision: 'allow' } }));
  });
  after(() => s?.close());

  test('write_file runs once the client approves it', async () => {
    const res = await write(s, 'approved.txt');
    assert.notEqual(res.isError, true, `write_file failed: ${textOf(res)}\nserver stderr:\n${s.stderr()}`);
    assert.equal(readFileSync(join(s.root, 'approved.txt'), 'utf8'), 'approved\n');
    assert.equal(s.asked.length, 1, 'the client was not asked once');
    const { message, requestedSchema } = s.asked[0];
    assert.match(message, /Tool: write_file/);
    assert.match(message, /mode ask/);
    // The preview: agenthost mcp shows write_file's diff.
    assert.match(message, /^\| .*approved\.txt$/m);
    assert.match(message, /^\| \+approved$/m);
    assert.deepEqual(requestedSchema.required, ['decision']);
    assert.deepEqual(requestedSchema.properties.decision.enum, ['allow', 'allow_session', 'deny']);
    assert.equal(requestedSchema.properties.reason.type, 'string');
  });

  test('a read-only tool is not asked about', async () => {
    const before = s.asked.length;
    const res = await s.client.callTool({ name: 'list_dir', arguments: {} }, undefined, reqOpts);
    assert.notEqual(res.isError, true, textOf(res));
    assert.equal(s.asked.length, before);
  });
});

describe('approval over MCP: a client that declines', { timeout: TEST_TIMEOUT_MS }, () => {
  let s;
  before(async () => {
    s = await session('agenthost-ts-decliner', () => ({ action: 'decline' }));
  });
  after(() => s?.close());

  test('write_file does not run, and the result says the user denied it', async () => {
    const res = await write(s, 'declined.txt');
    assert.equal(res.isError, true, `write_file did not fail: ${JSON.stringify(res)}`);
    assert.equal(textOf(res), 'Error executing write_file: denied by the user');
    assert.equal(existsSync(join(s.root, 'declined.txt')), false, 'declined.txt was written');
    assert.equal(s.asked.length, 1);
  });
});

describe('approval over MCP: a client that denies with a reason', { timeout: TEST_TIMEOUT_MS }, () => {
  let s;
  before(async () => {
    s = await session('agenthost-ts-denier', () => ({ action: 'accept', content: { decision: 'deny', reason: 'not today' } }));
  });
  after(() => s?.close());

  test('the model reads the reason', async () => {
    const res = await write(s, 'denied.txt');
    assert.equal(res.isError, true);
    assert.equal(textOf(res), 'Error executing write_file: denied by the user: not today');
    assert.equal(existsSync(join(s.root, 'denied.txt')), false, 'denied.txt was written');
  });
});

describe('approval over MCP: a client without elicitation', { timeout: TEST_TIMEOUT_MS }, () => {
  let s;
  before(async () => {
    s = await session('agenthost-ts-no-elicitation', null);
  });
  after(() => s?.close());

  test('the call is denied with the allow rule that would let it run', async () => {
    const res = await write(s, 'nobody.txt');
    assert.equal(res.isError, true);
    const text = textOf(res);
    assert.ok(text.startsWith('Error executing write_file: needs approval (mode ask) and there is no one here to give it'), text);
    assert.ok(text.includes('add the allow rule "write_file(nobody.txt)"'), text);
    assert.equal(existsSync(join(s.root, 'nobody.txt')), false, 'nobody.txt was written');
  });
});
