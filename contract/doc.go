// Package contract is the core every contract of ckptstore shares — the
// checkpoint contract (package driver), the persistence contract (package
// persist/driver) and those to come — and every engine (memstore,
// redisstore, fdbstore) and front end (httpstore, storeurl) builds on it.
// It imports no other package of this module, so any of them may import
// it.
//
// # Invariants
//
//   - One error type. Every contract error is an *Error made by NewError:
//     a message prefix, a wire code unique across all contracts, and a
//     message. Code finds the wire code through any wrapping, and ErrorFor
//     turns a code that crossed a wire back into its sentinel, for the
//     sentinels of every contract at once; CodeIn and ErrorIn answer for
//     one contract (its errors' Prefix).
//   - One id limit. Every id, key, namespace and token of every contract
//     is 1 to MaxIDBytes bytes of valid UTF-8 (CheckID); op tokens are
//     further limited to [A-Za-z0-9_-] (ValidOpToken). A longer input is
//     refused with the contract's invalid-id sentinel.
//   - No error echoes an unbounded input. Errors quote an input with
//     QuoteShort, which shows at most 64 bytes of it and its length; an
//     error's size is bounded whatever the input's.
//   - One safe-integer rule. Every number a contract stores is within
//     ±MaxSafeInteger (2^53−1), what a JavaScript number holds exactly
//     (SafeInteger).
//   - One namespace rule. A namespace (a tenant's key space) follows the id
//     rule: 1 to MaxIDBytes bytes of valid UTF-8 (CheckNamespace).
//   - One op-token scheme. A caller names one logical write with an op
//     token (WithOpToken); a store remembers the token of a committed write
//     for OpTokenTTL on its own clock, and a retry within it reports the
//     first call's outcome.
//   - One Problem type. Every engine's Check reports broken invariants of
//     its stored state as Problems, each an error wrapping ErrCorrupt.
package contract
