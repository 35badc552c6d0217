// An independent MCP client for agenthost: the official TypeScript SDK
// drives the built binary (`agenthost mcp`) over stdio and over the
// streamable HTTP transport, and checks what any MCP client would see.
//
//   make build && cd tests/mcp-client && npm ci && npm test
//
// AGENTHOST_BIN and AGENTHOST_PLUGINS_DIR override where the binary and its
// plugins are (default: ../../bin/agenthost and ../../bin/plugins).

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, existsSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, process.env.AGENTHOST_BIN || '../../bin/agenthost');
const PLUGINS = resolve(here, process.env.AGENTHOST_PLUGINS_DIR || '../../bin/plugins');

// Every request and every startup is bounded, so a hung server fails the
// test instead of hanging CI.
const REQUEST_TIMEOUT_MS = 15_000;
const STARTUP_TIMEOUT_MS = 15_000;
const TEST_TIMEOUT_MS = 60_000;
const reqOpts = { timeout: REQUEST_TIMEOUT_MS };

// The tools `make build` enables by default; `remove` and `run_bash` are
// opt-in, so they must not be listed.
const ENABLED = [
  'read_file', 'write_file', 'list_dir', 'mkdir', 'move', 'edit_file',
  'search_text', 'search_files', 'save_session_context',
];
const DISABLED = ['remove', 'run_bash'];
const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'];

const HELLO = 'hello from the TypeScript client\nsecond line\n';

function makeRoot() {
  // realpath: on some systems the temp dir is behind a symlink.
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'agenthost-mcp-client-')));
  writeFileSync(join(root, 'hello.txt'), HELLO);
  return root;
}

function textOf(result) {
  assert.ok(Array.isArray(result.content), `content is not an array: ${JSON.stringify(result)}`);
  return result.content
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('');
}

// The checks every transport must pass; `conn()` returns the connected
// Client, set up by the transport's before() hook.
function protocolTests(conn) {
  test('initialize: the server names itself agenthost', () => {
    const info = conn().getServerVersion();
    assert.ok(info, 'no server info after initialize');
    assert.equal(info.name, 'agenthost');
    assert.equal(typeof info.version, 'string');
    assert.ok(info.version.length > 0, 'empty server version');
    const caps = conn().getServerCapabilities();
    assert.ok(caps && caps.tools, `server does not declare tools: ${JSON.stringify(caps)}`);
  });

  test('tools/list: enabled tools with schemas and explicit annotations', async () => {
    const { tools } = await conn().listTools(undefined, reqOpts);
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of ENABLED) {
      assert.ok(byName.has(name), `${name} is not listed; got ${[...byName.keys()].join(', ')}`);
    }
    for (const name of DISABLED) {
      assert.ok(!byName.has(name), `disabled tool ${name} is listed`);
    }
    for (const t of tools) {
      assert.equal(t.inputSchema?.type, 'object', `${t.name}: inputSchema is not an object schema`);
      for (const h of HINTS) {
        assert.equal(typeof t.annotations?.[h], 'boolean',
          `${t.name}: annotation ${h} is not set explicitly: ${JSON.stringify(t.annotations)}`);
      }
    }
    const rf = byName.get('read_file');
    assert.ok(rf.inputSchema.properties?.path, 'read_file schema has no path property');
    assert.equal(rf.annotations.readOnlyHint, true);
    assert.equal(rf.annotations.destructiveHint, false);
    assert.equal(rf.annotations.idempotentHint, true);
    assert.equal(rf.annotations.openWorldHint, false);
  });

  test('tools/call read_file returns the file', async () => {
    const res = await conn().callTool({ name: 'read_file', arguments: { path: 'hello.txt' } }, undefined, reqOpts);
    assert.notEqual(res.isError, true, `read_file failed: ${JSON.stringify(res)}`);
    assert.equal(textOf(res), HELLO);
  });

  test('tools/call a disabled tool is an error result', async () => {
    const res = await conn().callTool({ name: 'run_bash', arguments: { command: 'echo hi' } }, undefined, reqOpts);
    assert.equal(res.isError, true, `run_bash did not fail: ${JSON.stringify(res)}`);
    assert.equal(textOf(res), 'Error: tool not available: run_bash is disabled');
  });

  test('tools/call with bad arguments is an error result', async () => {
    const res = await conn().callTool({ name: 'read_file', arguments: { path: 5 } }, undefined, reqOpts);
    assert.equal(res.isError, true, `read_file {path: 5} did not fail: ${JSON.stringify(res)}`);
    const text = textOf(res);
    assert.ok(text.startsWith('Error executing read_file: invalid arguments:'), `unexpected message: ${text}`);
  });

  test('tools/call an unknown tool is an error result', async () => {
    const res = await conn().callTool({ name: 'no_such_tool', arguments: {} }, undefined, reqOpts);
    assert.equal(res.isError, true, `no_such_tool did not fail: ${JSON.stringify(res)}`);
    assert.equal(textOf(res), 'Error: tool not found: no_such_tool');
  });
}

function checkBuilt() {
  assert.ok(existsSync(BIN), `agenthost binary not found at ${BIN}: run make build (or set AGENTHOST_BIN)`);
  assert.ok(existsSync(PLUGINS), `plugins directory not found at ${PLUGINS}: run make build (or set AGENTHOST_PLUGINS_DIR)`);
}

