package edge

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
)

// The webhook API: webhooks registered at run time, for the whole ring.
// Each is kept in a replicated register (its secret too: gossip is
// encrypted with the ring's key), so every node knows it within about two
// seconds, and the ring sends it each notice once, as it does the config
// file's webhooks. A config file's webhook of the same name wins.

const webhookPrefix = "webhook/"

func (s *Server) registerWebhookAPI(mux *http.ServeMux) {
	mux.HandleFunc("GET /webhooks", func(w http.ResponseWriter, r *http.Request) {
		out := []api.Webhook{}
		status := map[string]api.WebhookStatus{}
		for _, st := range s.webhookStatus() {
			status[st.Name] = st
		}
		for _, h := range s.allWebhooks() {
			v := api.Webhook{Webhook: h.cfg, Source: "config"}
			if h.api {
				v.Source, v.SecretFile = "api", ""
			}
			if st, ok := status[h.cfg.Name]; ok {
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
		if slices.ContainsFunc(s.cfg.Webhooks, func(h config.Webhook) bool { return h.Name == name }) {
			writeError(w, http.StatusConflict, "webhook %q is in this node's config file; give the API's another name", name)
			return
		}
		body.Secret = strings.TrimSpace(body.Secret)
		raw, _ := json.Marshal(body)
		s.node.SetRegister(webhookPrefix+name, raw)
		s.log.Info().Str("webhook", name).Str("by", r.RemoteAddr).Msg("webhook registered through the admin API")
		writeJSON(w, http.StatusOK, api.Webhook{Webhook: config.Webhook{Name: name, URL: body.URL, Events: body.Events}, Source: "api"})
	})
	mux.HandleFunc("DELETE /webhooks/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if reg, ok := s.node.Register(webhookPrefix + name); !ok || len(reg.Value) == 0 {
			writeError(w, http.StatusNotFound, "no webhook named %q registered through the admin API", name)
			return
		}
		s.node.SetRegister(webhookPrefix+name, nil)
		s.log.Info().Str("webhook", name).Str("by", r.RemoteAddr).Msg("webhook deleted through the admin API")
		writeJSON(w, http.StatusOK, api.Deleted{Deleted: name})
	})
}

// hookDef is one webhook in force, from the config file or the API.
type hookDef struct {
	cfg    config.Webhook
	secret []byte
	api    bool
}

// allWebhooks lists the webhooks in force: the config file's, then the
// API's, by name.
func (s *Server) allWebhooks() []hookDef {
	var out []hookDef
	if s.hooks != nil {
		out = append(out, s.hooks.fromConfig...)
	}
	regs := s.node.Registers(webhookPrefix)
	names := make([]string, 0, len(regs))
	for n := range regs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, reg := range names {
		name := strings.TrimPrefix(reg, webhookPrefix)
		var h api.WebhookRequest
		if len(regs[reg].Value) == 0 || json.Unmarshal(regs[reg].Value, &h) != nil {
			continue
		}
		if slices.ContainsFunc(out, func(d hookDef) bool { return d.cfg.Name == name }) {
			continue
		}
		out = append(out, hookDef{cfg: config.Webhook{Name: name, URL: h.URL, Events: h.Events}, secret: []byte(h.Secret), api: true})
	}
	return out
}

// syncTargets brings w.targets in line with the webhooks in force, keeping
// each one's counts across changes of its address or secret. Called with
// w.mu held.
func (s *Server) syncTargets(w *webhooks) {
	defs := s.allWebhooks()
	byName := map[string]*hookTarget{}
	for _, t := range w.targets {
		byName[t.cfg.Name] = t
	}
	targets := make([]*hookTarget, 0, len(defs))
	for _, d := range defs {
		t := byName[d.cfg.Name]
		if t == nil {
			t = &hookTarget{status: api.WebhookStatus{Name: d.cfg.Name}}
		}
		if !bytes.Equal(t.secret, d.secret) || t.cfg.URL != d.cfg.URL || !slices.Equal(t.cfg.Events, d.cfg.Events) {
			t.cfg, t.secret = d.cfg, d.secret
		}
		t.status.URL = d.cfg.URL
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
