package main

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveHTTP serves the streamable HTTP transport at /mcp (and /) until ctx
// is canceled. It prints the URL to stderr once it listens.
func serveHTTP(ctx context.Context, server *mcp.Server, addr, token string, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		PropagateRequestCancellation: true,
		SessionTimeout:               time.Hour,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	mux.Handle("/{$}", handler)
	srv := &http.Server{
		Handler:           requireToken(token, mux),
		ReadHeaderTimeout: 10 * time.Second,
		// Canceling ctx ends every request, open event streams included.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	fmt.Fprintf(stderr, "listening on http://%s/mcp\n", ln.Addr())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("mcp: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		srv.Close()
	}
	return nil
}

// requireToken answers 401 to a request without "Authorization: Bearer
// TOKEN". An empty token requires nothing.
func requireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agenthost"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
