package deliver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/edge/config"
)

// Where a webhook may be sent. A webhook registered through the admin API
// makes every node of the ring POST to its address, so the node, not the
// address's owner, decides what it may reach: by default only public
// addresses (config.WebhookNetwork). The address is checked as each
// connection is made, on the IP address the name resolved to for that
// connection, so a name that resolves to a public address when registered
// and to an internal one when sent (DNS rebinding) is refused all the
// same. No redirect is followed (a public receiver could otherwise point
// the node anywhere), no proxy from the environment is used (it would be
// the address checked), and what the receiver answered is kept as its
// status code only.

// errAddressRefused is a connection refused by the webhook network's rules.
var errAddressRefused = errors.New("address not allowed for webhooks")

// blockedPrefixes are the special-purpose ranges no webhook reaches by
// default, besides those netip classifies (loopback, private, link-local,
// unspecified, multicast).
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated)
	netip.MustParsePrefix("fd00:ec2::/32"),  // cloud metadata over IPv6 (also ULA)
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("100::/64"),       // discard
	netip.MustParsePrefix("::ffff:0:0/96"),  // IPv4-mapped: checked unmapped
	netip.MustParsePrefix("2002::/16"),      // 6to4 can wrap any IPv4 address
	netip.MustParsePrefix("2001::/32"),      // Teredo, likewise
	netip.MustParsePrefix("169.254.0.0/16"), // link-local: metadata services
	netip.MustParsePrefix("fe80::/10"),      // link-local
	netip.MustParsePrefix("127.0.0.0/8"),    // loopback
	netip.MustParsePrefix("::1/128"),        // loopback
}

// webhookAddrAllowed reports whether a webhook may connect to a.
func webhookAddrAllowed(a netip.Addr, allowPrivate bool, allow []netip.Prefix) bool {
	a = a.Unmap()
	if allowPrivate {
		return true
	}
	for _, p := range allow {
		if p.Contains(a) {
			return true
		}
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || !a.IsValid() {
		return false
	}
	for _, p := range blockedPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// webhookClient is the HTTP client webhooks are sent with under the
// node's webhook network rules. The config was validated: an entry of
// allow that does not parse (never, then) allows nothing.
func webhookClient(n config.WebhookNetwork) *http.Client {
	allow, _ := n.AllowPrefixes()
	dialer := &net.Dialer{
		Timeout: webhookTimeout,
		// Control runs on the address of each connection, after the name
		// was resolved for it: the one place a rebinding cannot slip by.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", errAddressRefused, address)
			}
			if !webhookAddrAllowed(ap.Addr(), n.AllowPrivate, allow) {
				return fmt.Errorf("%w: %s is not a public address (see webhook_network)", errAddressRefused, ap.Addr())
			}
			return nil
		},
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   webhookTimeout,
		ResponseHeaderTimeout: webhookTimeout,
	}
	return &http.Client{
		Timeout:   webhookTimeout,
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// deliveryError is what a failed attempt is reported as (the state
// document's last_error and the log): the receiver's status code only,
// never its body or reason phrase, and never the webhook's URL, which may
// carry a credential.
func deliveryError(status int, err error) error {
	if err == nil {
		return fmt.Errorf("answered %d", status)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, errAddressRefused):
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			return oe.Err
		}
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("no answer within the timeout")
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return fmt.Errorf("%s failed: %v", oe.Op, oe.Err)
	}
	return errors.New("the request failed")
}
