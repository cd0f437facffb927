package wire

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/streamdb/streamdb/sqlerr"
)

// Authentication rules, in the style of PostgreSQL's pg_hba.conf: the first
// rule that matches a connection's type, database, user and address decides
// how it authenticates; no match refuses the connection (28000).

// Methods of an HBARule.
const (
	MethodTrust  = "trust"         // no password
	MethodSCRAM  = "scram-sha-256" // the role's password, via SCRAM-SHA-256
	MethodReject = "reject"        // refused
	// MethodPasswordIfSet trusts a role without a password and asks a role
	// with one for it (SCRAM-SHA-256). It is the default for loopback.
	MethodPasswordIfSet = "scram-sha-256-if-set"
)

// HBARule is one authentication rule.
type HBARule struct {
	// Type is "host" (any TCP connection), "hostssl" (TLS only) or
	// "hostnossl" (plain only).
	Type string
	// Databases and Users list names; "all" matches any.
	Databases, Users []string
	// Address is "all", "samehost" (the server's own addresses, i.e.
	// loopback here), an IP address or a CIDR range.
	Address string
	Method  string

	net *net.IPNet // nil for "all"
}

// DefaultHBA is used when the configuration has no rules: loopback clients
// are trusted unless their role has a password, every other client must
// give its role's password.
var DefaultHBA = []HBARule{
	mustRule("host", "all", "all", "127.0.0.0/8", MethodPasswordIfSet),
	mustRule("host", "all", "all", "::1/128", MethodPasswordIfSet),
	mustRule("host", "all", "all", "all", MethodSCRAM),
}

func mustRule(typ, db, user, addr, method string) HBARule {
	r, err := NewHBARule(typ, db, user, addr, method)
	if err != nil {
		panic(err)
	}
	return r
}

// NewHBARule checks and makes a rule. database and user are "all", a name,
// or names separated by commas.
func NewHBARule(typ, database, user, address, method string) (HBARule, error) {
	r := HBARule{Type: strings.ToLower(typ), Address: strings.ToLower(address), Method: strings.ToLower(method)}
	switch r.Type {
	case "host", "hostssl", "hostnossl":
	default:
		return r, fmt.Errorf("hba rule: type %q is not host, hostssl or hostnossl", typ)
	}
	switch r.Method {
	case MethodTrust, MethodSCRAM, MethodReject, MethodPasswordIfSet:
	default:
		return r, fmt.Errorf("hba rule: method %q is not trust, scram-sha-256, scram-sha-256-if-set or reject", method)
	}
	var err error
	if r.Databases, err = nameList("database", database); err != nil {
		return r, err
	}
	if r.Users, err = nameList("user", user); err != nil {
		return r, err
	}
	switch r.Address {
	case "all":
	case "samehost":
		_, r.net, _ = net.ParseCIDR("127.0.0.0/8")
	case "":
		return r, fmt.Errorf("hba rule: address is missing (all, samehost, an IP address or a CIDR range)")
	default:
		if ip := net.ParseIP(r.Address); ip != nil {
			bits := 128
			if ip4 := ip.To4(); ip4 != nil {
				ip, bits = ip4, 32
			}
			r.net = &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)}
		} else if _, r.net, err = net.ParseCIDR(r.Address); err != nil {
			return r, fmt.Errorf("hba rule: invalid address %q (all, samehost, an IP address or a CIDR range)", address)
		}
	}
	return r, nil
}

func nameList(what, s string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("hba rule: %s is missing (all or a name)", what)
	}
	return out, nil
}

func (r *HBARule) matches(ssl bool, ip net.IP, user, database string) bool {
	switch {
	case r.Type == "hostssl" && !ssl, r.Type == "hostnossl" && ssl:
		return false
	case !matchName(r.Databases, database), !matchName(r.Users, user):
		return false
	}
	return r.net == nil || r.net.Contains(ip)
}

func matchName(list []string, name string) bool {
	return slices.Contains(list, "all") || slices.Contains(list, name)
}

// TrustsBeyondLoopback reports whether r lets a client that is not on a
// loopback address in without a password.
func (r *HBARule) TrustsBeyondLoopback() bool {
	if r.Method != MethodTrust {
		return false
	}
	return !isLoopbackNet(r.net)
}

func isLoopbackNet(n *net.IPNet) bool {
	if n == nil || !n.IP.IsLoopback() {
		return false
	}
	ones, bits := n.Mask.Size()
	if bits == 32 {
		return ones >= 8
	}
	return ones == 128
}

// CheckExposure refuses a configuration that listens on a non-loopback
// address while some rule trusts non-loopback clients: such a server would
// let anyone on the network in as any role, superusers included.
func CheckExposure(listen string, rules []HBARule) error {
	if IsLoopbackListen(listen) {
		return nil
	}
	if rules == nil {
		rules = DefaultHBA
	}
	for i, r := range rules {
		if r.TrustsBeyondLoopback() {
			return fmt.Errorf("refusing to listen on %s: hba rule %d (%s %s %s %s trust) trusts clients beyond loopback; "+
				"use method scram-sha-256 for them, or listen on 127.0.0.1", listen, i+1, r.Type,
				strings.Join(r.Databases, ","), strings.Join(r.Users, ","), r.Address)
		}
	}
	return nil
}

// IsLoopbackListen reports whether a listen address (host:port) accepts
// loopback connections only.
func IsLoopbackListen(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// peerIP is the address rules match a connection by. Connections that are
// not TCP (in-process pipes given to ServeConn) count as loopback.
func peerIP(addr net.Addr) net.IP {
	if a, ok := addr.(*net.TCPAddr); ok {
		if ip4 := a.IP.To4(); ip4 != nil {
			return ip4
		}
		return a.IP
	}
	return net.IPv4(127, 0, 0, 1).To4()
}

// matchHBA returns the rule for a connection, or the 28000 error PostgreSQL
// gives when none matches.
func (s *Server) matchHBA(ssl bool, ip net.IP, user, database string) (*HBARule, error) {
	rules := s.cfg.HBA
	if rules == nil {
		rules = DefaultHBA
	}
	for i := range rules {
		if rules[i].matches(ssl, ip, user, database) {
			return &rules[i], nil
		}
	}
	return nil, sqlerr.New(sqlerr.InvalidAuthorization, "no pg_hba.conf entry for host %q, user %q, database %q, %s",
		ip.String(), user, database, encryptionWords(ssl))
}

func encryptionWords(ssl bool) string {
	if ssl {
		return "SSL encryption"
	}
	return "no encryption"
}
