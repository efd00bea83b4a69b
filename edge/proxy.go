package edge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom/edge/queuepage"
)

// Origin command headers: Cloudflare's name, so an origin written for it
// works unchanged, and waitroom's own.
const (
	commandHeaderCF   = "Cf-Waiting-Room-Command"
	commandHeaderOwn  = "Waitroom-Command"
	commandRevoke     = "revoke"
	defaultOriginWait = 30 * time.Second
)

// NewOriginTransport is the transport a node uses to reach an origin, tuned
// for one busy origin: many idle keep-alive
// connections (the default of two per host would make every burst dial),
// bounded dial and header timeouts, and no transparent compression (the
// visitor's Accept-Encoding goes through untouched).
func NewOriginTransport(timeout time.Duration) *http.Transport {
	if timeout <= 0 {
		timeout = defaultOriginWait
	}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}
}

// newProxy builds the reverse proxy to origin for a room (or, with rm nil,
// for unrouted requests).
func newProxy(s *Server, rm *room, origin string) (*httputil.ReverseProxy, error) {
	target, err := url.Parse(origin)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute http(s) URL", origin)
	}
	p := &httputil.ReverseProxy{
		// Rewrite (not Director) drops hop-by-hop headers and any
		// X-Forwarded-* and Forwarded the client sent before setting our
		// own, so a visitor cannot forge its address to the origin; the
		// client's X-Real-IP, which many origins also read, goes too.
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			delete(pr.Out.Header, "X-Real-Ip")
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host
		},
		Transport: NewOriginTransport(time.Duration(s.cfg.OriginTimeout)),
		// 0, not -1: ReverseProxy already flushes at once for
		// text/event-stream and bodies of unknown length; -1 would add a
		// flush per write to every ordinary response (measured: 12 µs of
		// CPU per request).
		FlushInterval: 0,
		BufferPool:    copyBuffers,
		ErrorLog:      nil,
	}
	p.ModifyResponse = func(resp *http.Response) error {
		// The header names are canonical already: looked up and deleted
		// as map keys, without canonicalizing them again on every answer.
		cmd := firstValue(resp.Header[commandHeaderCF])
		if cmd == "" {
			cmd = firstValue(resp.Header[commandHeaderOwn])
		}
		// Origin commands are for waitroom, never for the visitor.
		delete(resp.Header, commandHeaderCF)
		delete(resp.Header, commandHeaderOwn)
		v, _ := resp.Request.Context().Value(visitKey{}).(*visit)
		if v == nil {
			return nil
		}
		now := s.ringNow().Unix()
		if v.rm.revoke && strings.EqualFold(strings.TrimSpace(cmd), commandRevoke) {
			v.rm.revokeSession(v.tok)
			clearCookie(resp.Header, v.v, v.rm.cookieName, v.https)
			return nil
		}
		if v.sealed == "" {
			// Only a changed token is sent: the visitor holds this one.
			s.setCookie(resp.Header, v, now)
		}
		return nil
	}
	p.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if v, _ := r.Context().Value(visitKey{}).(*visit); v != nil {
			// The visitor was admitted: keep their session even though the
			// origin failed, so a retry does not send them to the back.
			s.setCookie(w.Header(), v, s.ringNow().Unix())
		}
		name := ""
		if rm != nil {
			name = rm.name
		}
		if errors.Is(err, context.Canceled) {
			// The visitor went away; nobody reads the answer.
			s.metrics.originErrors.WithLabelValues(name, "canceled").Inc()
			w.WriteHeader(499)
			return
		}
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			s.metrics.originErrors.WithLabelValues(name, "timeout").Inc()
			s.log.Debug().Err(err).Str("room", name).Msg("origin timed out")
			queuepage.WriteStatus(w, http.StatusGatewayTimeout, "The site is taking too long", "The web site behind this waiting room did not answer in time. Please try again in a moment; your place is kept.")
			return
		}
		s.metrics.originErrors.WithLabelValues(name, "unreachable").Inc()
		s.log.Debug().Err(err).Str("room", name).Msg("origin unreachable")
		queuepage.WriteStatus(w, http.StatusBadGateway, "The site is not reachable", "The web site behind this waiting room could not be reached. Please try again in a moment; your place is kept.")
	}
	return p, nil
}

func firstValue(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// copyBuffers are ReverseProxy's 32 KiB copy buffers, reused: without a pool
// every proxied response allocates and zeroes one (measured: 29% of the CPU
// of an admitted request).
var copyBuffers = NewCopyBufferPool()

// NewCopyBufferPool returns a fresh pool of 32 KiB copy buffers like the one
// the node's proxy uses, so a benchmark can size a plain ReverseProxy with
// the same pool against one without.
func NewCopyBufferPool() httputil.BufferPool { return &bufferPool{} }

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }
