package sql

import (
	"fmt"

	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/storage"
)

// errorRowsCounted bounds the count of a view's skipped rows a read's
// notice gives ("at least N"), so a read never scans more error records.
const errorRowsCounted = 10000

// viewNotices are the notices a query reading views gets: for each view
// whose job left rows out because an expression failed on them
// (job.error_policy = 'skip'), how many and where they are; for each whose
// job is failing (RESTARTING or FAILED: a view that outgrew
// job.memory_limit among them), that its rows are behind and why.
func (e *Engine) viewNotices(plan planner.Node) []string {
	var views []*storage.TableDef
	seen := map[string]bool{}
	var walk func(n planner.Node)
	walk = func(n planner.Node) {
		if s, ok := n.(*planner.Scan); ok && s.Table.Kind == storage.KindView && s.AsOf == (planner.AsOf{}) && !seen[s.Table.Name] {
			seen[s.Table.Name] = true
			views = append(views, s.Table)
		}
		for _, c := range n.Children() {
			walk(c)
		}
	}
	walk(plan)
	var out []string
	for _, v := range views {
		if n, err := e.db.Errors().JobErrorCount(v.ID, errorRowsCounted); err == nil && n > 0 {
			count := fmt.Sprint(n)
			if n >= errorRowsCounted {
				count = "at least " + count
			}
			out = append(out, fmt.Sprintf("materialized view %q left out %s rows on which an expression failed (job.error_policy = 'skip'); they are in streamdb_job_errors", v.Name, count))
		}
		e.mu.Lock()
		je := e.mu.jobs[v.Name]
		var state exec.JobState
		var lastErr string
		if je != nil {
			state, lastErr = je.state, je.lastErr
		}
		e.mu.Unlock()
		if state == exec.JobRestarting || state == exec.JobFailed {
			out = append(out, fmt.Sprintf("materialized view %q is not up to date: its job is %s after %s", v.Name, state, lastErr))
		}
	}
	return out
}
