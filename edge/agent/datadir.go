package agent

import (
	"errors"
	"io/fs"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/datadir"
	"github.com/waitroom/waitroom/gossip"
)

// The node's data directory keeps one file, its replica of the ring's
// state (gossip.Node.Save), sealed with a key derived from the cookie key
// (it holds webhook secrets): taken back before the node serves or joins,
// written at most once a second while it changes and once more at a
// graceful stop. A file that cannot be trusted is set aside, and the node
// starts from its config; a directory that cannot be written is counted
// and logged, and the node goes on serving.
const (
	stateFile = "state"
	// dataLabel names the sealing key's derivation from the cookie key.
	dataLabel = "waitroom data directory v1"
	// panicDataDir is where a panic while saving is counted.
	panicDataDir = "data_dir"
)

// Why a saved state was not taken back, besides datadir's Bad... reasons.
const (
	badUnreadable = "unreadable" // the file could not be read at all
	badMalformed  = "malformed"  // it opened, but is not a state this binary reads
)

// dataDir is a node's data directory, what it took back, and its saver.
type dataDir struct {
	dir *datadir.Dir
	// restored is the state taken back, nil on a first start or after a
	// bad file; setAside are the reasons files were set aside, if any were.
	restored *gossip.Saved
	setAside []string
	saver    *datadir.Saver
	metrics  *dataMetrics
	// places are the rooms' order inside their arrival slots, taken back
	// from the places file (nil: none), and placesSaver keeps that file.
	places      map[string][]byte
	placesSaver *datadir.Saver
}

// openDataDir opens the data directory at path with keys derived from the
// cookie keys (every key of the ring, so a file sealed before a rotation
// still opens) and takes back the saved state, before the node starts.
func (a *Agent) openDataDir(path string, keys *cookie.Keyring) (*dataDir, error) {
	dir, err := datadir.Open(path, keys.DeriveEach(dataLabel))
	if err != nil {
		return nil, err
	}
	d := &dataDir{dir: dir}
	if err := dir.ClearTemporary(stateFile); err != nil {
		a.log.Warn().Err(err).Str("data_dir", path).Msg("data directory: the temporary files of writes cut short cannot be removed")
	}
	d.readPlaces(a)
	b, err := dir.Read(stateFile)
	var bad *datadir.BadFile
	switch {
	case errors.Is(err, fs.ErrNotExist):
		a.log.Info().Str("data_dir", path).Msg("data directory: nothing saved yet, starting from the config")
		return d, nil
	case errors.As(err, &bad):
		d.setAsideFile(a, stateFile, bad.Reason, bad.Detail)
		return d, nil
	case err != nil:
		// Not readable (permissions, an I/O error): nothing to set aside
		// safely; the node starts from its config and the saver's writes
		// say whether the directory works.
		d.setAside = append(d.setAside, badUnreadable)
		a.log.Error().Err(err).Str("data_dir", path).Msg("data directory: the saved state cannot be read; starting from the config")
		return d, nil
	}
	saved, err := gossip.DecodeSaved(b)
	if err != nil {
		d.setAsideFile(a, stateFile, badMalformed, err.Error())
		return d, nil
	}
	d.restored = saved
	a.log.Info().Str("data_dir", path).Int("registers", saved.Registers()).Int("cells", saved.Cells()).
		Int("marks", saved.Marks()).Int("members", saved.Members()).Msg("data directory: state taken back; the ring's newer state wins as it joins")
	return d, nil
}

// readPlaces takes back the places file: the order inside the rooms'
// arrival slots (edge/places.go). One that cannot be trusted is set aside,
// and the visitors of the slots that filled before the restart are placed
// by their slots' shares.
func (d *dataDir) readPlaces(a *Agent) {
	if err := d.dir.ClearTemporary(datadir.PlacesFile); err != nil {
		a.log.Warn().Err(err).Str("data_dir", d.dir.Path()).Msg("data directory: the temporary files of writes cut short cannot be removed")
	}
	b, err := d.dir.Read(datadir.PlacesFile)
	var bad *datadir.BadFile
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case errors.As(err, &bad):
		d.setAsideFile(a, datadir.PlacesFile, bad.Reason, bad.Detail)
		return
	case err != nil:
		d.setAside = append(d.setAside, badUnreadable)
		a.log.Error().Err(err).Str("data_dir", d.dir.Path()).Msg("data directory: the places in line cannot be read; visitors are placed by their slots' shares")
		return
	}
	if d.places, err = datadir.DecodePlaces(b); err != nil {
		d.setAsideFile(a, datadir.PlacesFile, badMalformed, err.Error())
	}
}

