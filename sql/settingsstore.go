package sql

// settingsStore holds the database settings (settings.go) and the storage
// locations they allow: remote checkpoint and savepoint stores and the
// local directories a path may name (locations.go). It shares the engine's
// state (e.mu.settings and the catalog lock): the split is one of
// behaviour. Engine reaches it as e.conf; ConnectionLimits stays on Engine
// for wire.
type settingsStore struct {
	*Engine
}
