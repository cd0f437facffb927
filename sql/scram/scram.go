// Package scram holds PostgreSQL's SCRAM-SHA-256 password verifiers
// (RFC 5802, RFC 7677): making one from a password, with SASLprep as
// PostgreSQL applies it, and splitting a stored one into the keys the
// authentication exchange needs. The catalog stores verifiers; the wire
// protocol checks clients' proofs against them.
package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/xdg-go/stringprep"
)

// iterations is PostgreSQL's default scram_iterations.
const iterations = 4096

// Verifier returns PostgreSQL's SCRAM-SHA-256 verifier of password,
// with a random salt: SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>.
// The password goes through SASLprep (RFC 4013) as PostgreSQL does; if that
// fails (prohibited characters, invalid UTF-8), the raw bytes are used.
func Verifier(password string) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	salted, err := pbkdf2.Key(sha256.New, SASLprep(password), salt, iterations, sha256.Size)
	if err != nil {
		panic(err) // only for FIPS-mode key length limits, which 32 bytes meets
	}
	clientKey := HMAC(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(storedKey[:]),
		b64(HMAC(salted, "Server Key")))
}

// SASLprep normalizes a password as PostgreSQL's pg_saslprep does: ASCII
// passwords are used as they are, others through the SASLprep profile of
// stringprep, falling back to the raw bytes when that fails.
func SASLprep(password string) string {
	ascii := true
	for i := 0; i < len(password); i++ {
		if password[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii || !utf8.ValidString(password) {
		return password
	}
	p, err := stringprep.SASLprep.Prepare(password)
	if err != nil {
		return password
	}
	return p
}

// HMAC is HMAC-SHA-256 of msg under key, the primitive of SCRAM-SHA-256.
func HMAC(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// ParseVerifier splits a verifier made by Verifier (or by
// PostgreSQL) into its parts; ok is false if v is not one.
func ParseVerifier(v string) (iterations int, salt, storedKey, serverKey []byte, ok bool) {
	rest, found := strings.CutPrefix(v, "SCRAM-SHA-256$")
	if !found {
		return 0, nil, nil, nil, false
	}
	iterSalt, keys, found := strings.Cut(rest, "$")
	if !found {
		return 0, nil, nil, nil, false
	}
	iter, saltB64, found := strings.Cut(iterSalt, ":")
	stored, server, found2 := strings.Cut(keys, ":")
	if !found || !found2 {
		return 0, nil, nil, nil, false
	}
	n, err := strconv.Atoi(iter)
	if err != nil || n < 1 {
		return 0, nil, nil, nil, false
	}
	dec := base64.StdEncoding.DecodeString
	s, err1 := dec(saltB64)
	st, err2 := dec(stored)
	sv, err3 := dec(server)
	if err1 != nil || err2 != nil || err3 != nil || len(s) == 0 || len(st) != sha256.Size || len(sv) != sha256.Size {
		return 0, nil, nil, nil, false
	}
	return n, s, st, sv, true
}
