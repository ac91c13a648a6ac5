// createStreamDurability: a run's event log (TanStack's
// UpsertableStreamDurability) in a Durable Stream of ckptserver
// (docs/streams.md).
//
// Invariants:
//   - The log of a run is one JSON-mode stream; each chunk is one message,
//     so a position of the stream (ckptserver counts messages in JSON mode)
//     is a chunk's index, and the offset after chunk k is the server's
//     offset of position k. An offset this adapter hands out is that
//     server offset with the stream's name: `ckpt:v1:<name>:<offset>`
//     (the name percent-encoded), so an offset of another run is told
//     apart.
//   - Every write of one adapter (create, append, close) goes through one
//     queue, in order, as an idempotent producer (Producer-Id, -Epoch,
//     -Seq): a retried request after a lost reply is stored once, and the
//     server fences a lower epoch.
//   - read holds one reply at a time (at most maxReplyBytes); snapshot
//     never waits (catch-up reads until the reply that reaches the tail).
//   - upsert checks its whole batch before it writes, and writes only the
//     entries past the tail, in one producer append conditional on that
//     tail (Ckpt-Expect-Offset): all of them at the offsets they name, or
//     none. A stored chunk is never replaced (readers may have it).

import { viewable } from './call.js'
import { CkptstoreError } from './errors.js'
import { handled } from './persistence.js'
import { randomToken, replyError, Transport, type ClientOptions, type StreamReply } from './transport.js'

/** One entry of a run's log: a chunk and the offset after it. */
export interface StreamDurabilityEntry<C = any> {
  offset: string
  chunk: C
}

/**
 * A run's event log on a ckptserver: TanStack's UpsertableStreamDurability
 * (@tanstack/ai), with the namespace and the stream's name. The chunk
 * type defaults to any, as the checkpoint store's message type does, so
 * the log goes wherever TanStack expects an UpsertableStreamDurability;
 * name it (`createStreamDurability<StreamChunk>(…)`) to have chunks
 * checked. Members are function-typed properties, as TanStack's are.
 */
export interface StreamDurabilityClient<C = any> {
  /** The namespace of the log (generated when none was given against a --dev server). */
  readonly namespace: string | undefined
  /** The stream's name in that namespace: `<streamPrefix>/<runId>` unless `stream` was given. */
  readonly stream: string
  /** The resume offset of the request (Last-Event-ID, else ?offset), or the source's offset, or null for a producer. */
  resumeFrom: () => string | null
  /**
   * Stores the chunks, in order, as one atomic append, and returns the
   * offset of each. Rejects with the server's code: PRODUCER_STALE_EPOCH
   * (403) when a higher epoch wrote, STREAM_CLOSED after close.
   */
  append: (chunks: Array<C>) => Promise<Array<string>>
  /**
   * The chunks after offset (or from the start for '-1', or from the tail
   * for 'now'), oldest first, waiting for more until the log is closed or
   * signal aborts (then it ends without an error). A terminal chunk does
   * not end it. A log that does not exist rejects with STREAM_NOT_FOUND.
   */
  read: (offset: string, signal?: AbortSignal) => AsyncIterable<{ offset: string; chunk: C }>
  /** Closes the log, so readers end; a second close, or a log closed already, resolves. */
  close: () => Promise<void>
  /** Every entry stored now, in order, without waiting; [] for a log that does not exist. */
  snapshot: () => Promise<Array<{ offset: string; chunk: C }>>
  /**
   * Persists entries at offsets this log minted or continues: an entry at
   * a stored offset must be the chunk stored there (JSON-equal) and is not
   * written again; the others, in batch order, must continue the tail one
   * by one (tail+1, tail+2, …: the log has no holes) and are stored in one
   * append. Validates the whole batch first and rejects, having written
   * nothing: a hole in the array, an offset repeated in the batch
   * (STREAM_UPSERT_INVALID); an offset the store did not mint (another
   * log's, a sentinel, position 0: STREAM_OFFSET_INVALID); a new offset
   * that leaves a hole or comes before an earlier one
   * (STREAM_UPSERT_INVALID); a different chunk at a stored offset
   * (STREAM_UPSERT_CONFLICT: the log is append-only, and a reader may have
   * had the stored chunk). The append applies only while the tail is the
   * one checked, so another writer's append in between rejects the call
   * whole (STREAM_UPSERT_CONFLICT), and a retry after a lost reply stores
   * it once. Returns the offsets in the order given.
   */
  upsert: (entries: Array<{ chunk: C; offset: string }>) => Promise<Array<string>>
}

