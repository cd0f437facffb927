package exec

import (
	"encoding/binary"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// A session node in a job (session.go): one instance per share of the
// partition keys' key groups, run by runOp.
//
// State, per open session: key group (1 byte), encoded partition key,
// start (8 bytes, big-endian, sign bit flipped) -> last row's time (8
// bytes), then each accumulator's state. Written at the barrier for the
// sessions the epoch changed (a session whose start moved is deleted
// under its old key), deleted for the sessions merged away and for those
// the watermark closed. The operator's input watermark is kept under the
// job's own state (keyOpWatermark), so rows replayed after a restart meet
// the watermark they met before.

// newSessionNode makes instance inst of a job's session node.
func (j *Job) newSessionNode(n *gnode, inst int, out *outlet, root bool) (*sessionOp, error) {
	o := newSessionOp(n.session)
	o.j, o.id, o.out = j, n.op, out
	o.st = j.opState(n.op, inst, n.par)
	o.shift, o.timed = timeBound(n.session.In, n.session.Time)
	o.eowc = root && j.spec.OnWindowClose
	if j.durable() {
		if err := o.load(inst, n.par); err != nil {
			return nil, err
		}
		if j.spec.Reemit && root && !o.eowc {
			for _, g := range o.all() {
				o.bytes -= int64(len(o.lastOut[g]))
				o.lastOut[g] = ""
				o.markDirty(g)
			}
		}
	}
	return o, nil
}

// push implements operator: the rows join their sessions.
func (o *sessionOp) Push(ectx *expr.Ctx, c Chunk, _ int) error {
	defer c.Rec.Release()
	for _, op := range c.Ops {
		if op.Sign() < 0 {
			return errSessionRetract()
		}
	}
	return o.fold(ectx, c.Rec)
}

func errSessionRetract() error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "SESSION windows need an input that only inserts rows (a stream), not one that retracts them")
}

// barrier implements operator: the epoch's changes out, its state written,
// the closed sessions forgotten.
func (o *sessionOp) Barrier(ectx *expr.Ctx, b *Barrier, w *storage.Batch) error {
	if err := o.changes(func(c Chunk) error { return o.out.emit(ectx, c, nil) }); err != nil {
		return err
	}
	changed := len(o.dirty) > 0 || len(o.closing) > 0 || len(o.del) > 0
	if _, err := o.st.Commit(w, b, changed, false, o.save, o.snapshot); err != nil {
		return err
	}
	if w != nil {
		// The watermark is the job's state, not the operator's: written
		// through the epoch's batch on either backend.
		o.saveWatermark(w)
	}
	o.finish()
	return nil
}

// save writes the epoch's state changes into w.
func (o *sessionOp) save(x *opkit.Writer) error {
	for _, k := range o.del {
		x.Delete(k)
	}
	var key, val []byte
	for _, g := range o.closing {
		o.isDirty[g] = false // written below as deleted, not saved
		if o.saved[g] {
			key = o.stateKey(key[:0], o.kid[g], o.savedAt[g])
			x.Delete(key)
			o.saved[g] = false
		}
	}
	for _, g := range o.dirty {
		if !o.alive[g] || !o.isDirty[g] {
			continue // merged away, or closed
		}
		_, s := o.sessionOf(g)
		if o.saved[g] && o.savedAt[g] != s.start {
			key = o.stateKey(key[:0], o.kid[g], o.savedAt[g])
			x.Delete(key)
		}
		key = o.stateKey(key[:0], o.kid[g], s.start)
		val = binary.BigEndian.AppendUint64(val[:0], uint64(s.last))
		for _, a := range o.accs {
			val = a.encode(val, g)
		}
		x.Put(key, val)
		o.saved[g], o.savedAt[g] = true, s.start
	}
	return nil
}

// saveWatermark writes the operator's watermark into w if it moved.
func (o *sessionOp) saveWatermark(w *storage.Batch) {
	if o.wm == o.wmSaved {
		return
	}
	r := w.NewRun()
	r.PutState(o.j.spec.ID, jobStateOp, binary.BigEndian.AppendUint32([]byte{keyOpWatermark}, o.id),
		binary.BigEndian.AppendUint64(nil, uint64(o.wm)))
	o.wmSaved = o.wm
	w.AddRun(r)
}

