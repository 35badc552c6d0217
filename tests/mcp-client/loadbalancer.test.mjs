// Stateless agenthost behind a real load balancer: three
// `agenthost mcp --http 127.0.0.1:0 --stateless` replicas behind haproxy
// (round robin, no stickiness, TCP health checks), driven by the official
// TypeScript SDK's Client and StreamableHTTPClientTransport.
//
//   make build && cd tests/mcp-client && npm ci && npm test
//
// It needs haproxy (Debian's haproxy package): on PATH or at
// /usr/sbin/haproxy. Without it the test fails; it is never skipped.
//
// What it proves:
//   - a client whose requests go to a different replica each time (its
//     initialize to one, the next call to another, ...) works as against a
//     single server: every answer is right, and every replica answers;
//   - when one replica dies (SIGKILL) while ten clients are calling tools,
//     at most the calls in flight at that moment fail, each client's
//     further calls succeed on the same Client and transport, and the dead
//     replica answers nothing after its death.
//
// Each replica's root holds replica.txt with the replica's name, and
// haproxy sets X-Replica to the name of the server it used, so reading
// replica.txt checks that the header tells the truth.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, existsSync, realpathSync, accessSync, constants } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, dirname, delimiter } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, process.env.AGENTHOST_BIN || '../../bin/agenthost');
const PLUGINS = resolve(here, process.env.AGENTHOST_PLUGINS_DIR || '../../bin/plugins');

// Hang guards only: nothing below asserts on time.
const REQUEST_TIMEOUT_MS = 30_000;
const STARTUP_TIMEOUT_MS = 15_000;
const TEST_TIMEOUT_MS = 120_000;
const reqOpts = { timeout: REQUEST_TIMEOUT_MS };

const REPLICAS = ['r0', 'r1', 'r2'];
const HELLO = 'hello through the load balancer\n';
// list_dir of every replica's root: the same in all three (replica.txt
// has the same size everywhere).
const LISTING = [`hello.txt (${Buffer.byteLength(HELLO)} B)`, 'replica.txt (3 B)', 'sub/'];

// The kill test: CLIENTS clients call tools in a loop; once every replica
// has answered BEFORE_KILL of their calls, one replica is killed, and each
// client then goes on until it has AFTER_KILL successful calls that
// started after the kill. MAX_CALLS bounds each client's loop.
const CLIENTS = 10;
const BEFORE_KILL = 5;
const AFTER_KILL = 15;
const MAX_CALLS = 300;
const VICTIM = 'r1';

// Every process this file starts, so that they are killed even when the
// test runner gives up on the file. Only these are ever signalled, by pid.
// agenthost runs each plugin in a process group of its own: it stops them
// itself on SIGTERM, and on SIGKILL they die with it (Pdeathsig).
const started = new Set();
process.on('exit', () => {
  for (const child of started) {
    if (!exited(child)) { try { child.kill('SIGKILL'); } catch { /* gone */ } }
  }
});

function exited(child) {
  return child.exitCode !== null || child.signalCode !== null;
}

// stop ends a child started by this file: SIGTERM (agenthost stops its
// plugins, haproxy stops at once), SIGKILL if it is still there after 5 s.
function stop(child) {
  if (!child) return Promise.resolve();
  return new Promise((done) => {
    const finish = () => { started.delete(child); done(); };
    if (exited(child)) { finish(); return; }
    const timer = setTimeout(() => { try { child.kill('SIGKILL'); } catch { /* gone */ } }, 5_000);
    child.once('exit', () => { clearTimeout(timer); finish(); });
    child.kill('SIGTERM');
  });
}

function startChild(cmd, args, cwd) {
  const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  started.add(child);
  const out = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d) => { out.stdout += d; });
  child.stderr.on('data', (d) => { out.stderr += d; });
  return { child, out };
}

// findHaproxy looks for haproxy on PATH, then at /usr/sbin/haproxy (where
// Debian installs it, often not on a user's PATH).
function findHaproxy() {
  const dirs = (process.env.PATH || '').split(delimiter).filter(Boolean);
  for (const dir of [...dirs, '/usr/sbin']) {
    const p = join(dir, 'haproxy');
    try { accessSync(p, constants.X_OK); return p; } catch { /* next */ }
  }
  return null;
}

