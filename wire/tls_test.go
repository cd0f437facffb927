package wire

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func selfSignedTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "streamdb test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

func TestTLS(t *testing.T) {
	eng := newFakeEngine()
	eng.roles = map[string]fakeRole{"streamdb": loginRole("pw", true)}
	_, addr := startServer(t, Config{TLS: selfSignedTLS(t)}, eng)
	conn, err := pgx.Connect(testCtx(t), "postgres://streamdb:pw@"+addr+"/streamdb?sslmode=require")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(testCtx(t))
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Errorf("connection is %T, want *tls.Conn", conn.PgConn().Conn())
	}
	if got := rowsString(queryRows(t, conn, "SELECT id, name FROM t")); got != tableRows {
		t.Errorf("got %q", got)
	}
}
