package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/crowd"
)

// OriginBody is what the bench's origin answers: a small page.
var OriginBody = []byte("<!doctype html><html><head><meta charset=\"utf-8\"><title>shop</title></head><body><h1>Welcome to the shop</h1><p>" +
	strings.Repeat("Tickets for the concert go on sale now. ", 12) + "</p></body></html>\n")

// Env is the bench's world on loopback, in this process: an origin, a bare
// server answering the queue page's exact bytes, a plain reverse proxy to the
// origin and a waitroom node with two rooms, "open" (limits out of reach:
// every visitor is admitted) and "full" (limits 1/1, taken by a visitor the
// Env keeps alive: every new visitor is queued).
type Env struct {
	OriginURL string
	BareURL   string // answers QueuePage
	ProxyURL  string // plain httputil.ReverseProxy to the origin
	OpenURL   string // waitroom, room "open"
	FullURL   string // waitroom, room "full"
	// ForwardAuthAddr is the node's forward-auth endpoint (host:port), for
	// a proxy in front that asks it about every request.
	ForwardAuthAddr string

	Node *edge.Server
	// Proxy and Bare are the plain proxy's and the bare server's handlers.
	Proxy, Bare http.Handler
	// Keys are the node's cookie keys (benchmarks seal tokens with them).
	Keys *cookie.Keyring
	// QueuePage is the full room's answer to a new visitor, as captured.
	QueuePage CapturedPage

	dir     string
	servers []*http.Server
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

// CapturedPage is one response's status, headers and body.
type CapturedPage struct {
	Status int
	Header http.Header
	Body   []byte
}

// StartEnv starts everything; Close stops it.
func StartEnv(ctx context.Context) (_ *Env, err error) {
	e := &Env{}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	ctx, e.stop = context.WithCancel(ctx)
	if err := e.startOriginAndProxy(); err != nil {
		return nil, err
	}
	if err := e.startNode(ctx); err != nil {
		return nil, err
	}
	if err := e.startBare(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// startOriginAndProxy starts the origin and the plain proxy in front of it.
func (e *Env) startOriginAndProxy() (err error) {
	if e.OriginURL, err = e.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"text/html; charset=utf-8"}
		w.Write(OriginBody)
	})); err != nil {
		return fmt.Errorf("origin: %w", err)
	}
	target, _ := url.Parse(e.OriginURL)
	// A plain ReverseProxy: edge's rewrite and transport settings, the
	// defaults for the rest.
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host
		},
		Transport: OriginTransport(30 * time.Second),
	}
	e.Proxy = proxy
	if e.ProxyURL, err = e.serve(proxy); err != nil {
		return fmt.Errorf("plain proxy: %w", err)
	}
	return nil
}

// startNode starts the waitroom node, with a cookie key of its own, in
// front of the origin: room "open" admits everyone, room "full" admits one.
func (e *Env) startNode(ctx context.Context) (err error) {
	if e.dir, err = os.MkdirTemp("", "waitroom-bench-"); err != nil {
		return err
	}
	keyFile := filepath.Join(e.dir, "cookie.key")
	kf, err := cookie.GenerateKeyFile(nil)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, kf, 0o600); err != nil {
		return err
	}
	keys, err := cookie.ParseKeys(kf)
	if err != nil {
		return err
	}
	if e.Keys, err = cookie.NewKeyring(keys...); err != nil {
		return err
	}
	cfg := &config.Config{
		Node:          "bench",
		Listen:        "127.0.0.1:0",
		Admin:         "127.0.0.1:0",
		Gossip:        "127.0.0.1:0",
		GossipProfile: "local",
		CookieKeyFile: keyFile,
		Origin:        e.OriginURL,
		LogLevel:      "error",
		ForwardAuth:   config.ForwardAuthConfig{Listen: "127.0.0.1:0"},
		Rooms: []config.Room{
			{Name: "open", Path: "/open", TotalActiveUsers: config.MaxTotalActiveUsers, NewUsersPerMinute: config.MaxTotalActiveUsers},
			{Name: "full", Path: "/full", TotalActiveUsers: 1, NewUsersPerMinute: 1, CookieSuffix: "full"},
		},
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("bench config: %w", err)
	}
	node, err := edge.New(cfg, edge.RunOptions{Log: zerolog.Nop()})
	if err != nil {
		return fmt.Errorf("waitroom node: %w", err)
	}
	e.Node = node
	ready := make(chan struct{})
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		_ = node.Serve(ctx, func(*edge.Server) { close(ready) })
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		return errors.New("waitroom node did not start")
	}
	e.OpenURL = "http://" + node.PublicAddr() + "/open/"
	e.FullURL = "http://" + node.PublicAddr() + "/full/"
	e.ForwardAuthAddr = node.ForwardAuthAddr()
	return nil
}

