package storage

// DB's concerns. DB itself keeps the engine's plumbing: opening and
// closing, ids, write batches and their commit, snapshots and read views,
// and the engine's maintenance (engine.go). Everything else is reached
// through one small type per concern, each holding only its own methods
// (tests/lint TestStorageTypesStaySmall):
//
//	db.Log()        streams' durable logs: append, read, bounds, retention, tail cache (log.go, cdcpos.go, txappend.go, tailcache.go)
//	db.State()      operator state, epoch commits, source offsets, checkpoint records, job copies (state.go, statecursor.go, distpart.go, db.go)
//	db.Memory()     the memory state backend and its snapshot files (memstate.go, memsnap.go)
//	db.Stages()     COPY's staged appends (stage.go)
//	db.Epochs()     barrier cuts and read points (cut.go, readpoint.go)
//	db.Views()      view rows and table indexes (state.go, index.go)
//	db.Positions()  sources' and sinks' positions in external systems (cdcpos.go, sinks.go)
//	db.Errors()     rows jobs refused and late rows (state.go, late.go)
//	db.Catalog()    the catalog, roles, settings and types as stored (db.go, sinks.go)
//
// Each is a value holding the *DB: reaching one allocates nothing, and they
// share the database's state (its locks, partition logs, cuts, read
// points and memory backend), so a concern's methods may call another's.

// Log is the streams' durable logs.
type Log struct{ db *DB }

// Log returns the database's stream logs.
func (db *DB) Log() Log { return Log{db} }

// State is operator state on the Pebble backend, the epoch commits that
// write every backend's state with the jobs' source offsets, and the
// checkpoint records.
type State struct{ db *DB }

// State returns the database's operator state.
func (db *DB) State() State { return State{db} }

// Memory is the memory state backend: jobs whose state lives in memory
// between checkpoints, and the snapshot files a checkpoint writes.
type Memory struct{ db *DB }

// Memory returns the database's memory state backend.
func (db *DB) Memory() Memory { return Memory{db} }

// Stages is COPY's staged appends: sstables ingested before their rows
// join a log.
type Stages struct{ db *DB }

// Stages returns the database's staged appends.
func (db *DB) Stages() Stages { return Stages{db} }

// Epochs is the barrier cuts (where each round of a checkpoint falls in
// every log partition) and the read points of the committed rounds that
// epoch reads choose from.
type Epochs struct{ db *DB }

// Epochs returns the database's cuts and read points.
func (db *DB) Epochs() Epochs { return Epochs{db} }

// Views is the rows of materialized views and the entries of table
// indexes.
type Views struct{ db *DB }

// Views returns the database's view rows and indexes.
func (db *DB) Views() Views { return Views{db} }

// Positions is the positions sources and sinks hold in external systems
// (a CDC source's, a sink's last committed epoch).
type Positions struct{ db *DB }

// Positions returns the database's source and sink positions.
func (db *DB) Positions() Positions { return Positions{db} }

// Errors is the rows jobs refused (with their offsets) and the rows that
// arrived late.
type Errors struct{ db *DB }

// Errors returns the database's refused and late rows.
func (db *DB) Errors() Errors { return Errors{db} }

// Catalog is the catalog's tables, roles, settings, types and sinks as
// stored.
type Catalog struct{ db *DB }

// Catalog returns the database's stored catalog.
func (db *DB) Catalog() Catalog { return Catalog{db} }
