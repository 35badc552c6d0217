package main

import (
	"errors"
	"math"
	"strconv"
)

const (
	// maxResults bounds max_results: a larger value asks for this many.
	maxResults = 10000
	// maxOutputBytes is about the most text a search answers with: the
	// output stops at the first match past it, with a note.
	maxOutputBytes = 4 << 20
)

// wholeNumber is a numeric argument. It takes any JSON number that is a
// whole number, however large: one beyond what an int holds becomes the
// largest (or smallest) int, which the argument's bounds then clamp or
// refuse, so no argument can overflow.
type wholeNumber int

func (n *wholeNumber) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		*n = wholeNumber(clampInt(float64(i), i))
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return errors.New("expected a whole number, got " + truncate(s, 40))
	}
	if f != math.Trunc(f) {
		return errors.New("expected a whole number, got " + truncate(s, 40))
	}
	*n = wholeNumber(clampInt(f, 0))
	return nil
}

// clampInt is f as an int, the nearest int when it is out of range; i is
// f's exact value when f came from one.
func clampInt(f float64, i int64) int {
	switch {
	case f >= math.MaxInt:
		return math.MaxInt
	case f <= math.MinInt:
		return math.MinInt
	case i != 0:
		return int(i)
	}
	return int(f)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// resultLimit is a max_results argument: 0 means def, negative is
// refused, and more than maxResults is maxResults.
func resultLimit(n wholeNumber, def int) (int, error) {
	switch {
	case n < 0:
		return 0, errors.New("max_results must not be negative")
	case n == 0:
		return def, nil
	}
	return min(int(n), maxResults), nil
}
