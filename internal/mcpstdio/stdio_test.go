package mcpstdio

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// stdioPipes returns a connection over pipes, the end that feeds what it
// reads, and the lines it writes.
func stdioPipes(t *testing.T) (*stdioConn, *io.PipeWriter, *bufio.Scanner) {
	t.Helper()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	conn, err := (&Transport{R: clientIn, W: clientOut, Peer: "the server", MaxMessage: 64 << 20}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		serverOut.Close()
		serverIn.Close()
	})
	return conn.(*stdioConn), serverOut, bufio.NewScanner(serverIn)
}

// encoded is msg as the SDK encodes it, for comparison.
func encoded(t *testing.T, msg jsonrpc.Message) string {
	t.Helper()
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestDecodeMessage(t *testing.T) {
	t.Parallel()
	// Each line decodes to what the SDK's own decoding makes of it, or
	// to an error.
	valid := []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"roots/list","params":{"x":[1,2]}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":null}`,
		`{"jsonrpc":"2.0","id":7,"method":""}`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Echo: x"}]}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad","data":{"why":1}}}`,
		`{"jsonrpc":"2.0","id":4,"result":{},"error":null}`,
		`{"jsonrpc":"2.0","id":5,"Result":{"ignored":true}}`,
		` {"id":6, "jsonrpc":"2.0", "result":[]} `,
	}
	for _, line := range valid {
		got, err := decodeMessage([]byte(line), "the server")
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		want, err := jsonrpc.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatalf("%s: the SDK: %v", line, err)
		}
		if encoded(t, got) != encoded(t, want) {
			t.Errorf("%s:\n got %s\nwant %s", line, encoded(t, got), encoded(t, want))
		}
	}

	invalid := map[string]string{
		"not JSON":            `this is not JSON`,
		"trailing data":       `{"jsonrpc":"2.0","id":1,"result":{}} x`,
		"two values":          `{"jsonrpc":"2.0","id":1,"result":{}}{}`,
		"not an object":       `"jsonrpc"`,
		"null":                `null`,
		"no version":          `{"id":1,"result":{}}`,
		"another version":     `{"jsonrpc":"1.0","id":1,"result":{}}`,
		"version by case":     `{"JSONRPC":"2.0","id":1,"result":{}}`,
		"response, no id":     `{"jsonrpc":"2.0","result":{}}`,
		"response, null id":   `{"jsonrpc":"2.0","id":null,"result":{}}`,
		"id of a bad kind":    `{"jsonrpc":"2.0","id":true,"result":{}}`,
		"method not a text":   `{"jsonrpc":"2.0","id":1,"method":3}`,
		"error not an object": `{"jsonrpc":"2.0","id":1,"error":"bad"}`,
	}
	for name, line := range invalid {
		if msg, err := decodeMessage([]byte(line), "the server"); err == nil {
			t.Errorf("%s: %s decoded to %s", name, line, encoded(t, msg))
		}
	}
}

func TestStdioRead(t *testing.T) {
	t.Parallel()
	conn, server, _ := stdioPipes(t)
	long := strings.Repeat("a", 3*readBuffer)
	go func() {
		io.WriteString(server, "\n  \r\n"+
			`{"jsonrpc":"2.0","id":1,"result":{}}`+"\r\n"+
			`[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]`+"\n"+
			`{"jsonrpc":"2.0","id":3,"result":"`+long+`"}`+"\n"+
			`{"jsonrpc":"2.0","method":"last"}`)
		server.Close()
	}()
	want := []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","method":"a"}`,
		`{"jsonrpc":"2.0","id":2,"method":"b"}`,
		`{"jsonrpc":"2.0","id":3,"result":"` + long + `"}`,
		`{"jsonrpc":"2.0","method":"last"}`,
	}
	for i, w := range want {
		msg, err := conn.Read(t.Context())
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if got := encoded(t, msg); got != w {
			t.Errorf("message %d = %.80s, want %.80s", i, got, w)
		}
	}
	if msg, err := conn.Read(t.Context()); !errors.Is(err, io.EOF) {
		t.Errorf("after the last line: %v, %v; want EOF", msg, err)
	}
}

func TestStdioReadErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"garbage":       "this is not JSON\n",
		"empty batch":   "[]\n",
		"bad in batch":  `[{"jsonrpc":"2.0","method":"a"},{"id":1}]` + "\n",
		"batch garbage": "[1,\n",
		"too long":      `{"jsonrpc":"2.0","method":"` + strings.Repeat("a", 200) + `"}` + "\n",
	}
	for name, input := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			conn, server, _ := stdioPipes(t)
			conn.max = 100
			go io.WriteString(server, input)
			if msg, err := conn.Read(t.Context()); err == nil {
				t.Errorf("read %s", encoded(t, msg))
			}
		})
	}
	t.Run("too long, exactly", func(t *testing.T) {
		t.Parallel()
		conn, server, _ := stdioPipes(t)
		line := `{"jsonrpc":"2.0","method":"a"}` + "\n"
		conn.max = len(line)
		go io.WriteString(server, line+line[:len(line)-1]+" \n")
		if _, err := conn.Read(t.Context()); err != nil {
			t.Errorf("a line of the limit: %v", err)
		}
		if _, err := conn.Read(t.Context()); err == nil || err.Error() != fmt.Sprintf("the server sent a message longer than %d bytes", len(line)) {
			t.Errorf("a line over the limit: %v", err)
		}
	})
}

