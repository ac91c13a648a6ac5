// The wire protocol of docs/http-api.md: every method is one
// POST /v1/<method> with a JSON object body and a JSON object reply; errors
// are a non-2xx status with {code, message}.

import { CkptstoreError, errorFromWire } from './errors.js'

/** Options of createCheckpointStore, createInstanceStore and createMessageStore. */
export interface ClientOptions {
  /** The server, e.g. http://127.0.0.1:7070 (a path prefix is kept). */
  url: string
  /** Bearer token; outside --dev it picks the namespace. */
  token?: string
  /**
   * --dev server: the namespace, any well-formed string; a new name is a
   * new, empty store. When neither token nor namespace is given, a random
   * one is generated, so each created store is empty and isolated; read it
   * back from `.namespace` to open the instance or message store of the
   * same namespace.
   */
  namespace?: string
  /** The fetch to use; default the global fetch (Node ≥ 20). */
  fetch?: typeof fetch
  /** --dev server only: the clock of each request, epoch ms. */
  now?: () => number
  /** --dev server only: the namespace's lease duration, taken when a request creates it. */
  leaseDurationMs?: number
  /** --dev server only: the namespace's renew-after, taken when a request creates it. */
  renewAfterMs?: number
  /** Timeout of one attempt in ms; default 30 000. */
  timeoutMs?: number
  /** Attempts of one call, the first included (reads and writes alike); default 6 (5 retries, as the Go client), at least 1. */
  maxAttempts?: number
}

const defaultTimeoutMs = 30_000
const defaultMaxAttempts = 6
const firstBackoffMs = 20
const maxBackoffMs = 2_000

/**
 * randomToken returns 128 random bits as 22 characters of base64url: the
 * form the server accepts for an Idempotency-Key ([A-Za-z0-9_-], 1…128).
 */
