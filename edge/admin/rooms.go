package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
)

// The room API: rooms created, changed and deleted at run time, with the
// same field names as the config file. A write is validated as at start-up
// (the room alone and against the other rooms' routes and cookies), stored
// in the room's register and gossiped; every node applies it within about
// two seconds.
func (a *API) registerRooms(mux *http.ServeMux) {
	mux.HandleFunc("GET /rooms", func(w http.ResponseWriter, r *http.Request) {
		out := []config.Room{}
		for _, rc := range a.s.Rooms() {
			out = append(out, redacted(*rc))
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("GET /rooms/{name}", func(w http.ResponseWriter, r *http.Request) {
		rc := a.s.Room(r.PathValue("name"))
		if rc == nil {
			writeError(w, http.StatusNotFound, "no room named %q", r.PathValue("name"))
			return
		}
		writeJSON(w, http.StatusOK, redacted(*rc))
	})
	mux.HandleFunc("POST /rooms/{name}", func(w http.ResponseWriter, r *http.Request) {
		a.putRoom(w, r, false, true)
	})
	mux.HandleFunc("PUT /rooms/{name}", func(w http.ResponseWriter, r *http.Request) {
		a.putRoom(w, r, false, false)
	})
	mux.HandleFunc("PATCH /rooms/{name}", func(w http.ResponseWriter, r *http.Request) {
		a.putRoom(w, r, true, false)
	})
	mux.HandleFunc("DELETE /rooms/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if !a.s.DeleteRoom(name) {
			writeError(w, http.StatusNotFound, "no room named %q", name)
			return
		}
		a.log.Info().Str("room", name).Str("by", r.RemoteAddr).Msg("room deleted through the admin API")
		writeJSON(w, http.StatusOK, api.Deleted{Deleted: name})
	})
	mux.HandleFunc("POST /rooms/{name}/stop", func(w http.ResponseWriter, r *http.Request) {
		var body api.StopRequest
		if err := decodeBody(r, &body, true); err != nil {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		a.changeRoom(w, r, func(rc *config.Room) {
			rc.Stopped = true
			if body.PageHTML != "" {
				rc.StopPageHTML = body.PageHTML
			}
		})
	})
	mux.HandleFunc("POST /rooms/{name}/resume", func(w http.ResponseWriter, r *http.Request) {
		a.changeRoom(w, r, func(rc *config.Room) { rc.Stopped = false })
	})
	a.registerPage(mux)
	mux.HandleFunc("GET /rooms/{name}/events/{id}/details", func(w http.ResponseWriter, r *http.Request) {
		rc := a.s.Room(r.PathValue("name"))
		if rc == nil {
			writeError(w, http.StatusNotFound, "no room named %q", r.PathValue("name"))
			return
		}
		for i := range rc.Events {
			e := &rc.Events[i]
			if e.ID != r.PathValue("id") {
				continue
			}
			eff := rc.Effective(e.EventStartTime)
			_, ph := rc.At(a.s.RingNow())
			phase := config.NoEvent.String()
			if cur, _ := rc.At(a.s.RingNow()); cur == e {
				phase = ph.String()
			}
			writeJSON(w, http.StatusOK, api.EventDetails{
				Event:    e,
				PhaseNow: phase,
				Effective: api.EventSettings{
					TotalActiveUsers:      eff.TotalActiveUsers,
					NewUsersPerMinute:     eff.NewUsersPerMinute,
					SessionDuration:       eff.SessionDuration,
					DisableSessionRenewal: eff.DisableSessionRenewal,
					QueueingMethod:        eff.QueueingMethod,
					CustomPageHTML:        eff.CustomPageHTML,
					Suspended:             eff.Suspended,
					PrequeueStartTime:     e.PrequeueStart().UTC(),
					EventStartTime:        e.EventStartTime.UTC(),
					EventEndTime:          e.EventEndTime.UTC(),
					ShuffleAtEventStart:   e.ShuffleAtEventStart,
				},
			})
			return
		}
		writeError(w, http.StatusNotFound, "room %q has no event %q", rc.Name, r.PathValue("id"))
	})
}

// putRoom creates (create: refused if it exists), replaces or, with patch,
// merges the body into a room.
func (a *API) putRoom(w http.ResponseWriter, r *http.Request, patch, create bool) {
	name := r.PathValue("name")
	cur := a.s.Room(name)
	if create && cur != nil {
		writeError(w, http.StatusConflict, "room %q exists; use PUT to replace it or PATCH to change it", name)
		return
	}
	if patch && cur == nil {
		writeError(w, http.StatusNotFound, "no room named %q to patch", name)
		return
	}
	var rc config.Room
	if patch {
		// A JSON merge patch: start from the room's settings and let the
		// body's fields replace theirs.
		b, _ := json.Marshal(cur)
		_ = json.Unmarshal(b, &rc)
	}
	if err := decodeBody(r, &rc, false); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if rc.Name == "" {
		rc.Name = name
	}
	if rc.Name != name {
		writeError(w, http.StatusBadRequest, "name: the body names room %q but the path names %q", rc.Name, name)
		return
	}
	a.writeRoom(w, r, rc, cur == nil)
}

// changeRoom applies fn to a copy of a room's settings and stores it.
func (a *API) changeRoom(w http.ResponseWriter, r *http.Request, fn func(*config.Room)) {
	cur := a.s.Room(r.PathValue("name"))
	if cur == nil {
		writeError(w, http.StatusNotFound, "no room named %q", r.PathValue("name"))
		return
	}
	var rc config.Room
	b, _ := json.Marshal(cur)
	_ = json.Unmarshal(b, &rc)
	fn(&rc)
	a.writeRoom(w, r, rc, false)
}

// writeRoom validates a room against the others and stores it.
func (a *API) writeRoom(w http.ResponseWriter, r *http.Request, rc config.Room, created bool) {
	if rc.TurnstileSecret == api.RedactedSecret {
		// A room read from the API and applied back: keep its secret.
		cur := a.s.Room(rc.Name)
		if cur == nil || cur.TurnstileSecret == "" {
			writeError(w, http.StatusUnprocessableEntity, "turnstile_secret: %q stands for the room's current secret, and room %q has none; send the secret itself", api.RedactedSecret, rc.Name)
			return
		}
		rc.TurnstileSecret = cur.TurnstileSecret
	}
	if err := a.s.CheckRoom(&rc); err != nil {
		writeError(w, http.StatusUnprocessableEntity, "%v", err)
		return
	}
	if err := a.s.StoreRoom(&rc); err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	verb := "changed"
	status := http.StatusOK
	if created {
		verb, status = "created", http.StatusCreated
	}
	a.log.Info().Str("room", rc.Name).Str("by", r.RemoteAddr).Msgf("room %s through the admin API", verb)
	writeJSON(w, status, redacted(rc))
}

// redacted is a room as the admin API shows it: its secret, if it has one,
// replaced by api.RedactedSecret. The API never returns a secret: whoever can
// read the API (admin_read_open, a leaked read path) would learn it.
func redacted(rc config.Room) config.Room {
	if rc.TurnstileSecret != "" {
		rc.TurnstileSecret = api.RedactedSecret
	}
	return rc
}

func decodeBody(r *http.Request, v any, allowEmpty bool) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, config.MaxConfigSize+1))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if len(body) > config.MaxConfigSize {
		return fmt.Errorf("body is larger than %d bytes", config.MaxConfigSize)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return nil
		}
		return errors.New("the body is empty: send the room as JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode JSON: %w", err)
	}
	return nil
}
