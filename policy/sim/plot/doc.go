// Package plot draws a simulation's runs as PNG files: active users against
// total_active_users, the queue's length, admissions per minute against
// new_users_per_minute, and the wait against the arrival minute as a
// heatmap (the figure of Cloudflare's "Waiting Room: Random Queueing and
// Custom Web/Mobile Apps").
//
// It is a package of its own so that the plotting library (gonum/plot) is
// linked only where plots are drawn, by `waitroom sim`: the simulator, and
// every package that needs it, stay free of it.
package plot
