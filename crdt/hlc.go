package crdt

// stamper hands out the stamps of one replica's local register writes and
// keeps them strictly increasing. The state's clock alone cannot: a local
// write passes over stamps dated beyond the allowed clock offset (so that
// no far-future stamp can lock a register), and with them it would forget
// the stamps it handed out itself; a write in the same millisecond as an
// earlier one could then take that one's stamp again. Two values under one
// (stamp, replica) never settle: each peer keeps whichever it heard first.
type stamper struct {
	last HLC // the last stamp handed out; zero before the first
}

// next returns stamp if it is after the last one handed out, else the next
// stamp after that (Next at nowMillis), and remembers it. Only a wall clock
// that stepped back by more than the allowed offset, or a logical counter
// spent at the bound, makes that stamp lead the clock by more than the
// offset: a stamp that peers may refuse for a while is better than one that
// two values share.
func (p *stamper) next(stamp HLC, nowMillis int64) HLC {
	if !p.last.Less(stamp) {
		stamp = p.last.Next(nowMillis)
	}
	p.last = stamp
	return stamp
}
