package sql

import (
	"strconv"
	"strings"

	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// What psql 15's \d name reads after a relation's columns: row-level
// policies, extended statistics, publications, inheritance, rules and
// triggers. streamdb has none of these, so each table is empty, with the
// columns psql's queries name.
//
// streamdb's own facts about a relation travel in pg_class.reloptions,
// which \d+ prints as its "Options:" footer (relOptions): a materialized
// view's job state, last completed checkpoint and source relations, a
// plain view's sources. A view's definition is pg_get_viewdef's, which \d+
// prints for views and materialized views (psql prints it only with +).

func init() {
	for name, gen := range map[string]func(catGen) *table{
		"pg_policy":                facet(describeGen.pgPolicy),
		"pg_statistic_ext":         facet(describeGen.pgStatisticExt),
		"pg_publication":           facet(describeGen.pgPublication),
		"pg_publication_rel":       facet(describeGen.pgPublicationRel),
		"pg_publication_namespace": facet(describeGen.pgPublicationNamespace),
		"pg_inherits":              facet(describeGen.pgInherits),
		"pg_trigger":               facet(describeGen.pgTrigger),
		"pg_rewrite":               facet(describeGen.pgRewrite),
		"pg_sequence":              facet(describeGen.pgSequence),
		"pg_enum":                  facet(describeGen.pgEnum),
	} {
		pgTables[name] = gen
	}
}

// pgPolicy is empty: streamdb has no row-level security.
func (e describeGen) pgPolicy() *table {
	return &table{cols: catCols(catCol{"oid", tOID}, catCol{"polname", tName}, catCol{"polrelid", tOID},
		catCol{"polcmd", tName}, catCol{"polpermissive", tBool}, catCol{"polroles", tArr},
		catCol{"polqual", types.TText}, catCol{"polwithcheck", types.TText})}
}

// pgStatisticExt is empty: there are no CREATE STATISTICS objects.
func (e describeGen) pgStatisticExt() *table {
	return &table{cols: catCols(catCol{"oid", tOID}, catCol{"stxrelid", tOID}, catCol{"stxname", tName},
		catCol{"stxnamespace", tOID}, catCol{"stxowner", tOID}, catCol{"stxstattarget", tI32},
		catCol{"stxkeys", tI2Arr}, catCol{"stxkind", tArr}, catCol{"stxexprs", types.TText})}
}

// pgPublication and its relations are empty: streamdb has no logical
// replication publications.
func (e describeGen) pgPublication() *table {
	return &table{cols: catCols(catCol{"oid", tOID}, catCol{"pubname", tName}, catCol{"pubowner", tOID},
		catCol{"puballtables", tBool}, catCol{"pubinsert", tBool}, catCol{"pubupdate", tBool},
		catCol{"pubdelete", tBool}, catCol{"pubtruncate", tBool}, catCol{"pubviaroot", tBool})}
}

func (e describeGen) pgPublicationRel() *table {
	return &table{cols: catCols(catCol{"oid", tOID}, catCol{"prpubid", tOID}, catCol{"prrelid", tOID},
		catCol{"prqual", types.TText}, catCol{"prattrs", tI2Arr})}
}

func (e describeGen) pgPublicationNamespace() *table {
	return &table{cols: catCols(catCol{"oid", tOID}, catCol{"pnpubid", tOID}, catCol{"pnnspid", tOID})}
}

// pgInherits is empty: streams have no inheritance or partitions.
func (e describeGen) pgInherits() *table {
	return &table{cols: catCols(catCol{"inhrelid", tOID}, catCol{"inhparent", tOID}, catCol{"inhseqno", tI32},
		catCol{"inhdetachpending", tBool})}
}

// pgTrigger is empty: streamdb has no triggers.
func (e describeGen) pgTrigger() *table {
	return &table{cols: catCols(catCol{"oid", tOID}, catCol{"tgrelid", tOID}, catCol{"tgparentid", tOID},
		catCol{"tgname", tName}, catCol{"tgfoid", tOID}, catCol{"tgtype", tI16}, catCol{"tgenabled", tName},
		catCol{"tgisinternal", tBool}, catCol{"tgconstraint", tOID})}
}

// pgRewrite is empty: views are not rules here (pg_get_viewdef reads the
// stored query).
func (e describeGen) pgRewrite() *table {
	return &table{cols: catCols(catCol{"oid", tOID}, catCol{"rulename", tName}, catCol{"ev_class", tOID},
		catCol{"ev_type", tName}, catCol{"ev_enabled", tName}, catCol{"is_instead", tBool})}
}

// jobFacts are a materialized view's job state and last completed
// checkpoint, by view name, as SHOW JOBS prints them.
type jobFacts struct {
	state      string
	checkpoint string
}

func (e catGen) jobFacts() map[string]jobFacts {
	out := map[string]jobFacts{}
	if e.colsOnly {
		return out
	}
	jobs := e.showJobs()
	for _, r := range jobs.rows {
		f := jobFacts{state: r[1].S, checkpoint: "none"}
		if !r[7].Null {
			f.checkpoint = strconv.FormatInt(r[7].I, 10)
		}
		out[r[0].S] = f
	}
	return out
}

// relOptions is a relation's pg_class.reloptions ("name=value" elements,
// which \d+ prints joined by ", "); NULL for a relation with nothing to
// say. Several sources are joined by spaces.
func relOptions(r relation, jobs map[string]jobFacts) types.Datum {
	var opts []string
	switch r.def.Kind {
	case storage.KindView:
		if f, ok := jobs[r.name]; ok {
			opts = append(opts, "job_state="+f.state, "last_checkpoint="+f.checkpoint)
		}
		if src := viewSources(r.def); len(src) > 0 {
			opts = append(opts, "sources="+strings.Join(src, " "))
		}
	case storage.KindPlainView:
		if src := viewSources(r.def); len(src) > 0 {
			opts = append(opts, "sources="+strings.Join(src, " "))
		}
	}
	if len(opts) == 0 {
		return types.Null
	}
	return types.Datum{A: &types.Array{Elems: opts}}
}

// pgSequence is empty: streamdb has no sequences (SQLAlchemy's
// get_columns reads it for identity columns).
func (e describeGen) pgSequence() *table {
	return &table{cols: catCols(catCol{"seqrelid", tOID}, catCol{"seqtypid", tOID}, catCol{"seqstart", types.TInt64},
		catCol{"seqincrement", types.TInt64}, catCol{"seqmax", types.TInt64}, catCol{"seqmin", types.TInt64},
		catCol{"seqcache", types.TInt64}, catCol{"seqcycle", tBool})}
}

// pgEnum is empty: streamdb has no enum types.
func (e describeGen) pgEnum() *table {
	return &table{cols: catCols(catCol{"oid", tOID}, catCol{"enumtypid", tOID}, catCol{"enumsortorder", types.TFloat32},
		catCol{"enumlabel", tName})}
}
