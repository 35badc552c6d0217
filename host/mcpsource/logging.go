package mcpsource

import (
	"encoding/json"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLogMessage bounds one log message from a server.
const maxLogMessage = 16 << 10

// logLevels maps MCP's log levels (RFC 5424's) to hclog's.
var logLevels = map[mcp.LoggingLevel]hclog.Level{
	"debug":     hclog.Debug,
	"info":      hclog.Info,
	"notice":    hclog.Info,
	"warning":   hclog.Warn,
	"error":     hclog.Error,
	"critical":  hclog.Error,
	"alert":     hclog.Error,
	"emergency": hclog.Error,
}

// logMessage logs a server's notifications/message. A level the server
// made up is logged at info.
func logMessage(logger hclog.Logger, p *mcp.LoggingMessageParams) {
	if p == nil {
		return
	}
	level, ok := logLevels[p.Level]
	if !ok {
		level = hclog.Info
	}
	if logger.GetLevel() > level {
		return
	}
	var msg string
	switch data := p.Data.(type) {
	case string:
		msg = data
	default:
		encoded, err := json.Marshal(data)
		if err != nil {
			return
		}
		msg = string(encoded)
	}
	msg = cutTo(msg, maxLogMessage)
	var args []any
	if p.Logger != "" {
		args = []any{"logger", cut(p.Logger)}
	}
	logger.Log(level, msg, args...)
}

// wantedLevel is the least level of the messages logger logs, as MCP
// names it.
func wantedLevel(logger hclog.Logger) mcp.LoggingLevel {
	switch {
	case logger.IsTrace(), logger.IsDebug():
		return "debug"
	case logger.IsInfo():
		return "info"
	case logger.IsWarn():
		return "warning"
	case logger.IsError():
		return "error"
	}
	return "emergency"
}
