package planner

import "github.com/streamdb/streamdb/types"

type typesT = types.T
