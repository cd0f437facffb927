package exec

import "github.com/streamdb/streamdb/sqlerr"

// Lookup (temporal) joins, FOR SYSTEM_TIME AS OF PROCTIME(): the operator
// is exec/join in lookup mode (lookup.go); here are the refusals of the
// plans it cannot run.

// errLookupRetracts refuses a lookup join over a left side that retracts.
var errLookupRetracts = sqlerr.New(sqlerr.FeatureNotSupported,
	"a temporal join (FOR SYSTEM_TIME AS OF PROCTIME()) in a continuous query needs a left side that only inserts rows (a stream without a PRIMARY KEY, a source, or a filter, projection or lookup join of one); this one retracts rows, which the join, keeping no left rows, could not retract")

// errLookupReemit refuses to rebuild a view's rows from a lookup join's state.
var errLookupReemit = sqlerr.New(sqlerr.FeatureNotSupported,
	"a view over a temporal join (FOR SYSTEM_TIME AS OF PROCTIME()) cannot be upgraded from a savepoint: the join keeps no left rows to rebuild the view's rows from")
