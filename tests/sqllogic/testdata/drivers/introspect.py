"""Schema introspection through psycopg2 and SQLAlchemy's PostgreSQL dialect.

Usage: introspect.py HOST PORT. Prints one line per check; the Go test
(TestDriverIntrospection) compares them.
"""
import sys

import psycopg2
from sqlalchemy import create_engine, inspect

host, port = sys.argv[1], sys.argv[2]
conn = psycopg2.connect(host=host, port=port, user="streamdb", dbname="streamdb")
cur = conn.cursor()
cur.execute("SELECT table_name, table_type FROM information_schema.tables"
            " WHERE table_schema = 'public' ORDER BY 1")
print("psycopg2 tables", cur.fetchall())
cur.execute("SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = 'public' AND table_name = %s ORDER BY ordinal_position", ("words",))
print("psycopg2 columns", cur.fetchall())
cur.execute("SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod)"
            " FROM pg_catalog.pg_attribute a WHERE a.attrelid = %s::regclass AND a.attnum > 0"
            " ORDER BY a.attnum", ("word_counts",))
print("psycopg2 attributes", cur.fetchall())
conn.close()

engine = create_engine("postgresql+psycopg2://streamdb@%s:%s/streamdb" % (host, port))
insp = inspect(engine)
print("sqlalchemy tables", insp.get_table_names())
print("sqlalchemy views", insp.get_view_names())
print("sqlalchemy schemas", insp.get_schema_names())
for rel in ("words", "word_counts"):
    print("sqlalchemy columns", rel,
          [(c["name"], str(c["type"]), c["nullable"], c["default"]) for c in insp.get_columns(rel)])
for rel in ("words", "word_counts"):
    pk = insp.get_pk_constraint(rel)
    print("sqlalchemy pk", rel, pk["name"], pk["constrained_columns"])