/** Which run a log is: a run id and, for a reader, the offset it resumes from. */
export interface StreamDurabilitySource {
  /** The run: the stream is `<streamPrefix>/<runId>`. */
  runId: string
  /** What resumeFrom() returns; default null (a producer, or a reader from the start). */
  offset?: string | null | undefined
}

/** The members of a Request the adapter reads: its headers and url. */
export interface StreamDurabilityRequest {
  readonly headers: { get(name: string): string | null }
  readonly url: string
}

/** Options of createStreamDurability: the client's, and the log's. */
export interface StreamDurabilityOptions extends ClientOptions {
  /** The first segment of the stream's name; default 'runs' (the name TanStack's durableStream uses too). */
  streamPrefix?: string | undefined
  /** The stream's whole name, in place of `<streamPrefix>/<runId>`. */
  stream?: string | undefined
  /**
   * The producer's id; default a random one per adapter. One (id, epoch)
   * belongs to one adapter: an adapter that takes over an id sends a
   * higher epoch, or its appends read as the old one's duplicates.
   */
  producerId?: string | undefined
  /** Producer-Epoch of every write, default 0: the server refuses a lower epoch than the highest it has seen (PRODUCER_STALE_EPOCH). */
  producerEpoch?: number | undefined
  /**
   * 'stream': judge the epoch against the highest epoch any producer wrote
   * to the stream, not only this producer id (ckptserver's
   * `Ckpt-Producer-Fence: stream`), so a new adapter of a lower epoch is
   * refused too.
   */
  producerFence?: 'stream' | undefined
  /** Stream-TTL of a stream this adapter creates, in seconds (a sliding window from its last access); default none. */
  ttlSeconds?: number | undefined
  /**
   * How long a read from '-1' or 'now' waits for a stream that does not
   * exist yet (its producer has not written) before it rejects with
   * STREAM_NOT_FOUND; default 100 ms, as memoryStream's first-chunk
   * deadline. A stream that exists is read until it is closed.
   */
  joinDeadlineMs?: number | undefined
  /** The largest reply a read takes, in bytes; default 32 MiB (ckptserver sends at most 1 MiB, or one message). */
  maxReplyBytes?: number | undefined
}

const offsetPrefix = 'ckpt:v1:'
const serverOffset = /^(\d{16})_(\d{16})$/
const defaultMaxReplyBytes = 32 << 20

/** A server offset, split: the reserved field and the position. */
interface Pos {
  reserved: string
  pos: number
}

function parseServerOffset(s: string | undefined): Pos | undefined {
  const m = s === undefined ? null : serverOffset.exec(s)
  if (m === null) return undefined
  const pos = Number(m[2])
  return Number.isSafeInteger(pos) ? { reserved: m[1]!, pos } : undefined
}

function formatServerOffset(p: Pos): string {
  return `${p.reserved}_${String(p.pos).padStart(16, '0')}`
}

function invalid(code: string, message: string): CkptstoreError {
  return new CkptstoreError(code, `ckptstore streams: ${message}`)
}

