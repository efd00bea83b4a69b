package gossip

import (
	"context"
	"net"
	"time"
)

// resolveTimeout bounds the look-up of one seed's name.
const resolveTimeout = 5 * time.Second

// seedAddrs turns seeds into the addresses to join. A seed "name:port"
// whose name resolves to several addresses (a Kubernetes headless Service
// lists every pod of the ring) becomes one address per resolved IP, so that
// the join reaches them all and the node's own address is left out: joining
// itself would count as a join without meeting anyone. A seed that is an
// IP address, has no port, or does not resolve goes to memberlist as given
// (memberlist resolves names too, and reports a name that does not
// resolve).
func (n *Node) seedAddrs(seeds []string) []string {
	lookup := n.cfg.LookupHost
	if lookup == nil {
		lookup = net.DefaultResolver.LookupHost
	}
	var out []string
	add := func(a string) {
		for _, o := range out {
			if o == a {
				return
			}
		}
		if a != n.addr {
			out = append(out, a)
		}
	}
	for _, s := range seeds {
		host, port, err := net.SplitHostPort(s)
		if err != nil || net.ParseIP(host) != nil {
			add(s)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
		ips, err := lookup(ctx, host)
		cancel()
		if err != nil || len(ips) == 0 {
			n.log.Debug().Err(err).Str("seed", s).Msg("seed name did not resolve here; memberlist tries it")
			add(s)
			continue
		}
		for _, ip := range ips {
			add(net.JoinHostPort(ip, port))
		}
	}
	return out
}
