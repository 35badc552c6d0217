package main

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// regexError describes a syntax error in a regex, with the position (in
// characters, from 0) where it is.
func regexError(query string, err error) error {
	var se *syntax.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("invalid regex %q: %v", query, err)
	}
	msg := fmt.Sprintf("invalid regex %q: %s:", query, se.Code)
	if se.Expr != "" && se.Expr != query {
		msg += fmt.Sprintf(" `%s`", se.Expr)
	}
	if pos, ok := errorOffset(query, se); ok {
		msg += fmt.Sprintf(" at position %d", utf8.RuneCountInString(query[:pos]))
	}
	return errors.New(msg)
}

// errorOffset finds the byte offset in query of a syntax error.
func errorOffset(query string, se *syntax.Error) (int, bool) {
	switch se.Code {
	case syntax.ErrMissingParen:
		return unbalancedParen(query, true)
	case syntax.ErrUnexpectedParen:
		return unbalancedParen(query, false)
	case syntax.ErrTrailingBackslash:
		return len(query) - 1, true
	case syntax.ErrLarge, syntax.ErrNestingDepth:
		return 0, false
	}
	if se.Expr == "" {
		return 0, false
	}
	// The parser reports the text at fault, which is part of the query.
	if i := strings.Index(query, se.Expr); i >= 0 {
		return i, true
	}
	return 0, false
}

// unbalancedParen returns the offset of the last "(" that is never closed
// (open), or of the first ")" that closes nothing (!open), skipping
// escapes and character classes.
func unbalancedParen(query string, open bool) (int, bool) {
	var stack []int
	for i := 0; i < len(query); i++ {
		switch query[i] {
		case '\\':
			i++
		case '[':
			i = classEnd(query, i)
		case '(':
			stack = append(stack, i)
		case ')':
			if len(stack) == 0 {
				if !open {
					return i, true
				}
				continue
			}
			stack = stack[:len(stack)-1]
		}
	}
	if open && len(stack) > 0 {
		return stack[len(stack)-1], true
	}
	return 0, false
}

// classEnd returns the offset of the "]" closing the class at query[i].
func classEnd(query string, i int) int {
	j := i + 1
	if j < len(query) && query[j] == '^' {
		j++
	}
	if j < len(query) && query[j] == ']' {
		j++
	}
	for ; j < len(query); j++ {
		switch {
		case query[j] == '\\':
			j++
		case strings.HasPrefix(query[j:], "[:"):
			if k := strings.Index(query[j+2:], ":]"); k >= 0 {
				j += 2 + k + 1
			}
		case query[j] == ']':
			return j
		}
	}
	return len(query)
}
