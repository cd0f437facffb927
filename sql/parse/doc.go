// Package parse turns SQL text into statements: streamdb's own statements
// by a small recursive-descent parser, everything else by the TiDB parser
// after a token-level dialect layer has rewritten the PostgreSQL forms TiDB
// does not accept (see Query). It never executes anything.
package parse
