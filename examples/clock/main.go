// Command agenthost-plugin-clock is a third-party tool written with the
// agenthost SDK: it tells a model the current time, which models do not
// know. Build it into the plugins directory and it is a tool like any
// built-in:
//
//	go build -o bin/plugins/agenthost-plugin-clock ./examples/clock
package main

import (
	"context"
	"fmt"
	"time"
	_ "time/tzdata" // the time zones, whatever the machine has installed

	"github.com/agenthost/agenthost/sdk"
)

type input struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"IANA time zone such as Europe/Paris; default UTC"`
}

func currentTime(ctx context.Context, in input) (string, error) {
	if in.Timezone == "" {
		in.Timezone = "UTC"
	}
	loc, err := time.LoadLocation(in.Timezone)
	if err != nil {
		return "", fmt.Errorf("unknown time zone %q", in.Timezone)
	}
	return time.Now().In(loc).Format("Monday 2006-01-02 15:04:05 MST (-07:00)"), nil
}

// plugin is what the binary serves, in a variable of its own so that its
// tests can serve it too (see main_test.go).
var plugin = sdk.Plugin{
	Tools: []sdk.Tool{sdk.NewTool(sdk.Info{
		Name:        "current_time",
		Description: "Tell the current date and time, in UTC or in a given time zone.",
		Annotations: sdk.Annotations{ReadOnly: true, OpenWorld: true},
	}, currentTime)},
	// The clock needs no file, in the workspace or out of it: the time
	// zones are compiled in (time/tzdata). A plugin declares what its
	// tools touch and no more, as in
	//
	//	sdk.Permissions{
	//		Roots:   sdk.RootsRead,                // reads the workspace, writes nothing there
	//		Read:    []string{"~/.config/mytool"}, // its own settings
	//		Write:   []string{"$TMPDIR"},          // scratch files
	//		Network: true,                         // calls a web API
	//	}
	Permissions: sdk.Permissions{Roots: sdk.RootsNone},
}

func main() { sdk.ServePlugin(plugin) }
