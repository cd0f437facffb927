package cluster

import (
	"flag"
	"os"
	"testing"

	"github.com/streamdb/streamdb/tests/sqllogic"
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	sqllogic.Cleanup()
	os.Exit(code)
}

// The tests call tests/sqllogic's helpers by the short names they had when
// they lived in that package.
var (
	StartServer        = sqllogic.StartServer
	execAll            = sqllogic.ExecAll
	queryRows          = sqllogic.QueryRows
	plainRows          = sqllogic.PlainRows
	mustRows           = sqllogic.MustRows
	sqlstate           = sqllogic.SQLState
	freeAddr           = sqllogic.FreeAddr
	startWithEnv       = sqllogic.StartServerEnv
	startKafka         = sqllogic.StartKafka
	kafkaClient        = sqllogic.KafkaClient
	produce            = sqllogic.Produce
	kafkaDeleteRecords = sqllogic.KafkaDeleteRecords
	newFakeS3          = sqllogic.NewFakeS3
	httpGet            = sqllogic.HTTPGet
	scrape             = sqllogic.Scrape
	metricValue        = sqllogic.MetricValue
)

type (
	// Server is a streamdb process of a test.
	Server = sqllogic.Server
	fakeS3 = sqllogic.FakeS3
)
