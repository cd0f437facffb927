package parse

import (
	"testing"

	"github.com/streamdb/streamdb/sqlerr"
)

// TestCreateSource: CREATE SOURCE has CREATE TABLE's form and needs WITH;
// DROP SOURCE and SHOW SOURCES parse.
func TestCreateSource(t *testing.T) {
	stmts, err := ParseAll(`CREATE SOURCE IF NOT EXISTS bid (auction BIGINT, date_time TIMESTAMP,
		WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)
		WITH (connector = 'nexmark', nexmark.table = 'bid', nexmark.events = 100 /* c */, "rows-per-second" = 5);
		DROP SOURCE IF EXISTS bid, b2 CASCADE; SHOW SOURCES`)
	if err != nil {
		t.Fatal(err)
	}
	cs, ok := stmts[0].(*CreateSource)
	if !ok || cs.Name != "bid" || !cs.IfNotExists || len(cs.Columns) != 2 || cs.WatermarkCol != "date_time" || cs.WatermarkUS != 4_000_000 {
		t.Fatalf("CREATE SOURCE: %+v", stmts[0])
	}
	if cs.With["connector"] != "nexmark" || cs.With["nexmark.table"] != "bid" || cs.With["nexmark.events"] != "100" || cs.With["rows-per-second"] != "5" {
		t.Fatalf("WITH: %v", cs.With)
	}
	if d, ok := stmts[1].(*Drop); !ok || d.Kind != ObjSource || len(d.Names) != 2 || !d.IfExists || !d.Cascade {
		t.Fatalf("DROP SOURCE: %+v", stmts[1])
	}
	if s, ok := stmts[2].(*ShowObjects); !ok || s.What != "sources" {
		t.Fatalf("SHOW SOURCES: %+v", stmts[2])
	}
	if _, err := ParseAll("CREATE SOURCE x (a INT)"); sqlerr.Code(err) != sqlerr.InvalidParameterValue {
		t.Fatalf("CREATE SOURCE without WITH: %v", err)
	}
}
