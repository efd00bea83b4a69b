// Package truth judges a waiting room's run the way the origin sees it, by
// the wall clock, whatever the nodes' minute buckets say. The simulator and
// the real-process fidelity run both feed it a plain log of visitor events
// (arrived, queued, admitted, a request to the origin, gave up, revoked,
// with times),
// and both read their figures from it, so the two measure the same thing:
//
//   - a visitor is active from its admission until session_duration after
//     its last request to the origin (with disable_session_renewal, until
//     session_duration after the admission), unless revoked;
//   - new users per minute are the admissions within a wall-clock minute;
//   - a FIFO inversion is an admission while someone who arrived in an
//     earlier wall-clock minute, and has not given up, is still waiting and
//     is let in more than InversionGrace later (or not at all);
//   - the utilisation at the first queueing is active / total_active_users
//     or admissions this minute / new_users_per_minute, whichever is larger,
//     at the moment the first visitor is queued.
//
// An admission is a node's decision when the log records one (the
// simulator's does), and otherwise a request to the origin that no live
// session covers: the origin sees a new session begin (the fidelity run's
// origin sees only that). Either way a request that reaches the origin
// after its session ran out begins a new session and counts as a new user.
//
// The package is pure: times are offsets from a wall-clock minute boundary
// (the run's t = 0), and it imports nothing of ours.
package truth
