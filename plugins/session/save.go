package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/sdk"
)

type saveInput struct {
	Reason string `json:"reason" jsonschema:"Why the context is being saved, such as a milestone reached or a task handed over."`
}

// savedContext is the file save_session_context writes.
type savedContext struct {
	SavedAt        time.Time `json:"saved_at"`
	Reason         string    `json:"reason"`
	SystemPrompt   string    `json:"system_prompt"`
	SessionContext string    `json:"session_context"`
}

// now is the clock; tests replace it.
var now = time.Now

var saveSessionContext = sdk.NewTool(sdk.Info{
	Name:        "save_session_context",
	Title:       "Save session context",
	Description: "Save the current session context (the system prompt and the session's working notes) to the session file, so that the work can be resumed later. Give the reason for saving.",
	Annotations: sdk.Annotations{Idempotent: false},
}, func(ctx context.Context, in saveInput) (string, error) {
	st, err := sdk.HostState(ctx)
	if err != nil {
		return "", err
	}
	if st.SessionContextFilePath == "" {
		return "", errors.New("no session context file path is configured")
	}
	data, err := json.MarshalIndent(savedContext{
		SavedAt:        now().UTC(),
		Reason:         in.Reason,
		SystemPrompt:   st.SystemPrompt,
		SessionContext: st.SessionContext,
	}, "", "  ")
	if err != nil {
		return "", err
	}
	if err := atomicfile.Write(st.SessionContextFilePath, append(data, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("saving the session context: %w", err)
	}
	return "Session context saved to " + st.SessionContextFilePath, nil
})
