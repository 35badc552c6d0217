#!/usr/bin/env bash
# The walkthrough of docs/writing-tools.md ("Writing a tool"), run as an
# outsider would run it: in an empty directory outside the repository, a module of
# its own (example.com/greet) requires this one through a replace to a
# clone, builds the greet plugin into the clone's plugins directory, and
# lists, calls, disables and enables it.
#
# docs/writing-tools.md is the only source. In it, the block after
# <!-- outsider: file PATH --> is written to PATH (from the walkthrough's
# starting directory), and the ```sh block after <!-- outsider: run --> is
# run, in the page's order, in one shell (a cd holds for what follows). In a run block "$ " starts a command, and the
# lines up to the next one are what it must print, stdout and stderr
# together: runs of blanks count as one, and a line "..." stands for any
# lines. A command whose output shows an "Error: " line must exit with
# status 1 (the CLI's tool errors), any other with 0. The clone is of
# this repository, at its HEAD, instead of GitHub.
#
# The plugin's build must take every package but the outsider's own and
# agenthost's from Go's build cache: the page promises a build of seconds.
#
# It needs git, make, go, and the module proxy for go mod tidy (unless the
# module cache holds what the sdk needs). Run it after make build: then
# the clone's build compiles only agenthost's own packages.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
page="$repo/docs/writing-tools.md"
clone="git clone https://github.com/agenthost/agenthost.git"

fail() {
	echo "outsider: $*" >&2
	exit 1
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Go keeps the user's caches and settings (its build cache is what keeps
# the plugin's build short); agenthost gets no configuration file and an
# empty description cache.
for v in GOCACHE GOMODCACHE GOPATH GOENV GOFLAGS; do
	export "$v=$(go env "$v")"
done
export XDG_CONFIG_HOME="$tmp/config" XDG_CACHE_HOME="$tmp/cache"
unset AGENTHOST_PLUGINS

# --- Read the walkthrough out of docs/writing-tools.md.

[ -f "$page" ] || fail "there is no $page"
text="$(cat "$page")"

kinds=() # run or file
args=()  # the file's path
bodies=()
marker="" arg="" fence=0 body="" skipping=0
while IFS= read -r line; do
	if ((fence)); then
		if [[ $line == '```'* ]]; then
			kinds+=("$marker")
			args+=("$arg")
			bodies+=("$body")
			marker="" fence=0
		else
			body+="$line"$'\n'
		fi
		continue
	fi
	if ((skipping)); then
		[[ $line == '```'* ]] && skipping=0
		continue
	fi
	case "$line" in
	'<!-- outsider: run -->')
		marker=run arg=""
		;;
	'<!-- outsider: file '*' -->')
		marker=file arg="${line#'<!-- outsider: file '}" arg="${arg%' -->'}"
		;;
	'```'*)
		if [ -n "$marker" ]; then
			[ "$marker" = file ] || [ "$line" = '```sh' ] || fail "<!-- outsider: run --> is followed by $line, not a \`\`\`sh block"
			fence=1 body=""
		else
			skipping=1
		fi
		;;
	'') ;;
	*)
		[ -z "$marker" ] || fail "<!-- outsider: $marker $arg--> is followed by text, not a block: $line"
		;;
	esac
done <<<"$text"
((!fence)) || fail "a marked block in docs/writing-tools.md is not closed"
[ -z "$marker" ] || fail "<!-- outsider: $marker --> is followed by no block"
[ "${#kinds[@]}" -ge 3 ] || fail "found ${#kinds[@]} marked blocks in docs/writing-tools.md, want the walkthrough's"

# --- Run it.

# squeeze drops trailing blank lines and makes every run of blanks one
# space.
squeeze() {
	sed -e 's/[[:space:]][[:space:]]*/ /g' -e 's/ $//' | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
}

# matches reports whether the output in file $2 is what file $1 shows.
matches() {
	local -a want have
	mapfile -t want < <(squeeze <"$1")
	mapfile -t have < <(squeeze <"$2")
	local i j=0 any=0
	for ((i = 0; i < ${#want[@]}; i++)); do
		if [ "${want[i]}" = "..." ]; then
			any=1
			continue
		fi
		if ((any)); then
			while ((j < ${#have[@]})) && [ "${have[j]}" != "${want[i]}" ]; do
				j=$((j + 1))
			done
			any=0
		fi
		((j < ${#have[@]})) && [ "${have[j]}" = "${want[i]}" ] || return 1
		j=$((j + 1))
	done
	((any)) || ((j == ${#have[@]}))
}

ran=0 clones=0 builds=0
run_one() {
	local cmd="$1" want="$2" status=0 build=0
	if [[ $cmd == "git clone"* ]]; then
		[ "$cmd" = "$clone" ] || fail "the walkthrough's clone step is \"$cmd\", not \"$clone\": cannot put this repository in its place"
		cmd="git clone --quiet \"$repo\" agenthost"
		clones=$((clones + 1))
	fi
	[[ $cmd == *"go build "* ]] && build=1
	echo "\$ $cmd"
	local start=$EPOCHREALTIME
	set +e
	if ((build)); then
		# -v names each package the build compiles.
		GOFLAGS="$GOFLAGS -v"
		eval "$cmd" >"$tmp/out" 2>&1
		status=$?
		GOFLAGS="${GOFLAGS% -v}"
	else
		eval "$cmd" >"$tmp/out" 2>&1
		status=$?
	fi
	set -e
	sed 's/^/  /' "$tmp/out"
	ran=$((ran + 1))

	local want_status=0
	grep -q '^Error: ' <<<"$want" && want_status=1
	[ "$status" = "$want_status" ] || fail "\$ $1: exit status $status, the page implies $want_status"
	printf '%s' "$want" >"$tmp/want"
	if [ -n "$(squeeze <"$tmp/want")" ] && ! matches "$tmp/want" "$tmp/out"; then
		fail "\$ $1 printed:
$(cat "$tmp/out")
docs/writing-tools.md shows:
$want"
	fi
	if ((build)); then
		builds=$((builds + 1))
		local compiled
		compiled="$(grep -v -e '^example\.com/' -e '^github\.com/agenthost/agenthost\(/\|$\)' "$tmp/out" || true)"
		[ -z "$compiled" ] || fail "\$ $1 compiled packages that Go's build cache should have held:
$compiled"
		echo "  (built in $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s, nothing but the plugin's own packages compiled)"
	fi
}

run_block() {
	local cmd="" want="" have=0 line
	while IFS= read -r line; do
		if [[ $line == '$ '* ]]; then
			((!have)) || run_one "$cmd" "$want"
			cmd="${line#'$ '}" want="" have=1
		elif ((have)); then
			want+="$line"$'\n'
		elif [ -n "$line" ]; then
			fail "a run block starts with \"$line\", not a \"\$ \" command"
		fi
	done <<<"$1"
	((!have)) || run_one "$cmd" "$want"
}

walk="$tmp/walk"
mkdir "$walk"
cd "$walk"
for i in "${!kinds[@]}"; do
	case "${kinds[i]}" in
	file)
		mkdir -p "$(dirname "$walk/${args[i]}")"
		printf '%s' "${bodies[i]}" >"$walk/${args[i]}"
		echo "# wrote ${args[i]}"
		;;
	run)
		run_block "${bodies[i]}"
		;;
	esac
done
[ "$clones" = 1 ] || fail "the walkthrough clones the repository $clones times, want once"
[ "$builds" -ge 1 ] || fail "the walkthrough builds no plugin"
echo "outsider: the walkthrough of docs/writing-tools.md ran as written ($ran commands)"
