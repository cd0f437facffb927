package parse

import (
	"strings"

	"github.com/streamdb/streamdb/sqlerr"
)

// RoleOptions are the options of CREATE ROLE and ALTER ROLE; a nil field
// was not given.
type RoleOptions struct {
	Login, Superuser *bool
	// Password is the new password (or a ready SCRAM-SHA-256 verifier);
	// PasswordNull is set for PASSWORD NULL.
	Password     *string
	PasswordNull bool
}

// CreateRole is CREATE ROLE name [WITH] options (CREATE USER: User set, LOGIN by default).
type CreateRole struct {
	Name    string
	User    bool
	Options RoleOptions
}

// AlterRole is ALTER ROLE name [WITH] options | ALTER ROLE name RENAME TO new.
type AlterRole struct {
	Name     string
	Options  RoleOptions
	RenameTo string
}

// DropRole is DROP ROLE [IF EXISTS] name[, ...].
type DropRole struct {
	Names    []string
	IfExists bool
}

// Grant is GRANT privileges ON [TABLE] names TO roles, or with Revoke set
// REVOKE privileges ON [TABLE] names FROM roles. Privileges are upper case
// (SELECT, INSERT, UPDATE, DELETE); ALL [PRIVILEGES] gives the four. The role "public" stands
// for every role.
type Grant struct {
	Revoke     bool
	Privileges []string
	Tables     []string
	Roles      []string
}

func (*CreateRole) stmt() {}
func (*AlterRole) stmt()  {}
func (*DropRole) stmt()   {}
func (*Grant) stmt()      {}

// createRole parses CREATE ROLE|USER; the cursor is after ROLE or USER.
func (p *parser) createRole(user bool) (*CreateRole, error) {
	c := &CreateRole{User: user}
	var err error
	if c.Name, err = p.ident(); err != nil {
		return nil, err
	}
	if c.Options, err = p.roleOptions(); err != nil {
		return nil, err
	}
	return c, p.end()
}

// alterRole parses ALTER ROLE|USER; the cursor is after ROLE or USER.
func (p *parser) alterRole() (*AlterRole, error) {
	a := &AlterRole{}
	var err error
	if a.Name, err = p.ident(); err != nil {
		return nil, err
	}
	if p.accept("rename", "to") {
		if a.RenameTo, err = p.ident(); err != nil {
			return nil, err
		}
		return a, p.end()
	}
	if t := p.at(); t.is("set") || t.is("reset") || t.is("in") {
		return nil, p.notSupported(t, "ALTER ROLE ... %s is not supported", strings.ToUpper(t.Val))
	}
	if a.Options, err = p.roleOptions(); err != nil {
		return nil, err
	}
	return a, p.end()
}

// ignoredRoleOptions are PostgreSQL role options that state what streamdb
// does anyway (pg_dump writes them), so they are accepted and ignored.
var ignoredRoleOptions = map[string]bool{
	"inherit": true, "noinherit": true, "nocreaterole": true, "nocreatedb": true,
	"noreplication": true, "nobypassrls": true,
}

// roleOptions parses [WITH] option ... up to the end of the statement.
func (p *parser) roleOptions() (RoleOptions, error) {
	var o RoleOptions
	p.accept("with")
	yes, no := true, false
	seen := map[string]bool{}
	for p.at().Kind != tEOF {
		t := p.at()
		if t.Kind != tIdent {
			return o, p.syntaxError(t)
		}
		p.i++
		key := t.Val
		switch key {
		case "login", "nologin":
			key = "login"
		case "superuser", "nosuperuser":
			key = "superuser"
		case "encrypted":
			if !p.at().is("password") {
				return o, p.syntaxError(p.at())
			}
			p.i++
			key = "password"
		}
		if seen[key] {
			return o, p.positioned(sqlerr.New(sqlerr.SyntaxError, "conflicting or redundant options"), t)
		}
		seen[key] = true
		switch {
		case t.Val == "login":
			o.Login = &yes
		case t.Val == "nologin":
			o.Login = &no
		case t.Val == "superuser":
			o.Superuser = &yes
		case t.Val == "nosuperuser":
			o.Superuser = &no
		case key == "password":
			v := p.at()
			switch {
			case v.is("null"):
				o.PasswordNull = true
			case v.Kind == tString:
				pw := v.Val
				o.Password = &pw
			default:
				return o, p.syntaxError(v)
			}
			p.i++
		case ignoredRoleOptions[t.Val]:
		case t.Val == "createdb" || t.Val == "createrole" || t.Val == "replication" || t.Val == "bypassrls" ||
			t.Val == "connection" || t.Val == "valid" || t.Val == "in" || t.Val == "role" || t.Val == "admin" ||
			t.Val == "user" || t.Val == "sysid":
			return o, p.notSupported(t, "role option %s is not supported", strings.ToUpper(t.Val))
		default:
			return o, p.positioned(sqlerr.New(sqlerr.SyntaxError, "unrecognized role option %q", t.Val), t)
		}
	}
	return o, nil
}

// dropRole parses DROP ROLE|USER; the cursor is after ROLE or USER.
func (p *parser) dropRole() (*DropRole, error) {
	d := &DropRole{IfExists: p.accept("if", "exists")}
	for {
		n, err := p.ident()
		if err != nil {
			return nil, err
		}
		d.Names = append(d.Names, n)
		if !p.acceptOp(",") {
			return d, p.end()
		}
	}
}

// grant parses GRANT or REVOKE (revoke set); the cursor is after the keyword.
func (p *parser) grant(revoke bool) (*Grant, error) {
	g := &Grant{Revoke: revoke}
	if revoke && p.at().is("grant") {
		return nil, p.notSupported(p.at(), "GRANT OPTION is not supported")
	}
	if p.accept("all") {
		p.accept("privileges")
		g.Privileges = []string{"DELETE", "INSERT", "SELECT", "UPDATE"}
	} else {
		for {
			t := p.at()
			switch {
			case t.is("select"), t.is("insert"), t.is("update"), t.is("delete"):
				g.Privileges = append(g.Privileges, strings.ToUpper(t.Val))
			case t.is("truncate"), t.is("references"), t.is("trigger"):
				return nil, p.notSupported(t, "privilege %s is not supported (SELECT, INSERT, UPDATE and DELETE can be granted)", strings.ToUpper(t.Val))
			default:
				return nil, p.syntaxError(t)
			}
			p.i++
			if p.at().isOp("(") {
				return nil, p.notSupported(p.at(), "column privileges are not supported")
			}
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if err := p.expect("on"); err != nil {
		return nil, err
	}
	if t := p.at(); t.is("schema") || t.is("database") || t.is("function") || t.is("sequence") || t.is("all") {
		return nil, p.notSupported(t, "GRANT ON %s is not supported (privileges are granted on tables and materialized views)", strings.ToUpper(t.Val))
	}
	p.accept("table")
	var err error
	if g.Tables, err = p.relNameList(); err != nil {
		return nil, err
	}
	if revoke {
		err = p.expect("from")
	} else {
		err = p.expect("to")
	}
	if err != nil {
		return nil, err
	}
	for {
		p.accept("group")
		n, err := p.ident()
		if err != nil {
			return nil, err
		}
		g.Roles = append(g.Roles, n)
		if !p.acceptOp(",") {
			break
		}
	}
	if !revoke && p.at().is("with") {
		return nil, p.notSupported(p.at(), "WITH GRANT OPTION is not supported")
	}
	if revoke && !p.accept("cascade") {
		p.accept("restrict")
	}
	return g, p.end()
}
