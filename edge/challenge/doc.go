// Package challenge is the bot challenge's verifier, as in Cloudflare's
// "Banish bots from your Waiting Room and improve wait times for real
// users": the Turnstile-style widget a queue page carries and the check of
// the token it sends back against the provider's siteverify endpoint
// (Turnstile, hCaptcha and reCAPTCHA speak the same protocol). What the
// verdict does to a visitor is the edge's request path.
package challenge
