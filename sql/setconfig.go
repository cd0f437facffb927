package sql

import (
	"strings"

	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
)

// SET LOCAL and set_config(name, value, is_local).
//
// SET LOCAL changes a session setting until the end of the transaction
// block: COMMIT restores the value from before the block's first SET LOCAL
// of it (ROLLBACK restores every setting of BEGIN anyway). Outside a block
// it changes nothing and says so, as PostgreSQL's WARNING does.
//
// set_config is SET (is_local false) or SET LOCAL (true) from inside a
// query, with SET's refusals and privileges; it returns the setting's new
// value as SHOW shows it. Outside a block, is_local lasts for the
// statement only (PostgreSQL's statement is its own transaction), so it
// is checked and undone at once. The ParameterStatus messages of the
// changed settings go out with the statement's result.

// localVar is a setting's value before the block's first SET LOCAL of it.
type localVar struct {
	value string
	had   bool
}

// setLocal applies SET LOCAL's rules before execSet; done says the
// statement is finished (outside a block).
func (s sessionSettings) setLocal(n *parse.Set) (res *Result, done bool) {
	t := s.txn
	if t == nil || !t.explicit {
		return &Result{Tag: "SET", Notices: []string{"SET LOCAL can only be used in transaction blocks"}}, true
	}
	name := strings.ToLower(n.Name)
	if t.local == nil {
		t.local = map[string]localVar{}
	}
	if _, ok := t.local[name]; !ok {
		v, had := s.vars[name]
		t.local[name] = localVar{value: v, had: had}
	}
	return nil, false
}

// restoreLocals undoes the block's SET LOCALs at COMMIT.
func (s sessionSettings) restoreLocals(t *txn, res *Result) {
	if len(t.local) == 0 {
		return
	}
	vars := copyVars(s.vars)
	for k, lv := range t.local {
		if lv.had {
			vars[k] = lv.value
		} else {
			delete(vars, k)
		}
	}
	s.restoreVars(vars, res)
}

// SetConfig is set_config(name, value, is_local) for the binder.
func (i sessionInfo) SetConfig(name, value string, local bool) (string, error) {
	s := i.s
	name = strings.ToLower(name)
	_, isDB := dbSettings[name]
	inBlock := s.txn != nil && s.txn.explicit
	if isDB && inBlock {
		return "", sqlerr.New(sqlerr.ActiveSQLTransaction, "SET %s cannot run inside a transaction block", name)
	}
	if err := (sessionAuth{s}).authorizeSet(name); err != nil {
		return "", err
	}
	n := &parse.Set{Name: name, Value: value, Local: local && inBlock}
	if local && !inBlock {
		// For this statement only: checked, then undone.
		before := copyVars(s.vars)
		if isDB {
			return "", sqlerr.New(sqlerr.FeatureNotSupported, "set_config of database setting %q with is_local is not supported outside a transaction block", name)
		}
		if _, err := (sessionSettings{s}).execSet(n); err != nil {
			return "", err
		}
		v := s.vars[name]
		s.vars = before
		return v, nil
	}
	res, err := (sessionSettings{s}).execSet(n)
	if err != nil {
		return "", err
	}
	for k, v := range res.ParamChanges {
		if s.paramChanges == nil {
			s.paramChanges = map[string]string{}
		}
		s.paramChanges[k] = v
	}
	if isDB {
		return s.e.conf.setting(name), nil
	}
	return s.vars[name], nil
}

// takeParamChanges adds the ParameterStatus changes set_config made while
// the statement was bound to its result.
func (s sessionSettings) takeParamChanges(res *Result) {
	if res == nil || len(s.paramChanges) == 0 {
		return
	}
	if res.ParamChanges == nil {
		res.ParamChanges = map[string]string{}
	}
	for k, v := range s.paramChanges {
		res.ParamChanges[k] = v
	}
	s.paramChanges = nil
}
