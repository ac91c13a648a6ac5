// A message's createdAt on the way back. @tanstack/ai's ModelMessage
// declares `createdAt?: Date`, and TanStack's in-memory stores hand back
// the Date a harness stored (the message store keeps the objects, the
// checkpoint store a structured clone). JSON has no Date: the client sends
// a message as JSON.stringify writes it, so a Date goes as the string its
// toJSON (toISOString) makes, and the stored JSON is exactly that. Reads
// turn it back, under one rule:
//
//   a message's own top-level createdAt becomes a Date when, and only
//   when, it is a string that Date.prototype.toISOString makes, character
//   for character (new Date(s).toISOString() === s);
//
// anything else is left as it came: a message without createdAt, a number,
// null, a string that is not a date or is a date in another form
// ("2026-01-01", "…+00:00", "…Z" without milliseconds), and every other
// member at any depth. Such a Date writes back as the same string, so a
// read and a re-save never change a stored byte. The one ambiguity JSON
// leaves: a createdAt stored as a string of exactly that form reads back
// as a Date (ModelMessage declares no string there).
//
// Only the array's elements are looked at, not the whole reply: one
// property read per message, and a Date parse only for strings of the
// right length that end in Z. A reviver on JSON.parse would visit every
// value of every message.

/** The lengths of toISOString's output: 4-digit years, and ±6-digit ones. */
const isoLength = 24
const expandedIsoLength = 27

/** dateOf returns the Date whose toISOString is s, or undefined when there is none. */
export function dateOf(s: string): Date | undefined {
  const n = s.length
  if ((n !== isoLength && n !== expandedIsoLength) || s.charCodeAt(n - 1) !== 0x5a /* Z */) return undefined
  const d = new Date(s)
  if (Number.isNaN(d.getTime())) return undefined
  return d.toISOString() === s ? d : undefined
}

/**
 * reviveMessages applies the rule above to each element of messages, in
 * place (the array is the one the reply was parsed into), and returns it.
 * A value that is not an array is returned untouched.
 */
export function reviveMessages<T>(messages: T): T {
  if (!Array.isArray(messages)) return messages
  for (const m of messages as unknown[]) {
    if (m === null || typeof m !== 'object') continue
    const msg = m as { createdAt?: unknown }
    const v = msg.createdAt
    if (typeof v !== 'string') continue
    const d = dateOf(v)
    if (d !== undefined) msg.createdAt = d
  }
  return messages
}

/** reviveCheckpoint revives the messages of a checkpoint's conversation; null and non-objects pass through. */
export function reviveCheckpoint<T>(checkpoint: T): T {
  if (checkpoint !== null && typeof checkpoint === 'object') {
    reviveMessages((checkpoint as { conversation?: unknown }).conversation)
  }
  return checkpoint
}

/** reviveCheckpoints revives every checkpoint of a list. */
export function reviveCheckpoints<T>(checkpoints: T): T {
  if (Array.isArray(checkpoints)) for (const c of checkpoints as unknown[]) reviveCheckpoint(c)
  return checkpoints
}
