package main

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// A listing encodes itself: encoding/json's reflection over the five
// generic levels of entries, and its second pass over what a Marshaler
// writes, cost list_dir of 200 entries more than a quarter of its time
// in the plugin. The bytes are encoding/json's, byte for byte
// (TestListingJSON, FuzzListingJSON): the same members in the same
// order, omitted where the tags say, strings escaped as it escapes them.

var _ json.Marshaler = dirListing{}

// MarshalJSON encodes the listing as encoding/json encodes it, but for
// entries that are nil, which are written [] as the output schema
// requires. The sdk takes it as it is (see sdk.NewStructuredTool).
func (d dirListing) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64+40*len(d.Entries))
	b = append(b, `{"path":`...)
	b = appendJSONString(b, d.Path)
	b = append(b, `,"entries":`...)
	b = appendLevels(b, d.Entries)
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, d.Truncated)
	b = append(b, `,"more":`...)
	b = strconv.AppendInt(b, int64(d.More), 10)
	b = append(b, `,"hidden":`...)
	b = strconv.AppendInt(b, int64(d.Hidden), 10)
	b = append(b, `,"excluded":`...)
	b = strconv.AppendInt(b, int64(d.Excluded), 10)
	return append(b, '}'), nil
}

// levelAppender appends the entries of one level, and those below, as a
// JSON array.
type levelAppender[E any] func(b []byte, entries []E) []byte

// appendLevels appends the levels of a listing.
var appendLevels = appendDirs(appendDirs(appendDirs(appendDirs(appendLeaves))))

// appendDirs is the levelAppender of a level whose directories hold
// entries that next appends: children when the slice is not nil
// (omitzero), truncated when set (omitempty).
func appendDirs[C any](next levelAppender[C]) levelAppender[dirEntry[C]] {
	return func(b []byte, entries []dirEntry[C]) []byte {
		b = append(b, '[')
		for i := range entries {
			e := &entries[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = e.entryInfo.appendMembers(append(b, '{'))
			if e.Children != nil {
				b = next(append(b, `,"children":`...), e.Children)
			}
			if e.Truncated {
				b = append(b, `,"truncated":true`...)
			}
			b = append(b, '}')
		}
		return append(b, ']')
	}
}

// appendLeaves appends the deepest level.
func appendLeaves(b []byte, entries []entryInfo) []byte {
	b = append(b, '[')
	for i := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(entries[i].appendMembers(append(b, '{')), '}')
	}
	return append(b, ']')
}

// appendMembers appends e's members, without the braces: name and type,
// then kind, size, target and error where they are set.
func (e *entryInfo) appendMembers(b []byte) []byte {
	b = append(b, `"name":`...)
	b = appendJSONString(b, e.Name)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.Type)
	if e.Kind != "" {
		b = appendJSONString(append(b, `,"kind":`...), e.Kind)
	}
	if e.Size != nil {
		b = strconv.AppendInt(append(b, `,"size":`...), *e.Size, 10)
	}
	if e.Target != "" {
		b = appendJSONString(append(b, `,"target":`...), e.Target)
	}
	if e.Error != "" {
		b = appendJSONString(append(b, `,"error":`...), e.Error)
	}
	return b
}

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it: ", \ and control characters, <, > and & (as \u003c,
// \u003e, \u0026), U+2028 and U+2029, and each byte that is not UTF-8
// as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}
