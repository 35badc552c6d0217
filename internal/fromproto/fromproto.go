// Package fromproto turns what a plugin sends over the protocol into the
// host's types, at the edge: past it, nothing of the host handles a
// generated protobuf type.
package fromproto

import (
	"slices"

	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

// Permissions returns the declaration that p carries. A nil p, the
// description of a plugin older than protocol 1.3, is the zero
// Permissions. A root access the protocol does not know (from a newer or
// a broken plugin) is kept as it is; [sdk.Permissions.Validate] reports
// it. The lists are copied; an empty one reads as none.
func Permissions(p *toolv1.Permissions) sdk.Permissions {
	if p == nil {
		return sdk.Permissions{}
	}
	return sdk.Permissions{
		Roots:       sdk.RootAccess(p.GetRoots()),
		Read:        paths(p.GetReadPaths()),
		Write:       paths(p.GetWritePaths()),
		Network:     p.GetNetwork(),
		Exec:        p.GetExec(),
		SessionFile: p.GetSessionFile(),
		UnixSockets: p.GetUnixSockets(),
	}
}

func paths(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	return slices.Clone(list)
}
