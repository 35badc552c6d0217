package llm

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImageFile: ImageFile tells the four types apart by content, not by
// the file's name, and refuses other files and files over MaxImageSize.
func TestImageFile(t *testing.T) {
	t.Parallel()
	pic := image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.Black, color.White})
	encode := func(f func(*bytes.Buffer) error) []byte {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	// A 1x1 lossless WebP: the standard library has no WebP encoder.
	webp := []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")
	dir := t.TempDir()
	files := map[string]struct {
		data []byte
		want string // media type; "" for a refusal
	}{
		"a.png":       {encode(func(b *bytes.Buffer) error { return png.Encode(b, pic) }), "image/png"},
		"b.jpg":       {encode(func(b *bytes.Buffer) error { return jpeg.Encode(b, pic, nil) }), "image/jpeg"},
		"c.gif":       {encode(func(b *bytes.Buffer) error { return gif.Encode(b, pic, nil) }), "image/gif"},
		"d.webp":      {webp, "image/webp"},
		"png-as.jpg":  {encode(func(b *bytes.Buffer) error { return png.Encode(b, pic) }), "image/png"},
		"notes.png":   {[]byte("just text\n"), ""},
		"empty.gif":   {nil, ""},
		"riff.webp":   {[]byte("RIFF\x1a\x00\x00\x00WAVEfmt "), ""},
		"huge.png":    {append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, MaxImageSize)...), ""},
		"largest.png": {append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, MaxImageSize-8)...), "image/png"},
	}
	for name, f := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		im, err := ImageFile(path)
		switch {
		case f.want == "" && err == nil:
			t.Errorf("%s: no error, media type %q", name, im.MediaType)
		case f.want == "":
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%s: error %q does not name the file", name, err)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case im.MediaType != f.want || !bytes.Equal(im.Data, f.data):
			t.Errorf("%s: media type %q, %d bytes; want %q, %d bytes", name, im.MediaType, len(im.Data), f.want, len(f.data))
		}
	}
	if _, err := ImageFile(filepath.Join(dir, "missing.png")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: error %v", err)
	}
	_, err := ImageFile(filepath.Join(dir, "huge.png"))
	if err == nil || !strings.Contains(err.Error(), "is 3932168 bytes, over the limit of 3932160") {
		t.Errorf("huge file: error %v", err)
	}
}

// TestMaxImageSize: the largest image's base64 form is Anthropic's limit
// of 5 MiB.
func TestMaxImageSize(t *testing.T) {
	t.Parallel()
	im := Image{Data: make([]byte, MaxImageSize)}
	if n := len(im.base64()); n != 5<<20 {
		t.Errorf("base64 of MaxImageSize bytes is %d long, want %d", n, 5<<20)
	}
}
