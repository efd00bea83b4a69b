package admin

import (
	"net/http"
	"slices"
	"strings"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/webhook/deliver"
)

// The webhook API: webhooks registered at run time, for the whole ring
// (see deliver.Register), listed with the config file's.

func (a *API) registerWebhooks(mux *http.ServeMux) {
	mux.HandleFunc("GET /webhooks", func(w http.ResponseWriter, r *http.Request) {
		out := []api.Webhook{}
		hooks := a.opts.Webhooks
		if hooks == nil {
			writeJSON(w, http.StatusOK, out)
			return
		}
		status := map[string]api.WebhookStatus{}
		for _, st := range hooks.Status() {
			status[st.Name] = st
		}
		for _, h := range hooks.All() {
			v := api.Webhook{Webhook: h.Config, Source: "config"}
			if h.API {
				v.Source, v.SecretFile = "api", ""
			}
			if st, ok := status[h.Config.Name]; ok {
				v.Status = &st
			}
			out = append(out, v)
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("PUT /webhooks/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		var body api.WebhookRequest
		if err := decodeBody(r, &body, false); err != nil {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		if err := config.CheckWebhook(config.Webhook{Name: name, URL: body.URL, Events: body.Events}, body.Secret); err != nil {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		if slices.ContainsFunc(a.s.Config().Webhooks, func(h config.Webhook) bool { return h.Name == name }) {
			writeError(w, http.StatusConflict, "webhook %q is in this node's config file; give the API's another name", name)
			return
		}
		body.Secret = strings.TrimSpace(body.Secret)
		deliver.Register(a.s.Node(), name, body)
		a.log.Info().Str("webhook", name).Str("by", r.RemoteAddr).Msg("webhook registered through the admin API")
		writeJSON(w, http.StatusOK, api.Webhook{Webhook: config.Webhook{Name: name, URL: body.URL, Events: body.Events}, Source: "api"})
	})
	mux.HandleFunc("DELETE /webhooks/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if !deliver.Unregister(a.s.Node(), name) {
			writeError(w, http.StatusNotFound, "no webhook named %q registered through the admin API", name)
			return
		}
		a.log.Info().Str("webhook", name).Str("by", r.RemoteAddr).Msg("webhook deleted through the admin API")
		writeJSON(w, http.StatusOK, api.Deleted{Deleted: name})
	})
}
