package main

import (
	_ "github.com/duckdb/duckdb-go/v2"
	_ "github.com/jackc/pgx/v5"
)

func main() {}
