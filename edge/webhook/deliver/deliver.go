package deliver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/webhook"
	"github.com/waitroom/waitroom/gossip"
)

const (
	webhookAttempts   = 10
	webhookBackoffMin = time.Second
	webhookBackoffMax = 5 * time.Minute
	// webhookKeep is how long a node keeps a notice no one has marked
	// delivered, and how long a delivered mark lives.
	webhookKeep    = 2 * time.Hour
	webhookTimeout = 10 * time.Second
	// webhookTakeover is how long the member ranked next waits for a
	// notice to be marked delivered before it sends it itself: longer than
	// the sender's whole retry schedule (about nine minutes).
	webhookTakeover = 20 * time.Minute
)

// webhookBackoff is the wait before attempt n+1 after n failed ones.
func webhookBackoff(n int) time.Duration {
	d := webhookBackoffMin << min(n-1, 20)
	return min(d, webhookBackoffMax)
}

type hookTarget struct {
	cfg    config.Webhook
	secret []byte
	status api.WebhookStatus
}

// pendingNotice is one notice for one webhook.
type pendingNotice struct {
	hook     *hookTarget
	n        webhook.Notice
	topic    string   // what the sender is chosen by
	subject  string   // a node the notice is about, never its sender
	marks    []string // delivered marks that mean it went out (see dedupe)
	body     []byte
	seen     time.Time
	attempts int
	next     time.Time
	inflight bool
}

// roomSeen is what the watcher last saw of a room.
type roomSeen struct {
	hash     string
	queueing bool
	full     bool
	stopped  bool
	phase    config.Phase
	event    string
}

// Hooks are one node's webhooks: what it watches for, the notices it
// holds and its deliveries.
type Hooks struct {
	s   *edge.Server
	log zerolog.Logger
	// fromConfig are the config file's webhooks, secrets read.
	fromConfig []Def
	mu         sync.Mutex
	targets    []*hookTarget
	pending    map[string]*pendingNotice // by mark
	rooms      map[string]roomSeen
	members    map[string]bool
	// suspects are the live members this node suspects (gossip.Member.Suspected).
	suspects map[string]bool
	// hashes caches each room config's hash: a room's config is replaced,
	// never changed in place, when it changes.
	hashes  map[*config.Room]string
	started bool
	client  *http.Client
	metric  *prometheus.CounterVec
}

// Load reads the secrets of the config file's webhooks: a node with a
// webhook whose secret it cannot read refuses to start.
func Load(cfg *config.Config) ([]Def, error) {
	var defs []Def
	for _, h := range cfg.Webhooks {
		raw, err := os.ReadFile(h.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("webhooks: %s: secret_file: %w", h.Name, err)
		}
		sec := bytes.TrimSpace(raw)
		if len(sec) < 16 {
			return nil, fmt.Errorf("webhooks: %s: secret_file %s: the secret must be at least 16 bytes", h.Name, h.SecretFile)
		}
		defs = append(defs, Def{Config: h, secret: sec})
	}
	return defs, nil
}

// New starts the webhooks of node s, the config file's (fromConfig, read
// by Load) and those registered through the admin API: after each round of
// the node's allocation loop, the changes seen since the last become
// notices, and the notices this node is to send and that are due go out.
func New(s *edge.Server, fromConfig []Def) *Hooks {
	w := &Hooks{s: s, log: s.Log(), fromConfig: fromConfig, pending: map[string]*pendingNotice{}, client: &http.Client{Timeout: webhookTimeout}}
	w.metric = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "waitroom", Name: "webhook_deliveries_total",
		Help: "Webhook requests this node made, by webhook and result: delivered (a 2xx answer), failed (an error or another status: retried with backoff), given_up (the last attempt failed).",
	}, []string{"webhook", "result"})
	s.Registry().MustRegister(w.metric)
	s.AfterEachRound(panicWebhooks, w.step)
	return w
}

