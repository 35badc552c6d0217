package host_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/policy"
)

// TestMCPResourcesAndPromptsPassTheInterceptors: a resource read and a
// prompt got through the registry pass its interceptors as calls of the
// server's source: a policy's rules decide them, and a record sees them.
func TestMCPResourcesAndPromptsPassTheInterceptors(t *testing.T) {
	t.Parallel()
	p := &policy.Policy{}
	for _, rule := range []string{"mcp:hostile(uri=test://secret*)", "mcp:hostile(name=h_secret)"} {
		if err := p.Add(policy.Deny, rule); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var seen []string
	record := func(ctx context.Context, call *host.Call, next host.Handler) host.Result {
		res := next(ctx, call)
		mu.Lock()
		seen = append(seen, call.Tool+" "+call.Source+" "+string(call.Args)+" denied="+map[bool]string{true: "yes", false: "no"}[res.IsError])
		mu.Unlock()
		return res
	}
	hostile := hostileMCP(t, "hostile")
	hostile.Prefix = "h"
	reg := loadMCP(t, &host.Options{Interceptors: []host.Interceptor{record, policy.NewGuard(p, policy.Options{Mode: policy.ModeAuto}).Intercept}}, hostile)
	for _, name := range []string{"secret", "open"} {
		call(t, reg, "h_offer", `{"text":"`+name+`"}`)
	}
	if _, err := reg.MCPReadResource(t.Context(), "test://secret"); err == nil || !strings.Contains(err.Error(), `denied by rule "mcp:hostile(uri=test://secret*)"`) {
		t.Errorf("reading the denied resource: %v", err)
	}
	if got, err := reg.MCPReadResource(t.Context(), "test://open"); err != nil || len(got.Contents) != 1 || got.Contents[0].Text != "the resource open" {
		t.Errorf("reading an allowed resource: %v, %v", got, err)
	}
	if _, err := reg.MCPGetPrompt(t.Context(), "h_secret", nil); err == nil || !strings.Contains(err.Error(), "denied by rule") {
		t.Errorf("getting the denied prompt: %v", err)
	}
	if got, err := reg.MCPGetPrompt(t.Context(), "h_open", nil); err != nil || len(got.Messages) != 1 {
		t.Errorf("getting an allowed prompt: %v, %v", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		`resources/read mcp:hostile {"uri":"test://secret"} denied=yes`,
		`resources/read mcp:hostile {"uri":"test://open"} denied=no`,
		`prompts/get mcp:hostile {"arguments":null,"name":"h_secret"} denied=yes`,
		`prompts/get mcp:hostile {"arguments":null,"name":"h_open"} denied=no`,
	}
	var features []string
	for _, s := range seen {
		if !strings.HasPrefix(s, "h_offer") {
			features = append(features, s)
		}
	}
	if strings.Join(features, "\n") != strings.Join(want, "\n") {
		t.Errorf("the record:\n%s\nwant:\n%s", strings.Join(features, "\n"), strings.Join(want, "\n"))
	}
}
