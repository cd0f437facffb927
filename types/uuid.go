package types

import (
	"crypto/rand"

	"github.com/streamdb/streamdb/sqlerr"
)

// uuid (oid 2950) is held as its canonical text, 36 bytes of lowercase hex
// in the groups 8-4-4-4-12, in an Arrow String column (see
// docs/decisions/2026-12-06-everyday-types.md). Lowercase hex digits
// with the hyphens at fixed places sort byte by byte exactly as the 16
// bytes do, so equality, ordering, hashing, keys and state work on the
// text with the string kernels, as PostgreSQL's uuid_cmp (memcmp) orders.

const hexDigits = "0123456789abcdef"

// parseUUID reads PostgreSQL 15's uuid_in syntax: 32 hex digits, a hyphen
// allowed after any group of four (not after the last), the whole
// optionally in braces; no surrounding spaces.
func parseUUID(s string) (Datum, error) {
	var u [16]byte
	src := s
	braces := len(src) > 0 && src[0] == '{'
	if braces {
		src = src[1:]
	}
	for i := 0; i < 16; i++ {
		if len(src) < 2 {
			return Null, errUUIDSyntax(s)
		}
		hi, ok1 := unhex(src[0])
		lo, ok2 := unhex(src[1])
		if !ok1 || !ok2 {
			return Null, errUUIDSyntax(s)
		}
		u[i] = hi<<4 | lo
		src = src[2:]
		if len(src) > 0 && src[0] == '-' && i%2 == 1 && i < 15 {
			src = src[1:]
		}
	}
	if braces {
		if len(src) == 0 || src[0] != '}' {
			return Null, errUUIDSyntax(s)
		}
		src = src[1:]
	}
	if len(src) != 0 {
		return Null, errUUIDSyntax(s)
	}
	return Str(uuidText(u)), nil
}

func errUUIDSyntax(s string) error {
	return sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type uuid: %s", quote(s))
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// uuidText is uuid_out's text of u.
func uuidText(u [16]byte) string {
	var b [36]byte
	j := 0
	for i, x := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hexDigits[x>>4], hexDigits[x&15]
		j += 2
	}
	return string(b[:])
}

// appendUUIDBinary appends uuid_send's 16 bytes of the canonical text s.
func appendUUIDBinary(buf []byte, s string) []byte {
	for i := 0; i+1 < len(s); {
		if s[i] == '-' {
			i++
			continue
		}
		hi, _ := unhex(s[i])
		lo, _ := unhex(s[i+1])
		buf = append(buf, hi<<4|lo)
		i += 2
	}
	return buf
}

// parseUUIDBinary reads uuid_recv's 16 bytes.
func parseUUIDBinary(b []byte) (Datum, error) {
	if len(b) != 16 {
		return Null, errBinary(TUUID)
	}
	return Str(uuidText([16]byte(b))), nil
}

// RandomUUID returns a version 4 (random) UUID's text, as PostgreSQL 15's
// gen_random_uuid makes it.
func RandomUUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails (Go 1.24+)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return uuidText(u)
}
