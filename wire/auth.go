package wire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/streamdb/streamdb/sql/scram"
	"github.com/streamdb/streamdb/sqlerr"
)

// scramSecret is a role's SCRAM-SHA-256 verifier (RFC 5802, RFC 7677), as
// stored in the catalog: a login costs no PBKDF2.
type scramSecret struct {
	iterations int
	salt       []byte
	storedKey  []byte // H(ClientKey)
	serverKey  []byte
}

func parseSecret(verifier string) (*scramSecret, bool) {
	iter, salt, stored, server, ok := scram.ParseVerifier(verifier)
	if !ok {
		return nil, false
	}
	return &scramSecret{iterations: iter, salt: salt, storedKey: stored, serverKey: server}, true
}

// mockSecret is the secret of a role that does not exist or has no
// password, as PostgreSQL's mock authentication does: the exchange looks
// like a real one (the salt is derived from the name and the server's
// secret, so it is the same at every attempt) and fails at the end with
// 28P01, so a client cannot tell whether the role exists.
func (s *Server) mockSecret(user string) *scramSecret {
	salt := hmacSum(s.cfg.MockSecret, "salt:"+user)[:16]
	key := hmacSum(s.cfg.MockSecret, "key:"+user)
	return &scramSecret{iterations: 4096, salt: salt, storedKey: key, serverKey: key}
}

func hmacSum(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// authenticate applies the first matching authentication rule to the
// client and reports whether its role is a superuser.
func (c *conn) authenticate(user, database string) (superuser bool, err error) {
	ssl := c.nc != c.raw
	ip := peerIP(c.raw.RemoteAddr())
	rule, err := c.srv.matchHBA(ssl, ip, user, database)
	if err != nil {
		return false, err
	}
	verifier, login, su, exists := c.srv.eng.Role(user)
	method := rule.Method
	if method == MethodPasswordIfSet {
		method = MethodTrust
		if verifier != "" {
			method = MethodSCRAM
		}
	}
	switch method {
	case MethodReject:
		return false, sqlerr.New(sqlerr.InvalidAuthorization, "pg_hba.conf rejects connection for host %q, user %q, database %q, %s",
			ip.String(), user, database, encryptionWords(ssl))
	case MethodTrust:
		if !exists {
			return false, sqlerr.New(sqlerr.InvalidAuthorization, "role %q does not exist", user)
		}
	case MethodSCRAM:
		sec, ok := parseSecret(verifier)
		genuine := exists && ok
		if !genuine {
			sec = c.srv.mockSecret(user)
		}
		if err := c.scramAuth(user, sec, genuine); err != nil {
			return false, err
		}
	}
	if !login {
		return false, sqlerr.New(sqlerr.InvalidAuthorization, "role %q is not permitted to log in", user)
	}
	return su, nil
}

// scramAuth runs the server side of SCRAM-SHA-256 without channel binding.
// With genuine unset (mock authentication) it fails at the proof, whatever the
// client sends.
func (c *conn) scramAuth(user string, sec *scramSecret, genuine bool) error {
	authFailed := sqlerr.New(sqlerr.InvalidPassword, "password authentication failed for user %q", user)
	const mechanism = "SCRAM-SHA-256"

	c.be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{mechanism}})
	if err := c.be.Flush(); err != nil {
		return err
	}
	c.be.SetAuthType(pgproto3.AuthTypeSASL)
	msg, err := c.receiveAuth()
	if err != nil {
		return err
	}
	first, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok {
		return sqlerr.New(sqlerr.ProtocolViolation, "expected SASL response, got %T", msg)
	}
	if first.AuthMechanism != mechanism {
		return sqlerr.New(sqlerr.ProtocolViolation, "client selected an invalid SASL authentication mechanism")
	}
	gs2, clientFirstBare, clientNonce, err := parseClientFirst(string(first.Data))
	if err != nil {
		return err
	}

	nonceBytes := make([]byte, 18)
	rand.Read(nonceBytes)
	nonce := clientNonce + base64.StdEncoding.EncodeToString(nonceBytes)
	serverFirst := "r=" + nonce + ",s=" + base64.StdEncoding.EncodeToString(sec.salt) +
		",i=" + strconv.Itoa(sec.iterations)
	c.be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(serverFirst)})
	if err := c.be.Flush(); err != nil {
		return err
	}
	c.be.SetAuthType(pgproto3.AuthTypeSASLContinue)
	msg, err = c.receiveAuth()
	if err != nil {
		return err
	}
	final, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return sqlerr.New(sqlerr.ProtocolViolation, "expected SASL response, got %T", msg)
	}

	// client-final-message = c=<b64 gs2 header>,r=<nonce>[,ext...],p=<proof>
	clientFinal := string(final.Data)
	i := strings.LastIndex(clientFinal, ",p=")
	if i < 0 {
		return sqlerr.New(sqlerr.ProtocolViolation, "malformed SCRAM message: missing proof")
	}
	withoutProof := clientFinal[:i]
	proof, err := base64.StdEncoding.DecodeString(clientFinal[i+3:])
	if err != nil || len(proof) != sha256.Size {
		return sqlerr.New(sqlerr.ProtocolViolation, "malformed SCRAM message: invalid proof")
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || attrs[0] != "c="+base64.StdEncoding.EncodeToString([]byte(gs2)) {
		return sqlerr.New(sqlerr.ProtocolViolation, "malformed SCRAM message: unexpected channel binding")
	}
	if attrs[1] != "r="+nonce {
		return sqlerr.New(sqlerr.ProtocolViolation, "malformed SCRAM message: nonce mismatch")
	}

	authMessage := clientFirstBare + "," + serverFirst + "," + withoutProof
	clientKey := hmacSum(sec.storedKey, authMessage) // ClientSignature, XORed into ClientKey below
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	storedKey := sha256.Sum256(clientKey)
	if subtle.ConstantTimeCompare(storedKey[:], sec.storedKey) != 1 || !genuine {
		return authFailed
	}
	serverSignature := hmacSum(sec.serverKey, authMessage)
	c.be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte("v=" + base64.StdEncoding.EncodeToString(serverSignature))})
	c.be.SetAuthType(pgproto3.AuthTypeOk)
	return nil
}

