// agenthost-plugin.js serves agenthost tools from a Node.js program: the
// go-plugin handshake, the ToolPlugin service of tool.proto, go-plugin's
// controller (so the host can stop the plugin gracefully) and health
// services, logs the host understands, and SIGTERM. Copy it, with
// tool.proto, beside your plugin and `npm install @grpc/grpc-js
// @grpc/proto-loader`.
//
// A host of tool protocol 1.5 passes the plugin one end of a connected
// socket (its descriptor number in AGENTHOST_PLUGIN_CONN), and the plugin
// serves gRPC on that connection alone: it makes no socket of its own,
// which the host's sandbox forbids. An older host gets a unix socket in
// PLUGIN_UNIX_SOCKET_DIR, as before.
'use strict';

const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTOCOL_MINOR = 5; // the version of tool.proto this file speaks
const MAX_MESSAGE = (64 << 20) + (1 << 20); // the host's limit, with room for the envelope

// log writes one line to the host's log: a JSON line on stderr, as hclog
// writes them. level is trace, debug, info, warn or error.
function log(level, message, fields = {}) {
  // go-plugin reads exactly six digits of fractional seconds.
  const timestamp = new Date().toISOString().replace(/Z$/, '000Z');
  process.stderr.write(JSON.stringify({ ...fields, '@level': level, '@message': message, '@timestamp': timestamp }) + '\n');
}

// go-plugin's services, whose messages need no .proto: Empty is no bytes,
// and a health answer of SERVING is field 1 set to 1. The host stops a
// plugin serving calls through the controller; go-plugin's Ping asks the
// health service.
const raw = (encode) => ({ requestSerialize: () => Buffer.alloc(0), requestDeserialize: () => ({}), responseSerialize: encode, responseDeserialize: () => ({}) });
const controllerService = { Shutdown: { path: '/plugin.GRPCController/Shutdown', requestStream: false, responseStream: false, ...raw(() => Buffer.alloc(0)) } };
const healthService = { Check: { path: '/grpc.health.v1.Health/Check', requestStream: false, responseStream: false, ...raw(() => Buffer.from([0x08, 0x01])) } };

