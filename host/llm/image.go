package llm

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
)

// Image is a picture sent in a user message.
type Image struct {
	// MediaType is "image/png", "image/jpeg", "image/gif" or
	// "image/webp". Empty means the type the data shows.
	MediaType string `json:"media_type"`
	// Data is the image file's bytes.
	Data []byte `json:"data"`
}

// MaxImageSize is the largest image, in bytes, that ImageFile reads and
// the Anthropic client sends: 3.75 MiB, whose base64 form is 5 MiB, the
// limit of Anthropic's API.
const MaxImageSize = 5 << 20 / 4 * 3

// ImageFile reads the image file at path. It checks by the file's content
// that it is a PNG, JPEG, GIF or WebP image, and that it is at most
// MaxImageSize bytes.
func ImageFile(path string) (Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return Image{}, fmt.Errorf("image: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > MaxImageSize {
		return Image{}, fmt.Errorf("image: %s is %d bytes, over the limit of %d", path, fi.Size(), MaxImageSize)
	}
	// A file that is not a regular one can grow past what Stat said.
	data, err := io.ReadAll(io.LimitReader(f, MaxImageSize+1))
	if err != nil {
		return Image{}, fmt.Errorf("image: reading %s: %w", path, err)
	}
	if len(data) > MaxImageSize {
		return Image{}, fmt.Errorf("image: %s is over the limit of %d bytes", path, MaxImageSize)
	}
	mt := imageMediaType(data)
	if mt == "" {
		return Image{}, fmt.Errorf("image: %s is not a PNG, JPEG, GIF or WebP image", path)
	}
	return Image{MediaType: mt, Data: data}, nil
}

// imageMediaType is the media type that data's first bytes show, or ""
// when they show none of the four types the APIs take.
func imageMediaType(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "image/gif"
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// mediaType checks the image and returns its media type: its MediaType,
// or the type its data shows when that is empty. The data must be of a
// type the APIs take, and of the type MediaType says.
func (im Image) mediaType() (string, error) {
	if len(im.Data) == 0 {
		return "", errors.New("the image has no data")
	}
	shown := imageMediaType(im.Data)
	if shown == "" {
		return "", errors.New("the image is not a PNG, JPEG, GIF or WebP image")
	}
	if im.MediaType != "" && im.MediaType != shown {
		return "", fmt.Errorf("the image is marked %s but its data is %s", im.MediaType, shown)
	}
	return shown, nil
}

// base64 is the image's data in standard base64.
func (im Image) base64() string { return base64.StdEncoding.EncodeToString(im.Data) }

// Check checks that the image can be sent: that its data is a PNG,
// JPEG, GIF or WebP image, of the type MediaType says if it says one, and
// of at most MaxImageSize bytes.
func (im Image) Check() error {
	if _, err := im.mediaType(); err != nil {
		return err
	}
	if len(im.Data) > MaxImageSize {
		return fmt.Errorf("the image is %d bytes, over the limit of %d", len(im.Data), MaxImageSize)
	}
	return nil
}

// checkImages checks that only user and tool messages carry images, and
// returns an error naming the first message and image that are wrong.
// limit bounds an image's size in bytes; 0 means no bound.
func checkImages(msgs []Message, limit int) error {
	for i, m := range msgs {
		if len(m.Images) == 0 {
			continue
		}
		if m.Role != RoleUser && m.Role != RoleTool {
			return fmt.Errorf("message %d (%s) has images; only user and tool messages may", i, m.Role)
		}
		for j, im := range m.Images {
			if _, err := im.mediaType(); err != nil {
				return fmt.Errorf("message %d, image %d: %w", i, j, err)
			}
			if limit > 0 && len(im.Data) > limit {
				return fmt.Errorf("message %d, image %d: %d bytes, over the limit of %d", i, j, len(im.Data), limit)
			}
		}
	}
	return nil
}