// snapshot encodes every open session as save writes its entry, sorted by
// key (memory backend: storage.OpSnapshot): the sessions closing at this
// barrier are gone, those merged away too.
func (o *sessionOp) snapshot(epoch uint64) *stateSnapshot {
	s := opkit.NewSnapshot(o.id, epoch)
	closing := make(map[int32]bool, len(o.closing))
	for _, g := range o.closing {
		closing[g] = true
	}
	var key, val []byte
	for kid, list := range o.byKey {
		for _, ss := range list {
			g := ss.gid
			if !o.alive[g] || closing[g] {
				continue
			}
			key = o.stateKey(key[:0], int32(kid), ss.start)
			val = binary.BigEndian.AppendUint64(val[:0], uint64(ss.last))
			for _, a := range o.accs {
				val = a.encode(val, g)
			}
			s.Entries.AddKV(g, key, val)
		}
	}
	s.Entries.Sort()
	return s
}

// load restores the open sessions of the key groups instance inst owns,
// and the operator's watermark.
func (o *sessionOp) load(inst, par int) error {
	j := o.j
	if !j.fresh && o.timed {
		v, err := j.db.GetState(j.spec.ID, jobStateOp, binary.BigEndian.AppendUint32([]byte{keyOpWatermark}, o.id))
		if err != nil {
			return err
		}
		if len(v) == 8 {
			o.wm = int64(binary.BigEndian.Uint64(v))
			o.wmSaved = o.wm
		}
	}
	var prev []byte // the last key's partition key
	kid := int32(0)
	ds := make([]types.Datum, len(o.keyTs))
	err := o.st.Scan(func(key, val []byte) error {
		if len(key) < 9 || len(val) < 8 {
			return errCorruptState
		}
		if instanceOf(int(key[0]), par) != inst {
			return nil
		}
		pk := key[1 : len(key)-8]
		if len(o.keyTs) > 0 && (prev == nil || string(pk) != string(prev)) {
			rest := pk
			for c, t := range o.keyTs {
				var err error
				if ds[c], rest, err = decodeDatum(rest, t); err != nil {
					return err
				}
			}
			if len(rest) != 0 {
				return errCorruptState
			}
			kid = o.gt.insertDatums(ds)
			for len(o.byKey) <= int(kid) {
				o.byKey = append(o.byKey, nil)
			}
			o.bytes += o.gt.keyBytes(kid)
			prev = append(prev[:0], pk...)
		}
		start := int64(binary.BigEndian.Uint64(key[len(key)-8:]) ^ 1<<63)
		last := int64(binary.BigEndian.Uint64(val))
		g := o.newGid()
		o.kid[g] = kid
		o.bytes += sessionBytes
		rest := val[8:]
		for _, a := range o.accs {
			var err error
			if rest, err = a.decode(rest, g); err != nil {
				return err
			}
		}
		o.saved[g], o.savedAt[g] = true, start
		o.byKey[kid] = append(o.byKey[kid], session{start: start, last: last, gid: g})
		o.ends.items = append(o.ends.items, endItem{end: last + o.spec.Gap, gid: g, gen: o.gen[g]})
		return nil
	})
	if err != nil {
		return err
	}
	o.st.Loaded()
	o.ends.init()
	if o.eowc {
		return nil
	}
	// The rows last emitted are the ones the restored state gives.
	gids := o.all()
	for len(gids) > 0 {
		part := gids[:min(len(gids), 16<<10)]
		gids = gids[len(part):]
		rec, err := o.build(part)
		if err != nil {
			return err
		}
		var buf []byte
		for i, g := range part {
			buf = encodeRow(buf[:0], rec, i, o.outTs)
			o.lastOut[g] = string(buf)
			o.bytes += int64(len(buf))
		}
		rec.Release()
	}
	return nil
}
