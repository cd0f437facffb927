import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;

/**
 * Schema introspection through pgjdbc's DatabaseMetaData, as JDBC tools
 * (DBeaver, Metabase, ...) do on connect. Usage: java -cp postgresql.jar
 * Introspect.java HOST PORT. Prints one line per row; the Go test
 * (TestJDBCMetaData) compares them.
 */
public class Introspect {
    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/streamdb?user=streamdb&sslmode=disable";
        try (Connection c = DriverManager.getConnection(url)) {
            DatabaseMetaData md = c.getMetaData();
            try (ResultSet rs = md.getTables(null, "public", "%", new String[] {"TABLE", "VIEW", "MATERIALIZED VIEW"})) {
                while (rs.next()) {
                    System.out.println("table " + rs.getString("TABLE_SCHEM") + " " + rs.getString("TABLE_NAME")
                            + " " + rs.getString("TABLE_TYPE"));
                }
            }
            try (ResultSet rs = md.getColumns(null, "public", "word%", "%")) {
                while (rs.next()) {
                    System.out.println("column " + rs.getString("TABLE_NAME") + " " + rs.getInt("ORDINAL_POSITION")
                            + " " + rs.getString("COLUMN_NAME") + " " + rs.getString("TYPE_NAME")
                            + " " + rs.getInt("DATA_TYPE") + " " + rs.getInt("COLUMN_SIZE")
                            + " " + rs.getString("IS_NULLABLE"));
                }
            }
            // A view's key (its GROUP BY columns, in key order); a stream has none.
            for (String table : new String[] {"word_counts", "by_small_word", "words"}) {
                int n = 0;
                try (ResultSet rs = md.getPrimaryKeys(null, "public", table)) {
                    while (rs.next()) {
                        n++;
                        System.out.println("pk " + rs.getString("TABLE_NAME") + " " + rs.getShort("KEY_SEQ")
                                + " " + rs.getString("COLUMN_NAME") + " " + rs.getString("PK_NAME"));
                    }
                }
                if (n == 0) {
                    System.out.println("pk " + table + " none");
                }
            }
            // The same key as an index (unique and approximate both false: every index).
            for (String table : new String[] {"word_counts", "by_small_word", "words"}) {
                int n = 0;
                try (ResultSet rs = md.getIndexInfo(null, "public", table, false, false)) {
                    while (rs.next()) {
                        n++;
                        System.out.println("index " + rs.getString("TABLE_NAME") + " " + rs.getString("INDEX_NAME")
                                + " " + rs.getBoolean("NON_UNIQUE") + " " + rs.getShort("TYPE")
                                + " " + rs.getShort("ORDINAL_POSITION") + " " + rs.getString("COLUMN_NAME")
                                + " " + rs.getString("ASC_OR_DESC"));
                    }
                }
                if (n == 0) {
                    System.out.println("index " + table + " none");
                }
            }
        }
    }
}
