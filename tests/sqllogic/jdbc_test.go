package sqllogic

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// jdbcJar is Debian's PostgreSQL JDBC driver (libpostgresql-jdbc-java).
const jdbcJar = "/usr/share/java/postgresql.jar"

// jdbcProgram prepares LIMIT ? OFFSET ? (six times: past pgJDBC's
// prepareThreshold, so a named server-side statement is used too) and
// rolls back an INSERT with autocommit off (pgJDBC sends BEGIN itself).
const jdbcProgram = `import java.sql.*;
public class T {
  public static void main(String[] a) throws Exception {
    Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + a[0] + "/streamdb?user=streamdb&sslmode=disable");
    Statement s = c.createStatement();
    s.execute("CREATE TABLE jt (x BIGINT)");
    s.execute("INSERT INTO jt VALUES (1), (2), (3), (4), (5)");
    PreparedStatement p = c.prepareStatement("SELECT x FROM jt ORDER BY x LIMIT ? OFFSET ?");
    for (int i = 0; i < 6; i++) { // past prepareThreshold: a named server-side statement
      p.setLong(1, 2); p.setLong(2, 1);
      ResultSet r = p.executeQuery();
      StringBuilder sb = new StringBuilder();
      while (r.next()) sb.append(r.getLong(1)).append(',');
      System.out.println("limit " + sb);
    }
    c.setAutoCommit(false);
    s.execute("INSERT INTO jt VALUES (100)");
    c.rollback();
    c.setAutoCommit(true);
    ResultSet r = s.executeQuery("SELECT count(*) FROM jt");
    r.next();
    System.out.println("count " + r.getLong(1));
    c.close();
  }
}
`

// TestJDBCLimitParamsAndRollback: pgJDBC (which connects with
// extra_float_digits=3 and DateStyle=ISO) binds LIMIT ? OFFSET ?, and its
// rollback() drops the block's INSERT.
func TestJDBCLimitParamsAndRollback(t *testing.T) {
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("java not installed")
	}
	if _, err := os.Stat(jdbcJar); err != nil {
		t.Skip("the PostgreSQL JDBC driver is not installed")
	}
	srv := StartServer(t, "")
	dir := t.TempDir()
	src := filepath.Join(dir, "T.java")
	if err := os.WriteFile(src, []byte(jdbcProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	_, port := splitAddr(srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, java, "-cp", jdbcJar, src, port).CombinedOutput()
	if err != nil {
		t.Fatalf("java: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 7 {
		t.Fatalf("output:\n%s", out)
	}
	for _, l := range lines[:6] {
		if l != "limit 2,3," {
			t.Errorf("LIMIT 2 OFFSET 1 through JDBC: %q, want rows 2,3", l)
		}
	}
	if lines[6] != "count 5" {
		t.Errorf("after rollback(): %q, want count 5", lines[6])
	}
}