// serve serves tools to the host that started this process, until the
// host stops it. Each tool is { name, description, schema (a JSON Schema
// object), annotations: { read_only, destructive, idempotent, open_world },
// opt_in, timeout_ms, run(args, { roots, log }) } (see ToolSpec in
// tool.proto); run returns the result as a string (or a promise of one),
// and whatever it throws is the call's error, which the model reads as
// "Error executing NAME: MESSAGE". The host checks each call's arguments
// against the schema before run sees them. permissions are those of
// tool.proto, such as { roots: 'ROOTS_READ', read_paths: ['~/.config/x'] }.
function serve({ name = path.basename(require.main.filename), version = 'dev', tools, permissions = {} }) {
  if (process.env.AGENTHOST_PLUGIN !== 'd1f4a7c2-tool-binary') {
    process.stderr.write(`${name} is an agenthost plugin: put it in agenthost's plugins directory, and agenthost runs it\n`);
    process.exit(1);
  }
  if (!(process.env.PLUGIN_PROTOCOL_VERSIONS || '1').split(',').includes('1')) {
    log('error', 'the host speaks none of the protocol versions of this plugin (1)', { host: process.env.PLUGIN_PROTOCOL_VERSIONS });
    process.exit(1);
  }
  const byName = new Map(tools.map((t) => [t.name, t]));
  let calls = 0; // under way
  // exit ends the process, with status 0 unless a call is under way: it
  // could be stuck in Node's thread pool (reading a pipe, say), for which
  // Node's exit would wait for good; then it ends at once, by SIGKILL.
  const exit = () => {
    if (calls > 0) process.kill(process.pid, 'SIGKILL');
    process.exit(0);
  };
  const proto = grpc.loadPackageDefinition(protoLoader.loadSync(path.join(__dirname, 'tool.proto'), { keepCase: true, longs: String, enums: String, defaults: true }));

  const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_MESSAGE, 'grpc.max_send_message_length': MAX_MESSAGE });
  server.addService(proto.agenthost.tool.v1.ToolPlugin.service, {
    Describe: (call, done) => done(null, {
      plugin_name: name, plugin_version: version, protocol_minor: PROTOCOL_MINOR, permissions,
      tools: tools.map((t) => ({
        name: t.name, description: t.description, parameters_schema: Buffer.from(JSON.stringify(t.schema)),
        annotations: t.annotations || {}, opt_in: Boolean(t.opt_in), timeout_ms: t.timeout_ms || 0,
      })),
    }),
    Execute: async (call, done) => {
      const { tool, arguments: args, workspace_roots: roots } = call.request;
      const t = byName.get(tool);
      if (!t) return done(null, { error: `this plugin serves no tool named ${JSON.stringify(tool)}` });
      calls++;
      try {
        const result = await t.run(JSON.parse(args.length ? args.toString('utf8') : '{}'), { roots, log });
        done(null, { result: typeof result === 'string' ? result : JSON.stringify(result) });
      } catch (err) {
        // An empty error would read as success.
        done(null, { error: String((err && err.message) || err || 'failed') });
      } finally {
        calls--;
      }
    },
  });
  server.addService(controllerService, {
    Shutdown: (call, done) => {
      done(null, {});
      // Exit once the answers under way, this one among them, are out; the
      // calls that still run a moment later are ended.
      server.tryShutdown(exit);
      setTimeout(exit, 250);
    },
  });
  server.addService(healthService, { Check: (call, done) => done(null, {}) });

  // An older host gives the plugin a directory for its socket, which its
  // sandbox lets it use; nothing else is writable.
  const conn = process.env.AGENTHOST_PLUGIN_CONN;
  const dir = conn === undefined ? process.env.PLUGIN_UNIX_SOCKET_DIR || fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'plugin')) : undefined;
  process.on('SIGTERM', () => {
    // The host died (the kernel tells its plugins with SIGTERM): remove
    // the socket directory, the host's sockets too, which it cannot, and
    // take along the group's other processes, should a tool have started
    // any (the host makes each plugin a group leader).
    if (dir) try { fs.rmSync(dir, { recursive: true, force: true }); } catch { /* its parent is not ours to list */ }
    try { process.kill(-process.pid, 'SIGKILL'); } catch { /* not a group leader */ }
    // Die of the signal: Node's exit could wait for a call stuck in its
    // thread pool.
    process.removeAllListeners('SIGTERM');
    process.kill(process.pid, 'SIGTERM');
  });
  if (conn !== undefined) serveConnection(server, conn, exit);
  else listen(server, dir);
}

// serveConnection serves the connection the host made, on descriptor
// conn, and exits when it ends (the host closed its end, or died).
function serveConnection(server, conn, exit) {
  if (!/^[0-9]+$/.test(conn)) {
    log('error', `AGENTHOST_PLUGIN_CONN is ${JSON.stringify(conn)}, not a file descriptor number`);
    process.exit(1);
  }
  let socket;
  try {
    socket = new net.Socket({ fd: Number(conn), readable: true, writable: true });
  } catch (err) {
    log('error', `serving on descriptor ${conn}: ${err.message}`);
    process.exit(1);
  }
  socket.on('error', (err) => log('debug', `the host's connection: ${err.message}`));
  socket.on('close', exit);
  server.createConnectionInjector(grpc.ServerCredentials.createInsecure()).injectConnection(socket);
  // The handshake: core protocol 1, app protocol 1, where, and how.
  process.stdout.write(`1|1|unix|fd:${conn}|grpc\n`);
}

// listen serves, the old way, each connection to a unix socket in dir.
function listen(server, dir) {
  const socket = path.join(dir, `plugin-${process.pid}.sock`);
  server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => {
    if (err) {
      log('error', `listening on ${socket}: ${err.message}`);
      process.exit(1);
    }
    process.stdout.write(`1|1|unix|${socket}|grpc\n`); // the handshake, naming the socket
  });
}

module.exports = { serve, log };
