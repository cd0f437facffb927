package nexmark

import (
	"github.com/streamdb/streamdb/connector"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"time"
)

// This file is the Nexmark event generator, after the reference generator
// (nexmark/nexmark's NexmarkGenerator and GeneratorConfig, itself Beam's):
// events are numbered from 0, and event n is a person, an auction or a bid
// in the proportion 1 : 3 : 46 of every 50; person and auction ids rise by
// one from 1000; auctions are sold by recent people (3 in 4 by the "hot"
// seller) in one of 5 categories from 10; bids go to one of the last 100
// auctions or up to 10 ahead (1 in 2 to the hot auction) by one of the last
// 1000 people or up to 10 ahead (3 in 4 by the hot bidder); half the bids
// come through one of four hot channels, the rest through "channel-N" with
// a URL whose channel_id is abs(Integer.reverse(N)); an auction expires a
// random time up to twice the time 100 more auctions take to be created;
// event time is base + n × inter-event delay.
//
// Deviations from the reference, all so that event n depends only on
// (seed, n) and any split can start at any event:
//   - every event draws from its own random stream, PCG(seed, n); the
//     reference draws from one java.util.Random seeded per event, so the
//     values differ while their distributions are the same;
//   - the base time is fixed (2026-01-01 00:00:00 UTC) rather than the wall
//     clock at start, and the inter-event delay is fixed at 100 µs (the
//     reference's 10,000 events/s first-event rate, with no rate shapes);
//     the rate at which events are produced (nexmark.rate) does not change
//     their event time;
//   - states are lower case ("or", "id", "ca"), as RisingWave's generator
//     writes them and its q3 filters; strings are lower-case letters with
//     an occasional space, extra is 1-16 such letters (the reference pads
//     extra to an average event size);
//   - timestamps have microsecond precision (TIMESTAMP), the reference's
//     are milliseconds.

// Nexmark generator constants, as the reference's defaults.
const (
	nxPersonProportion  = 1
	nxAuctionProportion = 3
	nxBidProportion     = 46
	nxTotalProportion   = nxPersonProportion + nxAuctionProportion + nxBidProportion

	nxFirstPersonID   = 1000
	nxFirstAuctionID  = 1000
	nxFirstCategoryID = 10
	nxNumCategories   = 5

	nxNumActivePeople      = 1000
	nxPersonIDLead         = 10
	nxNumInFlightAuctions  = 100
	nxAuctionIDLead        = 10
	nxHotRatio             = 100 // hot ids are multiples of this
	nxHotAuctionRatio      = 2
	nxHotBidderRatio       = 4
	nxHotSellerRatio       = 4
	nxHotChannelsRatio     = 2
	nxChannels             = 10000
	nxInterEventDelayUS    = 100 // 10,000 events a second of event time
	nxMaxExtra             = 16
	nxItemNameLength       = 20
	nxDescriptionMaxLength = 40
)

var (
	nxHotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}
	nxFirstNames  = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	nxLastNames   = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	nxCities      = []string{"phoenix", "los angeles", "san francisco", "boise", "portland", "bend", "redmond", "seattle", "kent", "cheyenne"}
	nxStates      = []string{"az", "ca", "id", "or", "wa", "wy"}
)

// EventKind is which table an event belongs to.
type EventKind uint8

const (
	KindPerson EventKind = iota
	KindAuction
	KindBid
)

// Tables names the tables in EventKind order.
var Tables = []string{"person", "auction", "bid"}

// KindOf is the kind of event n.
func KindOf(n int64) EventKind {
	switch off := n % nxTotalProportion; {
	case off < nxPersonProportion:
		return KindPerson
	case off < nxPersonProportion+nxAuctionProportion:
		return KindAuction
	}
	return KindBid
}

// Event is one generated event; its text fields point into the buffer the
// generator was given, valid until that buffer is reused. Which fields are
// set depends on Kind (columns of the person, auction and bid tables).
type Event struct {
	Kind EventKind
	// person: ID, Name, Email, CreditCard, City, State, DateTime, Extra
	// auction: ID, ItemName, Description, InitialBid, Reserve, DateTime,
	//          Expires, Seller, Category, Extra
	// bid: Auction, Bidder, Price, Channel, URL, DateTime, Extra
	ID, InitialBid, Reserve, Seller, Category int64
	Auction, Bidder, Price                    int64
	DateTime, Expires                         int64 // Unix microseconds
	Name, Email, CreditCard, City, State      []byte
	ItemName, Description, Channel, URL       []byte
	Extra                                     []byte
}

// Generator generates Nexmark events by number. It is not safe for
// concurrent use; each reader has its own.
type Generator struct {
	seed    uint64
	pcg     *rand.PCG
	rng     *rand.Rand
	hotURLs [][]byte // one URL per hot channel, from the seed
}

