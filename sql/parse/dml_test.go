package parse

import (
	"fmt"
	"testing"

	"github.com/streamdb/streamdb/sqlerr"
)

// TestOnConflict: INSERT ... ON CONFLICT gives TiDB the INSERT before it
// and parses DO UPDATE's SET list and WHERE as an UPDATE of the target.
func TestOnConflict(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"insert into b values (1) on conflict (a) do update set c = excluded.c + 1, d = 'x'::text where b.c > 0",
			"insert into b values (1) | [a] nothing=false set=2 where=true"},
		{"insert into b values (1), (2) on conflict do nothing",
			"insert into b values (1), (2) | [] nothing=true set=0 where=false"},
		{"insert into b select * from c on conflict (a, b) do nothing",
			"insert into b select * from c | [a b] nothing=true set=0 where=false"},
		{"insert into b values (1) on conflict do update set c = 1", "error 42601"},
		{"insert into b values (1) on conflict (a) do something", "error 42601"},
		{"insert into b values (1) on conflict on constraint b_pkey do nothing", "error 0A000"},
	} {
		got := ""
		stmts, err := ParseAll(c.in)
		switch {
		case err != nil:
			got = "error " + sqlerr.Code(err)
		default:
			q := stmts[0].(*Query)
			oc := q.OnConflict
			sets, where := 0, false
			if oc.Update != nil {
				sets, where = len(oc.Update.List), oc.Update.Where != nil
			}
			got = fmt.Sprintf("%s | %v nothing=%v set=%d where=%v", q.Rewritten, oc.Cols, oc.DoNothing, sets, where)
		}
		if got != c.want {
			t.Errorf("ParseAll(%q)\n got: %s\nwant: %s", c.in, got, c.want)
		}
	}
}