export function randomToken(): string {
  const b = new Uint8Array(16)
  globalThis.crypto.getRandomValues(b)
  let s = ''
  for (const x of b) s += String.fromCharCode(x)
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** A network failure or a 503: the attempt may be repeated. */
class Retryable extends Error {
  constructor(readonly last: Error) {
    super(last.message)
  }
}

/** Transport sends the calls of one namespace to one server. */
export class Transport {
  /** The namespace header sent, or undefined when the token picks it. */
  readonly namespace: string | undefined
  private readonly base: string
  private readonly fetch: typeof fetch
  private readonly headers: Record<string, string>
  private readonly now: (() => number) | undefined
  private readonly timeoutMs: number
  private readonly maxAttempts: number

  constructor(options: ClientOptions) {
    if (options === null || typeof options !== 'object') throw new TypeError('ckptstore: options are required')
    if (typeof options.url !== 'string') throw new TypeError('ckptstore: options.url is required')
    const u = new URL(options.url) // throws on a malformed url
    if (u.protocol !== 'http:' && u.protocol !== 'https:') {
      throw new TypeError(`ckptstore: options.url must be http:// or https://, not ${u.protocol}`)
    }
    this.base = u.href.replace(/\/+$/, '')
    const f = options.fetch ?? globalThis.fetch
    if (typeof f !== 'function') throw new TypeError('ckptstore: no fetch (Node ≥ 20, or pass options.fetch)')
    this.fetch = f
    this.now = options.now
    this.timeoutMs = options.timeoutMs ?? defaultTimeoutMs
    this.maxAttempts = Math.max(1, Math.floor(options.maxAttempts ?? defaultMaxAttempts))

    this.headers = { 'content-type': 'application/json', accept: 'application/json' }
    if (options.token !== undefined) this.headers['authorization'] = `Bearer ${options.token}`
    let ns = options.namespace
    if (ns === undefined && options.token === undefined) ns = `ts-${randomToken()}`
    if (ns !== undefined) {
      if (typeof ns !== 'string' || ns === '') throw new TypeError('ckptstore: options.namespace must be a non-empty string')
      // encodeURIComponent throws on a lone surrogate, the one string it
      // cannot encode as UTF-8: such a name is refused here.
      this.headers['ckpt-namespace'] = encodeURIComponent(ns)
    }
    this.namespace = ns
    if (options.leaseDurationMs !== undefined) this.headers['ckpt-lease-duration-ms'] = String(options.leaseDurationMs)
    if (options.renewAfterMs !== undefined) this.headers['ckpt-renew-after-ms'] = String(options.renewAfterMs)
  }

  /**
   * call sends one logical call, repeating it on network errors and 503
   * with backoff. A write carries one Idempotency-Key on every attempt, so
   * the store answers a repeat of a committed write with that write's
   * success instead of doing it again.
   */
  async call(method: string, body: object, kind: 'read' | 'write'): Promise<Record<string, unknown>> {
    const payload = JSON.stringify(body)
    const key = kind === 'write' ? randomToken() : undefined
    let last: Error | undefined
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      if (attempt > 1) await sleep(backoff(attempt))
      try {
        return await this.attempt(method, payload, key)
      } catch (err) {
        if (!(err instanceof Retryable)) throw err
        last = err.last
      }
    }
    throw last ?? new CkptstoreError('NETWORK_ERROR', 'no attempt was made')
  }

  private async attempt(method: string, payload: string, key: string | undefined): Promise<Record<string, unknown>> {
    const headers: Record<string, string> = { ...this.headers }
    // The clock is read per attempt: it is the clock of this request.
    if (this.now) headers['ckpt-now'] = JSON.stringify(this.now())
    if (key !== undefined) headers['idempotency-key'] = key
    const url = `${this.base}/v1/${method}`
    let res: Response
    let text: string
    try {
      res = await this.fetch(url, {
        method: 'POST',
        headers,
        body: payload,
        signal: AbortSignal.timeout(this.timeoutMs),
      })
      // A body cut off mid-way fails here, like a lost connection.
      text = await res.text()
    } catch (err) {
      const timeout = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')
      throw new Retryable(
        timeout
          ? new CkptstoreError('TIMEOUT', `ckptstore ${method}: no reply within ${this.timeoutMs} ms`, undefined, { cause: err })
          : new CkptstoreError('NETWORK_ERROR', `ckptstore ${method}: ${errorText(err)}`, undefined, { cause: err }),
      )
    }
    if (res.ok) {
      const reply = parseObject(text)
      if (reply === undefined) {
        throw new CkptstoreError('BAD_RESPONSE', `ckptstore ${method}: reply is not a JSON object`, res.status)
      }
      return reply
    }
    const e = parseObject(text)
    const err =
      e !== undefined && typeof e['code'] === 'string'
        ? errorFromWire(e['code'], typeof e['message'] === 'string' ? e['message'] : e['code'], res.status)
        : new CkptstoreError(res.status === 503 ? 'UNAVAILABLE' : `HTTP_${res.status}`, `ckptstore ${method}: HTTP ${res.status}`, res.status)
    if (res.status === 503) throw new Retryable(err)
    throw err
  }
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text)
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : ''
  return err.message + cause
}

/** The wait before an attempt: exponential, capped, with jitter so that many clients do not retry in step. */
function backoff(attempt: number): number {
  const d = Math.min(maxBackoffMs, firstBackoffMs * 2 ** (attempt - 2))
  return d / 2 + Math.random() * (d / 2)
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/**
 * field returns reply[name], or fails with BAD_RESPONSE when the server
 * left it out: a reply that is not the protocol's is reported, not guessed.
 */
export function field<T>(reply: Record<string, unknown>, method: string, name: string): T {
  if (!(name in reply)) {
    throw new CkptstoreError('BAD_RESPONSE', `ckptstore ${method}: reply has no "${name}"`)
  }
  return reply[name] as T
}
