package sql

import (
	"strings"
	"time"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/storage"
)

// state.ttl: database-wide (SET state.ttl = '1h') or per view (CREATE
// MATERIALIZED VIEW ... WITH (state.ttl = '30min'), ALTER MATERIALIZED VIEW
// v SET (state.ttl = ...)); a view's own value wins. Running jobs take a
// change at their next barrier (exec.StateTTL).

// viewTTLLocked is the state.ttl that applies to a view's job (0: none).
func (e *jobOptions) viewTTLLocked(def *storage.TableDef) time.Duration {
	v := def.Options["state.ttl"]
	if v == "" {
		v = e.conf.settingLocked("state.ttl")
	}
	if v == "off" {
		return 0
	}
	d, _ := checkpoint.ParseDuration(v)
	return d
}

// applyStateTTLLocked gives every running view job its state.ttl anew.
func (e *jobOptions) applyStateTTLLocked() {
	for name, je := range e.mu.jobs {
		def := e.mu.tables[name]
		if je.job == nil || je.job.StateTTL() == nil || def == nil {
			continue
		}
		je.job.StateTTL().Set(e.viewTTLLocked(def))
	}
}

// takeTTLOption removes state.ttl from a CREATE MATERIALIZED VIEW's WITH
// options and returns its normalized value ("" if absent).
func takeTTLOption(with map[string]string) (string, error) {
	for k, v := range with {
		if strings.ToLower(k) != "state.ttl" {
			continue
		}
		nv, err := validateSetting("state.ttl", v)
		if err != nil {
			return "", err
		}
		delete(with, k)
		return nv, nil
	}
	return "", nil
}
