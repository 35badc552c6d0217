package config

// A configuration file as a tree of JSON values that know their line, read
// with encoding/json's Decoder.Token, and the readers of typed values that
// name a value by its line and its path in the file when it is not what
// its key takes.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/internal/textsafe"
)

// The kinds of JSON value, as error messages name them.
const (
	jsonObject = "an object"
	jsonArray  = "an array"
	jsonString = "a string"
	jsonNumber = "a number"
	jsonBool   = "a boolean"
	jsonNull   = "null"
)

// jsonValue is one value of a configuration file.
type jsonValue struct {
	kind    string
	line    int          // where the value starts
	text    string       // a string's value, a number's digits
	b       bool         // a boolean's value
	members []jsonMember // an object's, in order
	elems   []*jsonValue // an array's
}

// jsonMember is one key of an object and its value.
type jsonMember struct {
	name  string
	line  int
	value *jsonValue
}

// jsonParser walks a document already known to be valid JSON.
type jsonParser struct {
	l    *loader
	dec  *json.Decoder
	data []byte
	// off and line are the last offset counted to, and its line.
	off  int
	line int
}

// parse reads data, which must hold one JSON object, into a tree, refusing
// a key twice in one object.
func (l *loader) parse(data []byte) (*jsonValue, error) {
	// Unmarshal checks the whole document first, and its syntax errors
	// have exact offsets; the Decoder's, past a token, do not.
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var syntax *json.SyntaxError
		if !errors.As(err, &syntax) {
			return nil, l.errorf(0, "", "%v", err)
		}
		// The offset counts the offending byte.
		off := max(0, int(syntax.Offset)-1)
		return nil, l.errorf(bytes.Count(data[:off], []byte("\n"))+1, "", "syntax error: %v", syntax)
	}
	p := &jsonParser{l: l, dec: json.NewDecoder(bytes.NewReader(data)), data: data, line: 1}
	p.dec.UseNumber()
	doc, err := p.value()
	if err != nil {
		return nil, err
	}
	if doc.kind != jsonObject {
		return nil, l.errorf(doc.line, "", "want an object at the top, got %s", doc.kind)
	}
	return doc, nil
}

// lineNow is the line of the token just read: a token never spans lines.
func (p *jsonParser) lineNow() int {
	end := int(p.dec.InputOffset())
	p.line += bytes.Count(p.data[p.off:end], []byte("\n"))
	p.off = end
	return p.line
}

func (p *jsonParser) value() (*jsonValue, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.l.errorf(p.lineNow(), "", "syntax error: %v", err)
	}
	v := &jsonValue{line: p.lineNow()}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			v.kind = jsonArray
			for p.dec.More() {
				e, err := p.value()
				if err != nil {
					return nil, err
				}
				v.elems = append(v.elems, e)
			}
		} else {
			v.kind = jsonObject
			seen := map[string]bool{}
			for p.dec.More() {
				key, err := p.dec.Token()
				if err != nil {
					return nil, p.l.errorf(p.lineNow(), "", "syntax error: %v", err)
				}
				m := jsonMember{name: key.(string), line: p.lineNow()}
				if seen[m.name] {
					return nil, p.l.errorf(m.line, "", "duplicate key %q", m.name)
				}
				seen[m.name] = true
				if m.value, err = p.value(); err != nil {
					return nil, err
				}
				v.members = append(v.members, m)
			}
		}
		if _, err := p.dec.Token(); err != nil { // the closing ] or }
			return nil, p.l.errorf(p.lineNow(), "", "syntax error: %v", err)
		}
	case string:
		v.kind, v.text = jsonString, t
	case json.Number:
		v.kind, v.text = jsonNumber, t.String()
	case bool:
		v.kind, v.b = jsonBool, t
	case nil:
		v.kind = jsonNull
	}
	return v, nil
}

// Readers of typed values: each names the value by its path in the file
// when it is not what the key takes.

// object checks that v is an object whose keys are among want (any key,
// if want is nil) or ignored, and returns its members.
func (l *loader) object(v *jsonValue, path string, want, ignored []string) ([]jsonMember, error) {
	if v.kind != jsonObject {
		return nil, l.errorf(v.line, path, "want an object, got %s", v.kind)
	}
	for _, m := range v.members {
		if want != nil && !slices.Contains(want, m.name) && !slices.Contains(ignored, m.name) {
			return nil, l.errorf(m.line, path, "unknown key %q (want %s)", m.name, strings.Join(want, ", "))
		}
	}
	return v.members, nil
}

func (l *loader) str(v *jsonValue, path string) (string, error) {
	if v.kind != jsonString {
		return "", l.errorf(v.line, path, "want a string, got %s", v.kind)
	}
	return v.text, nil
}

func (l *loader) nonEmpty(v *jsonValue, path string) (string, error) {
	s, err := l.str(v, path)
	if err == nil && s == "" {
		err = l.errorf(v.line, path, "empty")
	}
	return s, err
}

func (l *loader) boolean(v *jsonValue, path string) (bool, error) {
	if v.kind != jsonBool {
		return false, l.errorf(v.line, path, "want true or false, got %s", v.kind)
	}
	return v.b, nil
}

func (l *loader) integer(v *jsonValue, path string) (int, error) {
	if v.kind != jsonNumber {
		return 0, l.errorf(v.line, path, "want a whole number, got %s", v.kind)
	}
	n, err := strconv.Atoi(v.text)
	if err != nil {
		return 0, l.errorf(v.line, path, "want a whole number, got %s", v.text)
	}
	return n, nil
}

// seconds reads a number of seconds above 0.
func (l *loader) seconds(v *jsonValue, path string) (time.Duration, error) {
	if v.kind != jsonNumber {
		return 0, l.errorf(v.line, path, "want a number of seconds, got %s", v.kind)
	}
	secs, err := strconv.ParseFloat(v.text, 64)
	d := time.Duration(secs * float64(time.Second))
	if err != nil || secs > math.MaxInt64/float64(time.Second) || d <= 0 {
		return 0, l.errorf(v.line, path, "want a number of seconds above 0, got %s", v.text)
	}
	return d, nil
}

func (l *loader) strs(v *jsonValue, path string) ([]string, error) {
	if v.kind != jsonArray {
		return nil, l.errorf(v.line, path, "want an array of strings, got %s", v.kind)
	}
	out := []string{}
	for i, e := range v.elems {
		s, err := l.str(e, fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (l *loader) strMap(v *jsonValue, path string) (map[string]string, error) {
	if v.kind != jsonObject {
		return nil, l.errorf(v.line, path, "want an object of strings, got %s", v.kind)
	}
	out := map[string]string{}
	for _, m := range v.members {
		s, err := l.str(m.value, path+"."+textsafe.Name(m.name))
		if err != nil {
			return nil, err
		}
		out[m.name] = s
	}
	return out, nil
}

// env reads an object of environment variables.
func (l *loader) env(v *jsonValue, path string) (map[string]string, error) {
	env, err := l.strMap(v, path)
	if err != nil {
		return nil, err
	}
	for _, m := range v.members {
		if m.name == "" || strings.ContainsAny(m.name, "=\x00") {
			return nil, l.errorf(m.line, path, "%q is not a variable name", m.name)
		}
	}
	return env, nil
}
