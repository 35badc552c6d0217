package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/internal/wire"
)

// maxHandshakeLine bounds the first line of a plugin's stdout. A handshake
// line is short: a unix socket's path is at most 108 bytes.
const maxHandshakeLine = 4 << 10

// checkHandshake reads the plugin's handshake line from its stdout and
// checks it before go-plugin does. go-plugin's own check of the line
// names the wrong part in words of its own, or not at all: a line without
// the protocol field is taken for net/rpc and refused as that, the process
// is killed, and what the plugin was told is that it "exited during
// start-up". A line that passes is handed to go-plugin; one that does not
// is recorded (HandshakeError) and go-plugin gets an empty stdout, which
// fails its handshake. What follows the line is read and thrown away: a
// plugin writes nothing else to its stdout.
func (r *Runner) checkHandshake() {
	br := bufio.NewReaderSize(r.osOut, maxHandshakeLine)
	line, err := br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		r.rejectHandshake(fmt.Errorf("it is not an agenthost plugin: its first line of output is longer than %d bytes: %s", maxHandshakeLine, quoteLine(string(line))))
	case len(line) > 0:
		// A last line without its newline counts, as it does for go-plugin.
		text := strings.TrimSpace(string(line))
		if err := parseHandshake(text, r.Conn); err != nil {
			r.rejectHandshake(err)
		} else {
			_, _ = io.WriteString(r.outW, text+"\n")
		}
	}
	r.outW.Close()
	_, _ = io.Copy(io.Discard, br)
}

func (r *Runner) rejectHandshake(err error) {
	r.mu.Lock()
	r.badLine = err
	r.mu.Unlock()
}

// HandshakeError says what was wrong with the plugin's handshake line, or
// is nil.
func (r *Runner) HandshakeError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.badLine
}

// parseHandshake checks a handshake line,
// CORE-PROTOCOL-VERSION|APP-PROTOCOL-VERSION|NETWORK-TYPE|NETWORK-ADDR|PROTOCOL,
// against what the host accepts: 1|1|unix|fd:N|grpc, where N is the
// plugin's descriptor of the host's connection (conn), or, from a plugin
// that listens on a socket of its own, 1|1|unix|SOCKET|grpc, where
// SOCKET is the absolute path of a unix socket that exists (tcp and
// IP:PORT are accepted too, as go-plugin accepts them). A sixth field,
// go-plugin's server certificate for AutoMTLS, must be empty when it is
// there: the host uses no TLS. Further fields are ignored.
func parseHandshake(line string, conn *Conn) error {
	fields := strings.Split(line, "|")
	if len(fields) < 2 {
		return fmt.Errorf("it is not an agenthost plugin: its first line of output was %s", quoteLine(line))
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("bad handshake line %s: "+format, append([]any{quoteLine(line)}, args...)...)
	}
	if len(fields) < 5 {
		return bad("it has %d fields; want CORE|APP|NETWORK|ADDRESS|grpc", len(fields))
	}
	core, app, network, addr, protocol := fields[0], fields[1], fields[2], fields[3], fields[4]
	if core != "1" {
		return bad("its core protocol version (field 1) is %s; want 1", quoteLine(core))
	}
	v, err := strconv.Atoi(app)
	if err != nil {
		return bad("its protocol version (field 2) is %s; want %d", quoteLine(app), wire.ProtocolVersion)
	}
	if v != wire.ProtocolVersion {
		return fmt.Errorf("it speaks another protocol version: Plugin version: %d, Client versions: [%d]", v, wire.ProtocolVersion)
	}
	if network != "unix" && network != "tcp" {
		return bad("its network type (field 3) is %s; want unix", quoteLine(network))
	}
	if protocol != "grpc" {
		return bad("its protocol (field 5) is %s; want grpc", quoteLine(protocol))
	}
	if len(fields) > 5 && fields[5] != "" {
		return bad("it offers a TLS certificate (field 6), but the host uses no TLS: leave the field empty")
	}
	if network == "tcp" {
		if _, err := netip.ParseAddrPort(addr); err != nil {
			return bad("its address (field 4) %s is not IP:PORT", quoteLine(addr))
		}
		return nil
	}
	if strings.HasPrefix(addr, wire.ConnAddrPrefix) {
		if conn == nil || addr != wire.ConnAddrPrefix+strconv.Itoa(conn.FD) {
			return bad("its address (field 4) %s is not the connection the host passed", quoteLine(addr))
		}
		return nil
	}
	if !filepath.IsAbs(addr) {
		return bad("its address (field 4) %s is not an absolute path", quoteLine(addr))
	}
	info, err := os.Stat(addr)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return bad("its socket (field 4) does not exist: a plugin listens before it prints the line")
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return bad("its socket (field 4) cannot be reached: %v", err)
	case info.Mode().Type() != fs.ModeSocket:
		return bad("its address (field 4) %s is not a unix socket", quoteLine(addr))
	}
	return nil
}

// maxQuotedLine bounds what quoteLine quotes of a line.
const maxQuotedLine = 200

// quoteLine quotes s as Go does, or its first maxQuotedLine bytes
// followed by its length when it is longer.
func quoteLine(s string) string {
	if len(s) <= maxQuotedLine {
		return strconv.Quote(s)
	}
	keep := maxQuotedLine
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return strconv.Quote(s[:keep]+"…") + " (" + strconv.Itoa(len(s)) + " bytes)"
}
