// bench-client.mjs times calls of an MCP server's echo tool through the
// official TypeScript SDK's Client over stdio: the figure that agenthost's
// own MCP calls are measured against (BenchmarkMCP, in host/).
//
//   node bench-client.mjs [--warmup N] -- COMMAND [ARG...]
//
// It starts the server COMMAND ARG... with StdioClientTransport, lists its
// tools (as a client does before it calls one), makes N warm-up calls of
// echo (100 by default), and writes "ready" on a line of its own. Then
// each line read on stdin is a number of calls: it makes that many, one
// after the other, each timed on its own, and answers with one line of
// JSON, {"ns":[...]}, the duration of every call in nanoseconds. At the
// end of stdin it closes the client, which stops the server, and exits.
//
//   echo 1000 | node bench-client.mjs -- node node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio

import { createInterface } from 'node:readline';
import process from 'node:process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const usage = 'usage: node bench-client.mjs [--warmup N] -- COMMAND [ARG...]';

// parseArgs returns the options and the server's command, or null.
function parseArgs(argv) {
  let warmup = 100;
  let i = 0;
  for (; i < argv.length && argv[i] !== '--'; i++) {
    if (argv[i] === '--warmup' && i + 1 < argv.length) {
      warmup = Number(argv[++i]);
    } else {
      return null;
    }
  }
  const command = argv.slice(i + 1);
  if (command.length === 0 || !Number.isInteger(warmup) || warmup < 0) {
    return null;
  }
  return { warmup, command: command[0], args: command.slice(1) };
}

const message = 'x';
const want = `Echo: ${message}`;

// call makes one call of echo and checks its answer.
async function call(client) {
  const res = await client.callTool({ name: 'echo', arguments: { message } });
  const text = res.content?.[0]?.text;
  if (res.isError || text !== want) {
    throw new Error(`echo answered ${JSON.stringify(res)}`);
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts === null) {
    process.stderr.write(usage + '\n');
    process.exit(2);
  }
  const { warmup, command, args } = opts;
  const client = new Client({ name: 'agenthost-bench', version: '0.0.0' });
  // The server's stderr goes to this script's.
  await client.connect(new StdioClientTransport({ command, args }));
  const { tools } = await client.listTools();
  if (!tools.some(t => t.name === 'echo')) {
    throw new Error('the server has no echo tool');
  }
  for (let i = 0; i < warmup; i++) {
    await call(client);
  }
  process.stdout.write('ready\n');

  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() === '') {
      continue;
    }
    const n = Number(line);
    if (!Number.isInteger(n) || n < 0) {
      throw new Error(`not a number of calls: ${JSON.stringify(line)}`);
    }
    const ns = new Array(n);
    for (let i = 0; i < n; i++) {
      const start = process.hrtime.bigint();
      await call(client);
      ns[i] = Number(process.hrtime.bigint() - start);
    }
    process.stdout.write(JSON.stringify({ ns }) + '\n');
  }
  await client.close();
}

main().catch(err => {
  process.stderr.write(`bench-client: ${err?.stack ?? err}\n`);
  process.exit(1);
});