// Where a recovered panic of the webhooks is counted
// (waitroom_panics_total{where}).
const (
	panicWebhooks = "webhooks" // deciding which webhook notices are due
	panicDelivery = "webhook_delivery"
)

// Status lists the webhooks' deliveries as this node made them, for the
// state document.
func (w *Hooks) Status() []api.WebhookStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.targets) == 0 {
		return nil
	}
	out := make([]api.WebhookStatus, 0, len(w.targets))
	for _, t := range w.targets {
		st := t.status
		var mine []*pendingNotice
		for _, p := range w.pending {
			if p.hook == t {
				st.Pending++
				mine = append(mine, p)
			}
		}
		slices.SortFunc(mine, func(a, b *pendingNotice) int { return a.seen.Compare(b.seen) })
		live := w.liveMembers()
		for _, p := range mine[:min(len(mine), 5)] {
			st.Oldest = append(st.Oldest, fmt.Sprintf("%s (sender %s, %d attempts here)", p.n.ID, p.sender(live), p.attempts))
		}
		out = append(out, st)
	}
	return out
}

// step is one round of the webhooks, run after each round of the
// allocation loop: changes seen since the last round become notices, and
// the notices this node is to send and that are due go out.
func (w *Hooks) step(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.syncTargets()
	if len(w.targets) == 0 {
		w.started = false // a webhook added later hears of changes from then on
		return
	}
	w.watch(now)
	live := w.liveMembers()
	for key, p := range w.pending {
		if w.delivered(p) || now.Sub(p.seen) > webhookKeep {
			delete(w.pending, key)
			continue
		}
		if p.inflight || now.Before(p.next) || !p.mine(w.s.Config().Node, live, now) {
			continue
		}
		p.inflight = true
		p.attempts++
		go w.deliver(key, p)
	}
}

// liveMembers are the names of the members alive, this node included.
func (w *Hooks) liveMembers() []string {
	var out []string
	for _, m := range w.s.Node().Members() {
		if m.Alive {
			out = append(out, m.Name)
		}
	}
	if !slices.Contains(out, w.s.Config().Node) {
		out = append(out, w.s.Config().Node)
	}
	return out
}

// sender is the member to send p: the first by rendezvous hashing of its
// topic among the live members, leaving out the node the notice is about
// (a node that joins does not see itself join).
func (p *pendingNotice) sender(live []string) string {
	if p.subject != "" {
		live = slices.DeleteFunc(slices.Clone(live), func(m string) bool { return m == p.subject })
	}
	return rendezvous(p.topic, live)
}

// mine reports whether node is to send p now: it is the sender, or the
// notice has waited webhookTakeover for each member ranked ahead of node
// without being marked delivered. The latter covers a sender that does not
// have the webhook (a config file that lists it on some nodes only) or is
// stuck; the wait is longer than a sender's whole retry schedule, so that a
// sender retrying a failing receiver is not doubled.
func (p *pendingNotice) mine(node string, live []string, now time.Time) bool {
	if p.subject != "" {
		live = slices.DeleteFunc(slices.Clone(live), func(m string) bool { return m == p.subject })
	}
	rank := slices.Index(rankMembers(p.topic, live), node)
	return rank == 0 || (rank > 0 && now.Sub(p.seen) >= time.Duration(rank)*webhookTakeover)
}