function makeRoot(parent, name) {
  const root = join(parent, name);
  mkdirSync(join(root, 'sub'), { recursive: true });
  writeFileSync(join(root, 'hello.txt'), HELLO);
  writeFileSync(join(root, 'replica.txt'), `${name}\n`);
  return root;
}

// startReplica starts `agenthost mcp --http 127.0.0.1:0 --stateless` in its
// own root, with no configuration file and no description cache, and
// resolves with its port once it prints "listening on http://ADDR/mcp".
function startReplica(name, root) {
  const { child, out } = startChild(BIN, [
    'mcp', '--http', '127.0.0.1:0', '--stateless',
    '--config', '-', '--cache-dir', '-',
    '--plugins', PLUGINS, '--root', root,
  ], root);
  const port = new Promise((resolvePort, reject) => {
    const timer = setTimeout(() => reject(new Error(
      `${name}: no "listening on" line within ${STARTUP_TIMEOUT_MS} ms\nstderr:\n${out.stderr}`)), STARTUP_TIMEOUT_MS);
    child.stderr.on('data', () => {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(out.stderr);
      if (m) { clearTimeout(timer); resolvePort(Number(m[1])); }
    });
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name}: agenthost exited (code ${code}, signal ${signal}) before listening\nstderr:\n${out.stderr}`));
    });
  });
  return { name, child, out, port };
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolvePort(port));
    });
  });
}

function canConnect(port) {
  return new Promise((done) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => { sock.destroy(); done(true); });
    sock.once('error', () => { sock.destroy(); done(false); });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// haproxyConfig: no daemon, chroot, user, stats socket or pid file, so it
// runs unprivileged in the foreground (-db). Every request is balanced on
// its own (http-server-close: a new server connection per request, and no
// stickiness of any kind). A request whose server connection fails, or
// whose server closes the connection without answering (a replica killed
// while serving it), is retried, on another server (redispatch on every
// retry); the TCP checks mark a dead replica down within about 100 ms.
function haproxyConfig(port, backends) {
  return `global
    log stderr format raw local0 info
    maxconn 256

defaults
    mode http
    log global
    log-format "%b/%s status=%ST retries=%rc term=%tsc"
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    option http-server-close
    option redispatch 1
    retries 3
    retry-on conn-failure empty-response

frontend mcp
    bind 127.0.0.1:${port}
    default_backend replicas

backend replicas
    balance roundrobin
    http-response set-header X-Replica %s
${backends.map(([name, p]) => `    server ${name} 127.0.0.1:${p} check inter 100ms fall 1 rise 2`).join('\n')}
`;
}

// startHaproxy writes the configuration and starts haproxy on a free port,
// resolving once the port accepts connections. A port taken between
// freePort and haproxy's bind makes haproxy exit: then another is tried.
async function startHaproxy(bin, dir, backends) {
  let lastErr;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const cfg = join(dir, 'haproxy.cfg');
    writeFileSync(cfg, haproxyConfig(port, backends));
    const { child, out } = startChild(bin, ['-f', cfg, '-db'], dir);
    let spawnErr;
    child.on('error', (err) => { spawnErr = err; });
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    while (!exited(child) && !spawnErr && Date.now() < deadline) {
      if (await canConnect(port)) return { child, out, port };
      await sleep(25);
    }
    lastErr = spawnErr || new Error(`haproxy did not listen on 127.0.0.1:${port}` +
      `${exited(child) ? ` (exited: code ${child.exitCode}, signal ${child.signalCode})` : ` within ${STARTUP_TIMEOUT_MS} ms`}` +
      `\nstderr:\n${out.stderr}`);
    await stop(child);
  }
  throw lastErr;
}

// connectClient connects an SDK Client through haproxy. Its fetch records
// every HTTP exchange: method, JSON-RPC method, status and X-Replica.
async function connectClient(url, name) {
  const log = [];
  const errors = [];
  const recordingFetch = async (input, init) => {
    const res = await fetch(input, init);
    let rpc;
    if (typeof init?.body === 'string') {
      try { rpc = JSON.parse(init.body).method; } catch { /* not JSON */ }
    }
    log.push({ http: init?.method ?? 'GET', rpc, status: res.status, replica: res.headers.get('x-replica') });
    return res;
  };
  const transport = new StreamableHTTPClientTransport(url, { fetch: recordingFetch });
  const client = new Client({ name, version: '0.0.0' });
  client.onerror = (err) => errors.push(err);
  await client.connect(transport, { timeout: STARTUP_TIMEOUT_MS });
  // The replica of the last exchange of a JSON-RPC method; each client
  // here has one request at a time.
  const lastReplica = (rpc) => {
    for (let i = log.length - 1; i >= 0; i--) {
      if (log[i].rpc === rpc) return log[i].replica;
    }
    return undefined;
  };
  return { client, transport, log, errors, lastReplica };
}

function textOf(result) {
  assert.ok(Array.isArray(result.content), `content is not an array: ${JSON.stringify(result)}`);
  return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
}

// callChecked makes one call of the given kind and checks its answer;
// it returns the replica that answered.
async function callChecked(c, kind) {
  if (kind === 'tools/list') {
    const { tools } = await c.client.listTools(undefined, reqOpts);
    const names = tools.map((t) => t.name);
    for (const want of ['read_file', 'list_dir']) {
      assert.ok(names.includes(want), `${want} is not listed; got ${names.join(', ')}`);
    }
    return c.lastReplica('tools/list');
  }
  if (kind === 'read_file') {
    const res = await c.client.callTool({ name: 'read_file', arguments: { path: 'replica.txt' } }, undefined, reqOpts);
    const replica = c.lastReplica('tools/call');
    assert.notEqual(res.isError, true, `read_file failed: ${JSON.stringify(res)}`);
    assert.equal(textOf(res), `${replica}\n`, `replica.txt read through X-Replica ${replica}`);
    return replica;
  }
  if (kind === 'list_dir') {
    const res = await c.client.callTool({ name: 'list_dir', arguments: { path: '.' } }, undefined, reqOpts);
    assert.notEqual(res.isError, true, `list_dir failed: ${JSON.stringify(res)}`);
    assert.deepEqual(textOf(res).split('\n').filter(Boolean), LISTING);
    return c.lastReplica('tools/call');
  }
  throw new Error(`unknown kind ${kind}`);
}

function countBy(items) {
  const m = Object.fromEntries(REPLICAS.map((r) => [r, 0]));
  for (const r of items) m[r] = (m[r] ?? 0) + 1;
  return m;
}

// lostWithReplica tells whether err is what the TypeScript client reports
// for a call lost with its replica, when haproxy got no answer for it and
// could not retry it. It is one of two errors, found by running this test
// without `retry-on empty-response`:
//
//   - a request that was not the first on its client connection: haproxy
//     closes that connection without an answer (so that the client may
//     retry, as after a keep-alive race), and Node's fetch rejects with
//     TypeError "fetch failed", cause SocketError "other side closed"
//     (UND_ERR_SOCKET);
//   - the first request of a connection: haproxy answers 502 Bad Gateway
//     ("The server returned an invalid or incomplete response"), which the
//     transport throws as a StreamableHTTPError with code 502.
//
// With this file's configuration (retry-on empty-response) haproxy retries
// such a request on another replica instead, and no call has been seen to
// fail. When one does fail, a real user's client sees this: the call's
// promise (callTool, listTools, ...) rejects with that error, and the
// Client's onerror gets the same error. Nothing else breaks: the transport
// keeps no state of the failed request and a stateless server no session,
// so the next call on the same Client and transport goes to a live replica
// and succeeds; no new transport and no new initialize are needed, and the
// caller may simply retry the call. (Every call here is idempotent.
// haproxy's retry-on empty-response replays a request that the dead replica
// may have begun: a tool with side effects may then run twice.)
function lostWithReplica(err) {
  if (err instanceof StreamableHTTPError) return err.code === 502;
  return err instanceof TypeError && err.message === 'fetch failed' && err.cause?.code === 'UND_ERR_SOCKET';
}

// sseCut tells whether err is the transport's report of an answer's event
// stream cut after the answer, which a replica killed between writing its
// result and ending the response would cause (not seen so far): the call
// succeeds, and only the Client's onerror gets this.
function sseCut(err) {
  return /^SSE stream disconnected: /.test(err?.message ?? '');
}

describe('stateless replicas behind haproxy', { timeout: TEST_TIMEOUT_MS }, () => {
  let dir;
  let replicas = [];
  let proxy;
  let url;
  const clients = [];

  before(async () => {
    assert.ok(existsSync(BIN), `agenthost binary not found at ${BIN}: run make build (or set AGENTHOST_BIN)`);
    assert.ok(existsSync(PLUGINS), `plugins directory not found at ${PLUGINS}: run make build (or set AGENTHOST_PLUGINS_DIR)`);
    const haproxy = findHaproxy();
    assert.ok(haproxy, 'haproxy not found on PATH or at /usr/sbin/haproxy: install Debian\'s haproxy package (apt-get install haproxy)');

    dir = realpathSync(mkdtempSync(join(tmpdir(), 'agenthost-lb-')));
    replicas = REPLICAS.map((name) => startReplica(name, makeRoot(dir, name)));
    const ports = await Promise.all(replicas.map((r) => r.port));
    proxy = await startHaproxy(haproxy, dir, REPLICAS.map((name, i) => [name, ports[i]]));
    url = new URL(`http://127.0.0.1:${proxy.port}/mcp`);
  });

  after(async () => {
    await Promise.all(clients.map((c) => c.client.close().catch(() => {})));
    await stop(proxy?.child);
    await Promise.all(replicas.map((r) => stop(r.child)));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('round robin: every replica answers, every answer is right', async (t) => {
    const c = await connectClient(url, 'lb-sequential');
    clients.push(c);
    // initialize and notifications/initialized went to different
    // replicas, and the client is connected all the same.
    const [init, initialized] = c.log;
    assert.equal(`${init.rpc} ${init.status}`, 'initialize 200');
    assert.equal(`${initialized.rpc} ${initialized.status}`, 'notifications/initialized 202');
    assert.notEqual(init.replica, initialized.replica, 'initialize and notifications/initialized went to the same replica');

    // Four kinds of request in turn: a period of four against three
    // replicas puts every kind on every replica.
    const kinds = ['tools/list', 'read_file', 'list_dir', 'read_file'];
    const answered = { 'tools/list': [], read_file: [], list_dir: [] };
    const all = [];
    for (let i = 0; i < 36; i++) {
      const kind = kinds[i % kinds.length];
      const replica = await callChecked(c, kind);
      assert.ok(REPLICAS.includes(replica), `X-Replica ${replica}`);
      answered[kind].push(replica);
      all.push(replica);
    }
    const counts = countBy(all);
    t.diagnostic(`36 requests of one client: ${JSON.stringify(counts)}; every kind: ${JSON.stringify(Object.fromEntries(Object.entries(answered).map(([k, v]) => [k, countBy(v)])))}`);
    // Round robin without stickiness spreads one client's requests evenly.
    for (const r of REPLICAS) {
      assert.ok(counts[r] >= all.length / 4, `${r} answered ${counts[r]} of ${all.length} requests: ${JSON.stringify(counts)}`);
      for (const [kind, list] of Object.entries(answered)) {
        assert.ok(list.includes(r), `${r} answered no ${kind}: ${JSON.stringify(countBy(list))}`);
      }
    }
    assert.deepEqual(c.errors, [], 'transport errors');
  });

  test('a replica killed mid-run: only calls in flight can fail, then all goes on', async (t) => {
    const victim = replicas.find((r) => r.name === VICTIM);
    const conns = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => connectClient(url, `lb-${i}`)));
    clients.push(...conns);

    const state = {
      abort: false,
      killed: false,
      inFlight: 0,
      inFlightAtKill: 0,
      answeredBeforeKill: countBy([]),
      calls: [], // { client, startedAfterKill, replica?, err? }
    };

    const maybeKill = () => {
      if (state.killed || !REPLICAS.every((r) => state.answeredBeforeKill[r] >= BEFORE_KILL)) return;
      state.killed = true;
      state.inFlightAtKill = state.inFlight;
      process.kill(victim.child.pid, 'SIGKILL');
    };

    // The same Client and transport go on after a failed call: a stateless
    // server keeps no session, so there is nothing to reconnect.
    const worker = async (c, i) => {
      let okAfterKill = 0;
      for (let n = 0; n < MAX_CALLS; n++) {
        if (okAfterKill >= AFTER_KILL || state.abort) return;
        const kind = n % 2 === 0 ? 'read_file' : 'list_dir';
        const call = { client: i, startedAfterKill: state.killed };
        state.calls.push(call);
        state.inFlight++;
        try {
          call.replica = await callChecked(c, kind);
        } catch (err) {
          call.err = err;
        } finally {
          state.inFlight--;
        }
        if (call.err) {
          // Anything but a call lost with the killed replica fails the test.
          if (!lostWithReplica(call.err)) { state.abort = true; throw call.err; }
        } else if (call.startedAfterKill) {
          okAfterKill++;
        } else {
          state.answeredBeforeKill[call.replica]++;
        }
        maybeKill();
      }
      state.abort = true;
      throw new Error(`client ${i}: ${MAX_CALLS} calls without ${AFTER_KILL} successful ones after the kill ` +
        `(killed: ${state.killed}; answered before: ${JSON.stringify(state.answeredBeforeKill)})`);
    };
    await Promise.all(conns.map(worker));

    const failed = state.calls.filter((c) => c.err);
    const after = state.calls.filter((c) => c.startedAfterKill && !c.err);
    const afterCounts = countBy(after.map((c) => c.replica));
    const retried = (proxy.out.stderr.match(/retries=\+?[1-9]/g) || []).length;
    t.diagnostic(`${state.calls.length} calls; ${state.inFlightAtKill} in flight when ${VICTIM} was killed; ` +
      `${failed.length} failed${failed.length ? `: ${failed.map((c) => c.err.message).join(' | ')}` : ''}; ` +
      `haproxy retried ${retried} requests; answered before the kill ${JSON.stringify(state.answeredBeforeKill)}, ` +
      `after ${JSON.stringify(afterCounts)}; transport errors: ` +
      `${conns.flatMap((c) => c.errors.map((e) => e.message)).join(' | ') || 'none'}`);

    assert.ok(state.killed, 'the replica was never killed');
    assert.ok(failed.length <= state.inFlightAtKill,
      `${failed.length} calls failed, more than the ${state.inFlightAtKill} in flight at the kill`);
    assert.ok(state.inFlightAtKill <= CLIENTS);
    // The Client's onerror saw the failed calls' errors and, at most once
    // per call in flight at the kill, an answer's stream cut after the
    // answer; nothing else.
    const transportErrors = conns.flatMap((c) => c.errors);
    for (const err of transportErrors) {
      assert.ok(lostWithReplica(err) || sseCut(err), `unexpected transport error: ${err?.stack ?? err}`);
    }
    assert.equal(transportErrors.filter(lostWithReplica).length, failed.length);
    assert.ok(transportErrors.length <= state.inFlightAtKill,
      `${transportErrors.length} transport errors, more than the ${state.inFlightAtKill} calls in flight at the kill`);
    // No call that started after the kill was answered by the dead replica,
    // and the two live ones share the load.
    assert.equal(afterCounts[VICTIM], 0, `${VICTIM} answered after its death: ${JSON.stringify(afterCounts)}`);
    for (const r of REPLICAS.filter((r) => r !== VICTIM)) {
      assert.ok(afterCounts[r] > 0, `${r} answered nothing after the kill: ${JSON.stringify(afterCounts)}`);
    }
    assert.equal(after.length, CLIENTS * AFTER_KILL);
  });
});
