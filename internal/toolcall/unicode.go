package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// CheckUnicode refuses arguments whose text is not Unicode: bytes that
// are not UTF-8, or a \u escape of half a UTF-16 surrogate pair. JSON
// decoding would turn either into U+FFFD without a word, so a tool would
// write another file name or other content than it was sent. The error
// names the argument, as "invalid arguments: argument "content" is not
// valid UTF-8".
//
// Arguments that are not a JSON object are left to the schema check,
// which explains them.
func CheckUnicode(args []byte) error {
	if utf8.Valid(args) && !bytes.Contains(args, []byte(`\u`)) {
		return nil
	}
	if badText(args) == "" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		if raw := args[start:dec.InputOffset()]; badText(raw) != "" {
			// The name as sent, not as decoded.
			if i, j := bytes.IndexByte(raw, '"'), bytes.LastIndexByte(raw, '"'); i < j {
				raw = raw[i+1 : j]
			}
			return fmt.Errorf("invalid arguments: an argument name %s: %s", badText(raw), Quote(string(raw)))
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		if why := badText(value); why != "" {
			return fmt.Errorf("invalid arguments: argument %s %s", Quote(key), why)
		}
	}
	return nil
}

// loneSurrogate is the reason for a \u escape of half a surrogate pair.
const loneSurrogate = "has an unpaired UTF-16 surrogate escape, which is not a character"

// badText says why the JSON text b does not hold Unicode text, or "".
func badText(b []byte) string {
	if !utf8.Valid(b) {
		return "is not valid UTF-8"
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // an escaped character, such as \\ or \"
			continue
		}
		r, ok := hex4(b, i+2)
		switch {
		case !ok:
			i++
		case r >= 0xD800 && r < 0xDC00:
			if low, ok := hex4(b, i+8); ok && b[i+6] == '\\' && b[i+7] == 'u' && low >= 0xDC00 && low <= 0xDFFF {
				i += 11
				continue
			}
			return loneSurrogate
		case r >= 0xDC00 && r <= 0xDFFF:
			return loneSurrogate
		default:
			i += 5
		}
	}
	return ""
}

// hex4 reads the four hex digits at b[i:], if there are four.
func hex4(b []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
