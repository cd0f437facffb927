package sql

import "bytes"

// recordScanner frames COPY data, which arrives in chunks of any size, into
// records (lines; in CSV a quoted field may hold newlines, in text format a
// newline after a backslash is data). Its state — the
// CSV quote state and, for a record cut by a chunk's end, the bytes seen so
// far — carries over from one chunk to the next, so every input byte is
// scanned for framing once and copied at most once (into carry, and only if
// its record spans chunks; carry grows by doubling). The counters record
// that work for the tests that hold it linear.
type recordScanner struct {
	csv           bool
	quote, escape byte
	inQuote       bool // CSV: inside a quoted section
	escNext       bool // CSV, escape != quote: the last byte was an escape inside quotes
	carry         []byte

	scanned, copied int64 // bytes examined by framing, bytes copied into carry
}

// maxKeptCarry is the largest carry buffer kept for the next record; a
// larger one (a record of many megabytes) is dropped once used.
const maxKeptCarry = 1 << 20

// end returns the index of the newline that ends the current record in
// data, the continuation of everything passed before, or -1 if data ends
// first. The scan resumes where the previous call stopped.
func (s *recordScanner) end(data []byte) int {
	if !s.csv {
		for from := 0; ; {
			i := bytes.IndexByte(data[from:], '\n')
			s.count(data[from:], i)
			if i < 0 {
				return -1
			}
			if i += from; !s.escaped(data, i) {
				return i
			}
			from = i + 1
		}
	}
	nl := -2 // index of the next newline at or after i: -2 unknown, -1 none
	for i := 0; i < len(data); {
		if s.inQuote {
			if s.escape != s.quote {
				for ; i < len(data) && s.inQuote; i++ {
					s.scanned++
					switch ch := data[i]; {
					case s.escNext:
						s.escNext = false
					case ch == s.escape:
						s.escNext = true
					case ch == s.quote:
						s.inQuote = false
					}
				}
				continue
			}
			j := bytes.IndexByte(data[i:], s.quote)
			s.count(data[i:], j)
			if j < 0 {
				return -1
			}
			i += j + 1
			s.inQuote = false
			continue
		}
		if nl == -2 || (nl >= 0 && nl < i) {
			// Scanned ranges for newlines do not overlap: a new search
			// starts only past the last newline found.
			nl = bytes.IndexByte(data[i:], '\n')
			s.count(data[i:], nl)
			if nl >= 0 {
				nl += i
			}
		}
		lim := len(data)
		if nl >= 0 {
			lim = nl
		}
		j := bytes.IndexByte(data[i:lim], s.quote)
		s.count(data[i:lim], j)
		if j < 0 {
			return nl
		}
		i += j + 1
		s.inQuote = true
	}
	return -1
}

// escaped reports whether the text-format newline at data[i] is data: a
// backslash escapes the byte after it, so the newline is escaped when an
// odd number of backslashes stand right before it (in data, and before
// that at the end of the record carried from earlier chunks).
func (s *recordScanner) escaped(data []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
		n++
	}
	if n == i {
		for j := len(s.carry) - 1; j >= 0 && s.carry[j] == '\\'; j-- {
			n++
		}
	}
	return n%2 == 1
}

// count adds to scanned the bytes IndexByte examined to return i in b.
func (s *recordScanner) count(b []byte, i int) {
	if i < 0 {
		s.scanned += int64(len(b))
	} else {
		s.scanned += int64(i + 1)
	}
}

// keep appends b, the unfinished part of a record, to carry.
func (s *recordScanner) keep(b []byte) {
	if need := len(s.carry) + len(b); need > cap(s.carry) {
		grown := make([]byte, len(s.carry), max(need, 2*cap(s.carry), 4096))
		s.copied += int64(copy(grown, s.carry))
		s.carry = grown
	}
	s.carry = append(s.carry, b...)
	s.copied += int64(len(b))
}

// reset empties carry after its record was used.
func (s *recordScanner) reset() {
	if cap(s.carry) > maxKeptCarry {
		s.carry = nil
		return
	}
	s.carry = s.carry[:0]
}