/** JSON-equality of two JSON values, objects' keys in any order. */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) {
    const bb = b as unknown[]
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]))
  }
  const ao = a as Record<string, unknown>
  const bo = b as Record<string, unknown>
  const keys = Object.keys(ao)
  return keys.length === Object.keys(bo).length && keys.every((k) => Object.hasOwn(bo, k) && jsonEqual(ao[k], bo[k]))
}

function isRequest(s: unknown): s is StreamDurabilityRequest {
  return typeof s === 'object' && s !== null && typeof (s as { url?: unknown }).url === 'string' && typeof (s as { headers?: { get?: unknown } }).headers?.get === 'function'
}

function queryParam(url: string, name: string): string | null {
  try {
    return new URL(url).searchParams.get(name)
  } catch {
    return null
  }
}

/** The state one adapter's views share: its producer and what its writes learned. */
interface Producer {
  /** Settles when every write queued so far has. */
  queue: Promise<unknown>
  created: boolean
  seq: number
  /** The tail after this adapter's last write, when known. */
  tail: Pos | undefined
  closing: Promise<void> | undefined
}

/**
 * createStreamDurability opens the event log of one run on a ckptserver
 * (docs/streams.md) as TanStack's UpsertableStreamDurability: put it where
 * memoryStream(…) or durableStream(…) would go, with the options of the
 * client's other stores (url, token or namespace, TLS, headers). source is
 * the incoming Request (the run from X-Run-Id, else ?runId; the resume
 * offset from Last-Event-ID, else ?offset) or `{ runId, offset }`. A
 * request that names no run, and names none through an offset of this
 * adapter, throws: a made-up run would write where no reader looks.
 *
 * The stream is created (JSON mode) by the first append or close; the
 * adapter appends as an idempotent producer, so a write retried after a
 * lost reply is stored once, and with producerEpoch a stale host is
 * fenced. Promises it returns are marked handled (no unhandledRejection
 * when a caller attaches its handler late).
 */