// connectStdio connects client to `agenthost mcp` over stdio with --root
// root, and returns its transport.
async function connectStdio(client, root) {
  let stderr = '';
  const transport = new StdioClientTransport({
    command: BIN,
    args: ['mcp', '--plugins', PLUGINS, '--root', root],
    cwd: root,
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (d) => { stderr += d; });
  try {
    await client.connect(transport, { timeout: STARTUP_TIMEOUT_MS });
  } catch (err) {
    throw new Error(`stdio connect failed: ${err.message}\nserver stderr:\n${stderr}`);
  }
  return transport;
}

// closeStdio closes the client, stops the server and removes root.
async function closeStdio(client, transport, root) {
  const pid = transport?.pid;
  await client?.close().catch(() => {});
  if (pid) { try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ } }
  if (root) rmSync(root, { recursive: true, force: true });
}

describe('stdio', { timeout: TEST_TIMEOUT_MS }, () => {
  let root;
  let client;
  let transport;

  before(async () => {
    checkBuilt();
    root = makeRoot();
    client = new Client({ name: 'agenthost-ts-client-test', version: '0.0.0' });
    transport = await connectStdio(client, root);
  });

  after(() => closeStdio(client, transport, root));

  protocolTests(() => client);
});

// startHTTP spawns `agenthost mcp --http 127.0.0.1:0` and resolves with the
// URL it prints on stderr ("listening on http://127.0.0.1:PORT/mcp").
function startHTTP(root, token) {
  const child = spawn(BIN, ['mcp', '--http', '127.0.0.1:0', '--token', token, '--plugins', PLUGINS, '--root', root], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d) => { stdout += d; });
  const url = new Promise((resolveURL, reject) => {
    const timer = setTimeout(() => reject(new Error(
      `no "listening on" line within ${STARTUP_TIMEOUT_MS} ms\nstderr:\n${stderr}`)), STARTUP_TIMEOUT_MS);
    child.stderr.on('data', (d) => {
      stderr += d;
      const m = /listening on (http:\/\/\S+)/.exec(stderr);
      if (m) { clearTimeout(timer); resolveURL(new URL(m[1])); }
    });
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`agenthost exited (code ${code}, signal ${signal}) before listening\nstderr:\n${stderr}`));
    });
  });
  return { child, url, output: () => ({ stdout, stderr }) };
}

function stopChild(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const kill = setTimeout(() => { try { child.kill('SIGKILL'); } catch { /* gone */ } }, 5_000);
    child.once('exit', () => { clearTimeout(kill); done(); });
    child.kill('SIGTERM');
  });
}

const INIT_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'raw-fetch', version: '0.0.0' },
  },
});

async function rawPost(url, headers) {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: INIT_BODY,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  await res.body?.cancel().catch(() => {});
  return res.status;
}

describe('streamable HTTP', { timeout: TEST_TIMEOUT_MS }, () => {
  const token = randomBytes(16).toString('hex');
  let root;
  let server;
  let url;
  let client;
  let transport;

  before(async () => {
    checkBuilt();
    root = makeRoot();
    server = startHTTP(root, token);
    url = await server.url;
    assert.equal(url.hostname, '127.0.0.1');
    transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    client = new Client({ name: 'agenthost-ts-client-test', version: '0.0.0' });
    try {
      await client.connect(transport, { timeout: STARTUP_TIMEOUT_MS });
    } catch (err) {
      throw new Error(`HTTP connect failed: ${err.message}\nserver stderr:\n${server.output().stderr}`);
    }
  });

  after(async () => {
    await transport?.terminateSession().catch(() => {});
    await client?.close().catch(() => {});
    await stopChild(server?.child);
    if (root) rmSync(root, { recursive: true, force: true });
  });

  test('a request without the token is refused with 401', async () => {
    assert.equal(await rawPost(url, {}), 401);
  });

  test('a request with a wrong token is refused with 401', async () => {
    assert.equal(await rawPost(url, { Authorization: `Bearer not-${token}` }), 401);
  });

  protocolTests(() => client);
});

// A client that offers roots narrows the --root to them, for each call
// after it says they changed; it never widens it.
describe('stdio with the client\'s roots', { timeout: TEST_TIMEOUT_MS }, () => {
  let root;
  let client;
  let transport;
  let roots = [];

  before(async () => {
    checkBuilt();
    root = makeRoot();
    mkdirSync(join(root, 'sub'));
    writeFileSync(join(root, 'sub', 'inner.txt'), 'inner\n');
    roots = [{ uri: pathToFileURL(join(root, 'sub')).href, name: 'sub' }];
    client = new Client({ name: 'agenthost-ts-roots-test', version: '0.0.0' }, { capabilities: { roots: { listChanged: true } } });
    client.setRequestHandler(ListRootsRequestSchema, () => ({ roots }));
    transport = await connectStdio(client, root);
  });

  after(() => closeStdio(client, transport, root));

  async function read(path) {
    const result = await client.callTool({ name: 'read_file', arguments: { path } }, undefined, reqOpts);
    return { text: textOf(result), isError: result.isError === true };
  }

  test('a file outside the client\'s root is refused; one inside is read', async () => {
    assert.deepEqual(await read(join(root, 'sub', 'inner.txt')), { text: 'inner\n', isError: false });
    assert.deepEqual(await read('inner.txt'), { text: 'inner\n', isError: false }, 'relative paths resolve in the client\'s first root');
    const outside = await read(join(root, 'hello.txt'));
    assert.ok(outside.isError, `read outside the client's root: ${outside.text}`);
  });

  test('roots/list_changed takes effect on the next call, never wider than --root', async () => {
    roots = [{ uri: pathToFileURL(dirname(root)).href }];
    await client.sendRootsListChanged();
    assert.deepEqual(await read(join(root, 'hello.txt')), { text: HELLO, isError: false });
    const above = await read(join(dirname(root), 'elsewhere.txt'));
    assert.ok(above.isError, `read above --root: ${above.text}`);
  });
});
