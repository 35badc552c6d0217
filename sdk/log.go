package sdk

import (
	"context"

	"github.com/hashicorp/go-hclog"
)

type loggerKey struct{}

// Logger returns the logger of the call in ctx. Inside a plugin served by
// [Serve] its lines reach the host's log with their level and fields;
// elsewhere it is hclog's default logger. A plugin must never write to its
// stdout: log instead.
func Logger(ctx context.Context) hclog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(hclog.Logger); ok {
		return l
	}
	return hclog.Default()
}

func withLogger(ctx context.Context, l hclog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}
