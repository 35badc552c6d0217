package sdk

import (
	"context"

	"github.com/hashicorp/go-hclog"
)

type loggerKey struct{}

// Logger returns the logger of the call in ctx. Inside a plugin served by
// [Serve] or [ServePlugin] its lines travel to the host on the plugin's
// stderr and reach the host's log with their level, their fields and the
// tool's name, when the host logs at that level (agenthost --log-level,
// warn by default); under sdktest they reach the test's log. Elsewhere it
// is hclog's default logger. A plugin must never write to its stdout,
// which carries go-plugin's handshake: log instead.
func Logger(ctx context.Context) hclog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(hclog.Logger); ok {
		return l
	}
	return hclog.Default()
}

func withLogger(ctx context.Context, l hclog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}
