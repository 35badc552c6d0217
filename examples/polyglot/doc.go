// Package polyglot holds the tests of the plugins written in other
// languages than Go: examples/node (Node.js) and examples/python
// (Python), each served by a small helper that speaks go-plugin's
// handshake and tool.proto. The tests run them through the real host, the
// registry and the built agenthost command, and need what the plugins
// need: Node.js with the example's node_modules (make test runs npm ci
// there), and Debian's python3-h2 and python3-protobuf for
// /usr/bin/python3. A test that misses one fails, saying what to install;
// none is skipped.
package polyglot
