package types

import (
	"crypto/rand"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/sqlerr"
)

// uuid (oid 2950) is stored as its 16 bytes in an Arrow FixedSizeBinary(16)
// column (PhysUUID; docs/decisions/2026-12-07-uuid-native.md). Kernels
// compare, hash and key the bytes; as a Datum (constants, parameters, I/O,
// state encodings) a uuid is its canonical text, 36 bytes of lowercase hex
// in the groups 8-4-4-4-12. The text with its hyphens at fixed places sorts
// byte by byte exactly as the 16 bytes do (PostgreSQL's uuid_cmp is
// memcmp), so both forms order alike, and a state key written from the
// text (EncodeDatum) equals one written from the bytes (AppendUUIDText).

// UUIDArrow is uuid's Arrow type.
var UUIDArrow arrow.DataType = &arrow.FixedSizeBinaryType{ByteWidth: 16}

// UUIDTextLen is the length of uuid's canonical text.
const UUIDTextLen = 36

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

// ParseUUIDBytes reads uuid_in's syntax into 16 bytes written to dst.
func ParseUUIDBytes(dst []byte, s string) error {
	if len(s) == UUIDTextLen && isCanonicalUUID(s) {
		canonicalUUIDBytes(dst, s)
		return nil
	}
	d, err := parseUUID(s)
	if err != nil {
		return err
	}
	canonicalUUIDBytes(dst, d.S)
	return nil
}

// ParseCanonicalUUID writes to dst (16 bytes) the uuid s spelled in
// uuid_out's form (36 bytes, hyphens at 8, 13, 18 and 23, hex digits of
// either case elsewhere) and reports whether s is so spelled; other
// spellings are left to ParseText.
func ParseCanonicalUUID[S string | []byte](dst []byte, s S) bool {
	if len(s) != UUIDTextLen {
		return false
	}
	j := 0
	for i := 0; i < UUIDTextLen; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
			i++
		}
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[j] = hi<<4 | lo
		j++
	}
	return true
}

// isCanonicalUUID reports whether s (36 bytes) has hyphens at 8, 13, 18, 23
// and hex digits elsewhere.
func isCanonicalUUID(s string) bool {
	for i := 0; i < UUIDTextLen; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
			continue
		}
		if _, ok := unhex(s[i]); !ok {
			return false
		}
	}
	return true
}

// canonicalUUIDBytes writes the 16 bytes of s, a uuid's text already
// checked (parseUUID's output or isCanonicalUUID), to dst.
func canonicalUUIDBytes(dst []byte, s string) {
	j := 0
	for i := 0; i+1 < len(s) && j < 16; {
		if s[i] == '-' {
			i++
			continue
		}
		hi, _ := unhex(s[i])
		lo, _ := unhex(s[i+1])
		dst[j] = hi<<4 | lo
		j++
		i += 2
	}
}

// UUIDBytes returns the 16 bytes of a uuid Datum's canonical text.
func UUIDBytes(s string) [16]byte {
	var u [16]byte
	canonicalUUIDBytes(u[:], s)
	return u
}

// AppendUUIDText appends uuid_out's 36-byte text of b (16 bytes).
func AppendUUIDText(buf []byte, b []byte) []byte {
	for i, x := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			buf = append(buf, '-')
		}
		buf = append(buf, hexDigits[x>>4], hexDigits[x&15])
	}
	return buf
}

// UUIDText is uuid_out's text of b (16 bytes).
func UUIDText(b []byte) string {
	var a [UUIDTextLen]byte
	return string(AppendUUIDText(a[:0], b))
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
func uuidText(u [16]byte) string { return UUIDText(u[:]) }

// appendUUIDBinary appends uuid_send's 16 bytes of the canonical text s.
func appendUUIDBinary(buf []byte, s string) []byte {
	u := UUIDBytes(s)
	return append(buf, u[:]...)
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
	RandomUUIDBytes(u[:])
	return uuidText(u)
}

// RandomUUIDBytes fills u (16 bytes) with a version 4 (random) UUID.
func RandomUUIDBytes(u []byte) {
	_, _ = rand.Read(u) // crypto/rand.Read never fails (Go 1.24+)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
}
