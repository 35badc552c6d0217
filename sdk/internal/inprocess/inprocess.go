// Package inprocess lets package sdktest serve a plugin inside the test's
// own process, through the very server that sdk.ServePlugin runs in a
// plugin binary, without that server becoming part of the sdk's API.
// Package sdk sets Serve when it is initialized.
package inprocess

import (
	"context"
	"net"

	"github.com/hashicorp/go-hclog"
)

// Serve serves p, an sdk.Plugin, on lis until ctx ends. The tools' log
// lines (sdk.Logger) go to logger. It returns a channel closed once the
// plugin stopped serving. It panics as sdk.ServePlugin does on a
// malformed Plugin.
var Serve func(ctx context.Context, p any, lis net.Listener, logger hclog.Logger) <-chan struct{}
