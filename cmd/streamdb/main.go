// Command streamdb runs the streamdb server: a streaming database that
// speaks the PostgreSQL wire protocol.
//
//	streamdb [--listen 127.0.0.1:5433] [--data-dir ./streamdb-data] [--config FILE] [--log-level info] [--max-connections 100]
//	         [--http 127.0.0.1:9187] [--pprof] [--allow-storage URL]... [--restore-from URL]
//	         [--cluster-etcd URL --node-id ID [--peer-listen ADDR] [--cluster-name NAME] [--cluster-lease-ttl 10s] [--cluster-kafka HOST:PORT] [--cluster-storage s3://bucket/prefix]]
//	streamdb bench [--rows N] [--keys K] [--interval 1s]   (in-process benchmark)
//	streamdb bench nexmark [--events N] [--queries q0,q1,...] [--checkpoint-interval 1s] [--server URL]
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
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/monitor"
	"github.com/streamdb/streamdb/objstore"
	"github.com/streamdb/streamdb/sql"
	"github.com/streamdb/streamdb/sqlerr"
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
	password := flag.String("password", "", "set the password of the bootstrap superuser streamdb (SCRAM-SHA-256)")
	tlsCert := flag.String("tls-cert", "", "TLS certificate file (with --tls-key)")
	tlsKey := flag.String("tls-key", "", "TLS key file")
	parallelism := flag.Int("parallelism", 0, "aggregate instances per job (0: number of cores)")
	stateCache := flag.Int64("state-cache-mb", 1024, "memory for each job's operator state (aggregate groups, join and rank rows); colder state spills to Pebble (0: unbounded)")
	tailCache := flag.Int64("tail-cache-mb", 32, "memory for the blocks a COPY just wrote, kept for the jobs that read them next (0: none)")
	maxConns := flag.Int("max-connections", 100, "maximum number of client connections, the last superuser_reserved_connections (default 3) for superusers")
	httpAddr := flag.String("http", "127.0.0.1:9187", "address of the HTTP listener: /metrics and the dashboard ('' turns it off)")
	pprofOn := flag.Bool("pprof", false, "also serve /debug/pprof on the --http listener")
	var allowStorage listFlag
	flag.Var(&allowStorage, "allow-storage", "a location (file:///path or s3://bucket/prefix) SET checkpoint.storage may point into; repeatable (the data directory is always allowed)")
	restoreFrom := flag.String("restore-from", "", "fill an empty --data-dir from checkpoint storage: s3://bucket/prefix (its newest checkpoint), .../chk-N or .../savepoints/NAME (or file:///...)")
	memLimit := flag.String("memory-limit", "", "memory of the whole process (BYTES, NMB or NGB): Go's soft limit, Pebble's cache and memtables and each job's state cache are sized from it, and new work is refused with 53200 while the live heap is past its share ('' : memory_limit of --config, else none)")
	queryMem := flag.Int64("query-memory-mb", 0, "memory of all running batch queries together; one that would pass it fails with 53200 (0: query.memory_mb of --config, else a quarter of physical memory)")
	clusterEtcd := flag.String("cluster-etcd", "", "cluster mode: etcd client URLs, separated by commas ('' is a single-node server)")
	nodeID := flag.String("node-id", "", "cluster mode: this node's id, unique in the cluster")
	peerListen := flag.String("peer-listen", "", "cluster mode: address this node listens on for its peers")
	clusterName := flag.String("cluster-name", "default", "cluster mode: the cluster's name (its key prefix in etcd)")
	leaseTTL := flag.Duration("cluster-lease-ttl", 10*time.Second, "cluster mode: TTL of the node's membership lease in etcd")
	clusterKafka := flag.String("cluster-kafka", "", "cluster mode: Kafka bootstrap servers (host:port, separated by commas) that hold the log of every stream ('' : INSERT and COPY are refused)")
	clusterStorage := flag.String("cluster-storage", "", "cluster mode: s3://bucket/prefix (or file:///path) where every node uploads its checkpoints, under nodes/<node id>, so a job moved to another node restores from them")
	flag.Parse()
	cl := clusterFlags{etcd: *clusterEtcd, nodeID: *nodeID, peerListen: *peerListen, name: *clusterName, leaseTTL: *leaseTTL,
		kafka: *clusterKafka, storage: *clusterStorage}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	settings, hba, err := loadConfig(*configFile)
	if err != nil {
		return err
	}
	flag.Visit(func(f *flag.Flag) { // a flag given overrides the config file
		if f.Name == "max-connections" {
			settings["max_connections"] = strconv.Itoa(*maxConns)
		}
	})
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := cl.fromConfig(settings, given); err != nil {
		return err
	}
	if err := wire.CheckExposure(*listen, hba); err != nil {
		return err
	}
	storageCfg, err := storageConfig(settings, allowStorage)
	if err != nil {
		return err
	}
	memSplit, err := memoryLimitConfig(*memLimit, settings)
	if err != nil {
		return err
	}
	if memSplit.Limit > 0 && !given["state-cache-mb"] {
		*stateCache = memSplit.StateCache >> 20
	}
	if *restoreFrom != "" {
		m, err := checkpoint.RestoreDB(context.Background(), *restoreFrom, *dataDir, storageCfg.S3)
		if err != nil {
			return fmt.Errorf("--restore-from %s: %w (SQLSTATE %s)", *restoreFrom, err, sqlerr.Code(err))
		}
		if m == nil {
			log.Info("data directory already restored; --restore-from ignored", "from", *restoreFrom)
		} else {
			log.Info("restored the database from checkpoint storage", "from", *restoreFrom,
				"snapshot", m.Name, "checkpoint", m.CheckpointID, "epoch", m.Epoch, "bytes", m.Size())
		}
	}
	sqlCfg := sql.Config{DataDir: *dataDir, Settings: settings, Parallelism: *parallelism,
		StateCacheBytes: *stateCache << 20, TailCacheBytes: tailCacheBytes(*tailCache), QueryMemoryBytes: *queryMem << 20, Logger: log, Superusers: osUser(), Password: *password,
		Storage: storageCfg, Memory: memSplit}
	if memSplit.Limit > 0 {
		log.Info("memory limit", "limit", plan.FormatMemory(memSplit.Limit), "go_heap", memSplit.GoHeap>>20, "block_cache_mb", memSplit.BlockCache>>20,
			"memtable_mb", memSplit.MemTable>>20, "state_cache_mb", *stateCache, "query_memory_mb", memSplit.QueryMemory>>20)
	}
	var ce *clusterEngine
	if cl.etcd != "" {
		ce = &clusterEngine{storage: cl.storage, s3: storageCfg.S3}
		sqlCfg.Cluster = ce
		if sqlCfg.StreamLog, err = streamLogConfig(cl); err != nil {
			return err
		}
	}
	eng, err := sql.Open(sqlCfg)
	if err != nil {
		return err
	}
	if !wire.IsLoopbackListen(*listen) && !eng.AnyPassword() {
		log.Warn("listening beyond loopback, but no role has a password: clients on other hosts cannot log in " +
			"(set one with --password or ALTER ROLE ... PASSWORD)")
	}
	secret, err := eng.AuthSecret()
	if err != nil {
		eng.Close()
		return err
	}
	maxC, reserved, err := eng.ConnectionLimits()
	if err != nil {
		eng.Close()
		return err
	}
	cfg := wire.Config{Addr: *listen, HBA: hba, MockSecret: secret, Logger: log,
		MaxConnections: maxC, ReservedConnections: reserved}
	var mon *monitor.Monitor
	if *httpAddr != "" {
		mon = monitor.New(eng, monitor.Options{Pprof: *pprofOn, Logger: log})
		cfg.Metrics = mon.WireMetrics()
	} else if *pprofOn {
		log.Warn("--pprof needs the --http listener, which --http '' turned off")
	}
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
	var lost <-chan struct{} // the cluster lease, in cluster mode
	leaseLost := false
	leaveCluster := func() {} // before the engine closes: no catalog entry is applied while it does
	if ce != nil {
		node, pl, err := joinCluster(cl, ce, eng, l.Addr().String(), *dataDir, log)
		if err != nil {
			_ = l.Close()
			eng.Close()
			return err
		}
		lost = node.Done()
		leaveCluster = func() {
			if !leaseLost {
				// A clean leave hands its jobs off at a checkpoint first.
				hctx, hcancel := context.WithTimeout(context.Background(), 30*time.Second)
				if err := sql.ClusterHandoff(hctx, eng); err != nil {
					log.Warn("cluster: the handoff checkpoint failed; the jobs' new owners restore an older one", "err", err)
				}
				hcancel()
			}
			_ = node.Close()
			if pl != nil {
				_ = pl.Close()
			}
		}
	}
	srv := wire.New(cfg, engine{eng})
	abs, _ := filepath.Abs(*dataDir)
	fmt.Printf("streamdb listening on %s (data in %s)\n", l.Addr(), abs)
	if mon != nil {
		mon.SetConnections(srv.Connections)
		// A port already taken is logged and the database serves on without
		// it (docs: the HTTP endpoints are a convenience, not the service).
		if hl, err := net.Listen("tcp", *httpAddr); err != nil {
			log.Warn("HTTP listener (metrics, dashboard) not started", "addr", *httpAddr, "err", err)
		} else {
			log.Info("serving metrics and the dashboard", "url", "http://"+hl.Addr().String()+"/", "pprof", *pprofOn)
			go func() {
				if err := mon.Serve(hl); err != nil {
					log.Error("HTTP listener stopped", "err", err)
				}
			}()
		}
	}

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
	case <-lost:
		// A node that is no longer a member must not go on serving as one
		// (its view of the catalog and the membership may be stale).
		log.Error("shutting down: the cluster lease is lost")
		leaseLost = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	leaveCluster()
	if mon != nil {
		_ = mon.Close()
	}
	if err := eng.Close(); err != nil {
		return err
	}
	if leaseLost {
		return rejoinWhenReachable(cl, sigs, log) // clusterrejoin.go
	}
	return nil
}

