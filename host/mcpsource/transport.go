package mcpsource

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/mcpstdio"
)

// maxMessageSize bounds one message from a server, as a line on stdio or
// an event over HTTP: a result of the largest text Options.MaxResult
// allows by default, and room for its JSON around it.
const maxMessageSize = 64<<20 + 1<<20

// Stdio is the transport to a server process whose stdout is r and whose
// stdin is w: newline-delimited JSON-RPC messages, each line at most
// 64 MiB + 1 MiB (a longer one ends the session). The session closes r
// and w when it ends; closing r must end a Read under way, as it does for
// an *os.File or an *io.PipeReader.
func Stdio(r io.ReadCloser, w io.WriteCloser) mcp.Transport {
	return &mcpstdio.Transport{R: r, W: w, Peer: "the server", MaxMessage: maxMessageSize}
}

// HTTP is MCP's streamable HTTP transport to url, the server's MCP
// endpoint (such as http://127.0.0.1:3001/mcp). headers are sent with
// every request to url's scheme, host and port, and only there: not where
// a redirect leads elsewhere.
func HTTP(url string, headers map[string]string) mcp.Transport {
	return &mcp.StreamableClientTransport{
		Endpoint:     url,
		HTTPClient:   headerClient(url, headers),
		MaxEventSize: maxMessageSize,
	}
}

// SSE is the older HTTP+SSE transport (protocol version 2024-11-05) to
// endpoint, the server's SSE endpoint (such as http://127.0.0.1:3001/sse).
// headers are sent as HTTP's are: to endpoint's origin only, which keeps them
// from a message endpoint the server names on another host.
//
// The server names the endpoint its messages are posted to; one on
// another origin (scheme, host and port) than endpoint is refused, as the
// TypeScript, Python and Rust SDKs refuse it: the host would otherwise
// post wherever a server says, from outside any sandbox.
func SSE(endpoint string, headers map[string]string) mcp.Transport {
	client := headerClient(endpoint, headers)
	if u, err := url.Parse(endpoint); err == nil {
		client.Transport = &sameOrigin{base: client.Transport, scheme: u.Scheme, host: u.Host, endpoint: endpoint}
	}
	return &sseTransport{mcp.SSEClientTransport{
		Endpoint:     endpoint,
		HTTPClient:   client,
		MaxEventSize: maxMessageSize,
	}}
}

// sameOrigin sends the requests for one origin, and refuses the others.
type sameOrigin struct {
	base         http.RoundTripper
	scheme, host string
	endpoint     string
}

var _ http.RoundTripper = (*sameOrigin)(nil)

func (t *sameOrigin) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.EqualFold(req.URL.Scheme, t.scheme) || !strings.EqualFold(req.URL.Host, t.host) {
		return nil, &CrossOriginError{Endpoint: t.endpoint, URL: req.URL.Redacted()}
	}
	return t.base.RoundTrip(req)
}

// CrossOriginError is a request an SSE server sent the host to another
// origin than its own: a message endpoint it named elsewhere, or a
// redirect there.
type CrossOriginError struct {
	Endpoint string // the server's SSE endpoint
	URL      string // where it sent the host
}

func (e *CrossOriginError) Error() string {
	return fmt.Sprintf("the server named %s, on another origin than its SSE endpoint %s: refused", cutTo(e.URL, 200), cutTo(e.Endpoint, 200))
}

// sseTransport keeps the SDK's SSE transport from binding its event
// stream to the handshake: the SDK opens the stream with the context of
// Connect, which ends when the handshake is done, and the session with
// it. Here the stream's context ends with the handshake's only while the
// stream is being opened.
type sseTransport struct {
	mcp.SSEClientTransport
}

var _ mcp.Transport = (*sseTransport)(nil)

func (t *sseTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stream, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := t.SSEClientTransport.Connect(stream)
	if !stop() {
		// The handshake's context ended while the stream was opened.
		if conn != nil {
			conn.Close()
		}
		return nil, ctx.Err()
	}
	return conn, err
}

// headerClient is an HTTP client that adds headers to every request to
// endpoint's origin. It has no overall timeout: a session's event stream
// lasts as long as the session.
func headerClient(endpoint string, headers map[string]string) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	if len(headers) == 0 {
		return &http.Client{Transport: base}
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		// The transport reports the bad URL when it connects.
		return &http.Client{Transport: base}
	}
	h := make(http.Header, len(headers))
	for k, v := range headers {
		h.Set(k, v)
	}
	return &http.Client{Transport: &withHeaders{base: base, scheme: u.Scheme, host: u.Host, headers: h}}
}

// withHeaders adds headers to the requests for one origin.
type withHeaders struct {
	base         http.RoundTripper
	scheme, host string
	headers      http.Header
}

var _ http.RoundTripper = (*withHeaders)(nil)

func (t *withHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.EqualFold(req.URL.Scheme, t.scheme) || !strings.EqualFold(req.URL.Host, t.host) {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header[k] = v
	}
	return t.base.RoundTrip(req)
}
