package sql

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/streamdb/streamdb/sqlerr"
)

// Storage locations. Where the server writes files is fixed by its
// configuration, never by a client: the data directory, the config file's
// checkpoint.dir and the extra locations its checkpoint.dirs lists. SET
// checkpoint.dir chooses among those (42501 otherwise), so no SQL statement
// can make the server write to a path of the client's choosing.

// fileOnly settings come from the config file and cannot be SET.
var fileOnly = map[string]bool{"checkpoint.dirs": true}

// allowedLocationsLocked returns the configured storage locations, cleaned
// and absolute: "" stands for the data directory.
func (e *Engine) allowedLocationsLocked() []string {
	out := []string{""}
	if d := e.mu.fileConf["checkpoint.dir"]; d != "" {
		out = append(out, cleanLocation(d))
	}
	for _, d := range strings.Split(e.mu.fileConf["checkpoint.dirs"], ",") {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, cleanLocation(d))
		}
	}
	return out
}

// cleanLocation normalizes a location for comparison: file:// is the local
// filesystem, and relative paths are taken from the server's directory.
func cleanLocation(d string) string {
	d = strings.TrimPrefix(strings.TrimSpace(d), "file://")
	if d == "" {
		return ""
	}
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return filepath.Clean(d)
}

// checkLocationLocked refuses a checkpoint.dir the configuration does not
// allow.
func (e *Engine) checkLocationLocked(value string) error {
	want := cleanLocation(value)
	allowed := e.allowedLocationsLocked()
	for _, a := range allowed {
		if want == a || (a == "" && want == cleanLocation(e.db.Dir())) {
			return nil
		}
	}
	shown := make([]string, len(allowed))
	for i, a := range allowed {
		if a == "" {
			a = "'' (the data directory)"
		}
		shown[i] = a
	}
	return &sqlerr.Error{Code: sqlerr.InsufficientPrivilege,
		Msg:    fmt.Sprintf("checkpoint.dir %q is not a storage location of this server", value),
		Detail: "Allowed: " + strings.Join(shown, ", ") + ".",
		Hint:   "Storage locations are fixed by the server's config file (checkpoint.dir, checkpoint.dirs); SQL can only choose among them."}
}
