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
// property read per message, and for a string a scan of its 24 or 27
// characters. A reviver on JSON.parse would visit every value of every
// message.

/** The value of the n decimal digits of s at i, or -1 when one is not a digit. */
function digits(s: string, i: number, n: number): number {
  let v = 0
  for (let j = i; j < i + n; j++) {
    const c = s.charCodeAt(j) - 48
    if (c < 0 || c > 9) return -1
    v = v * 10 + c
  }
  return v
}

/** The greatest |time value| of a Date: 100 000 000 days either side of 1970. */
const maxTime = 8.64e15

/**
 * dateOf returns the Date whose toISOString() is s, or undefined when there
 * is none. It reads the form itself (YYYY-MM-DDTHH:mm:ss.sssZ, or ±YYYYYY
 * for a year outside 0…9999, as toISOString writes it) and computes the
 * time, rather than `new Date(s)` and a toISOString() to compare: the same
 * answer (test/dates.test.ts checks it against that round trip), without
 * a Date parse and a string per message.
 */
export function dateOf(s: string): Date | undefined {
  const n = s.length
  // o: where the month's '-' is.
  const o = n === 24 ? 4 : n === 27 ? 7 : 0
  if (
    o === 0 ||
    s.charCodeAt(o) !== 0x2d /* - */ ||
    s.charCodeAt(o + 3) !== 0x2d /* - */ ||
    s.charCodeAt(o + 6) !== 0x54 /* T */ ||
    s.charCodeAt(o + 9) !== 0x3a /* : */ ||
    s.charCodeAt(o + 12) !== 0x3a /* : */ ||
    s.charCodeAt(o + 15) !== 0x2e /* . */ ||
    s.charCodeAt(o + 19) !== 0x5a /* Z */
  ) {
    return undefined
  }
  let year: number
  if (o === 4) {
    year = digits(s, 0, 4)
    if (year < 0) return undefined
  } else {
    // Six digits and a sign only for a year outside 0…9999; never -000000.
    const a = digits(s, 1, 6)
    const sign = s.charCodeAt(0)
    if (a < 0) return undefined
    if (sign === 0x2b /* + */ && a > 9999) year = a
    else if (sign === 0x2d /* - */ && a > 0) year = -a
    else return undefined
  }
  const month = digits(s, o + 1, 2)
  const day = digits(s, o + 4, 2)
  const hour = digits(s, o + 7, 2)
  const minute = digits(s, o + 10, 2)
  const second = digits(s, o + 13, 2)
  const ms = digits(s, o + 16, 3)
  if (month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 || ms < 0) {
    return undefined
  }
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  const monthDays = month === 2 ? (leap ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31
  if (day > monthDays) return undefined
  // Days since 1970-01-01 of the proleptic Gregorian date, counting years
  // from March so that the leap day is the last of its year.
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yearOfEra = y - era * 400
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1
  const days = era * 146097 + yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear - 719468
  const t = days * 864e5 + hour * 36e5 + minute * 6e4 + second * 1e3 + ms
  if (t < -maxTime || t > maxTime) return undefined
  return new Date(t)
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
