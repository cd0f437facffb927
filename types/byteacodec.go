package types

import (
	"github.com/streamdb/streamdb/sqlerr"
)

// The formats of encode(bytea, format) and decode(text, format), as
// PostgreSQL 15's encode.c writes and reads them.

const base64Chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// AppendPGBase64 appends pg_base64_encode's form of b: base64 with a
// newline after each 76 characters (also after the last group when it
// ends a line exactly).
func AppendPGBase64(dst []byte, b string) []byte {
	lineStart := len(dst)
	var buf uint32
	pos := 2
	for i := 0; i < len(b); i++ {
		buf |= uint32(b[i]) << (uint(pos) << 3)
		pos--
		if pos < 0 {
			dst = append(dst, base64Chars[(buf>>18)&0x3f], base64Chars[(buf>>12)&0x3f], base64Chars[(buf>>6)&0x3f], base64Chars[buf&0x3f])
			pos, buf = 2, 0
		}
		if len(dst)-lineStart >= 76 {
			dst = append(dst, '\n')
			lineStart = len(dst)
		}
	}
	if pos != 2 {
		dst = append(dst, base64Chars[(buf>>18)&0x3f], base64Chars[(buf>>12)&0x3f])
		if pos == 0 {
			dst = append(dst, base64Chars[(buf>>6)&0x3f])
		} else {
			dst = append(dst, '=')
		}
		dst = append(dst, '=')
	}
	return dst
}

// AppendPGBase64Decode appends the bytes of pg_base64_decode's reading of
// s: white space is skipped, "=" pads, errors are 22023.
func AppendPGBase64Decode(dst []byte, s string) ([]byte, error) {
	var buf uint32
	pos, end := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		var b uint32
		if c == '=' {
			if end == 0 {
				switch pos {
				case 2:
					end = 1
				case 3:
					end = 2
				default:
					return dst, sqlerr.New(sqlerr.InvalidParameterValue, "unexpected \"=\" while decoding base64 sequence")
				}
			}
		} else {
			v := base64Value(c)
			if v < 0 {
				return dst, sqlerr.New(sqlerr.InvalidParameterValue, "invalid symbol %s found while decoding base64 sequence", quote(runeAt(s, i)))
			}
			b = uint32(v)
		}
		buf = buf<<6 + b
		if pos++; pos == 4 {
			dst = append(dst, byte(buf>>16))
			if end == 0 || end > 1 {
				dst = append(dst, byte(buf>>8))
			}
			if end == 0 || end > 2 {
				dst = append(dst, byte(buf))
			}
			buf, pos = 0, 0
		}
	}
	if pos != 0 {
		return dst, sqlerr.New(sqlerr.InvalidParameterValue, "invalid base64 end sequence")
	}
	return dst, nil
}

func base64Value(c byte) int {
	switch {
	case c >= 'A' && c <= 'Z':
		return int(c - 'A')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 26
	case c >= '0' && c <= '9':
		return int(c-'0') + 52
	case c == '+':
		return 62
	case c == '/':
		return 63
	}
	return -1
}

// AppendPGHexDecode appends the bytes of hex_decode's reading of s: pairs
// of hex digits, white space allowed between pairs.
func AppendPGHexDecode(dst []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		hi, ok := unhex(c)
		if !ok {
			return dst, sqlerr.New(sqlerr.InvalidParameterValue, "invalid hexadecimal digit: %s", quote(runeAt(s, i)))
		}
		if i+1 >= len(s) {
			return dst, sqlerr.New(sqlerr.InvalidParameterValue, "invalid hexadecimal data: odd number of digits")
		}
		lo, ok := unhex(s[i+1])
		if !ok {
			return dst, sqlerr.New(sqlerr.InvalidParameterValue, "invalid hexadecimal digit: %s", quote(runeAt(s, i+1)))
		}
		dst = append(dst, hi<<4|lo)
		i += 2
	}
	return dst, nil
}

// AppendByteaEscape appends esc_encode's form of b: a NUL or a byte with
// the high bit set as \ooo, a backslash doubled, any other byte itself.
func AppendByteaEscape(dst []byte, b string) []byte {
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == 0 || c >= 0x80:
			dst = append(dst, '\\', '0'+c>>6, '0'+(c>>3)&7, '0'+c&7)
		case c == '\\':
			dst = append(dst, '\\', '\\')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