// rankMembers orders members by rendezvous hashing of topic, first the
// highest hash of topic and member name (highest random weight), so that
// every node with the same members ranks them alike, and a member's death
// moves only its own topics.
func rankMembers(topic string, members []string) []string {
	weight := func(m string) uint64 {
		h := sha256.Sum256([]byte(topic + "\x00" + m))
		return binary.BigEndian.Uint64(h[:8])
	}
	out := slices.Clone(members)
	slices.SortFunc(out, func(a, b string) int {
		wa, wb := weight(a), weight(b)
		switch {
		case wa > wb:
			return -1
		case wa < wb:
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// rendezvous names the member ranked first for topic (see rankMembers).
func rendezvous(topic string, members []string) string {
	if r := rankMembers(topic, members); len(r) > 0 {
		return r[0]
	}
	return ""
}

func (w *Hooks) delivered(p *pendingNotice) bool {
	for _, m := range p.marks {
		if w.s.Node().HasMark(m) {
			return true
		}
	}
	return false
}

// deliver makes one attempt to send p, then marks it delivered or plans
// the next attempt.
func (w *Hooks) deliver(key string, p *pendingNotice) {
	defer w.s.Recover(panicDelivery)
	signedAt := w.s.RingNow()
	ctx, cancel := context.WithTimeout(context.Background(), webhookTimeout)
	defer cancel()
	err := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.hook.cfg.URL, bytes.NewReader(p.body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "waitroom-webhook")
		req.Header.Set(webhook.Header, webhook.Sign(p.hook.secret, signedAt, p.body))
		req.Header.Set(webhook.EventHeader, p.n.ID)
		req.Header.Set(webhook.SenderHeader, w.s.Config().Node)
		resp, err := w.client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return fmt.Errorf("answered %s", resp.Status)
		}
		return nil
	}()
	now := w.s.RingNow()
	w.mu.Lock()
	p.inflight = false
	st := &p.hook.status
	switch {
	case err == nil:
		w.s.Node().Mark(p.marks[0], now.Add(webhookKeep).Unix())
		delete(w.pending, key)
		st.Delivered++
		w.metric.WithLabelValues(p.hook.cfg.Name, "delivered").Inc()
	case p.attempts >= webhookAttempts:
		// Marked as if delivered, so that no other node starts over.
		w.s.Node().Mark(p.marks[0], now.Add(webhookKeep).Unix())
		delete(w.pending, key)
		st.Failed++
		st.GivenUp++
		st.LastError, st.LastErrAt = err.Error(), now.UTC()
		w.metric.WithLabelValues(p.hook.cfg.Name, "failed").Inc()
		w.metric.WithLabelValues(p.hook.cfg.Name, "given_up").Inc()
		w.log.Error().Str("webhook", p.hook.cfg.Name).Str("notice", p.n.ID).Int("attempts", p.attempts).Err(err).Msg("webhook notice given up")
	default:
		p.next = now.Add(webhookBackoff(p.attempts))
		st.Failed++
		st.LastError, st.LastErrAt = err.Error(), now.UTC()
		w.metric.WithLabelValues(p.hook.cfg.Name, "failed").Inc()
		w.log.Warn().Str("webhook", p.hook.cfg.Name).Str("notice", p.n.ID).Int("attempt", p.attempts).Time("retry_at", p.next).Err(err).Msg("webhook notice failed, will retry")
	}
	w.mu.Unlock()
}

// notify queues a notice for every webhook that wants its type. topic
// chooses the sender; dedupe are further ids under which the same change
// may have been noticed by a node that saw it a moment apart (an adjacent
// minute).
func (w *Hooks) notify(n webhook.Notice, topic string, dedupe ...string) {
	body, err := json.Marshal(n)
	if err != nil {
		return
	}
	for _, t := range w.targets {
		if !t.cfg.Wants(n.Type) {
			continue
		}
		mark := "webhook/" + t.cfg.Name + "/" + n.ID
		if _, ok := w.pending[mark]; ok || w.s.Node().HasMark(mark) {
			continue
		}
		p := &pendingNotice{hook: t, n: n, topic: t.cfg.Name + "/" + topic, subject: n.Node, marks: []string{mark}, body: body, seen: n.Time}
		for _, d := range dedupe {
			p.marks = append(p.marks, "webhook/"+t.cfg.Name+"/"+d)
		}
		w.pending[mark] = p
	}
}

// watch turns the changes since the last round into notices. The first
// round only records what is there: a node that starts tells of nothing
// that happened before it.
func (w *Hooks) watch(now time.Time) {
	rooms := map[string]roomSeen{}
	hashes := map[*config.Room]string{}
	defer func() { w.hashes = hashes }()
	for _, rc := range w.s.Rooms() {
		sum, ok := w.s.Summary(rc.Name)
		if !ok {
			continue
		}
		hash, ok := w.hashes[rc]
		if !ok {
			raw, _ := json.Marshal(rc)
			h := sha256.Sum256(raw)
			hash = hex.EncodeToString(h[:8])
		}
		hashes[rc] = hash
		e, ph := rc.At(now)
		rs := roomSeen{
			hash:     hash,
			queueing: sum.Status != "not_queueing" && sum.Status != "suspended",
			full:     rc.MaxQueue > 0 && sum.QueuedUsers >= int64(rc.MaxQueue),
			stopped:  rc.Stopped,
			phase:    ph,
		}
		if e != nil {
			rs.event = e.ID + "@" + e.EventStartTime.UTC().Format(time.RFC3339)
		}
		rooms[rc.Name] = rs
	}
	members, suspects := map[string]bool{}, map[string]bool{}
	for _, m := range w.s.Node().Members() {
		if m.Alive {
			members[m.Name] = true
			if m.Suspected {
				suspects[m.Name] = true
			}
		}
	}
	if !w.started {
		w.rooms, w.members, w.suspects, w.started = rooms, members, suspects, true
		return
	}
	minute := now.Unix() / 60
	// byMinute is a notice whose id is the change and the ring minute it
	// was seen in: nodes see it a moment apart, so the minutes either side
	// count as the same notice.
	byMinute := func(typ, subject string, n webhook.Notice) {
		id := func(m int64) string { return fmt.Sprintf("%s:%s:%d", typ, subject, m) }
		n.ID, n.Type, n.Time = id(minute), typ, now.UTC()
		w.notify(n, typ+":"+subject, id(minute-1), id(minute+1))
	}
	exact := func(typ, subject, version string, n webhook.Notice) {
		n.ID, n.Type, n.Time = typ+":"+subject+":"+version, typ, now.UTC()
		w.notify(n, n.ID)
	}
	for name, cur := range rooms {
		old, had := w.rooms[name]
		data := w.noticeData(name)
		room := webhook.Notice{Room: name, Data: data}
		if !had {
			exact("room.created", name, cur.hash, room)
			continue
		}
		if old.hash != cur.hash {
			exact("room.changed", name, cur.hash, room)
			if cur.stopped != old.stopped {
				typ := "room.emergency_stopped"
				if !cur.stopped {
					typ = "room.emergency_resumed"
				}
				exact(typ, name, cur.hash, room)
			}
		}
		if cur.queueing != old.queueing {
			typ := "room.queueing_started"
			if !cur.queueing {
				typ = "room.queueing_stopped"
			}
			byMinute(typ, name, room)
		}
		if cur.full && !old.full {
			byMinute("room.queue_full", name, room)
		}
		if cur.phase != old.phase || cur.event != old.event {
			ev := cur.event
			var typ string
			switch cur.phase {
			case config.Prequeue:
				typ = "event.prequeue_started"
			case config.EventActive:
				typ = "event.started"
			default:
				typ, ev = "event.ended", old.event
			}
			exact(typ, name, ev, room)
		}
	}
	for name, old := range w.rooms {
		if _, ok := rooms[name]; !ok {
			exact("room.deleted", name, old.hash, webhook.Notice{Room: name})
		}
	}
	for _, c := range memberChanges(w.members, members, w.suspects, suspects) {
		byMinute(c.typ, c.node, webhook.Notice{Node: c.node})
	}
	w.rooms, w.members, w.suspects = rooms, members, suspects
}

// noticeData is a room's figures for its notices.
func (w *Hooks) noticeData(name string) map[string]any {
	f, ok := w.s.Figures(name, w.s.RingNow())
	if !ok {
		return nil
	}
	rc, sum := f.Room, f.Summary
	d := map[string]any{
		"status":               string(sum.Status),
		"stopped":              rc.Stopped,
		"total_active_users":   f.Settings.TotalActiveUsers,
		"new_users_per_minute": f.Settings.NewUsersPerMinute,
		"active_users":         int64(sum.ActiveUsers + 0.5),
		"queued_users":         sum.QueuedUsers,
		"max_wait_minutes":     sum.MaxWaitMinutes,
	}
	if e, ph := rc.At(w.s.RingNow()); e != nil {
		d["event"] = map[string]any{"id": e.ID, "name": e.Name, "phase": ph.String(), "event_start_time": e.EventStartTime.UTC(), "event_end_time": e.EventEndTime.UTC()}
	}
	if rc.MaxQueue > 0 {
		d["max_queue"] = rc.MaxQueue
	}
	return d
}

// Def is one webhook in force, from the config file or the API.
type Def struct {
	Config config.Webhook
	// API: registered through the admin API (Register), not in the
	// config file.
	API    bool
	secret []byte
}

// registerPrefix names the registers of the webhooks registered through
// the admin API: each is kept in a replicated register (its secret too:
// gossip is encrypted with the ring's key), so every node knows it within
// about two seconds, and the ring sends it each notice once, as it does
// the config file's webhooks. A config file's webhook of the same name
// wins.
const registerPrefix = "webhook/"

// Register registers webhook name for the whole ring, through node n's
// registers, replacing one of the same name.
func Register(n *gossip.Node, name string, h api.WebhookRequest) {
	raw, _ := json.Marshal(h)
	n.SetRegister(registerPrefix+name, raw)
}

// Unregister removes webhook name registered through the admin API from
// the ring; false when there is none of that name.
func Unregister(n *gossip.Node, name string) bool {
	if reg, ok := n.Register(registerPrefix + name); !ok || len(reg.Value) == 0 {
		return false
	}
	n.SetRegister(registerPrefix+name, nil)
	return true
}

// All lists the webhooks in force: the config file's, then the API's, by
// name.
func (w *Hooks) All() []Def {
	out := slices.Clone(w.fromConfig)
	regs := w.s.Node().Registers(registerPrefix)
	names := make([]string, 0, len(regs))
	for n := range regs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, reg := range names {
		name := strings.TrimPrefix(reg, registerPrefix)
		var h api.WebhookRequest
		if len(regs[reg].Value) == 0 || json.Unmarshal(regs[reg].Value, &h) != nil {
			continue
		}
		if slices.ContainsFunc(out, func(d Def) bool { return d.Config.Name == name }) {
			continue
		}
		out = append(out, Def{Config: config.Webhook{Name: name, URL: h.URL, Events: h.Events}, secret: []byte(h.Secret), API: true})
	}
	return out
}

// syncTargets brings w.targets in line with the webhooks in force, keeping
// each one's counts across changes of its address or secret. Called with
// w.mu held.
func (w *Hooks) syncTargets() {
	defs := w.All()
	byName := map[string]*hookTarget{}
	for _, t := range w.targets {
		byName[t.cfg.Name] = t
	}
	targets := make([]*hookTarget, 0, len(defs))
	for _, d := range defs {
		t := byName[d.Config.Name]
		if t == nil {
			t = &hookTarget{status: api.WebhookStatus{Name: d.Config.Name}}
		}
		if !bytes.Equal(t.secret, d.secret) || t.cfg.URL != d.Config.URL || !slices.Equal(t.cfg.Events, d.Config.Events) {
			t.cfg, t.secret = d.Config, d.secret
		}
		t.status.URL = d.Config.URL
		targets = append(targets, t)
	}
	// Notices for a webhook that is gone are dropped.
	for key, p := range w.pending {
		if !slices.Contains(targets, p.hook) {
			delete(w.pending, key)
		}
	}
	w.targets = targets
}
