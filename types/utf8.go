package types

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/streamdb/streamdb/sqlerr"
)

// CheckText reports whether b is text a PostgreSQL 15 database in UTF8
// accepts: valid UTF-8 (no lone continuation byte, truncated sequence,
// overlong form, surrogate U+D800-DFFF or code point above U+10FFFF) with
// no NUL byte. Otherwise it returns PostgreSQL's error, 22021, naming the
// bytes of the first bad character as PostgreSQL does.
func CheckText(b []byte) error {
	if utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 {
		return nil
	}
	return invalidText(b)
}

// CheckString is CheckText for a string.
func CheckString(s string) error {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return nil
	}
	return invalidText([]byte(s))
}

// invalidText is the error for b, which holds a bad character: PostgreSQL's
// report_invalid_encoding shows the bytes from the first bad one, as many
// as the length its first byte announces (at most what is left).
func invalidText(b []byte) error {
	i := 0
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if r == 0 || r == utf8.RuneError && n <= 1 {
			break
		}
		i += n
	}
	n := min(utf8SeqLen(b[i]), len(b)-i)
	var hex strings.Builder
	for j, c := range b[i : i+n] {
		if j > 0 {
			hex.WriteByte(' ')
		}
		fmt.Fprintf(&hex, "0x%02x", c)
	}
	return sqlerr.New(sqlerr.CharNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": %s", hex.String())
}

// utf8SeqLen is the length of the sequence a UTF-8 lead byte announces,
// as PostgreSQL's pg_utf_mblen counts it (1 for anything not a lead byte).
func utf8SeqLen(c byte) int {
	switch {
	case c&0xe0 == 0xc0:
		return 2
	case c&0xf0 == 0xe0:
		return 3
	case c&0xf8 == 0xf0:
		return 4
	}
	return 1
}
