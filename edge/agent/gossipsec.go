package agent

import (
	"crypto/rand"
	"fmt"
	"net"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/edge/config"
)

// How a node's gossip is authenticated. Gossip carries the rooms' settings
// and every count, so whoever can send to a node's gossip address could
// rewrite both: a ring never runs without a key unless its operator says
// so. The choices, in order:
//
//   - a key (gossip_key_file or $WAITROOM_GOSSIP_KEY; or, when the config
//     does not ask for insecure gossip, Options.GossipKeys for a process
//     that starts nodes itself, like the demo): memberlist
//     encrypts and authenticates every packet and stream with it, and the
//     gossip address may be public (the default binds every address, so a
//     ring can span machines);
//   - insecure_gossip (--insecure-gossip): no key; the node warns at start
//     and every minute, and a room's turnstile_secret stays out of what it
//     gossips;
//   - neither, on a node with no seeds: the node runs alone. It gossips on
//     loopback only (a wildcard bind address, the default, becomes
//     127.0.0.1 with the same port) with a key made up for this process, so
//     no other process can talk to it. The single-site quick start runs
//     this way;
//   - neither, on a node with seeds or a non-loopback gossip address: the
//     node refuses to start, saying how to make a key.

// gossipSecurity is what gossipSecurityOf decided.
type gossipSecurity struct {
	keys     [][]byte
	insecure bool
	bind     string // the gossip bind address to use
}

func gossipSecurityOf(cfg *config.Config, opts Options, log zerolog.Logger) (gossipSecurity, error) {
	keys, err := GossipKeysOf(cfg)
	if err != nil {
		return gossipSecurity{}, err
	}
	sec := gossipSecurity{keys: keys, bind: cfg.Gossip}
	switch {
	case len(keys) > 0:
		if cfg.InsecureGossip {
			log.Warn().Msg("insecure_gossip ignored: a gossip key is given, and gossip is authenticated with it")
		}
		return sec, nil
	case cfg.InsecureGossip:
		sec.insecure = true
		return sec, nil
	case len(opts.GossipKeys) > 0:
		sec.keys = opts.GossipKeys
		return sec, nil
	}
	host, port, err := net.SplitHostPort(cfg.Gossip)
	if err != nil {
		return gossipSecurity{}, fmt.Errorf("gossip %q: %w", cfg.Gossip, err)
	}
	if len(cfg.Seeds) == 0 && (config.IsWildcardHost(host) || config.IsLoopbackHost(host)) {
		if config.IsWildcardHost(host) {
			sec.bind = net.JoinHostPort("127.0.0.1", port)
		}
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return gossipSecurity{}, fmt.Errorf("gossip key for a node alone: %w", err)
		}
		sec.keys = [][]byte{k}
		log.Info().Str("gossip", sec.bind).Msg("no gossip key and no seeds: this node runs alone, gossiping on loopback with a key of this process only; to form a cluster, give every node the same --gossip-key-file")
		return sec, nil
	}
	addr := net.JoinHostPort(host, port)
	if p, _ := strconv.Atoi(port); p == 0 {
		addr = host
	}
	return gossipSecurity{}, fmt.Errorf("gossip_key_file: no gossip key: anyone who reaches %s could rewrite rooms and counts. "+
		"Make one key for the cluster with 'waitroom keygen --gossip > gossip.key' and give every node --gossip-key-file gossip.key "+
		"(or gossip_key_file, or $%s), or pass --insecure-gossip (insecure_gossip: true) to run unauthenticated", addr, GossipKeyEnv)
}
