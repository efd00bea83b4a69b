package admin

import (
	"sync"
	"time"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/dashboard"
)

// console is the admin API's part of the operator's console (edge/dashboard):
// the history its charts draw, sampled by the allocation loop, and the
// handler of its page and event stream.
type console struct {
	hist dashboard.History
	once sync.Once
	dash *dashboard.Dashboard
}

// consoleFrame is one message of the console's event stream: the state
// document with what the page adds to it.
type consoleFrame struct {
	State   *api.StateDoc      `json:"state"`
	History []dashboard.Sample `json:"history"`
	Rooms   []consoleRoom      `json:"rooms"`
	// LastHeard is when this node last received gossip from a peer.
	LastHeard     *time.Time `json:"last_heard,omitempty"`
	WindowSeconds int        `json:"window_seconds"`
}

// consoleRoom is what the console shows of a room beyond its status: the
// switches its buttons flip, the current event and the analytics of the
// charts' window.
type consoleRoom struct {
	Name      string        `json:"name"`
	Stopped   bool          `json:"stopped"`
	QueueAll  bool          `json:"queue_all"`
	Event     *consoleEvent `json:"event,omitempty"`
	Analytics api.Analytics `json:"analytics"`
}

type consoleEvent struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	Phase          string    `json:"phase"`
	PrequeueStart  time.Time `json:"prequeue_start_time"`
	EventStartTime time.Time `json:"event_start_time"`
	EventEndTime   time.Time `json:"event_end_time"`
}

// dashboard is the console's handler, made on first use.
func (a *API) dashboard() *dashboard.Dashboard {
	a.console.once.Do(func() {
		a.console.dash = dashboard.New(func() any { return a.consoleFrame() }, time.Second)
	})
	return a.console.dash
}

// consoleFrame builds one frame from the node's merged state.
func (a *API) consoleFrame() *consoleFrame {
	ring := a.s.RingNow()
	f := &consoleFrame{
		State:         a.StateDoc(),
		History:       a.console.hist.Samples(),
		Rooms:         []consoleRoom{},
		WindowSeconds: int(dashboard.Window / time.Second),
	}
	if t := a.s.Node().LastHeard(); !t.IsZero() {
		f.LastHeard = &t
	}
	minutes := int(dashboard.Window / time.Minute)
	for _, rc := range a.s.Rooms() {
		cr := consoleRoom{Name: rc.Name, Stopped: rc.Stopped, QueueAll: rc.QueueAll, Analytics: a.analytics(rc.Name, minutes, ring)}
		if e, ph := rc.At(ring); e != nil && ph != config.NoEvent {
			cr.Event = &consoleEvent{ID: e.ID, Name: e.Name, Phase: ph.String(), PrequeueStart: e.PrequeueStart().UTC(), EventStartTime: e.EventStartTime.UTC(), EventEndTime: e.EventEndTime.UTC()}
		}
		f.Rooms = append(f.Rooms, cr)
	}
	return f
}

// sampleConsole records the rooms' figures for the console's charts, once
// per dashboard.Step of ring time; the allocation loop calls it after each
// round.
func (a *API) sampleConsole(now time.Time) {
	if !a.console.hist.Due(now) {
		return
	}
	smp := dashboard.Sample{Time: now.UTC(), Rooms: map[string]dashboard.RoomSample{}}
	for _, rc := range a.s.Rooms() {
		f, ok := a.s.Figures(rc.Name, now)
		if !ok {
			continue
		}
		sum := f.Summary
		rs := dashboard.RoomSample{Active: int64(sum.ActiveUsers + 0.5), Queued: sum.QueuedUsers, NewThisMinute: sum.AdmittedThisMinute, Shares: map[string]float64{}}
		for _, ns := range a.nodeShares(&f.Snapshot) {
			rs.Shares[ns.Node] = ns.TrafficShare
		}
		smp.Rooms[rc.Name] = rs
	}
	a.console.hist.Add(smp)
}
