package sqllogic

// The package's tests call the shared helpers (exported for tests/cluster
// and tests/crash from rows.go, kafka.go, fakes3.go, metrics.go and
// server.go) by the short names they had before.
var (
	execAll            = ExecAll
	queryRows          = QueryRows
	plainRows          = PlainRows
	mustRows           = MustRows
	sqlstate           = SQLState
	freeAddr           = FreeAddr
	startWithEnv       = StartServerEnv
	startKafka         = StartKafka
	restartKafka       = RestartKafka
	kafkaClient        = KafkaClient
	produce            = Produce
	kafkaDeleteRecords = KafkaDeleteRecords
	newFakeS3          = NewFakeS3
	httpGet            = HTTPGet
	scrape             = Scrape
	metricValue        = MetricValue
)

type (
	kafkaBroker = KafkaBroker
	fakeS3      = FakeS3
)
