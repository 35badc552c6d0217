package host

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/agenthost/agenthost/internal/fromproto"
	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

// description is what a tool source serves, as the host reads it. It is
// made at the edge (descriptionFromProto for a plugin's Describe answer,
// mcpDescription for an MCP server's tools/list); past it, nothing of the
// host handles the protocol's generated types. The description cache
// stores it as JSON.
type description struct {
	PluginName    string          `json:"plugin_name,omitempty"`
	PluginVersion string          `json:"plugin_version,omitempty"`
	ProtocolMinor uint32          `json:"protocol_minor,omitempty"`
	Permissions   sdk.Permissions `json:"permissions"`
	Tools         []toolSpec      `json:"tools"`
	// MCP is what an MCP server declared it offers besides tools; nil
	// for a plugin, or a description cached before it was kept.
	MCP *mcpFeatures `json:"mcp,omitempty"`
}

// toolSpec is one tool of a description, as its source declares it.
type toolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Title       string          `json:"title,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Output      json.RawMessage `json:"output,omitempty"`
	ReadOnly    bool            `json:"read_only,omitempty"`
	Destructive bool            `json:"destructive,omitempty"`
	Idempotent  bool            `json:"idempotent,omitempty"`
	OpenWorld   bool            `json:"open_world,omitempty"`
	OptIn       bool            `json:"opt_in,omitempty"`
	// Timeout is the deadline the tool declares for its calls; 0: none.
	Timeout time.Duration `json:"timeout,omitempty"`
	// ChecksArguments: the plugin checks a call's arguments against the
	// parameters schema itself.
	ChecksArguments bool `json:"checks_arguments,omitempty"`
}

// same reports whether d and o say the same, as the cache would store
// them (schemas compared compacted).
func (d *description) same(o *description) bool {
	a, errA := json.Marshal(d)
	b, errB := json.Marshal(o)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// descriptionFromProto is a plugin's Describe answer as the host reads it.
func descriptionFromProto(resp *toolv1.DescribeResponse) *description {
	d := &description{
		PluginName:    resp.GetPluginName(),
		PluginVersion: resp.GetPluginVersion(),
		ProtocolMinor: resp.GetProtocolMinor(),
		Permissions:   fromproto.Permissions(resp.GetPermissions()),
		Tools:         make([]toolSpec, 0, len(resp.GetTools())),
	}
	for _, t := range resp.GetTools() {
		a := t.GetAnnotations()
		d.Tools = append(d.Tools, toolSpec{
			Name:            t.GetName(),
			Description:     t.GetDescription(),
			Title:           t.GetTitle(),
			Parameters:      nonEmpty(t.GetParametersSchema()),
			Output:          nonEmpty(t.GetOutputSchema()),
			ReadOnly:        a.GetReadOnly(),
			Destructive:     a.GetDestructive(),
			Idempotent:      a.GetIdempotent(),
			OpenWorld:       a.GetOpenWorld(),
			OptIn:           t.GetOptIn(),
			Timeout:         time.Duration(t.GetTimeoutMs()) * time.Millisecond,
			ChecksArguments: t.GetChecksArguments(),
		})
	}
	return d
}
