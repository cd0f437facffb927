package types

import "strings"

// JSONBKey returns the key form of the jsonb datum s for equality-based
// operators (GROUP BY, DISTINCT, joins, partitions): s with every number
// without trailing fractional zeros ('1.0' and '1.00' key as '1'), so
// values that are = (PostgreSQL compares jsonb numbers by value) have equal
// bytes. ok is false, and nothing is allocated, when s is already its key
// form (the common case).
func JSONBKey(s string) (key string, ok bool) {
	if len(s) > 0 && s[0] <= jbObject && jbIsKey(s) {
		return s, false
	}
	v := decodeJB(jbBytes(s))
	canonJSONNumbers(v)
	return string(AppendJSONBBinary(nil, v)), true
}

// jbIsKey says no number in the encoded value b has trailing fractional zeros.
func jbIsKey(b string) bool {
	switch b[0] {
	case jbNumber:
		return numberIsKey(b[1:])
	case jbArray:
		for i, n := 0, jbCount(b); i < n; i++ {
			if !jbIsKey(jbElem(b, i)) {
				return false
			}
		}
	case jbObject:
		for i, n := 0, jbCount(b); i < n; i++ {
			if !jbIsKey(jbValue(b, i)) {
				return false
			}
		}
	}
	return true
}

// numberIsKey says numeric_out text s has no trailing fractional zeros
// and is not a negative zero.
func numberIsKey(s string) bool {
	if strings.IndexByte(s, '.') >= 0 && s[len(s)-1] == '0' || s[len(s)-1] == '.' {
		return false
	}
	return s != "-0"
}

func canonJSONNumbers(v *JSONValue) {
	if v.Kind == JNumber {
		v.Str = keyNumber(v.Str)
	}
	for _, e := range v.Elems {
		canonJSONNumbers(e)
	}
}

// keyNumber drops numeric_out text s's trailing fractional zeros (and
// the point when nothing is left after it): 1.50 → 1.5, 1.00 → 1, -0.0 → 0.
// numeric_out never writes an exponent.
func keyNumber(s string) string {
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		return "0"
	}
	return s
}
