// Command streamdb runs the streamdb server: a streaming database that
// speaks the PostgreSQL wire protocol.
//
//	streamdb [--listen 127.0.0.1:5433] [--data-dir ./streamdb-data] [--config FILE] [--log-level info]
//	streamdb bench [--rows N] [--keys K] [--interval 1s]   (in-process benchmark)
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/streamdb/streamdb/sql"
	"github.com/streamdb/streamdb/wire"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "bench" {
		if err := bench(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "streamdb bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "streamdb:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:5433", "address to listen on")
	dataDir := flag.String("data-dir", "./streamdb-data", "directory of the database")
	configFile := flag.String("config", "", "TOML file of database settings (checkpoint.interval = \"1s\", ...)")
	logLevel := flag.String("log-level", "info", "debug, info, warn or error")
	password := flag.String("password", "", "require this password (SCRAM-SHA-256) from non-loopback clients")
	tlsCert := flag.String("tls-cert", "", "TLS certificate file (with --tls-key)")
	tlsKey := flag.String("tls-key", "", "TLS key file")
	parallelism := flag.Int("parallelism", 0, "aggregate instances per job (0: number of cores)")
	stateCache := flag.Int64("state-cache-mb", 1024, "memory for each job's operator state (aggregate groups, join and rank rows); colder state spills to Pebble (0: unbounded)")
	queryMem := flag.Int64("query-memory-mb", 0, "memory of all running batch queries together; one that would pass it fails with 53200 (0: query.memory_mb of --config, else a quarter of physical memory)")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	settings, err := loadConfig(*configFile)
	if err != nil {
		return err
	}
	eng, err := sql.Open(sql.Config{DataDir: *dataDir, Settings: settings, Parallelism: *parallelism,
		StateCacheBytes: *stateCache << 20, QueryMemoryBytes: *queryMem << 20, Logger: log})
	if err != nil {
		return err
	}
	cfg := wire.Config{Addr: *listen, Password: *password, TrustLoopback: true, Logger: log}
	if *tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			eng.Close()
			return fmt.Errorf("TLS: %w", err)
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		eng.Close()
		return err
	}
	srv := wire.New(cfg, engine{eng})
	abs, _ := filepath.Abs(*dataDir)
	fmt.Printf("streamdb listening on %s (data in %s)\n", l.Addr(), abs)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(l) }()
	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
	case err := <-serveErr:
		if err != nil {
			log.Error("server stopped", "err", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	return eng.Close()
}

// loadConfig reads database settings from a TOML file: either flat dotted
// keys ("checkpoint.interval" = "1s") or tables ([checkpoint] interval = "1s").
func loadConfig(path string) (map[string]string, error) {
	out := map[string]string{}
	if path == "" {
		return out, nil
	}
	var raw map[string]any
	if _, err := toml.DecodeFile(path, &raw); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	var flatten func(prefix string, m map[string]any)
	flatten = func(prefix string, m map[string]any) {
		for k, v := range m {
			key := strings.ToLower(prefix + k)
			if sub, ok := v.(map[string]any); ok {
				flatten(key+".", sub)
				continue
			}
			out[key] = fmt.Sprint(v)
		}
	}
	flatten("", raw)
	return out, nil
}

// engine adapts *sql.Engine to wire.Engine.
type engine struct{ *sql.Engine }

func (e engine) NewSession(user, database string) wire.Session {
	return e.Engine.NewSession(user, database)
}
