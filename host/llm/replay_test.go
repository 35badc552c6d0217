package llm

import (
	"bytes"
	"net/http"
	"testing"
)

// replayWay is a way a replay server writes a fixture's body. A client
// must read every fixture the same whichever way it comes.
type replayWay int

const (
	replayAsIs    replayWay = iota
	replayChunked           // in 7-byte writes, each flushed
	replayCRLF              // with every "\n" written as "\r\n"
)

func (w replayWay) String() string {
	switch w {
	case replayChunked:
		return "7-byte writes"
	case replayCRLF:
		return "CRLF"
	}
	return "as is"
}

// write writes body to rw the way w says.
func (w replayWay) write(rw http.ResponseWriter, body []byte) {
	switch w {
	case replayChunked:
		for len(body) > 0 {
			n := min(7, len(body))
			rw.Write(body[:n])
			rw.(http.Flusher).Flush()
			body = body[n:]
		}
	case replayCRLF:
		rw.Write(bytes.ReplaceAll(body, []byte("\n"), []byte("\r\n")))
	default:
		rw.Write(body)
	}
}

// eachReplayWay runs f, in parallel subtests, once for each way of
// writing the fixtures: as is, in 7-byte flushed writes, and with CRLF
// line ends.
func eachReplayWay(t *testing.T, f func(t *testing.T, way replayWay)) {
	t.Helper()
	for _, way := range []replayWay{replayAsIs, replayChunked, replayCRLF} {
		t.Run(way.String(), func(t *testing.T) {
			t.Parallel()
			f(t, way)
		})
	}
}
