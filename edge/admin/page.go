package admin

import (
	"net/http"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
)

// registerPageAPI adds the admin API's page controls: the operator's
// message and the closed (sold-out) state. Each is a room change like any
// other, stored in the room's register and gossiped to every node.
//
//	POST   /rooms/{name}/message  {"message": "..."}  set ("" clears)
//	DELETE /rooms/{name}/message                      clear
//	POST   /rooms/{name}/close                        close the room
//	POST   /rooms/{name}/open                         reopen it
func (a *API) registerPage(mux *http.ServeMux) {
	mux.HandleFunc("POST /rooms/{name}/message", func(w http.ResponseWriter, r *http.Request) {
		var body api.MessageRequest
		if err := decodeBody(r, &body, false); err != nil {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		a.changeRoom(w, r, func(rc *config.Room) { rc.Message = body.Message })
	})
	mux.HandleFunc("DELETE /rooms/{name}/message", func(w http.ResponseWriter, r *http.Request) {
		a.changeRoom(w, r, func(rc *config.Room) { rc.Message = "" })
	})
	mux.HandleFunc("POST /rooms/{name}/close", func(w http.ResponseWriter, r *http.Request) {
		a.changeRoom(w, r, func(rc *config.Room) { rc.Closed = true })
	})
	mux.HandleFunc("POST /rooms/{name}/open", func(w http.ResponseWriter, r *http.Request) {
		now := a.s.RingNow()
		a.changeRoom(w, r, func(rc *config.Room) { rc.Reopen(now) })
	})
}