// NewGenerator returns the generator of seed.
func NewGenerator(seed uint64) *Generator {
	g := &Generator{seed: seed, pcg: rand.NewPCG(seed, math.MaxUint64)}
	g.rng = rand.New(g.pcg)
	for range nxHotChannels {
		g.hotURLs = append(g.hotURLs, g.baseURL(nil))
	}
	return g
}

// Event generates event n into ev, appending its text to buf; it returns
// the grown buffer.
func (g *Generator) Event(n int64, ev *Event, buf []byte) []byte {
	return g.EventCols(n, ev, buf, AllCols)
}

// AllCols is the Cols of every column.
const AllCols Cols = ^Cols(0)

// Cols is a set of columns of an event's table, bit i for Columns[kind][i].
type Cols uint32

func (c Cols) has(i int) bool { return c&(1<<i) != 0 }

// from reports whether c has a column at or after i. The drawn columns
// of a person and a bid are in the order of their random draws, so a
// column whose successors are all unread need not be drawn at all.
func (c Cols) from(i int) bool { return c>>i != 0 }

// undrawn are the columns of each table that take no random draw (id,
// date_time): EventCols makes them whatever it is asked.
var undrawn = [...]Cols{1<<0 | 1<<6, 1<<0 | 1<<5, 1 << 5}

// EventCols is Event making only the columns of need: a column left out
// is zero or nil. Its random draws are still made while a column drawn
// later is needed (so every column made has the value Event gives it),
// and not after.
func (g *Generator) EventCols(n int64, ev *Event, buf []byte, need Cols) []byte {
	g.pcg.Seed(g.seed, uint64(n))
	*ev = Event{Kind: KindOf(n), DateTime: connector.BaseTime.UnixMicro() + n*nxInterEventDelayUS}
	need &^= undrawn[ev.Kind]
	switch ev.Kind {
	case KindPerson:
		return g.person(n, ev, buf, need)
	case KindAuction:
		return g.auction(n, ev, buf, need)
	}
	return g.bid(n, ev, buf, need)
}

// lastBase0PersonID is the 0-based id of the last person created at or
// before event.
func lastBase0PersonID(event int64) int64 {
	epoch, off := event/nxTotalProportion, event%nxTotalProportion
	if off >= nxPersonProportion {
		off = nxPersonProportion - 1
	}
	return epoch*nxPersonProportion + off
}

// lastBase0AuctionID is the 0-based id of the last auction created at or
// before event (-1 before the first).
func lastBase0AuctionID(event int64) int64 {
	epoch, off := event/nxTotalProportion, event%nxTotalProportion
	switch {
	case off < nxPersonProportion:
		epoch--
		off = nxAuctionProportion - 1
	case off >= nxPersonProportion+nxAuctionProportion:
		off = nxAuctionProportion - 1
	default:
		off -= nxPersonProportion
	}
	return epoch*nxAuctionProportion + off
}

func (g *Generator) nextBase0PersonID(event int64) int64 {
	people := lastBase0PersonID(event) + 1
	active := min(people, nxNumActivePeople)
	return people - active + g.rng.Int64N(active+nxPersonIDLead)
}

func (g *Generator) nextBase0AuctionID(event int64) int64 {
	last := lastBase0AuctionID(event)
	lo := max(last-nxNumInFlightAuctions, 0)
	return lo + g.rng.Int64N(max(last-lo+1, 0)+nxAuctionIDLead)
}

// price is log-uniform between 1.00 and 1,000,000.00 (in cents).
func (g *Generator) price() int64 {
	return int64(math.Round(math.Pow(10, g.rng.Float64()*6) * 100))
}

// priceIf is price if made, else only its draw.
func (g *Generator) priceIf(made bool) int64 {
	if !made {
		g.rng.Float64()
		return 0
	}
	return g.price()
}

// skipStr makes str's draws without its text.
func (g *Generator) skipStr(maxLen int) {
	n := 1 + g.rng.IntN(maxLen)
	for i := 0; i < n; i++ {
		if i == 0 || g.rng.IntN(13) != 0 {
			g.rng.IntN(26)
		}
	}
}

// text sets *dst to the text f appends to buf if made; if not, it makes
// f's draws (skip) only if a column drawn later is needed (later). It
// returns buf and later.
func text(buf []byte, dst *[]byte, made, later bool, f func([]byte) []byte, skip func()) ([]byte, bool) {
	switch {
	case made:
		buf, *dst = field(buf, f)
	case later:
		skip()
	}
	return buf, later
}

