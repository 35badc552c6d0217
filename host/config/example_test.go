package config_test

import (
	"fmt"
	"log"

	"github.com/agenthost/agenthost/host/config"
)

// A block pasted from Claude Desktop's claude_desktop_config.json (or
// Cursor's mcp.json, or Claude Code's .mcp.json) is a configuration file
// as it is. Options turns it into the host's options: with them,
// host.NewDefaultToolRegistry serves these servers' tools beside the
// plugins'.
func ExampleParse() {
	pasted := []byte(`{
  "mcpServers": {
    "memory": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"],
      "autoApprove": ["read_graph"]
    },
    "docs": {
      "type": "http",
      "url": "https://mcp.example.com/mcp",
      "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}
    },
    "old": {"command": "old-server", "disabled": true}
  },
  "grants": {"mcp:memory": ["network"]}
}`)
	c, err := config.Parse("/home/me/claude_desktop_config.json", pasted)
	if err != nil {
		log.Fatal(err)
	}
	opts, err := c.Options()
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range opts.MCPServers {
		if s.URL != "" {
			fmt.Println(s.Name, s.Transport, s.URL)
		} else {
			fmt.Println(s.Name, s.Transport, s.Command, s.Args)
		}
	}
	fmt.Println("memory may use the network:", opts.Grants["mcp:memory"].Network)
	// Output:
	// docs http https://mcp.example.com/mcp
	// memory stdio npx [-y @modelcontextprotocol/server-memory]
	// memory may use the network: true
}

// A file agenthost cannot use is refused with the line where it goes
// wrong and what is wrong there.
func ExampleParse_error() {
	_, err := config.Parse("agenthost.json", []byte(`{
  "roots": ["."],
  "mcpServers": {
    "github": {"command": "github-mcp", "url": "https://api.example.com/mcp"}
  }
}`))
	fmt.Println(err)
	// Output:
	// agenthost.json:4: mcpServers.github: both command and url (want command for a stdio server, url for an HTTP one)
}