// startBare fills the full room, captures the queue page it then answers,
// and starts the bare server that answers those exact bytes.
func (e *Env) startBare(ctx context.Context) (err error) {
	if err := e.fillFullRoom(ctx); err != nil {
		return err
	}
	page, err := capture(ctx, e.FullURL, "")
	if err != nil {
		return err
	}
	if page.Header.Get("Refresh") == "" {
		return fmt.Errorf("the full room let a new visitor in (status %d): nothing would be queued", page.Status)
	}
	e.QueuePage = page
	e.Bare = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for k, vs := range page.Header {
			switch k {
			case "Date", "Content-Length":
				continue // set by net/http, as for the node
			}
			h[k] = vs
		}
		w.WriteHeader(page.Status)
		w.Write(page.Body)
	})
	if e.BareURL, err = e.serve(e.Bare); err != nil {
		return fmt.Errorf("bare server: %w", err)
	}
	return nil
}

// serve starts an http.Server for h on loopback, set up as edge sets up its
// public listener.
func (e *Env) serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	e.servers = append(e.servers, srv)
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/", nil
}

// fillFullRoom admits one visitor to the full room (its only slot) and keeps
// that session alive for as long as the Env runs, so that every other
// visitor is queued.
func (e *Env) fillFullRoom(ctx context.Context) error {
	first, err := capture(ctx, e.FullURL, "")
	if err != nil {
		return err
	}
	if first.Header.Get("Refresh") != "" {
		return errors.New("the full room queued its first visitor")
	}
	resp := &http.Response{Header: first.Header}
	var cookies []string
	for _, c := range resp.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	if len(cookies) == 0 {
		return errors.New("the full room set no cookie for its admitted visitor")
	}
	jar := strings.Join(cookies, "; ")
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for crowd.Sleep(ctx, 20*time.Second) {
			if p, err := capture(ctx, e.FullURL, jar); err == nil {
				r := &http.Response{Header: p.Header}
				for _, c := range r.Cookies() {
					if c.Value != "" {
						jar = c.Name + "=" + c.Value
					}
				}
			}
		}
	}()
	return nil
}

// capture does one GET with its own connection.
func capture(ctx context.Context, u, cookieHeader string) (CapturedPage, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return CapturedPage{}, err
	}
	if cookieHeader != "" {
		req.Header.Set("Cookie", cookieHeader)
	}
	tr := &http.Transport{DisableKeepAlives: true, DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return CapturedPage{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return CapturedPage{}, err
	}
	return CapturedPage{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// Close stops every server and the node.
func (e *Env) Close() {
	if e.stop != nil {
		e.stop()
	}
	for _, s := range e.servers {
		_ = s.Close()
	}
	e.wg.Wait()
	if e.Node != nil {
		_ = e.Node.Close()
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
}

// OriginTransport is the transport waitroom itself uses to reach an origin,
// so the plain proxy the bench compares against differs from waitroom's
// only by waitroom.
func OriginTransport(timeout time.Duration) *http.Transport {
	return edge.NewOriginTransport(timeout)
}
