// Package cookie owns the visitor's token: the small piece of state a waiting
// room hands to each browser and reads back on every request. It knows how to
// seal a [Token] into a cookie value, how to open one again, and how to read
// the operator's key file. It knows nothing about HTTP, cookie names or
// attributes, or admission policy; the edge decides what a token means.
//
// # Token
//
// A [Token] holds the arrival bucket (the unix minute of the first request),
// the admission time, the last counted check-in, the jittered refresh interval,
// the minute the visitor is currently counted in, the expiry and the
// infinite-queue flag. Because the token is the state, any node can decide
// about a visitor without a lookup, and a restarted node keeps every visitor's
// place as long as the keys stay the same.
//
// # Wire layout
//
// A cookie value is the unpadded URL-safe base64 ([encoding/base64.RawURLEncoding])
// of
//
//	version (1 byte, currently 1)
//	key id  (1 byte)
//	nonce   (12 bytes, random per seal, from crypto/rand)
//	ciphertext and tag (AES-256-GCM, 16-byte tag)
//
// The associated data is version, key id and the room's identity, so a token
// sealed for one room does not open in another, and neither the version nor
// the key id can be altered without failing authentication. The plaintext is
// a MessagePack array of seven elements in field order:
//
//	[Bucket, AcceptedAt, LastCheckIn, RefreshInterval, CountedMinute, ExpiresAt, Infinite]
//
// Integers use the smallest MessagePack encoding (as msgpack's compact-int
// encoders write them) and any integer encoding is accepted when reading;
// Infinite is a MessagePack boolean. A sealed value is at most 119 characters.
// Values longer than [MaxValueLen] are refused before any decoding.
//
// # Errors
//
// [Keyring.Open] never panics. Every failure wraps exactly one of
// [ErrTooLarge], [ErrMalformed], [ErrUnknownKey], [ErrAuth] or [ErrExpired],
// so the caller can count reasons with [errors.Is]. To the waiting room, any
// of them means the same thing: a new visitor, never an error page.
//
// # Expiry
//
// The browser's cookie expiry is only a hint to the browser: a client can keep
// a cookie past it, or replay a captured value. So the token carries its own
// ExpiresAt, inside the authenticated payload, and Open refuses a token whose
// ExpiresAt is before now. A queued visitor's token lives a few minutes and is
// renewed on every check-in; an admitted visitor's token lives the session
// duration after the last request. Closing the tab therefore frees the slot
// even if the client never forgets the cookie.
//
// # Key file
//
// Keys come from configuration, never from start-up randomness: a key made at
// start-up would send every visitor to the back of the queue after a restart.
// The key file is text, one key per line:
//
//	# comment
//	ID BASE64
//
// ID is a decimal number from 0 to 255, the key id written into each token.
// BASE64 is a 32-byte secret in standard or URL-safe base64, padded or not.
// Fields are separated by spaces or tabs. Blank lines are ignored, and so is
// everything from a '#' to the end of its line. The first key seals new
// tokens; every key opens tokens sealed under its id. To rotate, add a new key
// with a new id at the top, keep the old one below it for as long as old
// tokens live (the longest session duration), then remove it. Ids must be
// unique. [ParseKeys] reads the file, naming the line of any error and never
// echoing a secret; [GenerateKeyFile] writes a fresh one.
package cookie