// str appends 1..maxLen lower-case letters with an occasional space.
func (g *Generator) str(buf []byte, maxLen int) []byte {
	n := 1 + g.rng.IntN(maxLen)
	for i := 0; i < n; i++ {
		if i > 0 && g.rng.IntN(13) == 0 {
			buf = append(buf, ' ')
		} else {
			buf = append(buf, byte('a'+g.rng.IntN(26)))
		}
	}
	return buf
}

// field appends to buf with f and returns buf and the appended part.
func field(buf []byte, f func([]byte) []byte) ([]byte, []byte) {
	start := len(buf)
	buf = f(buf)
	return buf, buf[start:len(buf):len(buf)]
}

func (g *Generator) baseURL(buf []byte) []byte {
	buf = append(buf, "https://www.nexmark.com/"...)
	buf = g.str(buf, 5)
	buf = append(buf, '/')
	buf = g.str(buf, 5)
	buf = append(buf, '/')
	buf = g.str(buf, 5)
	return append(buf, "/item.htm?query=1"...)
}

func (g *Generator) person(n int64, ev *Event, buf []byte, need Cols) []byte {
	ev.ID = nxFirstPersonID + lastBase0PersonID(n)
	ok := true
	if buf, ok = text(buf, &ev.Name, need.has(1), need.from(2), func(b []byte) []byte {
		b = append(b, nxFirstNames[g.rng.IntN(len(nxFirstNames))]...)
		b = append(b, ' ')
		return append(b, nxLastNames[g.rng.IntN(len(nxLastNames))]...)
	}, func() { g.rng.IntN(len(nxFirstNames)); g.rng.IntN(len(nxLastNames)) }); !ok {
		return buf
	}
	if buf, ok = text(buf, &ev.Email, need.has(2), need.from(3), func(b []byte) []byte {
		b = g.str(b, 7)
		b = append(b, '@')
		b = g.str(b, 5)
		return append(b, ".com"...)
	}, func() { g.skipStr(7); g.skipStr(5) }); !ok {
		return buf
	}
	if buf, ok = text(buf, &ev.CreditCard, need.has(3), need.from(4), func(b []byte) []byte {
		for i := 0; i < 4; i++ {
			if i > 0 {
				b = append(b, ' ')
			}
			b = strconv.AppendInt(b, int64(1000+g.rng.IntN(9000)), 10)
		}
		return b
	}, func() {
		for i := 0; i < 4; i++ {
			g.rng.IntN(9000)
		}
	}); !ok {
		return buf
	}
	if buf, ok = text(buf, &ev.City, need.has(4), need.from(5), func(b []byte) []byte { return append(b, nxCities[g.rng.IntN(len(nxCities))]...) },
		func() { g.rng.IntN(len(nxCities)) }); !ok {
		return buf
	}
	if buf, ok = text(buf, &ev.State, need.has(5), need.from(6), func(b []byte) []byte { return append(b, nxStates[g.rng.IntN(len(nxStates))]...) },
		func() { g.rng.IntN(len(nxStates)) }); !ok {
		return buf
	}
	buf, _ = text(buf, &ev.Extra, need.has(7), false, func(b []byte) []byte { return g.str(b, nxMaxExtra) }, func() {})
	return buf
}

func (g *Generator) auction(n int64, ev *Event, buf []byte, need Cols) []byte {
	ev.ID = nxFirstAuctionID + lastBase0AuctionID(n)
	if need == 0 {
		return buf
	}
	if g.rng.IntN(nxHotSellerRatio) > 0 {
		ev.Seller = lastBase0PersonID(n) / nxHotRatio * nxHotRatio
	} else {
		ev.Seller = g.nextBase0PersonID(n)
	}
	ev.Seller += nxFirstPersonID
	ev.Category = nxFirstCategoryID + g.rng.Int64N(nxNumCategories)
	ev.InitialBid = g.priceIf(need.has(3) || need.has(4))
	ev.Reserve = ev.InitialBid + g.priceIf(need.has(4))
	// The reference's expiry: up to twice the time it takes for
	// nxNumInFlightAuctions more auctions to be created, plus 1 ms.
	horizon := int64(nxNumInFlightAuctions*nxTotalProportion/nxAuctionProportion) * nxInterEventDelayUS
	ev.Expires = ev.DateTime + 1000 + g.rng.Int64N(2*horizon)
	ok := true
	if buf, ok = text(buf, &ev.ItemName, need.has(1), need.has(2) || need.has(9), func(b []byte) []byte { return g.str(b, nxItemNameLength) },
		func() { g.skipStr(nxItemNameLength) }); !ok {
		return buf
	}
	if buf, ok = text(buf, &ev.Description, need.has(2), need.has(9), func(b []byte) []byte { return g.str(b, nxDescriptionMaxLength) },
		func() { g.skipStr(nxDescriptionMaxLength) }); !ok {
		return buf
	}
	buf, _ = text(buf, &ev.Extra, need.has(9), false, func(b []byte) []byte { return g.str(b, nxMaxExtra) }, func() {})
	return buf
}