// receiveAuth receives a message during authentication; a closed
// connection is reported as an error that fatal ignores.
func (c *conn) receiveAuth() (pgproto3.FrontendMessage, error) {
	msg, err := c.be.Receive()
	if err != nil {
		if e := receiveError(err, c.srv.cfg.MaxMessageSize); e != nil {
			return nil, e
		}
		c.dead = true
		return nil, errConnDead
	}
	return msg, nil
}

// parseClientFirst splits a client-first-message into its GS2 header and
// bare part and returns the client nonce. The user name in it is ignored:
// PostgreSQL uses the one from the startup packet.
func parseClientFirst(msg string) (gs2, bare, nonce string, err error) {
	bad := func(what string) error {
		return sqlerr.New(sqlerr.ProtocolViolation, "malformed SCRAM message: %s", what)
	}
	switch {
	case strings.HasPrefix(msg, "n,"), strings.HasPrefix(msg, "y,"):
	case strings.HasPrefix(msg, "p="):
		return "", "", "", bad("channel binding is not supported")
	default:
		return "", "", "", bad("invalid GS2 header")
	}
	// gs2-header = cbind-flag "," [authzid] ","
	i := strings.IndexByte(msg[2:], ',')
	if i < 0 {
		return "", "", "", bad("invalid GS2 header")
	}
	gs2, bare = msg[:2+i+1], msg[2+i+1:]
	for _, attr := range strings.Split(bare, ",") {
		if strings.HasPrefix(attr, "m=") {
			return "", "", "", bad("mandatory extensions are not supported")
		}
		if strings.HasPrefix(attr, "r=") {
			nonce = attr[2:]
		}
	}
	if nonce == "" || strings.ContainsAny(nonce, ",") {
		return "", "", "", bad("missing client nonce")
	}
	return gs2, bare, nonce, nil
}
