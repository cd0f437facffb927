package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"strings"
	"testing"
)

func TestSASLprep(t *testing.T) {
	for in, want := range map[string]string{
		"IX":             "IX",
		"I\u00ADX":       "IX",         // soft hyphen maps to nothing
		"\u2168":         "IX",         // ROMAN NUMERAL NINE, NFKC
		"a\u00A0b":       "a b",        // non-ASCII space maps to space
		"a\x07b":         "a\x07b",     // ASCII is used as it is
		"bad\u0007é":     "bad\u0007é", // prohibited control character: raw bytes, as PostgreSQL does
		"\xff\xfe":       "\xff\xfe",   // invalid UTF-8: raw bytes
		"pässwörd":       "pässwörd",
		"x\u200By\u2060": "xy", // zero-width characters map to nothing
	} {
		if got := SASLprep(in); got != want {
			t.Errorf("SASLprep(%q) = %q, want %q", in, got, want)
		}
	}
}

// The verifier is PostgreSQL's format, and its keys are those RFC 5802
// derives from the SASLprepped password and the salt.
func TestVerifier(t *testing.T) {
	v := Verifier("I\u00ADX")
	if !strings.HasPrefix(v, "SCRAM-SHA-256$4096:") {
		t.Fatalf("verifier %q", v)
	}
	iter, salt, stored, server, ok := ParseVerifier(v)
	if !ok || iter != 4096 || len(salt) != 16 {
		t.Fatalf("parse %q: %v %d %d", v, ok, iter, len(salt))
	}
	salted, _ := pbkdf2.Key(sha256.New, "IX", salt, iter, 32)
	wantStored := sha256.Sum256(HMAC(salted, "Client Key"))
	if !hmac.Equal(stored, wantStored[:]) || !hmac.Equal(server, HMAC(salted, "Server Key")) {
		t.Error("keys do not match the normalized password")
	}
	if Verifier("IX") == Verifier("IX") {
		t.Error("two verifiers share a salt")
	}
	for _, bad := range []string{"", "pw", "SCRAM-SHA-256$4096:c2FsdA==$eA==:eA==", "SCRAM-SHA-256$x:c2FsdA==$" + strings.Repeat("A", 44) + ":" + strings.Repeat("A", 44)} {
		if _, _, _, _, ok := ParseVerifier(bad); ok {
			t.Errorf("ParseVerifier(%q) accepted", bad)
		}
	}
}
