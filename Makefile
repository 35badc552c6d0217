GO ?= go
BIN := bin
PLUGINS := fs session search bash
EXAMPLES := clock

.PHONY: all build run test test-launchers prereqs bench proto clean

all: build

# The binaries are static (CGO_ENABLED=0): without the dynamic loader every
# process starts about 5 ms sooner, and a call starts two. Nothing here
# needs cgo; user names are looked up in /etc/passwd. The grpcnotrace tag
# leaves out gRPC's request tracing (golang.org/x/net/trace and
# html/template), which nothing here turns on: 3 MB less per binary and
# about a millisecond less at every start.
TAGS := grpcnotrace

build:
	CGO_ENABLED=0 $(GO) build -tags $(TAGS) -o $(BIN)/agenthost ./cmd/agenthost
	@for p in $(PLUGINS); do \
		echo "CGO_ENABLED=0 $(GO) build -tags $(TAGS) -o $(BIN)/plugins/agenthost-plugin-$$p ./plugins/$$p"; \
		CGO_ENABLED=0 $(GO) build -tags $(TAGS) -o $(BIN)/plugins/agenthost-plugin-$$p ./plugins/$$p || exit 1; \
	done

# run builds everything, lists the tools the plugins serve, and makes one
# real call through a plugin process.
run: build
	$(BIN)/agenthost tools
	@echo
	$(BIN)/agenthost call read_file '{"path":"README.md","limit":12}'

# The tests run real MCP servers installed from npm (pinned in
# tests/mcp-servers/package-lock.json); they need Node 20 or newer.
MCP_SERVERS := tests/mcp-servers

# Without npm, the tests that need these packages skip, each saying so.
$(MCP_SERVERS)/node_modules/.package-lock.json: $(MCP_SERVERS)/package.json $(MCP_SERVERS)/package-lock.json
	@if command -v npm >/dev/null; then \
		echo "cd $(MCP_SERVERS) && npm ci --no-audit --no-fund"; \
		cd $(MCP_SERVERS) && npm ci --no-audit --no-fund && touch node_modules/.package-lock.json; \
	else echo "make test: npm is not installed (apt-get install nodejs npm): the MCP server tests are skipped"; fi

# The Node.js example plugin's packages (pinned in
# examples/node/package-lock.json), which examples/polyglot's tests run.
NODE_EXAMPLE := examples/node

$(NODE_EXAMPLE)/node_modules/.package-lock.json: $(NODE_EXAMPLE)/package.json $(NODE_EXAMPLE)/package-lock.json
	@if command -v npm >/dev/null; then \
		echo "cd $(NODE_EXAMPLE) && npm ci --no-audit --no-fund"; \
		cd $(NODE_EXAMPLE) && npm ci --no-audit --no-fund && touch node_modules/.package-lock.json; \
	else echo "make test: npm is not installed: the Node.js example plugin's tests are skipped"; fi