// loadConfig reads database settings from a TOML file: either flat dotted
// keys ("checkpoint.interval" = "1s") or tables ([checkpoint] interval = "1s");
// and the authentication rules, an array of tables:
//
//	[[hba]]
//	type = "hostssl"        # host | hostssl | hostnossl
//	database = "all"        # all, a name, or names separated by commas
//	user = "all"            # likewise
//	address = "0.0.0.0/0"   # all | samehost | an IP address | a CIDR range
//	method = "scram-sha-256" # trust | scram-sha-256 | scram-sha-256-if-set | reject
//
// No [[hba]] means wire.DefaultHBA (nil rules).
func loadConfig(path string) (map[string]string, []wire.HBARule, error) {
	out := map[string]string{}
	if path == "" {
		return out, nil, nil
	}
	var raw map[string]any
	if _, err := toml.DecodeFile(path, &raw); err != nil {
		return nil, nil, fmt.Errorf("--config %s: %w", path, err)
	}
	var rules []wire.HBARule
	if v, ok := raw["hba"]; ok {
		delete(raw, "hba")
		tables, ok := v.([]map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("--config %s: hba must be an array of tables ([[hba]])", path)
		}
		for i, t := range tables {
			field := func(k string) string {
				s, _ := t[k].(string)
				return s
			}
			for k := range t {
				switch k {
				case "type", "database", "user", "address", "method":
				default:
					return nil, nil, fmt.Errorf("--config %s: [[hba]] %d: unknown key %q (type, database, user, address, method)", path, i+1, k)
				}
			}
			r, err := wire.NewHBARule(field("type"), field("database"), field("user"), field("address"), field("method"))
			if err != nil {
				return nil, nil, fmt.Errorf("--config %s: [[hba]] %d: %w", path, i+1, err)
			}
			rules = append(rules, r)
		}
	}
	var flatten func(prefix string, m map[string]any)
	flatten = func(prefix string, m map[string]any) {
		for k, v := range m {
			key := strings.ToLower(prefix + k)
			if sub, ok := v.(map[string]any); ok {
				flatten(key+".", sub)
				continue
			}
			if list, ok := v.([]any); ok { // checkpoint.dirs = ["/a", "/b"]
				parts := make([]string, len(list))
				for i, x := range list {
					parts[i] = fmt.Sprint(x)
				}
				out[key] = strings.Join(parts, ",")
				continue
			}
			out[key] = fmt.Sprint(v)
		}
	}
	flatten("", raw)
	return out, rules, nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// storageConfig takes the checkpoint storage keys out of the config file's
// settings (they are the server's, not database settings SHOW would list):
//
//	[storage]
//	allowed = ["s3://bucket/streamdb", "file:///backups"]
//	[storage.s3]
//	endpoint = "http://127.0.0.1:9000"   # else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS
//	region = "us-east-1"                 # else AWS_REGION
//	access_key_id = "..."                # else AWS_ACCESS_KEY_ID
//	secret_access_key = "..."            # else AWS_SECRET_ACCESS_KEY
//
// and adds the --allow-storage flags.
func storageConfig(settings map[string]string, flags []string) (sql.StorageConfig, error) {
	var cfg sql.StorageConfig
	var s3 objstore.S3Config
	for k, v := range settings {
		if !strings.HasPrefix(k, "storage.") {
			continue
		}
		delete(settings, k)
		switch k {
		case "storage.allowed":
			for _, u := range strings.Split(v, ",") {
				if u = strings.TrimSpace(u); u != "" {
					cfg.Allowed = append(cfg.Allowed, u)
				}
			}
		case "storage.s3.endpoint":
			s3.Endpoint = v
		case "storage.s3.region":
			s3.Region = v
		case "storage.s3.access_key_id":
			s3.AccessKey = v
		case "storage.s3.secret_access_key":
			s3.SecretKey = v
		default:
			return cfg, fmt.Errorf("--config: unknown key %q (storage.allowed, storage.s3.endpoint, storage.s3.region, storage.s3.access_key_id, storage.s3.secret_access_key)", k)
		}
	}
	cfg.Allowed = append(cfg.Allowed, flags...)
	for _, u := range cfg.Allowed {
		if _, err := objstore.Parse(u); err != nil {
			return cfg, fmt.Errorf("allowed storage location: %w", err)
		}
	}
	cfg.S3 = s3.Or(objstore.S3ConfigFromEnv())
	return cfg, nil
}

// osUser is the name of the OS user running the server: like initdb, a
// fresh database gets a superuser of that name (psql's default user).
func osUser() []string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name == "" || strings.ContainsAny(name, "\\/ \t") {
		return nil
	}
	return []string{name}
}

// engine adapts *sql.Engine to wire.Engine.
type engine struct{ *sql.Engine }

func (e engine) NewSession(user, database string) wire.Session {
	return e.Engine.NewSession(user, database)
}

// tailCacheBytes is --tail-cache-mb as sql.Config wants it (0 there is the
// default, so no cache is negative).
func tailCacheBytes(mb int64) int64 {
	if mb <= 0 {
		return -1
	}
	return mb << 20
}
