package agent

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/waitroom/waitroom/edge/config"
)

// reopenOnHangup opens the access log's file again on every SIGHUP, as
// logrotate expects of a daemon once it has moved the file away (its
// postrotate script sends the signal). Only a node that writes its access
// log to a file listens for the signal; the returned func stops listening.
func (a *Agent) reopenOnHangup() (stop func()) {
	if a.cfg.AccessLog == "" || a.cfg.AccessLog == config.AccessLogStdout {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-hup:
				a.reopenAccessLog()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}

// reopenAccessLog opens the access log again and says how that went; a
// panic is counted and logged, and the next SIGHUP tries again.
func (a *Agent) reopenAccessLog() {
	defer a.Recover("access_log")
	if err := a.ReopenAccessLog(); err != nil {
		a.log.Error().Err(err).Str("access_log", a.cfg.AccessLog).Msg("SIGHUP: the access log could not be opened again; its lines are lost until it can (waitroom_access_log_failed_total)")
		return
	}
	a.log.Info().Str("access_log", a.cfg.AccessLog).Msg("SIGHUP: access log opened again")
}
