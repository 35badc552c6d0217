package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/sdk"
)

// TestAgentsShareARegistryNotTheirState: agents on one registry, and its
// plugin processes, take turns at once; each call's tools read the state
// of the agent that made it, and each agent's save_session_context writes
// its own file, in directories of their own.
func TestAgentsShareARegistryNotTheirState(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "session", "test")
	reg, err := host.NewDefaultToolRegistry(t.Context(), dir, &host.Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	const n = 4
	agents := make([]*agent.Agent, n)
	files := make([]string, n)
	for i := range n {
		files[i] = filepath.Join(t.TempDir(), fmt.Sprintf("agent%d", i), "session.json")
		p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
			callTools("", "state", `{}`, "save_session_context", `{"reason":"turn"}`),
			answer("done"),
		}}
		a, err := agent.New(t.Context(), p, agent.Options{Registry: reg, SystemPrompt: fmt.Sprintf("I am agent %d", i), SessionContextFilePath: files[i]})
		if err != nil {
			t.Fatal(err)
		}
		agents[i] = a
	}
	var wg sync.WaitGroup
	for i, a := range agents {
		wg.Go(func() {
			for range 5 {
				if _, err := a.Chat(t.Context(), fmt.Sprintf("question of %d", i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, a := range agents {
		msgs := a.Messages()
		for _, m := range msgs {
			if m.Role != llm.RoleTool || m.ToolCallID != "call1" {
				continue
			}
			var st sdk.State
			if err := json.Unmarshal([]byte(m.Content), &st); err != nil {
				t.Fatalf("agent %d: state %q: %v", i, m.Content, err)
			}
			if st.SystemPrompt != fmt.Sprintf("I am agent %d", i) || st.SessionContextFilePath != files[i] {
				t.Errorf("agent %d's call read %+v", i, st)
			}
		}
		data, err := os.ReadFile(files[i])
		if err != nil {
			t.Fatalf("agent %d's session file: %v", i, err)
		}
		var saved struct {
			SystemPrompt string `json:"system_prompt"`
		}
		if err := json.Unmarshal(data, &saved); err != nil || saved.SystemPrompt != fmt.Sprintf("I am agent %d", i) {
			t.Errorf("agent %d's session file holds %s", i, data)
		}
	}
}
