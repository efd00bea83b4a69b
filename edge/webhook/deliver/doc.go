// Package deliver sends a ring's webhooks. Each node watches its merged
// state for the changes an operator is told of (a room starts or stops
// queueing, its queue fills, an event enters a phase, an emergency stop, a
// room created, changed or deleted, a node joining or leaving) and makes a
// notice of each, with an id that every node that sees the same change gives
// it. Which node sends a notice is decided without a coordinator: the live
// member ranked first by rendezvous hashing of the notice's topic. The
// others keep the notice; once it is delivered the sender marks it in the
// ring's replicated marks, and they drop it. When the sender dies before it
// marks the notice, the ranking over the members still alive names another
// node, which sends it: a receiver may then get the notice twice, with the
// same Waitroom-Event-Id, and should drop the repeat (delivery is at least
// once, and once in the common case).
//
// A failed delivery is retried with exponential backoff (webhookBackoff),
// up to webhookAttempts attempts; failures are counted in
// waitroom_webhook_deliveries_total and shown in the state document.
//
// It runs after each round of the node's allocation loop
// (edge.Server.AfterEachRound) and reads the node through its exported
// methods; the notices are signed with package webhook, which a receiver
// imports to check them.
package deliver
