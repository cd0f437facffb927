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
		out, err := AppendPGHexDecode(make([]byte, 0, (len(s)-2)/2), s[2:])
		if err != nil {
			return Null, err
		}
		return Str(string(out)), nil
	}
	out, err := AppendByteaUnescape(make([]byte, 0, len(s)), s)
	if err != nil {
		return Null, err
	}
	return Str(string(out)), nil
}

// AppendByteaUnescape appends the bytes of s in bytea's escape format (\\
// is a backslash, \ooo an octal byte, any other byte itself): byteain's
// escape input and decode(s, 'escape').
func AppendByteaUnescape(out []byte, s string) ([]byte, error) {
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
			return out, sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type bytea")
		}
	}
	return out, nil
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