# Every main package the tests run as a process (the CLI, the plugins, the
# test plugins of host/testdata) is built once, before the tests, into a
# directory of the temporary directory named after this checkout: the test
# processes of each package take them from there (hard links into their
# own temporary directories) instead of linking their own copies
# (internal/plugintest). go build leaves a binary that is up to date as
# it is, so a second make test links only what changed.
TEST_BINARIES := ./cmd/agenthost ./examples/clock $(addprefix ./plugins/,$(PLUGINS)) \
	$(patsubst %/,./%,$(dir $(wildcard host/testdata/*/main.go)))
TEST_BIN := $(or $(TMPDIR),/tmp)/agenthost-test-binaries-$(shell printf '%s' '$(CURDIR)' | cksum | cut -d' ' -f1)

# prereqs installs the Debian packages some tests use, when it may, and
# says in one line what is missing when it may not (.ci/prereqs).
prereqs:
	@sh .ci/prereqs

# Four packages' tests at once, on two cores: many of them wait on the
# processes they start, and the waits overlap.
test: prereqs $(MCP_SERVERS)/node_modules/.package-lock.json $(NODE_EXAMPLE)/node_modules/.package-lock.json
	$(GO) vet ./...
	$(GO) build -o $(TEST_BIN)/ $(TEST_BINARIES)
	AGENTHOST_TEST_BINARIES=$(TEST_BIN) $(GO) test -race -p 4 ./...

# test-launchers runs the tests of MCP servers that npx installs and
# starts from empty caches (from a registry served locally out of
# tests/mcp-servers): they take npm's seconds, so make test leaves them
# out; .ci/run runs them.
test-launchers: prereqs $(MCP_SERVERS)/node_modules/.package-lock.json
	$(GO) build -o $(TEST_BIN)/ $(TEST_BINARIES)
	AGENTHOST_TEST_BINARIES=$(TEST_BIN) $(GO) test -race -tags launchers -run '^Test(LauncherServersEmptyCache|NpxInstallCutShortRepaired)$$' ./host/

# bench measures the plugin call path against an in-process call (and
# against the same plugin without its sandbox); one plugin's launch with
# its sandbox and without; a run_bash command that does nothing, after a
# pause and back to back; a bare process start with a plugin's Landlock
# ruleset and filter and without, and in a sandbox of its own (the
# stage, namespaces) against that; the lifecycle figures side by side (per-call
# p50/p99 of a direct call, an in-process tool and a plugin tool through
# the registry, and a raw gRPC echo between two processes; plugin
# throughput with 1 and 8 callers; the RSS of an idle plugin and of a host
# with its plugins stopped); a call of an MCP server's tool (the echo of
# server-everything over stdio) through the registry against the same
# call through the official TypeScript client (median per call of each,
# and the ratio; it needs the servers of tests/mcp-servers, which make
# test installs); start-up (agenthost tools against agenthost
# --version); MCP calls/s over HTTP from 50 clients through HAProxy
# (Debian's haproxy package) in front of 1 and of 3 agenthost mcp --http
# --stateless replicas, with where the CPU went; and the search tools
# against rg and fd (Debian packages ripgrep and fd-find) on Go's own
# source tree, printing the ratios; and every one-shot target at once
# (BenchmarkOneShot: --version, tools, call and mcp start-up against a Go
# hello world, search_text and search_files against rg and fd, MCP calls
# against the official filesystem server), printing a table of each ratio
# beside its target. It installs nothing.
bench:
	$(GO) test -run '^$$' -bench '^Benchmark(Execute|RegistryOverhead|LoadPlugins|Launch)$$' -benchmem -count 3 ./host/
	$(GO) test -run '^$$' -bench '^BenchmarkRunBash$$' -benchtime 40x -count 3 ./host/
	$(GO) test -run '^$$' -bench '^BenchmarkStart(Isolated)?$$' -count 6 ./internal/sandbox/
	$(GO) test -run '^$$' -bench '^BenchmarkLifecycle' -benchtime 2s ./host/
	$(GO) test -run '^$$' -bench '^BenchmarkMCP$$' -benchtime 3000x -count 3 ./host/
	$(GO) test -run '^$$' -bench '^BenchmarkStartup$$' -benchtime 30x ./cmd/agenthost/
	$(GO) test -run '^$$' -bench '^BenchmarkOneShot$$' -benchtime 1x ./cmd/agenthost/
	$(GO) test -run '^$$' -bench '^BenchmarkMCPReplicas$$' -benchtime 3000x -count 3 ./cmd/agenthost/
	$(GO) test -run '^$$' -bench . -benchtime 3x ./plugins/search/
	$(GO) test -run '^$$' -bench '^Benchmark(Decide100Rules|Guard)$$' -benchmem -count 3 ./host/policy/
	$(GO) test -run '^$$' -bench '^BenchmarkRecord$$' -benchmem -count 3 ./host/audit/
	$(GO) test -run '^$$' -bench '^BenchmarkFit$$' -benchmem -count 3 ./host/agent/

# proto regenerates the committed protocol code. It needs protoc (Debian's
# protobuf-compiler) and the two Go generators below.
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
proto:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" protoc --proto_path=sdk/toolv1 \
		--go_out=sdk/toolv1 --go_opt=paths=source_relative \
		--go-grpc_out=sdk/toolv1 --go-grpc_opt=paths=source_relative \
		tool.proto

clean:
	rm -rf $(BIN)