func (g *Generator) bid(n int64, ev *Event, buf []byte, need Cols) []byte {
	if g.rng.IntN(nxHotAuctionRatio) > 0 {
		ev.Auction = lastBase0AuctionID(n) / nxHotRatio * nxHotRatio
	} else {
		ev.Auction = g.nextBase0AuctionID(n)
	}
	ev.Auction += nxFirstAuctionID
	if !need.from(1) {
		return buf
	}
	if g.rng.IntN(nxHotBidderRatio) > 0 {
		ev.Bidder = lastBase0PersonID(n)/nxHotRatio*nxHotRatio + 1
	} else {
		ev.Bidder = g.nextBase0PersonID(n)
	}
	ev.Bidder += nxFirstPersonID
	if !need.from(2) {
		return buf
	}
	ev.Price = g.priceIf(need.has(2))
	if !need.from(3) {
		return buf
	}
	if g.rng.IntN(nxHotChannelsRatio) > 0 {
		i := g.rng.IntN(len(nxHotChannels))
		if need.has(3) {
			buf, ev.Channel = field(buf, func(b []byte) []byte { return append(b, nxHotChannels[i]...) })
		}
		if need.has(4) {
			buf, ev.URL = field(buf, func(b []byte) []byte { return append(b, g.hotURLs[i]...) })
		}
	} else {
		c := g.rng.IntN(nxChannels)
		if need.has(3) {
			buf, ev.Channel = field(buf, func(b []byte) []byte {
				return strconv.AppendInt(append(b, "channel-"...), int64(c), 10)
			})
		}
		var ok bool
		if buf, ok = text(buf, &ev.URL, need.has(4), need.from(5), func(b []byte) []byte {
			b = g.baseURL(b)
			// abs(Integer.reverse(c)): the 32 bits reversed.
			rev := int64(int32(bits.Reverse32(uint32(c))))
			if rev < 0 {
				rev = -rev
			}
			return strconv.AppendInt(append(b, "&channel_id="...), rev, 10)
		}, func() { g.skipStr(5); g.skipStr(5); g.skipStr(5) }); !ok {
			return buf
		}
	}
	buf, _ = text(buf, &ev.Extra, need.has(6), false, func(b []byte) []byte { return g.str(b, nxMaxExtra) }, func() {})
	return buf
}

// nxTimestampLayout renders TIMESTAMP values as PostgreSQL's text format.
const nxTimestampLayout = "2006-01-02 15:04:05.999999"

func appendTS(b []byte, us int64) []byte {
	return time.UnixMicro(us).UTC().AppendFormat(b, nxTimestampLayout)
}

// AppendText appends event n as a row of COPY's text format for its
// table's columns (Columns order) and returns its kind. The
// generator's values hold no tab, newline or backslash.
func (g *Generator) AppendText(dst []byte, n int64) (EventKind, []byte) {
	var ev Event
	g.Event(n, &ev, nil)
	tab := func(b []byte) []byte { return append(b, '\t') }
	switch ev.Kind {
	case KindPerson:
		dst = strconv.AppendInt(dst, ev.ID, 10)
		for _, f := range [][]byte{ev.Name, ev.Email, ev.CreditCard, ev.City, ev.State} {
			dst = append(tab(dst), f...)
		}
		dst = appendTS(tab(dst), ev.DateTime)
	case KindAuction:
		dst = strconv.AppendInt(dst, ev.ID, 10)
		dst = append(tab(dst), ev.ItemName...)
		dst = append(tab(dst), ev.Description...)
		dst = strconv.AppendInt(tab(dst), ev.InitialBid, 10)
		dst = strconv.AppendInt(tab(dst), ev.Reserve, 10)
		dst = appendTS(tab(dst), ev.DateTime)
		dst = appendTS(tab(dst), ev.Expires)
		dst = strconv.AppendInt(tab(dst), ev.Seller, 10)
		dst = strconv.AppendInt(tab(dst), ev.Category, 10)
	default:
		dst = strconv.AppendInt(dst, ev.Auction, 10)
		dst = strconv.AppendInt(tab(dst), ev.Bidder, 10)
		dst = strconv.AppendInt(tab(dst), ev.Price, 10)
		dst = append(tab(dst), ev.Channel...)
		dst = append(tab(dst), ev.URL...)
		dst = appendTS(tab(dst), ev.DateTime)
	}
	dst = append(tab(dst), ev.Extra...)
	return ev.Kind, append(dst, '\n')
}