// readingReader tells, on reading, when a Read of it begins.
type readingReader struct {
	io.ReadCloser
	reading chan<- struct{}
}

func (r readingReader) Read(p []byte) (int, error) {
	select {
	case r.reading <- struct{}{}:
	default:
	}
	return r.ReadCloser.Read(p)
}

func TestStdioCloseEndsRead(t *testing.T) {
	t.Parallel()
	in, feed := io.Pipe()
	_, out := io.Pipe()
	t.Cleanup(func() { feed.Close() })
	reading := make(chan struct{}, 1)
	conn, err := (&Transport{R: readingReader{in, reading}, W: out, Peer: "the server", MaxMessage: 64 << 20}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		errs <- err
	}()
	select {
	case <-reading: // the read is under way
	case err := <-errs:
		t.Fatalf("Read ended before Close: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Read did not begin")
	}
	if err := conn.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, io.EOF) {
			t.Errorf("Read after Close: %v, want EOF", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the Read under way")
	}
	if err := conn.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

func TestStdioWrite(t *testing.T) {
	t.Parallel()
	conn, _, lines := stdioPipes(t)
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id, _ := jsonrpc.MakeID(float64(w*each + i))
				msg := &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"message":"` + strings.Repeat("x", 1000) + `"}}`)}
				if err := conn.Write(context.Background(), msg); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	seen := map[string]bool{}
	for range writers * each {
		if !lines.Scan() {
			t.Fatalf("the lines ended: %v", lines.Err())
		}
		msg, err := jsonrpc.DecodeMessage(lines.Bytes())
		if err != nil {
			t.Fatalf("a line that is not one message: %v: %.80q", err, lines.Text())
		}
		seen[encoded(t, msg)] = true
	}
	wg.Wait()
	if len(seen) != writers*each {
		t.Errorf("%d different messages, want %d", len(seen), writers*each)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("a Write under a canceled context: %v", err)
	}
}

func TestStdioAnswer(t *testing.T) {
	t.Parallel()
	conn, peer, lines := stdioPipes(t)
	conn.answer = true
	go io.WriteString(peer, "not JSON\n"+`{"id":1}`+"\n[]\n"+`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
	want := []string{
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`,
	}
	read := make(chan string, 1)
	go func() {
		msg, err := conn.Read(t.Context())
		if err != nil {
			read <- err.Error()
			return
		}
		read <- encoded(t, msg)
	}()
	for i, w := range want {
		if !lines.Scan() {
			t.Fatalf("answer %d: the lines ended: %v", i, lines.Err())
		}
		if lines.Text() != w {
			t.Errorf("answer %d = %s, want %s", i, lines.Text(), w)
		}
	}
	if got := <-read; got != `{"jsonrpc":"2.0","id":2,"method":"ping"}` {
		t.Errorf("the message after them: %s", got)
	}
}

// A message is written exactly as the SDK encodes it, whichever way it
// takes: the responses whose result is copied and every other.
func TestEncodeMessage(t *testing.T) {
	t.Parallel()
	id := func(v any) jsonrpc.ID {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	text, err := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": "line\none\t\"two\" <three> & \u2028 \x01 é"}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]jsonrpc.Message{
		"int id":              &jsonrpc.Response{ID: id(float64(7)), Result: text},
		"large int id":        &jsonrpc.Response{ID: id(float64(1 << 52)), Result: json.RawMessage(`{}`)},
		"negative id":         &jsonrpc.Response{ID: id(float64(-3)), Result: json.RawMessage(`[]`)},
		"string id":           &jsonrpc.Response{ID: id("a<b>\"c\"\u00e9"), Result: text},
		"no id":               &jsonrpc.Response{Result: json.RawMessage(`{}`)},
		"result with newline": &jsonrpc.Response{ID: id(float64(1)), Result: json.RawMessage("{\n\"a\": 1\n}")},
		"no result":           &jsonrpc.Response{ID: id(float64(2))},
		"error":               &jsonrpc.Response{ID: id(float64(3)), Error: &jsonrpc.Error{Code: -32602, Message: "bad"}},
		"request":             &jsonrpc.Request{ID: id(float64(4)), Method: "tools/call", Params: text},
		"notification":        &jsonrpc.Request{Method: "notifications/initialized"},
	}
	for name, msg := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := encodeMessage(msg)
			if err != nil {
				t.Fatal(err)
			}
			if want := encoded(t, msg); string(data) != want {
				t.Errorf("encodeMessage wrote\n%s\nwant, as the SDK encodes it,\n%s", data, want)
			}
			if strings.ContainsAny(string(data), "\r\n") {
				t.Errorf("the line %q holds a line break", data)
			}
		})
	}
}

// BenchmarkEncodeResponse encodes the answer to a read of 100 KiB of
// text, as the SDK hands it to the transport: encodeMessage against the
// SDK's EncodeMessage.
func BenchmarkEncodeResponse(b *testing.B) {
	result, err := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": strings.Repeat(fmt.Sprintf("%-63s\n", "a line of a file of 100 KiB, \"quoted\""), 1600)}}})
	if err != nil {
		b.Fatal(err)
	}
	id, _ := jsonrpc.MakeID(float64(12))
	msg := &jsonrpc.Response{ID: id, Result: result}
	for name, encode := range map[string]func(jsonrpc.Message) ([]byte, error){"encodeMessage": encodeMessage, "EncodeMessage": jsonrpc.EncodeMessage} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(result)))
			for b.Loop() {
				if _, err := encode(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
