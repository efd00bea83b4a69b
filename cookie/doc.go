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
// the minute the visitor is currently counted in, the expiry, the
// infinite-queue flag, the visitor's ID and whether the visitor solved the
// room's bot challenge. Because the token is the state, any node can decide
// about a visitor without a lookup, and a restarted node keeps every visitor's
// place as long as the keys stay the same.
//
// The ID is a per-visitor random number, drawn by the edge from crypto/rand at
// the visitor's first request and carried in the token from then on. It
// orders a shuffled pre-queue: when an event shuffles the visitors who waited
// for its start, each one's new place is computed from its ID, so every node
// orders them the same way without storing or exchanging anything. It must be
// unpredictable, or a visitor could choose a place; any uint64 is valid, 0
// included, and this package never draws one.
//
// Verified records that the visitor solved the room's bot challenge, so the
// edge need not ask again while the token lives. Like every field it is
// inside the authenticated payload: a client cannot set it, only replay a
// token that has it until that token's ExpiresAt.
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
// a MessagePack array of nine to eleven elements in field order:
//
//	[Bucket, AcceptedAt, LastCheckIn, RefreshInterval, CountedMinute, ExpiresAt, Infinite, ID, Verified, Arrived, Priority]
//
// The last two are written only when needed: Arrived (when inside its
// minute the visitor came) when it is not zero, Priority (the group a
// priority code admitted the visitor to, a MessagePack string of up to
// MaxCodeGroup bytes) when the visitor has one, with Arrived before it even
// when that is zero. A token with neither is the nine elements earlier
// versions wrote, and such tokens open as arriving at their bucket's start
// without a group. A reader takes arrays of up to fifteen elements and
// skips the elements after the ones it knows if they are integers,
// booleans or nil: a token of a later version, with more fields, still
// opens.
//
// Integers use the smallest MessagePack encoding (as msgpack's compact-int
// encoders write them) and any integer encoding is accepted when reading, as
// long as the value fits the field; Infinite and Verified are MessagePack
// booleans (0xc2 false, 0xc3 true), and nothing else is accepted for them. ID
// uses the whole uint64 range: above 2^32-1 it is written as a uint 64 (0xcf,
// 9 bytes), which a random ID almost always is. The payload is at most 97
// bytes (9 for each of the five int64 fields and for ID, 3 each for
// RefreshInterval and Arrived, 1 each for Infinite and Verified, 34 for a
// priority group of 32 bytes and 1 for the array header), so a sealed value
// is at most 127 bytes, 170 characters; without a group, 93 bytes and 124
// characters. Values
// longer than [MaxValueLen] are refused before any decoding. A payload of an
// earlier layout (seven elements, before ID; eight, before Verified) does not
// decode: such a token is malformed, and its visitor is treated as new.
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
//
// # Derived secrets
//
// [Keyring.Derive] turns the sealing key into a 32-byte secret for another
// purpose, named by a label: the edge derives the secret that orders shuffled
// pre-queues, so that every node holding the same key file orders them the
// same way without sharing anything else. It is HMAC-SHA-256 over the label,
// keyed with a one-way function of the sealing key computed by [NewKeyring];
// the derived secret reveals nothing about the key, and different labels give
// unrelated secrets. Only the first key counts: the keys below it do not
// change the result, but rotating to a new sealing key changes every derived
// secret.
package cookie
