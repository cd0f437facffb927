package types

import (
	"github.com/streamdb/streamdb/sqlerr"
)

// bytea (oid 17) is held as its bytes in an Arrow String column (Go
// strings and Arrow's String layout carry any bytes; only text input is
// checked for UTF-8). Byte-by-byte comparison of the strings is
// PostgreSQL's byteacmp (memcmp, then the shorter first), so ordering,
// keys and state work on the string kernels. Text output is the hex format
// (bytea_output = 'hex', PostgreSQL 15's default); the binary format is
// the bytes themselves.

// parseBytea reads byteain's two input formats: hex (\x then pairs of hex
// digits, white space allowed between pairs) and escape (\\ is a
// backslash, \ooo an octal byte, any other byte itself).
func parseBytea(s string) (Datum, error) {
	if len(s) >= 2 && s[0] == '\\' && s[1] == 'x' {
		out := make([]byte, 0, (len(s)-2)/2)
		for i := 2; i < len(s); {
			c := s[i]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' {
				i++
				continue
			}
			hi, ok := unhex(c)
			if !ok {
				return Null, sqlerr.New(sqlerr.InvalidParameterValue, "invalid hexadecimal digit: %s", quote(runeAt(s, i)))
			}
			if i+1 >= len(s) {
				return Null, sqlerr.New(sqlerr.InvalidParameterValue, "invalid hexadecimal data: odd number of digits")
			}
			lo, ok := unhex(s[i+1])
			if !ok {
				return Null, sqlerr.New(sqlerr.InvalidParameterValue, "invalid hexadecimal digit: %s", quote(runeAt(s, i+1)))
			}
			out = append(out, hi<<4|lo)
			i += 2
		}
		return Str(string(out)), nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			out = append(out, s[i])
			i++
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i += 2
		case i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]):
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 4
		default:
			return Null, sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type bytea")
		}
	}
	return Str(string(out)), nil
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// runeAt is the character that starts at byte i of s, as PostgreSQL
// names a bad hex digit.
func runeAt(s string, i int) string {
	for _, r := range s[i:] {
		return string(r)
	}
	return ""
}

// appendByteaHex appends byteaout's hex format of b.
func appendByteaHex(buf []byte, b string) []byte {
	buf = append(buf, '\\', 'x')
	for i := 0; i < len(b); i++ {
		buf = append(buf, hexDigits[b[i]>>4], hexDigits[b[i]&15])
	}
	return buf
}