// setAsideFile moves a file of the directory out of the way, with the
// reason in its name, and logs it.
func (d *dataDir) setAsideFile(a *Agent, name, reason, detail string) {
	d.setAside = append(d.setAside, reason)
	what := "the saved state"
	then := "starting from the config"
	if name == datadir.PlacesFile {
		what, then = "the saved places in line", "visitors are placed by their slots' shares"
	}
	to, err := d.dir.SetAside(name, reason, a.clock())
	if err != nil {
		a.log.Error().Err(err).Str("reason", reason).Str("detail", detail).Msgf("data directory: %s cannot be trusted nor set aside; %s", what, then)
		return
	}
	a.log.Error().Str("file", to).Str("reason", reason).Str("detail", detail).Msgf("data directory: %s cannot be trusted and was set aside; %s", what, then)
}

// startSaving registers the data directory's metrics and starts the saver
// of the node's state.
func (a *Agent) startSaving(d *dataDir) {
	d.metrics = newDataMetrics(a.Registry())
	for _, reason := range d.setAside {
		d.metrics.setAside.WithLabelValues(reason).Inc()
	}
	guard := func(fn func()) {
		defer a.Recover(panicDataDir)
		fn()
	}
	d.saver = datadir.NewSaver(d.dir, stateFile, a.Node().Save, datadir.SaverOptions{
		Report: d.saveReport(a, "data directory: the state cannot be saved; the node goes on serving, and a restart would lose what changed since the last save",
			func(size int, took time.Duration) {
				d.metrics.bytes.Set(float64(size))
				d.metrics.seconds.Set(took.Seconds())
				d.metrics.last.Set(float64(a.clock().Unix()))
			}),
		Guard: guard,
	})
	places := func() ([]byte, error) { return datadir.EncodePlaces(a.Server.Places()), nil }
	d.placesSaver = datadir.NewSaver(d.dir, datadir.PlacesFile, places, datadir.SaverOptions{
		Report: d.saveReport(a, "data directory: the places in line cannot be saved; a restart would place visitors by their slots' shares", nil),
		Guard:  guard,
	})
}

// saveReport is a saver's report of its writes: each counted, one log
// line (failed) per kind of failure rather than one a second, and one when
// the saves work again; ok is told of each good write.
func (d *dataDir) saveReport(a *Agent, failed string, ok func(size int, took time.Duration)) func(int, time.Duration, error) {
	var lastErr string
	return func(size int, took time.Duration, err error) {
		if err != nil {
			d.metrics.writes.WithLabelValues("error").Inc()
			if err.Error() != lastErr {
				lastErr = err.Error()
				a.log.Error().Err(err).Str("data_dir", d.dir.Path()).Msg(failed)
			}
			return
		}
		if lastErr != "" {
			lastErr = ""
			a.log.Info().Str("data_dir", d.dir.Path()).Msg("data directory: saving again")
		}
		d.metrics.writes.WithLabelValues("ok").Inc()
		if ok != nil {
			ok(size, took)
		}
	}
}

// stopSaving saves the state a last time, at a graceful stop.
func (d *dataDir) stopSaving() {
	if d == nil || d.saver == nil {
		return
	}
	_ = d.saver.Close() // reported, and logged, by the saver
	if d.placesSaver != nil {
		_ = d.placesSaver.Close()
	}
}

// dataMetrics are the data directory's metrics.
type dataMetrics struct {
	writes         *prometheus.CounterVec
	setAside       *prometheus.CounterVec
	bytes, seconds prometheus.Gauge
	last           prometheus.Gauge
}

func newDataMetrics(reg *prometheus.Registry) *dataMetrics {
	m := &dataMetrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_data_dir_writes_total",
			Help: "Saves of the node's state to its data directory, by result (ok, error: a full disk, a directory that cannot be written).",
		}, []string{"result"}),
		setAside: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitroom_data_dir_set_aside_total",
			Help: "Saved states not taken back at start, by reason (truncated, not_ours, newer, wrong_key, tampered, malformed, unreadable): the node started from its config.",
		}, []string{"reason"}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "waitroom_data_dir_state_bytes",
			Help: "Size of the node's state as last saved.",
		}),
		seconds: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "waitroom_data_dir_write_seconds",
			Help: "How long the last save of the node's state took, encoding and fsync included.",
		}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "waitroom_data_dir_last_save_timestamp_seconds",
			Help: "When the node's state was last saved (unix seconds).",
		}),
	}
	reg.MustRegister(m.writes, m.setAside, m.bytes, m.seconds, m.last)
	for _, r := range []string{"ok", "error"} {
		m.writes.WithLabelValues(r)
	}
	return m
}
