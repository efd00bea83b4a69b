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
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/crowd"
	"github.com/waitroom/waitroom/edge/edgetest"
)

// OriginBody is what the bench's origin answers: a small page.
var OriginBody = []byte("<!doctype html><html><head><meta charset=\"utf-8\"><title>shop</title></head><body><h1>Welcome to the shop</h1><p>" +
	strings.Repeat("Tickets for the concert go on sale now. ", 12) + "</p></body></html>\n")

// Env is the bench's world on loopback, in this process: the test origin
// (edgetest.Origin, serving a small page), a bare server answering the queue
// page's exact bytes, a plain reverse proxy to the origin and a waitroom node
// (started with the harness, edgetest.OpenCluster) with two rooms, "open" (limits out of reach:
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

	Node *agent.Agent
	// Proxy and Bare are the plain proxy's and the bare server's handlers.
	Proxy, Bare http.Handler
	// Keys are the node's cookie keys (benchmarks seal tokens with them).
	Keys *cookie.Keyring
	// QueuePage is the full room's answer to a new visitor, as captured.
	QueuePage CapturedPage

	origin  *edgetest.Origin
	ring    *edgetest.Cluster
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
	if err := e.startNode(); err != nil {
		return nil, err
	}
	if err := e.startBare(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// startOriginAndProxy starts the origin and the plain proxy in front of it.
func (e *Env) startOriginAndProxy() (err error) {
	// Unrecorded: the bench sends millions of requests and measures the
	// proxies, not the origin's bookkeeping.
	if e.origin, err = edgetest.StartOrigin(edgetest.Unrecorded(), edgetest.Serving(Page(OriginBody))); err != nil {
		return err
	}
	e.OriginURL = e.origin.URL + "/"
	target, _ := url.Parse(e.OriginURL)
	e.Proxy = PlainProxy(target)
	if e.ProxyURL, err = e.serve(e.Proxy); err != nil {
		return fmt.Errorf("plain proxy: %w", err)
	}
	return nil
}

// Page is a site of one page, body, the same at every path: the origin's,
// small enough that the bench measures the proxy in front of it.
func Page(body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"text/html; charset=utf-8"}
		_, _ = w.Write(body)
	})
}

// PlainProxy is what an operator would write without a waiting room: a
// plain httputil.ReverseProxy to target, with edge's rewrite and origin
// transport and the defaults for the rest, so that it differs from
// waitroom's proxy only by waitroom.
func PlainProxy(target *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host
		},
		Transport: OriginTransport(30 * time.Second),
	}
}

// startNode starts the waitroom node, with a cookie key of its own, in
// front of the origin: room "open" admits everyone, room "full" admits one.
func (e *Env) startNode() (err error) {
	if e.ring, err = edgetest.OpenCluster(edgetest.ClusterOptions{
		Rooms: []config.Room{
			{Name: "open", Path: "/open", TotalActiveUsers: config.MaxTotalActiveUsers, NewUsersPerMinute: config.MaxTotalActiveUsers},
			{Name: "full", Path: "/full", TotalActiveUsers: 1, NewUsersPerMinute: 1, CookieSuffix: "full"},
		},
		WallClock: true,
		Serve:     true,
		Origin:    e.origin,
		Name:      func(int) string { return "bench" },
	}); err != nil {
		return err
	}
	e.ring.Edit = func(_ *edgetest.Node, cfg *config.Config) {
		cfg.LogLevel = "error"
		cfg.ForwardAuth = config.ForwardAuthConfig{Listen: "127.0.0.1:0"}
	}
	if err := e.ring.Grow(1); err != nil {
		return fmt.Errorf("waitroom node: %w", err)
	}
	if e.Keys, err = agent.LoadCookieKeys(e.ring.KeyFile); err != nil {
		return err
	}
	node := e.ring.Nodes[0].Server
	e.Node = node
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
	if e.ring != nil {
		_ = e.ring.Close()
	}
	if e.origin != nil {
		e.origin.Close()
	}
}

// OriginTransport is the transport waitroom itself uses to reach an origin,
// so the plain proxy the bench compares against differs from waitroom's
// only by waitroom.
func OriginTransport(timeout time.Duration) *http.Transport {
	return edge.NewOriginTransport(timeout)
}
