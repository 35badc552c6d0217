package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk"
)

type readFileInput struct {
	Path     string `json:"path" jsonschema:"Path of the file to read."`
	Encoding string `json:"encoding,omitempty" jsonschema:"How to return the content: utf-8 (the default) for text, base64 for binary files."`
	Offset   int    `json:"offset,omitempty" jsonschema:"1-based line to start reading at (utf-8 only). Default 1."`
	Limit    int    `json:"limit,omitempty" jsonschema:"Maximum number of lines to return (utf-8 only). Default: to the end of the file."`
}

var readFile = sdk.NewTool(sdk.Info{
	Name:        "read_file",
	Description: "Read a file and return its contents. Text is returned as utf-8; use encoding base64 for binary files. Use offset and limit to read part of a long text file by lines.",
	Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
}, func(ctx context.Context, in readFileInput) (string, error) {
	encoding, err := normalizeEncoding(in.Encoding)
	if err != nil {
		return "", err
	}
	if in.Offset < 0 || in.Limit < 0 {
		return "", errors.New("offset and limit must not be negative")
	}
	if encoding == "base64" && (in.Offset != 0 || in.Limit != 0) {
		return "", errors.New("offset and limit apply to utf-8 text; read the whole file with base64")
	}
	data, err := readRegularFile(in.Path)
	if err != nil {
		return "", err
	}
	if encoding == "base64" {
		return base64.StdEncoding.EncodeToString(data), nil
	}
	if !utf8.Valid(data) {
		return "", fmt.Errorf("%s is not utf-8 text (%d bytes): read it with encoding base64", in.Path, len(data))
	}
	if in.Offset == 0 && in.Limit == 0 {
		return string(data), nil
	}
	return lineRange(string(data), in.Offset, in.Limit)
})

func normalizeEncoding(e string) (string, error) {
	switch strings.ToLower(e) {
	case "", "utf-8", "utf8":
		return "utf-8", nil
	case "base64":
		return "base64", nil
	}
	return "", fmt.Errorf("unsupported encoding %q: use \"utf-8\" or \"base64\"", e)
}

// readRegularFile reads a file, with errors that say plainly what is wrong.
func readRegularFile(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("path is empty")
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("file not found: %s", path)
	case err != nil:
		return nil, err
	case info.IsDir():
		return nil, fmt.Errorf("%s is a directory, not a file", path)
	}
	return os.ReadFile(path)
}

// lineRange returns limit lines of text from the 1-based line offset (0
// means 1); limit 0 means to the end.
func lineRange(text string, offset, limit int) (string, error) {
	if offset == 0 {
		offset = 1
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if offset > len(lines) {
		return "", fmt.Errorf("offset %d is past the end of the file (%d lines)", offset, len(lines))
	}
	end := len(lines)
	if limit > 0 && offset-1+limit < end {
		end = offset - 1 + limit
	}
	return strings.Join(lines[offset-1:end], ""), nil
}
