package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// A typed tool's schema gives every property one type. jsonschema.For
// says that a slice or a pointer may be null with a type array
// ("type": ["null", "array"]), which strict clients refuse: MCP
// Inspector's strict mode warns, and Gemini's function declarations (an
// OpenAPI 3.0 subset) have no type arrays at all. Here a property is
// optional by being absent from "required", never by being nullable;
// an explicit null for an optional property is taken as its absence
// (see dropNulls), so clients that send null for what they leave unset
// still work.

// inferSchema returns the parameter schema of In, with one type on
// every schema in it.
func inferSchema[In any]() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, err
	}
	if err := singleType(s); err != nil {
		return nil, err
	}
	return s, nil
}

// singleType replaces each type array in s, which inference makes
// only of "null" and one other type, by that other type. It walks the
// sub-schemas inference makes: properties, items and
// additionalProperties.
func singleType(s *jsonschema.Schema) error {
	if s == nil {
		return nil
	}
	if len(s.Types) > 0 {
		types := slices.DeleteFunc(slices.Clone(s.Types), func(t string) bool { return t == "null" })
		if len(types) != 1 {
			return fmt.Errorf("a schema of types %q has no single type", s.Types)
		}
		s.Type, s.Types = types[0], nil
	}
	for _, p := range s.Properties {
		if err := singleType(p); err != nil {
			return err
		}
	}
	if err := singleType(s.Items); err != nil {
		return err
	}
	return singleType(s.AdditionalProperties)
}

// hasOptional reports whether s or a schema in its properties or items
// has an optional property, which dropNulls may have to drop.
func hasOptional(s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	if len(s.Properties) > len(s.Required) {
		return true
	}
	for _, p := range s.Properties {
		if hasOptional(p) {
			return true
		}
	}
	return hasOptional(s.Items)
}

// dropNulls returns args without the optional properties whose value is
// null, in the arguments object and in the objects within it that s
// describes (through properties and items): a null optional property
// is an absent one. A required property keeps its null, which the
// schema then refuses. args must hold only valid Unicode
// (toolcall.CheckUnicode): its keys are decoded and encoded again.
// Arguments that are not an object, or not JSON, are returned as they
// are, for the schema check to refuse.
func dropNulls(s *jsonschema.Schema, args json.RawMessage) json.RawMessage {
	if !bytes.Contains(args, []byte("null")) {
		return args
	}
	out, _ := withoutNulls(s, args)
	return out
}

// withoutNulls is dropNulls on one value; it reports whether it dropped
// any property.
func withoutNulls(s *jsonschema.Schema, raw json.RawMessage) (json.RawMessage, bool) {
	switch {
	case len(s.Properties) > 0:
		return rewriteFields(raw, func(name string, value json.RawMessage) (json.RawMessage, bool) {
			p, ok := s.Properties[name]
			switch {
			case !ok:
				return value, false
			case isNull(value) && !slices.Contains(s.Required, name):
				return nil, true
			case isNull(value):
				return value, false
			}
			return withoutNulls(p, value)
		})
	case s.Items != nil:
		return rewriteItems(raw, func(item json.RawMessage) (json.RawMessage, bool) { return withoutNulls(s.Items, item) })
	}
	return raw, false
}

// isNull reports whether a JSON value is null.
func isNull(value json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(value), []byte("null"))
}

// rewriteFields decodes raw as an object and replaces the value of each
// of its fields by what edit returns, a nil one deleting the field;
// edit reports whether it changed the value. rewriteFields returns raw
// encoded again when edit changed any, else raw, and reports which. A raw
// that is not an object is returned as it is.
func rewriteFields(raw json.RawMessage, edit func(name string, value json.RawMessage) (json.RawMessage, bool)) (json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return raw, false
	}
	changed := false
	for name, value := range fields {
		v, ok := edit(name, value)
		switch {
		case !ok:
			continue
		case v == nil:
			delete(fields, name)
		default:
			fields[name] = v
		}
		changed = true
	}
	return reencode(raw, fields, changed)
}

// rewriteItems is rewriteFields for the items of an array, which edit
// replaces but never deletes.
func rewriteItems(raw json.RawMessage, edit func(item json.RawMessage) (json.RawMessage, bool)) (json.RawMessage, bool) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || items == nil {
		return raw, false
	}
	changed := false
	for i, item := range items {
		if v, ok := edit(item); ok {
			items[i] = v
			changed = true
		}
	}
	return reencode(raw, items, changed)
}

// reencode returns v encoded when changed, else raw.
func reencode(raw json.RawMessage, v any, changed bool) (json.RawMessage, bool) {
	if !changed {
		return raw, false
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw, false
	}
	return out, true
}