export function createStreamDurability<C = any>(
  source: StreamDurabilityRequest | StreamDurabilitySource,
  options: StreamDurabilityOptions,
): StreamDurabilityClient<C> {
  if (source === null || typeof source !== 'object') throw new TypeError('ckptstore: createStreamDurability takes a Request or { runId }')
  if (options === null || typeof options !== 'object') throw new TypeError('ckptstore: options are required')
  let resume: string | null
  let runId: string | null
  if (isRequest(source)) {
    resume = source.headers.get('Last-Event-ID') || queryParam(source.url, 'offset')
    runId = source.headers.get('X-Run-Id') || queryParam(source.url, 'runId')
  } else {
    resume = source.offset ?? null
    runId = source.runId
  }
  const fromOffset = resume !== null && resume.startsWith(offsetPrefix) ? decodeName(resume) : undefined
  let name: string
  if (options.stream !== undefined) name = options.stream
  else if (runId !== null && runId !== undefined) {
    if (typeof runId !== 'string' || runId === '' || /[\r\n]/.test(runId)) throw new TypeError(`ckptstore: Invalid runId (must be non-empty and contain no CR/LF): ${JSON.stringify(runId)}`)
    name = `${options.streamPrefix ?? 'runs'}/${runId}`
  } else if (fromOffset !== undefined) name = fromOffset
  else throw new TypeError('ckptstore: a runId is required: an X-Run-Id header or a ?runId query, or { runId }')
  if (typeof name !== 'string' || name === '' || new TextEncoder().encode(name).byteLength > 1024) {
    throw new TypeError('ckptstore: the stream name must be 1 to 1024 bytes')
  }
  const stream = name
  const mine = `${offsetPrefix}${encodeURIComponent(stream)}:`
  if (resume !== null && resume !== '-1' && resume !== 'now' && parseOwn(resume) === undefined) {
    throw invalid('STREAM_OFFSET_INVALID', `the resume offset ${JSON.stringify(resume)} is not an offset of stream ${JSON.stringify(stream)}`)
  }
  const epoch = options.producerEpoch ?? 0
  if (!Number.isSafeInteger(epoch) || epoch < 0) throw new TypeError('ckptstore: producerEpoch must be a non-negative safe integer')
  const producerId = options.producerId ?? `ckpt-${randomToken()}`
  if (typeof producerId !== 'string' || producerId === '' || /[\r\n]/.test(producerId)) throw new TypeError('ckptstore: invalid producerId')
  if (options.producerFence !== undefined && options.producerFence !== 'stream') throw new TypeError("ckptstore: producerFence must be 'stream'")
  const ttl = options.ttlSeconds
  if (ttl !== undefined && (!Number.isSafeInteger(ttl) || ttl < 1)) throw new TypeError('ckptstore: ttlSeconds must be a positive integer')
  const maxBytes = options.maxReplyBytes ?? defaultMaxReplyBytes
  const joinDeadlineMs = options.joinDeadlineMs ?? 100
  if (typeof joinDeadlineMs !== 'number' || !(joinDeadlineMs >= 0)) throw new TypeError('ckptstore: joinDeadlineMs must be a number ≥ 0')
  if (typeof maxBytes !== 'number' || !(maxBytes > 0)) throw new TypeError('ckptstore: maxReplyBytes must be a number > 0')
  const path = `/streams/${encodeURIComponent(stream)}`
  const producer: Producer = { queue: Promise.resolve(), created: false, seq: 0, tail: undefined, closing: undefined }

  /** The server offset of one of this adapter's offsets, or undefined when it is not one. */
  function parseOwn(offset: string): Pos | undefined {
    if (typeof offset !== 'string' || !offset.startsWith(mine)) return undefined
    return parseServerOffset(offset.slice(mine.length))
  }
  const own = (p: Pos) => mine + formatServerOffset(p)

  return viewable(new Transport(options), (t): StreamDurabilityClient<C> => {
    const send = (method: 'GET' | 'PUT' | 'POST', query: string, extra: Record<string, string>, body: string | undefined, signal?: AbortSignal) =>
      t.streamRequest(method, path + query, extra, body, { signal, retry: true, maxBytes })

    /** serial runs f after every write queued before it. */
    const serial = <R>(f: () => Promise<R>): Promise<R> => {
      const p = producer.queue.then(f, f)
      producer.queue = p.catch(() => {})
      return p
    }

    const ensureCreated = async (): Promise<void> => {
      if (producer.created) return
      const extra: Record<string, string> = { 'content-type': 'application/json' }
      if (ttl !== undefined) extra['stream-ttl'] = String(ttl)
      const r = await send('PUT', '', extra, undefined)
      if (r.status === 200 || r.status === 201) {
        producer.tail = parseServerOffset(r.header('stream-next-offset'))
      } else {
        const err = replyError(`create ${stream}`, r)
        // It exists with another configuration or closure (closed, say):
        // the writes that follow say what is wrong, if anything is.
        if (err.code !== 'STREAM_EXISTS') throw err
      }
      producer.created = true
    }

    /**
     * write sends one producer request (a batch, or the close) and returns
     * its reply. A seq the server never stored (the outcome of an earlier
     * write was lost) is taken back: the server names the seq it expects.
     */
    const write = async (body: string | undefined, close: boolean, more: Record<string, string> = {}): Promise<StreamReply> => {
      await ensureCreated()
      for (let tries = 0; ; tries++) {
        const seq = producer.seq
        const extra: Record<string, string> = {
          ...more,
          'content-type': 'application/json',
          'producer-id': producerId,
          'producer-epoch': String(epoch),
          'producer-seq': String(seq),
        }
        if (close) extra['stream-closed'] = 'true'
        if (options.producerFence === 'stream') extra['ckpt-producer-fence'] = 'stream'
        let r: StreamReply
        try {
          r = await send('POST', '', extra, body)
        } catch (err) {
          // The outcome is unknown: the seq stays used, and the next write
          // learns from the server whether it was stored.
          producer.seq = seq + 1
          throw err
        }
        if (r.status === 409 && tries === 0) {
          const expected = Number(r.header('producer-expected-seq'))
          if (Number.isSafeInteger(expected) && expected < seq && expected >= 0) {
            producer.seq = expected
            continue
          }
        }
        if (r.status === 200 || r.status === 204) producer.seq = seq + 1
        return r
      }
    }

    const append = async (chunks: Array<C>): Promise<Array<string>> => {
      if (!Array.isArray(chunks)) throw new TypeError('ckptstore: append takes an array of chunks')
      const parts = Array.from(chunks, (c, i) => {
        const s = c === undefined ? undefined : JSON.stringify(c)
        if (s === undefined) throw invalid('STREAM_INVALID_CHUNK', `chunks[${i}] is not a JSON value`)
        return s
      })
      if (parts.length === 0) return []
      return serial(async () => {
        await ensureCreated()
        const before = producer.tail
        const r = await write(`[${parts.join(',')}]`, false)
        if (r.status !== 200 && r.status !== 204) throw replyError(`append ${stream}`, r)
        const next = parseServerOffset(r.header('stream-next-offset'))
        if (next === undefined) throw invalid('BAD_RESPONSE', 'the append reply has no Stream-Next-Offset')
        producer.tail = next
        // 200: this batch is the n messages before next (one atomic step).
        // 204: a retry met the batch stored by the attempt whose reply was
        // lost; it is the n before next only if nothing came after it.
        if (r.status === 204 && (before === undefined || before.pos + parts.length !== next.pos || before.reserved !== next.reserved)) {
          throw invalid(
            'STREAM_OFFSETS_UNKNOWN',
            'the server took the batch for one it had stored (a retry after a lost reply, or another adapter with this producerId and epoch), and other writes came since, so its offsets are unknown',
          )
        }
        return parts.map((_, i) => own({ reserved: next.reserved, pos: next.pos - parts.length + 1 + i }))
      })
    }

    const close = (): Promise<void> => {
      if (producer.closing) return producer.closing
      const p = serial(async () => {
        const r = await write(undefined, true)
        if (r.status === 200 || r.status === 204) return
        const err = replyError(`close ${stream}`, r)
        if (err.code === 'STREAM_CLOSED') return // closed already: what close asks for
        throw err
      })
      producer.closing = p
      p.catch(() => {
        if (producer.closing === p) producer.closing = undefined
      })
      return p
    }

    /**
     * page is one reply of a read from `from` (a server offset or
     * sentinel): its entries, and where and how it ended; undefined for a
     * stream that does not exist.
     */
    const page = async (from: string, live: boolean, cursor: string | undefined, signal: AbortSignal | undefined) => {
      let q = `?offset=${encodeURIComponent(from)}`
      if (live) q += '&live=long-poll'
      if (cursor !== undefined) q += `&cursor=${encodeURIComponent(cursor)}`
      const r = await send('GET', q, {}, undefined, signal)
      if (r.status === 404) return undefined
      if (r.status !== 200 && r.status !== 204) throw replyError(`read ${stream}`, r)
      const next = parseServerOffset(r.header('stream-next-offset'))
      if (next === undefined) throw invalid('BAD_RESPONSE', 'the read reply has no Stream-Next-Offset')
      const closed = r.header('stream-closed')?.toLowerCase() === 'true'
      const upToDate = r.header('stream-up-to-date')?.toLowerCase() === 'true'
      let messages: unknown[] = []
      if (r.status === 200) {
        const ct = (r.header('content-type') ?? '').toLowerCase()
        if (!ct.startsWith('application/json')) throw invalid('CONTENT_TYPE_MISMATCH', `stream ${JSON.stringify(stream)} is ${ct || 'untyped'}, not application/json`)
        let v: unknown
        try {
          v = JSON.parse(r.text)
        } catch {
          throw invalid('BAD_RESPONSE', 'a read reply is not JSON')
        }
        if (!Array.isArray(v)) throw invalid('BAD_RESPONSE', 'a read reply is not a JSON array')
        messages = v
      }
      const first = next.pos - messages.length
      const start = parseServerOffset(from)
      if (first < 0 || (start !== undefined && start.pos !== first)) throw invalid('BAD_RESPONSE', 'a read reply does not line up with its offsets')
      const entries = messages.map((chunk, i) => ({ offset: own({ reserved: next.reserved, pos: first + i + 1 }), chunk: chunk as C }))
      return { entries, next, closed, upToDate, cursor: r.header('stream-cursor') }
    }

    const read = async function* (offset: string, signal?: AbortSignal): AsyncGenerator<{ offset: string; chunk: C }> {
      let from: string
      if (offset === '-1' || offset === 'now') from = offset
      else {
        const p = parseOwn(offset)
        if (p === undefined) throw invalid('STREAM_OFFSET_INVALID', `${JSON.stringify(offset)} is not an offset of stream ${JSON.stringify(stream)}`)
        from = formatServerOffset(p)
      }
      let cursor: string | undefined
      const started = Date.now()
      let pollMs = 5
      for (;;) {
        if (signal?.aborted) return
        let pg: Awaited<ReturnType<typeof page>>
        try {
          pg = await page(from, true, cursor, signal)
        } catch (err) {
          if (signal?.aborted) return
          throw err
        }
        if (pg === undefined) {
          // A join from the start may come before the producer's first
          // write (a second tab): it waits joinDeadlineMs for the stream.
          const waited = Date.now() - started
          if (from.startsWith('-') || from === 'now') {
            if (waited < joinDeadlineMs) {
              await pause(Math.min(pollMs, joinDeadlineMs - waited), signal)
              // Every 5 ms at first (a producer is usually a moment behind),
              // then backing off for a long deadline.
              if (waited >= 100) pollMs = Math.min(pollMs * 2, 250)
              continue
            }
          }
          throw new CkptstoreError(
            'STREAM_NOT_FOUND',
            `ckptstore streams: stream ${JSON.stringify(stream)} does not exist${from.startsWith('-') || from === 'now' ? ` (waited ${joinDeadlineMs} ms for a producer to create it)` : ''}`,
            404,
          )
        }
        // Offsets only move forward: a reply that neither moves nor ends
        // (a long-poll timeout) waits again with the server's cursor.
        for (const e of pg.entries) yield e
        from = formatServerOffset(pg.next)
        cursor = pg.cursor
        // The one end of a read: the producer's close, once caught up.
        if (pg.closed && pg.upToDate) return
      }
    }

    const snapshot = async (): Promise<Array<{ offset: string; chunk: C }>> => {
      const out: Array<{ offset: string; chunk: C }> = []
      let from = '-1'
      for (;;) {
        const pg = await page(from, false, undefined, undefined)
        if (pg === undefined) return out
        for (const e of pg.entries) out.push(e)
        if (pg.upToDate) return out
        if (pg.entries.length === 0) throw invalid('BAD_RESPONSE', 'a catch-up read neither moved nor reached the tail')
        from = formatServerOffset(pg.next)
      }
    }

    /**
     * compareStored reads the positions of stored (each ≤ the tail it was
     * checked against), in one pass from the lowest to the highest, and
     * rejects STREAM_UPSERT_CONFLICT at the first whose chunk is not the
     * entry's. Only the batch's chunks are kept.
     */
    const compareStored = async (stored: Array<{ i: number; pos: number; chunk: unknown }>, reserved: string): Promise<void> => {
      if (stored.length === 0) return
      const byPos = new Map(stored.map((w) => [w.pos, w]))
      let lo = Infinity
      let hi = 0
      for (const w of stored) {
        lo = Math.min(lo, w.pos)
        hi = Math.max(hi, w.pos)
      }
      let from = formatServerOffset({ reserved, pos: lo - 1 })
      for (;;) {
        const pg = await page(from, false, undefined, undefined)
        if (pg === undefined) throw invalid('STREAM_OFFSET_INVALID', `stream ${JSON.stringify(stream)} does not exist any more, so it holds none of the batch`)
        for (const e of pg.entries) {
          const w = byPos.get(parseOwn(e.offset)!.pos)
          if (w !== undefined && !jsonEqual(w.chunk, e.chunk)) {
            throw invalid('STREAM_UPSERT_CONFLICT', `entries[${w.i}] is not the chunk stored at its offset; the log is append-only, so a stored chunk is never replaced`)
          }
        }
        if (pg.next.pos >= hi) return
        if (pg.upToDate || pg.entries.length === 0) {
          // Shorter than when its tail was read: another incarnation.
          throw invalid('STREAM_OFFSET_INVALID', `stream ${JSON.stringify(stream)} no longer holds the batch's stored offsets`)
        }
        from = formatServerOffset(pg.next)
      }
    }

    const upsert = async (entries: Array<{ chunk: C; offset: string }>): Promise<Array<string>> => {
      if (!Array.isArray(entries)) throw new TypeError('ckptstore: upsert takes an array of entries')
      // What needs no state first, before any request: the shape of each
      // entry, its offset's format and stream, repeats, and the chunk.
      // Array.from visits every index, a hole too (map would skip it).
      const seen = new Set<number>()
      let reserved: string | undefined
      const wanted = Array.from(entries, (e, i) => {
        if (e === undefined || e === null || typeof e !== 'object') throw invalid('STREAM_UPSERT_INVALID', `entries[${i}] is missing: entries must be dense`)
        const p = parseOwn(e.offset)
        if (p === undefined || p.pos < 1) {
          throw invalid('STREAM_OFFSET_INVALID', `entries[${i}].offset ${JSON.stringify(e.offset)} was not minted by stream ${JSON.stringify(stream)}`)
        }
        if (seen.has(p.pos)) throw invalid('STREAM_UPSERT_INVALID', `entries[${i}].offset ${JSON.stringify(e.offset)} is repeated within the batch`)
        if (reserved !== undefined && p.reserved !== reserved) throw invalid('STREAM_OFFSET_INVALID', `entries[${i}].offset is of another incarnation of the stream`)
        reserved = p.reserved
        seen.add(p.pos)
        const json = e.chunk === undefined ? undefined : JSON.stringify(e.chunk)
        if (json === undefined) throw invalid('STREAM_INVALID_CHUNK', `entries[${i}].chunk is not a JSON value`)
        return { i, pos: p.pos, json, chunk: JSON.parse(json) as unknown }
      })
      if (wanted.length === 0) return []
      const offsets = wanted.map((w) => entries[w.i]!.offset)
      // Then against the log, in this adapter's write queue (so its own
      // appends do not move the tail under it): the tail, the stored
      // entries' chunks, and the new entries' places.
      return serial(async () => {
        const head = await page('now', false, undefined, undefined)
        const tail = head?.next.pos ?? 0 // a log that does not exist yet is empty
        if (head !== undefined && head.next.reserved !== reserved) throw invalid('STREAM_OFFSET_INVALID', 'the batch\'s offsets are of another incarnation of the stream')
        // Every position up to the tail is stored (the log has no holes),
        // so an entry there is a stored one. The new ones continue the
        // tail one by one, in batch order: no hole, none before an earlier.
        const stored: typeof wanted = []
        const fresh: typeof wanted = []
        let planned = tail
        for (const w of wanted) {
          if (w.pos <= tail) {
            stored.push(w)
            continue
          }
          if (w.pos !== planned + 1) {
            throw invalid(
              'STREAM_UPSERT_INVALID',
              `entries[${w.i}].offset is not stored and claims position ${w.pos}, where the next new one is ${planned + 1}: new offsets continue the tail (${tail}) one by one in batch order, as the log has no holes`,
            )
          }
          planned = w.pos
          fresh.push(w)
        }
        await compareStored(stored, reserved!)
        if (fresh.length === 0) return offsets
        // One append, as the adapter's producer (a retry after a lost
        // reply is the server's duplicate), on condition that the tail is
        // still the one checked: another writer's append in between makes
        // the server refuse it whole, so the batch lands at the offsets it
        // names or not at all.
        await ensureCreated()
        const expect = formatServerOffset({ reserved: reserved!, pos: tail })
        const r = await write(`[${fresh.map((w) => w.json).join(',')}]`, false, { 'ckpt-expect-offset': expect })
        if (r.status === 409 && replyError(`upsert ${stream}`, r).code === 'STREAM_TAIL_MISMATCH') {
          const now = parseServerOffset(r.header('stream-next-offset'))
          throw invalid(
            'STREAM_UPSERT_CONFLICT',
            `another writer appended to stream ${JSON.stringify(stream)} after the batch was checked (its tail moved from ${tail}${now === undefined ? '' : ` to ${now.pos}`}); nothing of the batch was written, and a retry checks it afresh`,
          )
        }
        if (r.status !== 200 && r.status !== 204) throw replyError(`upsert ${stream}`, r)
        const next = parseServerOffset(r.header('stream-next-offset'))
        if (next === undefined) throw invalid('BAD_RESPONSE', 'the upsert reply has no Stream-Next-Offset')
        producer.tail = next
        if (r.status === 200 && next.pos !== planned) throw invalid('BAD_RESPONSE', `the server placed the batch before ${next.pos}, not ${planned}`)
        if (r.status === 204) {
          // The server took the batch for one it had stored: a retry after
          // a lost reply, whose first try met the same condition (so it is
          // at the named offsets), or another adapter with this producer id
          // and epoch. What is stored there tells them apart.
          try {
            await compareStored(fresh, reserved!)
          } catch (err) {
            if (err instanceof CkptstoreError && err.code === 'STREAM_UPSERT_CONFLICT') {
              throw invalid('STREAM_OFFSETS_UNKNOWN', 'the server took the batch for one it had stored, and other chunks are at its offsets: another adapter writes with this producerId and epoch')
            }
            throw err
          }
        }
        return offsets
      })
    }

    return {
      namespace: t.namespace,
      stream,
      resumeFrom: () => resume,
      append: handled(append),
      read: (offset, signal) => handledIterable(read(offset, signal)),
      close: handled(close),
      snapshot: handled(snapshot),
      upsert: handled(upsert),
    }
  })
}

/** The stream name an offset of this adapter carries, or undefined. */
function decodeName(offset: string): string | undefined {
  const rest = offset.slice(offsetPrefix.length)
  const i = rest.lastIndexOf(':')
  if (i < 1) return undefined
  try {
    return decodeURIComponent(rest.slice(0, i))
  } catch {
    return undefined
  }
}

/**
 * handledIterable is gen as an AsyncIterable whose next, return and throw
 * promises are marked handled when made, as the adapter's other promises
 * are: a read that fails before its consumer awaits it raises no
 * unhandledRejection.
 */
function handledIterable<T>(gen: AsyncGenerator<T>): AsyncIterable<T> {
  const mark = <R>(p: Promise<R>): Promise<R> => {
    p.catch(() => {})
    return p
  }
  const it: AsyncIterableIterator<T> = {
    next: () => mark(gen.next()),
    return: (v?: unknown) => mark(gen.return(v as never)),
    throw: (e?: unknown) => mark(gen.throw(e)),
    [Symbol.asyncIterator]: () => it,
  }
  return it
}

/** pause waits ms, or less when signal aborts; it never rejects. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}
