# The agenthost image: the CLI and the built-in plugins, serving the tools
# over streamable HTTP with no sessions, so that replicas can sit behind a
# load balancer. See docs/mcp-server.md, "Running it as a service".
#
#   docker build -t agenthost .
#   docker run -e AGENTHOST_MCP_TOKEN=s3cret -p 8080:8080 -v "$PWD:/workspace" agenthost

# Build with the toolchain README's "Getting started" asks for: Go, make, gcc.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN make build \
 && bin/agenthost plugins --config - --cache-dir - --plugins bin/plugins lock

FROM debian:bookworm-slim
# bash runs run_bash's commands; ca-certificates lets configured MCP servers
# be reached over https.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bash ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 agenthost \
 && install -d -o agenthost -g agenthost /workspace
# Owned by root and not writable by the server's user: a plugin binary or the
# lock that records their hashes cannot be replaced from inside.
COPY --from=build /src/bin/ /opt/agenthost/
USER agenthost
WORKDIR /workspace
EXPOSE 8080
# --sandbox require: refuse to start a plugin the kernel cannot confine
# (a runtime whose seccomp profile blocks Landlock) rather than run it bare.
ENTRYPOINT ["/opt/agenthost/agenthost"]
CMD ["mcp", "--http", "0.0.0.0:8080", "--stateless", "--root", "/workspace", "--sandbox", "require"]
