// The wire protocol of docs/http-api.md: every method is one
// POST /v1/<method> with a JSON object body and a JSON object reply; errors
// are a non-2xx status with {code, message}.

import { CkptstoreError, errorFromWire } from './errors.js'

/** Options of createCheckpointStore, createInstanceStore and createMessageStore. */
export interface ClientOptions {
  /** The server, e.g. http://127.0.0.1:7070 (a path prefix is kept). */
  url: string
  /** Bearer token; outside --dev it picks the namespace. */
  token?: string | undefined
  /**
   * --dev server: the namespace, any well-formed string; a new name is a
   * new, empty store. When neither token nor namespace is given, a random
   * one is generated, so each created store is empty and isolated; read it
   * back from `.namespace` to open the instance or message store of the
   * same namespace.
   */
  namespace?: string | undefined
  /**
   * The fetch to use. Without it, Node (≥ 20.16) sends the JSON calls
   * through undici's Pool and the blob calls through node:http /
   * node:https, each with shared keep-alive connections (see
   * nodeTransport), and every other runtime uses the global fetch.
   */
  fetch?: typeof fetch | undefined
  /** --dev server only: the clock of each request, epoch ms. */
  now?: (() => number) | undefined
  /** --dev server only: the namespace's lease duration, taken when a request creates it. */
  leaseDurationMs?: number | undefined
  /** --dev server only: the namespace's renew-after, taken when a request creates it. */
  renewAfterMs?: number | undefined
  /** Timeout of one attempt in ms; default 30 000. */
  timeoutMs?: number | undefined
  /** Attempts of one call, the first included (reads and writes alike); default 6 (5 retries, as the Go client), at least 1. */
  maxAttempts?: number | undefined
  /**
   * The CA certificates (PEM) that an https:// server's certificate must
   * chain to, in place of Node's bundled roots: a private CA without
   * NODE_EXTRA_CA_CERTS. Node's node:https transport only (no fetch
   * option, a URL without credentials or query); this store then has a
   * keep-alive agent of its own.
   */
  ca?: string | Uint8Array | ReadonlyArray<string | Uint8Array> | undefined
  /**
   * A node:http or node:https Agent to send through instead of the shared
   * keep-alive one (a client certificate, a proxy agent, other TLS
   * settings). Node's transport only, as ca; not with ca.
   */
  agent?: object | undefined
  /**
   * Node only: what carries the JSON calls. 'undici' (the default) is
   * undici's Pool, which costs less CPU per call than node:http (see the
   * README); while the process's timers are faked (vi.useFakeTimers,
   * @sinonjs/fake-timers, node:test's mock.timers) those calls go through
   * node:http instead, since undici waits on the global setImmediate to
   * reuse a connection. 'node:http' sends every call through node:http.
   * Without the `undici` package (a bundle that leaves it out), node:http.
   */
  nodeTransport?: 'node:http' | 'undici' | undefined
  /**
   * Aborts every call of the store made from these options: a call in
   * flight, waiting to retry, or started later rejects at once with the
   * signal's reason (an AbortError by default) and is not retried. A write
   * aborted in flight may still have committed. For one call, or one run,
   * see withCallOptions.
   */
  signal?: AbortSignal | undefined
  /**
   * Extra request headers: a record, or a function called for every
   * attempt (so a trace context read from the caller's active context
   * goes on each request: `() => { const h = {}; propagation.inject(context.active(), h); return h }`).
   * The protocol's own headers (content-type, accept, idempotency-key,
   * ckpt-*, and authorization when token is given) are never replaced.
   */
  headers?: HeadersOption | undefined
}

/** Extra request headers: fixed, or computed for each attempt. */
export type HeadersOption = Readonly<Record<string, string>> | (() => Readonly<Record<string, string>> | undefined)

/** What withCallOptions adds to the calls of a store view. */
export interface CallOptions {
  /** Aborts this view's calls (and the renewals and releases of the leases it hands out), as ClientOptions.signal. */
  signal?: AbortSignal | undefined
  /** Headers of this view's requests, after the store's own extra headers. */
  headers?: HeadersOption | undefined
}

const defaultTimeoutMs = 30_000
// The setImmediate of the process as this module found it: a test that
// fakes timers (vi.useFakeTimers, @sinonjs/fake-timers, node:test's
// mock.timers) replaces the global one later (timersFaked). (A process
// whose timers were already faked when this module loaded has only the
// fake, which timersFaked still tells by the clock it carries.)
const realSetImmediate = (globalThis as { setImmediate?: unknown }).setImmediate

/**
 * timersFaked reports whether setImmediate is no longer the one this module
 * loaded with, or is a fake-timers clock's (it carries its clock). undici
 * waits for a setImmediate before it reuses a keep-alive connection, so
 * its calls would never settle while the global one is faked; node:http
 * takes those calls then.
 */
function timersFaked(): boolean {
  const si = (globalThis as { setImmediate?: unknown }).setImmediate
  return si !== realSetImmediate || (typeof si === 'function' && (si as { clock?: unknown }).clock !== undefined)
}

const defaultMaxAttempts = 6
const firstBackoffMs = 20
const maxBackoffMs = 2_000

// base64url's alphabet: an Idempotency-Key is 16 random bytes in it.
const b64url = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
// Random bytes are drawn 4 KiB at a time (256 keys): one getRandomValues
// call, a system call on Node, per 256 writes instead of one per write.
const pool = new Uint8Array(4096)
let poolAt = pool.length

/**
 * randomToken returns 128 random bits as 22 characters of base64url: the
 * form the server accepts for an Idempotency-Key ([A-Za-z0-9_-], 1…1024).
 */
export function randomToken(): string {
  if (poolAt === pool.length) {
    globalThis.crypto.getRandomValues(pool)
    poolAt = 0
  }
  const b = pool
  const o = poolAt
  poolAt += 16
  let s = ''
  // 15 bytes as 5 groups of 3 (4 characters each), then the 16th as 2.
  for (let i = o; i < o + 15; i += 3) {
    const n = (b[i]! << 16) | (b[i + 1]! << 8) | b[i + 2]!
    s += b64url[n >>> 18]! + b64url[(n >>> 12) & 63]! + b64url[(n >>> 6) & 63]! + b64url[n & 63]!
  }
  const last = b[o + 15]!
  return s + b64url[last >>> 2]! + b64url[(last & 3) << 4]!
}

/** A network failure or a 503: the attempt may be repeated. */
class Retryable extends Error {
  constructor(readonly last: Error) {
    super(last.message)
  }
}

/** The error a caller sees of an attempt's failure. */
function unwrap(err: Error): Error {
  return err instanceof Retryable ? err.last : err
}

// Node's codes of a certificate that did not verify (OpenSSL's verify
// results as node:tls names them, and its own host-name check): the same
// certificate fails the same way on every attempt, so these are not retried.
const certificateCodes = new Set([
  'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE', 'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY', 'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID', 'CERT_HAS_EXPIRED', 'ERROR_IN_CERT_NOT_BEFORE_FIELD', 'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'CERT_CHAIN_TOO_LONG', 'CERT_REVOKED',
  'INVALID_CA', 'PATH_LENGTH_EXCEEDED', 'INVALID_PURPOSE', 'CERT_UNTRUSTED', 'CERT_REJECTED',
  'HOSTNAME_MISMATCH', 'ERR_TLS_CERT_ALTNAME_INVALID',
])
// The server's TLS alerts that refuse this client's certificate (or its
// absence), as Node's error codes spell them.
const certificateAlert = /^ERR_SSL_(?:SSLV3|TLSV1|TLSV13)_ALERT_(?:BAD_CERTIFICATE|UNSUPPORTED_CERTIFICATE|CERTIFICATE_REVOKED|CERTIFICATE_EXPIRED|CERTIFICATE_UNKNOWN|UNKNOWN_CA|CERTIFICATE_REQUIRED)$/

/**
 * reservedHeader reports whether an extra header would speak for the
 * protocol: those the transport sets (or leaves out on purpose) itself.
 * An authorization header is the caller's to add only when no token is
 * given (a proxy's own scheme, say); with a token, the token's wins.
 */
function reservedHeader(name: string): boolean {
  return name === 'content-type' || name === 'accept' || name === 'idempotency-key' || name.startsWith('ckpt-')
}

/** certificateCode is the certificate error's code in err or its causes (fetch wraps it), or undefined. */
function certificateCode(err: unknown): string | undefined {
  for (let e = err, depth = 0; e !== null && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && (certificateCodes.has(code) || certificateAlert.test(code))) return code
  }
  return undefined
}

/** What one attempt got back: a status and the whole body. */
interface Reply {
  status: number
  text: string
}

// The few members of node:http and node:https this file uses, declared here
// so that the package's types need neither @types/node nor a DOM: a Workers
// or browser build type-checks without them, and never loads the modules.
interface NodeHttpModule {
  Agent: new (options: { keepAlive: boolean; timeout?: number; ca?: string | Uint8Array | ReadonlyArray<string | Uint8Array> }) => object
  request(options: NodeRequestOptions, onResponse: (res: NodeIncomingMessage) => void): NodeClientRequest
}
interface NodeRequestOptions {
  agent: object
  hostname: string
  port: string | undefined
  path: string
  method: HttpMethod
  headers: Record<string, string>
}
/** The methods a request of this package uses: POST for the JSON and blob calls, the rest for /streams/. */
type HttpMethod = 'GET' | 'HEAD' | 'PUT' | 'POST'
interface NodeIncomingMessage {
  statusCode?: number
  complete: boolean
  headers: Record<string, string | string[] | undefined>
  setEncoding(encoding: 'utf8'): void
  on(event: 'data', f: (chunk: string) => void): void
  on(event: 'data', f: (chunk: Uint8Array) => void): void
  on(event: 'end', f: () => void): void
  on(event: 'error' | 'close', f: (err?: Error) => void): void
  pause(): void
  resume(): void
  destroy(err?: Error): void
}
interface NodeClientRequest {
  on(event: 'error', f: (err: Error) => void): void
  once(event: 'drain' | 'close', f: () => void): void
  destroy(err?: Error): void
  write(chunk: Uint8Array): boolean
  end(body?: string | Uint8Array): void
}
interface NodeProcess {
  versions?: { node?: string; bun?: string }
  getBuiltinModule?: (id: string) => unknown
}

// The few members of undici (a dependency of the Node path) this file
// uses, declared here for the same reason: the package's types, and any
// non-Node build, never see the module.
interface UndiciModule {
  Pool: new (
    origin: string,
    options: { keepAliveTimeout: number; headersTimeout: number; bodyTimeout: number; connect?: { ca: string | Uint8Array | ReadonlyArray<string | Uint8Array> } },
  ) => UndiciPool
}
interface UndiciPool {
  request(options: {
    path: string
    method: 'POST'
    headers: Record<string, string>
    body: string
    signal: AttemptSignal
  }): Promise<{ statusCode: number; body: { text(): Promise<string> } }>
}

/**
 * AttemptSignal is the abort signal undici watches for one attempt: the
 * attempt's deadline or the caller's signal fires it. undici takes any
 * object with once/removeListener, which costs less per request than an
 * AbortController and AbortSignal.any.
 */
class AttemptSignal {
  aborted = false
  reason: unknown = undefined
  private listener: (() => void) | undefined
  // undici checks that `on` exists, then listens with once.
  on(event: 'abort', f: () => void): void {
    this.once(event, f)
  }
  once(_event: 'abort', f: () => void): void {
    this.listener = f
  }
  removeListener(_event: 'abort', _f: () => void): void {
    this.listener = undefined
  }
  fire(reason: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    const f = this.listener
    this.listener = undefined
    f?.()
  }
}

/** undici's Pools, one per origin (and CA bundle), shared by every store of this module. */
const pools = new Map<string, UndiciPool>()
let undiciModule: UndiciModule | null | undefined

/**
 * loadUndici returns undici, required through node:module's createRequire
 * so that no bundler follows the import, or undefined when it cannot be
 * loaded (then node:http carries the JSON calls).
 */
function loadUndici(proc: NodeProcess): UndiciModule | undefined {
  if (undiciModule !== undefined) return undiciModule ?? undefined
  undiciModule = null
  try {
    const mod = proc.getBuiltinModule?.('node:module') as { createRequire(from: string): (id: string) => unknown } | undefined
    const u = mod?.createRequire(import.meta.url)('undici') as UndiciModule | undefined
    if (typeof u?.Pool === 'function') undiciModule = u
  } catch {
    // not installed (a bundle that left it out): node:http it is
  }
  return undiciModule ?? undefined
}

/**
 * undiciPool returns the shared Pool of origin, for the JSON calls of a
 * store on Node with neither an agent of its own nor a fetch.
 */
function undiciPool(origin: string, options: ClientOptions): UndiciPool | undefined {
  const g = globalThis as { process?: NodeProcess }
  if (options.agent !== undefined || g.process === undefined) return undefined
  const u = loadUndici(g.process)
  if (u === undefined) return undefined
  const ca = options.ca
  // A CA bundle given as one string shares a Pool; one given otherwise
  // (bytes, an array) gets its own, as it gets its own node:https agent.
  const key = ca === undefined ? origin : typeof ca === 'string' ? `${origin}\n${ca}` : undefined
  let pool = key === undefined ? undefined : pools.get(key)
  if (pool === undefined) {
    // undici's own headers and body timeouts are off: each attempt's
    // deadline covers the head and the body, one timer instead of two.
    const timeouts = { keepAliveTimeout: freeSocketTimeoutMs, headersTimeout: 0, bodyTimeout: 0 }
    pool = new u.Pool(origin, ca === undefined ? timeouts : { ...timeouts, connect: { ca } })
    if (key !== undefined) pools.set(key, pool)
  }
  return pool
}

/** The keep-alive agents, one per protocol, shared by every store of this module. */
const agents = new Map<string, object>()
/** The keep-alive agents of the CA bundles given as a string, by bundle. */
const caAgents = new Map<string, object>()

// Free keep-alive sockets are closed after this long: well inside
// ckptserver's default idle timeout (2 min), so a reused socket is rarely
// one the server is closing (and when it is, the attempt is retried).
const freeSocketTimeoutMs = 30_000

/**
 * nodeHttp returns node:http or node:https when this runs on Node itself,
 * else undefined (Deno, Bun, Workers and browsers keep fetch). It uses
 * process.getBuiltinModule (Node ≥ 20.16), so no bundler ever sees an
 * import of node:http; older Nodes use fetch.
 */
function nodeHttp(protocol: string, options: ClientOptions): { mod: NodeHttpModule; agent: object } | undefined {
  const g = globalThis as { process?: NodeProcess; Deno?: unknown; Bun?: unknown }
  const proc = g.process
  if (proc?.versions?.node === undefined || proc.versions.bun !== undefined || g.Deno !== undefined || g.Bun !== undefined) return undefined
  if (typeof proc.getBuiltinModule !== 'function') return undefined
  const mod = proc.getBuiltinModule(protocol === 'https:' ? 'node:https' : 'node:http') as NodeHttpModule | undefined
  if (mod === undefined || typeof mod.request !== 'function') return undefined
  if (options.agent !== undefined) return { mod, agent: options.agent }
  // A CA bundle has an agent of its own, shared by the stores given the
  // same bundle as one string (the usual readFileSync(…, 'utf8')).
  if (options.ca !== undefined) {
    const key = typeof options.ca === 'string' ? options.ca : undefined
    let agent = key === undefined ? undefined : caAgents.get(key)
    if (agent === undefined) {
      agent = new mod.Agent({ keepAlive: true, timeout: freeSocketTimeoutMs, ca: options.ca })
      if (key !== undefined) caAgents.set(key, agent)
    }
    return { mod, agent }
  }
  let agent = agents.get(protocol)
  if (agent === undefined) {
    agent = new mod.Agent({ keepAlive: true, timeout: freeSocketTimeoutMs })
    agents.set(protocol, agent)
  }
  return { mod, agent }
}

/**
 * The body of a raw call: a string or bytes (sent with a length, and
 * again on a retry), or a source of streams (sent chunked; again on a
 * retry only when replayable, that is when stream() makes a fresh one).
 */
export type RawBody = string | { bytes: Uint8Array } | { stream: () => ReadableStream<Uint8Array>; replayable: boolean }

/** A 2xx reply of a raw call: the status and headers, and the whole text or the body as a stream. */
export interface RawReply {
  status: number
  header: (name: string) => string | undefined
  text?: string
  body?: ReadableStream<Uint8Array>
}

/** Transport sends the calls of one namespace to one server. */
export class Transport {
  /** The namespace header sent, or undefined when the token picks it. */
  readonly namespace: string | undefined
  private readonly base: string
  private readonly fetch: typeof fetch | undefined
  private readonly node: { mod: NodeHttpModule; agent: object } | undefined
  // The JSON calls' transport on Node unless the caller asks for
  // node:http (nodeTransport), when undici loads and the caller gave no
  // agent: it costs less CPU per call than node:http (see the README).
  // While the process's timers are faked, node:http takes the calls
  // (timersFaked); the raw (blob) calls keep node:http's streaming.
  private readonly pool: UndiciPool | undefined
  private readonly hostname: string
  private readonly port: string | undefined
  private readonly pathPrefix: string
  private readonly headers: Record<string, string>
  private readonly now: (() => number) | undefined
  private readonly timeoutMs: number
  private readonly maxAttempts: number
  // Set again by with() on a copy: the store's, or a view's, abort signal
  // and extra headers.
  private signal: AbortSignal | undefined
  private headerSources: HeadersOption[]

  constructor(options: ClientOptions) {
    if (options === null || typeof options !== 'object') throw new TypeError('ckptstore: options are required')
    if (typeof options.url !== 'string') throw new TypeError('ckptstore: options.url is required')
    const u = new URL(options.url) // throws on a malformed url
    if (u.protocol !== 'http:' && u.protocol !== 'https:') {
      throw new TypeError(`ckptstore: options.url must be http:// or https://, not ${u.protocol}`)
    }
    this.base = u.href.replace(/\/+$/, '')
    // node:http only for a plain url: one with credentials, a query or a
    // fragment goes through fetch, which knows what to do with them.
    const plain = u.username === '' && u.password === '' && u.search === '' && u.hash === ''
    if (options.ca !== undefined && options.agent !== undefined) throw new TypeError('ckptstore: options.ca and options.agent exclude each other (give the agent the CA)')
    if (options.ca !== undefined && u.protocol !== 'https:') throw new TypeError('ckptstore: options.ca is for an https:// url')
    this.node = options.fetch === undefined && plain ? nodeHttp(u.protocol, options) : undefined
    if (this.node === undefined && (options.ca !== undefined || options.agent !== undefined)) {
      throw new TypeError(
        `ckptstore: options.${options.ca !== undefined ? 'ca' : 'agent'} needs the node:http(s) transport: Node ≥ 20.16, no options.fetch, a url without credentials or query`,
      )
    }
    if (options.nodeTransport !== undefined && options.nodeTransport !== 'node:http' && options.nodeTransport !== 'undici') {
      throw new TypeError(`ckptstore: options.nodeTransport must be 'node:http' or 'undici'`)
    }
    this.pool = this.node !== undefined && options.nodeTransport !== 'node:http' ? undiciPool(u.origin, options) : undefined
    this.signal = options.signal
    this.headerSources = options.headers === undefined ? [] : [options.headers]
    this.hostname = u.hostname.replace(/^\[(.*)\]$/, '$1')
    this.port = u.port === '' ? undefined : u.port
    this.pathPrefix = u.pathname.replace(/\/+$/, '')
    if (this.node === undefined) {
      const f = options.fetch ?? globalThis.fetch
      if (typeof f !== 'function') throw new TypeError('ckptstore: no fetch (Node ≥ 20, or pass options.fetch)')
      this.fetch = f
    }
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
   * with returns a transport that sends as this one does (the same server,
   * namespace and agent), with call's signal and headers added: its calls
   * abort on either signal, and carry this one's extra headers, then call's.
   */
  with(call: CallOptions): Transport {
    if (call === null || typeof call !== 'object') throw new TypeError('ckptstore: call options must be an object')
    const t = Object.assign(Object.create(Transport.prototype) as Transport, this)
    t.signal = anySignal(this.signal, call.signal)
    t.headerSources = call.headers === undefined ? this.headerSources : [...this.headerSources, call.headers]
    return t
  }

  /** aborted throws the signal's reason once it is aborted. */
  private aborted(): void {
    if (this.signal?.aborted) throw this.signal.reason
  }

  /** pauseOn waits the backoff before the next attempt, cut short by signal. */
  private pauseOn(signal: AbortSignal | undefined, attempt: number): Promise<void> {
    if (signal === undefined) return sleep(backoff(attempt))
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer)
        reject(signal.reason)
      }
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort)
        resolve()
      }, backoff(attempt))
      signal.addEventListener('abort', onAbort, { once: true })
    })
  }

  /**
   * retrying runs once up to attempts times, with backoff between them,
   * while it fails Retryable (a network error, a timeout, 503); any other
   * failure, or signal's abort, ends it at once. After the last attempt it
   * rejects with the last attempt's error.
   */
  private async retrying<T>(attempts: number, signal: AbortSignal | undefined, once: () => Promise<T>): Promise<T> {
    let last: Error | undefined
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (signal?.aborted) throw signal.reason
      if (attempt > 1) await this.pauseOn(signal, attempt)
      try {
        return await once()
      } catch (err) {
        if (!(err instanceof Retryable)) throw err
        last = err.last
      }
    }
    throw last ?? new CkptstoreError('NETWORK_ERROR', 'no attempt was made')
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
    return this.retrying(this.maxAttempts, this.signal, () => this.attempt(method, payload, key))
  }

  /** The headers of one attempt: the store's, the clock of this request, the write's key. */
  private headersFor(key: string | undefined): Record<string, string> {
    let headers: Record<string, string> = this.headers
    if (this.headerSources.length > 0) {
      // The extra headers first, by lower-case name, so that the
      // protocol's own, set after, always win.
      headers = {}
      for (const src of this.headerSources) {
        const h = typeof src === 'function' ? src() : src
        if (h === undefined) continue
        for (const [k, v] of Object.entries(h)) headers[k.toLowerCase()] = v
      }
      for (const k of Object.keys(headers)) if (reservedHeader(k)) delete headers[k]
      Object.assign(headers, this.headers)
    } else {
      headers = { ...headers }
    }
    // The clock is read per attempt: it is the clock of this request.
    if (this.now) headers['ckpt-now'] = JSON.stringify(this.now())
    if (key !== undefined) headers['idempotency-key'] = key
    return headers
  }

  private async attempt(method: string, payload: string, key: string | undefined): Promise<Record<string, unknown>> {
    const headers = this.headersFor(key)
    const res =
      this.pool !== undefined && !timersFaked()
        ? await this.sendUndici(this.pool, method, payload, headers)
        : this.node !== undefined
          ? await this.sendNode(this.node, method, payload, headers)
          : await this.sendFetch(method, payload, headers)
    const text = res.text
    if (res.status >= 200 && res.status < 300) {
      const reply = parseObject(text)
      if (reply === undefined) {
        throw new CkptstoreError('BAD_RESPONSE', `ckptstore ${method}: reply is not a JSON object`, res.status)
      }
      return reply
    }
    throw replyFailure(method, res.status, text)
  }

  private timeoutError(method: string, cause: unknown): Retryable {
    return new Retryable(new CkptstoreError('TIMEOUT', `ckptstore ${method}: no reply within ${this.timeoutMs} ms`, undefined, { cause }))
  }

  /**
   * networkError is a failure with no reply: Retryable, except a
   * certificate that did not verify, which is CERTIFICATE_ERROR at once.
   */
  private networkError(method: string, cause: unknown): Error {
    const cert = certificateCode(cause)
    if (cert !== undefined) return new CkptstoreError('CERTIFICATE_ERROR', `ckptstore ${method}: ${cert}: ${errorText(cause)}`, undefined, { cause })
    return new Retryable(new CkptstoreError('NETWORK_ERROR', `ckptstore ${method}: ${errorText(cause)}`, undefined, { cause }))
  }

  /** cutOff is a reply that ended before its last byte: a lost connection. */
  private cutOff(method: string): Retryable {
    return new Retryable(new CkptstoreError('NETWORK_ERROR', `ckptstore ${method}: the reply was cut off`))
  }

  private async sendFetch(method: string, payload: string, headers: Record<string, string>): Promise<Reply> {
    try {
      const timeout = AbortSignal.timeout(this.timeoutMs)
      const res = await this.fetch!(`${this.base}/v1/${method}`, {
        method: 'POST',
        headers,
        body: payload,
        signal: anySignal(timeout, this.signal)!,
      })
      // A body cut off mid-way fails here, like a lost connection.
      return { status: res.status, text: await res.text() }
    } catch (err) {
      throw this.fetchFailure(this.signal, method, err)
    }
  }

  /**
   * fetchFailure is what a failed fetch attempt of what rejects with:
   * signal's reason once it is aborted, else TIMEOUT for the attempt's
   * deadline (or another abort), else a network error.
   */
  private fetchFailure(signal: AbortSignal | undefined, what: string, err: unknown): unknown {
    if (signal?.aborted) return signal.reason
    const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')
    return timedOut ? this.timeoutError(what, err) : this.networkError(what, err)
  }

  /**
   * sendUndici is one POST through undici's Pool: a pooled keep-alive
   * connection, one timer for the attempt's deadline, which covers the
   * reply's body too, and the body sent as one string with its length.
   */
  private async sendUndici(pool: UndiciPool, method: string, payload: string, headers: Record<string, string>): Promise<Reply> {
    const abort = new AttemptSignal()
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      abort.fire(timeoutCause(`no reply within ${this.timeoutMs} ms`))
    }, this.timeoutMs)
    const signal = this.signal
    const onAbort = () => abort.fire(signal!.reason)
    if (signal !== undefined) {
      if (signal.aborted) onAbort()
      else signal.addEventListener('abort', onAbort, { once: true })
    }
    try {
      const res = await pool.request({ path: `${this.pathPrefix}/v1/${method}`, method: 'POST', headers, body: payload, signal: abort })
      // A body cut off mid-way fails here, like a lost connection.
      return { status: res.statusCode, text: await res.body.text() }
    } catch (err) {
      this.aborted()
      throw timedOut ? this.timeoutError(method, err) : this.networkError(method, err)
    } finally {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
  }

  /**
   * sendNode is one POST over node:http(s): a pooled keep-alive socket, one
   * timer for the attempt's deadline (no AbortSignal), the body written
   * as one string.
   */
  private sendNode(node: { mod: NodeHttpModule; agent: object }, method: string, payload: string, headers: Record<string, string>): Promise<Reply> {
    return this.nodeRequest(node, 'POST', `/v1/${method}`, headers, payload, this.signal, method, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => {
        text += chunk
      })
      return () => ({ status: res.statusCode ?? 0, text })
    })
  }

  /**
   * nodeRequest is one request over node:http(s) (path below the server's
   * prefix) with one timer for its deadline, aborted by signal. A string
   * body goes in one write: end(body) on a request with no header sent
   * yet sets Content-Length from it, no chunked encoding. read sets up the
   * reading of the reply's body (it may fail the attempt, as past a bound;
   * settled tells whether the attempt has ended) and returns what makes
   * the result once the body has come whole. A body cut off mid-way (the
   * connection closed before its last byte) is a lost connection, not a
   * reply.
   */
  private nodeRequest<T>(
    node: { mod: NodeHttpModule; agent: object },
    method: HttpMethod,
    path: string,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal | undefined,
    what: string,
    read: (res: NodeIncomingMessage, fail: (err: unknown) => void, settled: () => boolean) => () => T,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false
      const fail = (err: unknown) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        reject(err)
      }
      const onAbort = () => {
        fail(signal!.reason)
        req.destroy()
      }
      const req = node.mod.request(
        { agent: node.agent, hostname: this.hostname, port: this.port, path: `${this.pathPrefix}${path}`, method, headers },
        (res) => {
          const result = read(res, fail, () => settled)
          res.on('end', () => {
            if (settled) return
            if (!res.complete) return fail(this.cutOff(what))
            settled = true
            clearTimeout(timer)
            signal?.removeEventListener('abort', onAbort)
            resolve(result())
          })
          res.on('error', (err) => fail(this.networkError(what, err)))
          res.on('close', () => {
            if (!res.complete) fail(this.cutOff(what))
          })
        },
      )
      const timer = setTimeout(() => {
        const err = timeoutCause(`no reply within ${this.timeoutMs} ms`)
        fail(this.timeoutError(what, err))
        req.destroy(err)
      }, this.timeoutMs)
      req.on('error', (err) => fail(this.networkError(what, err)))
      signal?.addEventListener('abort', onAbort, { once: true })
      req.end(body)
    })
  }

  /**
   * raw sends one call whose request or reply is bytes, not a JSON object
   * (the blob routes). A 2xx reply comes back as it is: its text, or, when
   * streamReply is set and the reply is application/octet-stream, its body
   * as a stream; any other reply rejects as call's do. The call is repeated
   * on network errors and 503 only when its body can be sent again (a
   * string, bytes, or a stream source that makes a fresh stream); a
   * one-shot stream gets one attempt. A failure of the caller's own stream
   * rejects with that stream's error and is never repeated.
   */
  async raw(method: string, body: RawBody, extra: Record<string, string>, streamReply: boolean): Promise<RawReply> {
    const attempts = typeof body === 'string' || 'bytes' in body || body.replayable ? this.maxAttempts : 1
    return this.retrying(attempts, this.signal, async () => {
      const headers = { ...this.headersFor(undefined), ...extra }
      const res = this.node !== undefined
        ? await this.sendNodeRaw(this.node, method, body, headers, streamReply)
        : await this.sendFetchRaw(method, body, headers, streamReply)
      if (res.status >= 200 && res.status < 300) return res
      throw replyFailure(method, res.status, res.text ?? '')
    })
  }

  /**
   * sendNodeRaw is raw's attempt over node:http(s). Its timer is an idle
   * timer: it restarts with every chunk sent or received, so a long upload
   * or download that keeps moving never times out, and one that stalls for
   * timeoutMs does. A streamed request body goes chunked, written as the
   * socket takes it (write's backpressure), and a reply that comes first
   * (a refusal) stops the upload and cancels the caller's stream.
   */
  private sendNodeRaw(
    node: { mod: NodeHttpModule; agent: object },
    method: string,
    body: RawBody,
    headers: Record<string, string>,
    streamReply: boolean,
  ): Promise<RawReply> {
    return new Promise<RawReply>((resolve, reject) => {
      let settled = false
      let replied = false
      let reqClosed = false
      let sourceFailed = false
      let timer: ReturnType<typeof setTimeout> | undefined
      // Where a failure goes once the reply's body is a stream.
      let streamError: ((err: Error) => void) | undefined
      const signal = this.signal
      const onAbort = () => {
        fail(signal!.reason)
        req.destroy()
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      const fail = (err: Error) => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        if (streamError) return streamError(unwrap(err))
        if (settled) return
        settled = true
        reject(err)
      }
      const arm = () => {
        clearTimeout(timer)
        timer = setTimeout(() => {
          const err = timeoutCause(`no progress within ${this.timeoutMs} ms`)
          fail(this.timeoutError(method, err))
          req.destroy(err)
        }, this.timeoutMs)
      }
      const cutOff = () => this.cutOff(method)
      const lost = (err?: Error) => fail(this.networkError(method, err))
      const req = node.mod.request(
        { agent: node.agent, hostname: this.hostname, port: this.port, path: `${this.pathPrefix}/v1/${method}`, method: 'POST', headers },
        (res) => {
          replied = true
          arm()
          const status = res.statusCode ?? 0
          const header = nodeHeader(res)
          if (streamReply && status >= 200 && status < 300 && (header('content-type') ?? '').startsWith('application/octet-stream')) {
            settled = true
            let done = false
            const stream = new ReadableStream<Uint8Array>(
              {
                start(c) {
                  streamError = (err) => {
                    if (done) return
                    done = true
                    c.error(err)
                  }
                  res.on('data', (chunk: Uint8Array) => {
                    if (done) return
                    arm()
                    c.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
                    if ((c.desiredSize ?? 1) <= 0) res.pause()
                  })
                  res.on('end', () => {
                    clearTimeout(timer)
                    if (done) return
                    if (!res.complete) return streamError!(cutOff().last)
                    done = true
                    signal?.removeEventListener('abort', onAbort)
                    c.close()
                  })
                  res.on('error', lost)
                  res.on('close', () => {
                    if (!res.complete) fail(cutOff())
                  })
                },
                pull() {
                  res.resume()
                },
                cancel() {
                  done = true
                  clearTimeout(timer)
                  signal?.removeEventListener('abort', onAbort)
                  res.destroy()
                },
              },
              { highWaterMark: 4 },
            )
            return resolve({ status, header, body: stream })
          }
          let text = ''
          res.setEncoding('utf8')
          res.on('data', (chunk: string) => {
            arm()
            text += chunk
          })
          res.on('end', () => {
            if (settled) return
            if (!res.complete) return fail(cutOff())
            settled = true
            clearTimeout(timer)
            signal?.removeEventListener('abort', onAbort)
            resolve({ status, header, text })
          })
          res.on('error', (err) => fail(this.networkError(method, err)))
          res.on('close', () => {
            if (!res.complete) fail(cutOff())
          })
        },
      )
      req.once('close', () => {
        reqClosed = true
      })
      // An error writing the request after the reply came (the server
      // refused early and closed) is not the outcome: the reply is.
      req.on('error', (err) => {
        if (!replied && !sourceFailed) fail(this.networkError(method, err))
      })
      arm()
      if (typeof body === 'string') return req.end(body)
      if ('bytes' in body) return req.end(body.bytes)
      void (async () => {
        const reader = body.stream().getReader()
        try {
          for (;;) {
            if (replied || reqClosed) {
              await reader.cancel().catch(() => {})
              return
            }
            const { value, done } = await reader.read()
            if (done) break
            arm()
            if (value.byteLength === 0) continue
            if (!req.write(value)) {
              await new Promise<void>((r) => {
                if (reqClosed) return r()
                req.once('drain', r)
                req.once('close', r)
              })
            }
          }
          req.end()
        } catch (err) {
          // The caller's stream failed: the request is cut (the server
          // keeps nothing of it) and the call rejects with that error.
          sourceFailed = true
          const e = err instanceof Error ? err : new Error(String(err))
          signal?.removeEventListener('abort', onAbort)
          if (!settled) {
            settled = true
            clearTimeout(timer)
            reject(e)
          }
          req.destroy(e)
        } finally {
          try {
            reader.releaseLock()
          } catch {
            // a read is still pending on a cancelled reader: nothing to free
          }
        }
      })()
    })
  }

  /**
   * sendFetchRaw is raw's attempt over fetch: a streamed request body goes
   * as a ReadableStream with duplex 'half', and the idle timer restarts
   * with every chunk either way, as sendNodeRaw's does.
   */
  private async sendFetchRaw(method: string, body: RawBody, headers: Record<string, string>, streamReply: boolean): Promise<RawReply> {
    const ac = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    let timedOut = false
    const arm = () => {
      clearTimeout(timer)
      timer = setTimeout(() => {
        timedOut = true
        ac.abort(timeoutCause(`no progress within ${this.timeoutMs} ms`))
      }, this.timeoutMs)
    }
    // The caller's abort aborts the request, or the reply's stream, with
    // its reason; aborted() then rethrows that reason.
    const signal = this.signal
    const onAbort = () => {
      clearTimeout(timer)
      ac.abort(signal!.reason)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    const done = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
    let sourceError: unknown
    let sourceFailed = false
    const init: RequestInit & { duplex?: 'half' } = { method: 'POST', headers, signal: ac.signal }
    if (typeof body === 'string') init.body = body
    else if ('bytes' in body) init.body = body.bytes as Uint8Array<ArrayBuffer>
    else {
      const reader = body.stream().getReader()
      init.body = new ReadableStream<Uint8Array>({
        async pull(c) {
          let r: ReadableStreamReadResult<Uint8Array>
          try {
            r = await reader.read()
          } catch (err) {
            sourceFailed = true
            sourceError = err
            c.error(err)
            return
          }
          if (r.done) return c.close()
          arm()
          c.enqueue(r.value)
        },
        cancel(reason) {
          return reader.cancel(reason)
        },
      })
      init.duplex = 'half'
    }
    arm()
    let res: Response
    try {
      res = await this.fetch!(`${this.base}/v1/${method}`, init)
    } catch (err) {
      done()
      if (sourceFailed) throw sourceError
      this.aborted()
      throw timedOut ? this.timeoutError(method, err) : this.networkError(method, err)
    }
    const header = (name: string) => res.headers.get(name) ?? undefined
    if (streamReply && res.ok && res.body !== null && (header('content-type') ?? '').startsWith('application/octet-stream')) {
      arm()
      const reader = res.body.getReader()
      const wrap = (err: unknown) =>
        signal?.aborted ? signal.reason : unwrap(timedOut ? this.timeoutError(method, err) : this.networkError(method, err))
      const stream = new ReadableStream<Uint8Array>({
        async pull(c) {
          let r: ReadableStreamReadResult<Uint8Array>
          try {
            r = await reader.read()
          } catch (err) {
            done()
            c.error(wrap(err))
            return
          }
          if (r.done) {
            done()
            return c.close()
          }
          arm()
          c.enqueue(r.value)
        },
        cancel(reason) {
          done()
          return reader.cancel(reason)
        },
      })
      return { status: res.status, header, body: stream }
    }
    try {
      const text = await res.text()
      return { status: res.status, header, text }
    } catch (err) {
      this.aborted()
      throw timedOut ? this.timeoutError(method, err) : this.networkError(method, err)
    } finally {
      done()
    }
  }

  /**
   * streamRequest sends one request of the Durable Streams routes under
   * /streams/ (path is encoded, query included) and returns its reply,
   * whatever its status: those routes answer with statuses and headers a
   * caller acts on (201 or 200, 204, 409 with Stream-Closed). It is
   * repeated on network errors and 503 with backoff, as call is, when
   * retry is set (a read, or a write the server deduplicates). signal
   * aborts it as the store's does. A reply over maxBytes fails with
   * RESPONSE_TOO_LARGE, so a read costs bounded memory.
   */
  async streamRequest(
    method: HttpMethod,
    path: string,
    extra: Record<string, string>,
    body: string | undefined,
    opts: { signal?: AbortSignal | undefined; retry: boolean; maxBytes: number },
  ): Promise<StreamReply> {
    const signal = anySignal(this.signal, opts.signal)
    const attempts = opts.retry ? this.maxAttempts : 1
    const what = `${method} ${path.replace(/\?.*$/, '')}`
    return this.retrying(attempts, signal, async () => {
      const headers = this.headersFor(undefined)
      // A request without a body says nothing of its type, unless extra does
      // (a create names the stream's content type).
      if (body === undefined) delete headers['content-type']
      Object.assign(headers, extra)
      const a: StreamAttempt = { method, path, headers, body, signal, maxBytes: opts.maxBytes, what }
      const reply = this.node !== undefined ? await this.sendNodeStream(this.node, a) : await this.sendFetchStream(a)
      if (reply.status === 503) throw new Retryable(replyError(what, reply))
      return reply
    })
  }

  /** sendNodeStream is one attempt of streamRequest over node:http(s), with one timer for its deadline. */
  private sendNodeStream(node: { mod: NodeHttpModule; agent: object }, { method, path, headers, body, signal, maxBytes, what }: StreamAttempt): Promise<StreamReply> {
    return this.nodeRequest(node, method, path, headers, body, signal, what, (res, fail, settled) => {
      const parts: Uint8Array[] = []
      let size = 0
      res.on('data', (chunk: Uint8Array) => {
        if (settled()) return
        size += chunk.byteLength
        if (size > maxBytes) {
          fail(new CkptstoreError('RESPONSE_TOO_LARGE', `ckptstore ${what}: the reply is over ${maxBytes} bytes`, res.statusCode))
          res.destroy()
          return
        }
        parts.push(chunk)
      })
      return () => ({ status: res.statusCode ?? 0, header: nodeHeader(res), text: utf8(parts, size) })
    })
  }

  /** sendFetchStream is one attempt of streamRequest over fetch. */
  private async sendFetchStream({ method, path, headers, body, signal, maxBytes, what }: StreamAttempt): Promise<StreamReply> {
    const timeout = AbortSignal.timeout(this.timeoutMs)
    const init: RequestInit = { method, headers, signal: anySignal(timeout, signal)! }
    if (body !== undefined) init.body = body
    try {
      const res = await this.fetch!(`${this.base}${path}`, init)
      const parts: Uint8Array[] = []
      let size = 0
      if (res.body !== null) {
        const reader = res.body.getReader()
        for (;;) {
          const r = await reader.read()
          if (r.done) break
          size += r.value.byteLength
          if (size > maxBytes) {
            await reader.cancel().catch(() => {})
            throw new CkptstoreError('RESPONSE_TOO_LARGE', `ckptstore ${what}: the reply is over ${maxBytes} bytes`, res.status)
          }
          parts.push(r.value)
        }
      }
      return { status: res.status, header: (name) => res.headers.get(name) ?? undefined, text: utf8(parts, size) }
    } catch (err) {
      if (err instanceof CkptstoreError) throw err
      throw this.fetchFailure(signal, what, err)
    }
  }
}

/** One attempt of streamRequest: the request, its signal, the bound on its reply, and what its errors name it. */
interface StreamAttempt {
  method: HttpMethod
  path: string
  headers: Record<string, string>
  body: string | undefined
  signal: AbortSignal | undefined
  maxBytes: number
  what: string
}

/** A reply of streamRequest: any status, its headers and its whole body as text. */
export interface StreamReply {
  status: number
  header: (name: string) => string | undefined
  text: string
}

/** replyError is the error a non-2xx reply of a streams route stands for: the server's {code, message}, else HTTP_<status>. */
export function replyError(what: string, reply: StreamReply): CkptstoreError {
  return errorOfReply(what, reply.status, reply.text, (code, message, status) => new CkptstoreError(code, message, status))
}

/**
 * errorOfReply is the error of a non-2xx reply of what: fromWire of the
 * server's {code, message} (the message defaults to the code), else
 * UNAVAILABLE for a 503 and HTTP_<status> for any other status.
 */
function errorOfReply<E extends Error>(what: string, status: number, text: string, fromWire: (code: string, message: string, status: number) => E): E | CkptstoreError {
  const e = parseObject(text)
  if (e !== undefined && typeof e['code'] === 'string') {
    return fromWire(e['code'], typeof e['message'] === 'string' ? e['message'] : e['code'], status)
  }
  return new CkptstoreError(status === 503 ? 'UNAVAILABLE' : `HTTP_${status}`, `ckptstore ${what}: HTTP ${status}`, status)
}

/** replyFailure is what a non-2xx reply of a call or raw rejects with: its error, Retryable for a 503. */
function replyFailure(method: string, status: number, text: string): Error {
  const err = errorOfReply(method, status, text, errorFromWire)
  return status === 503 ? new Retryable(err) : err
}

/** timeoutCause is the cause of an attempt's TIMEOUT: an Error named TimeoutError, as AbortSignal.timeout's is. */
function timeoutCause(message: string): Error {
  const err = new Error(message)
  err.name = 'TimeoutError'
  return err
}

/** nodeHeader reads a reply's header over node:http(s), a repeated one joined as fetch's Headers.get joins it. */
function nodeHeader(res: NodeIncomingMessage): (name: string) => string | undefined {
  return (name) => {
    const v = res.headers[name.toLowerCase()]
    return Array.isArray(v) ? v.join(', ') : v
  }
}

/** utf8 decodes the parts of a body, size bytes in all. */
function utf8(parts: Uint8Array[], size: number): string {
  if (parts.length === 1) return new TextDecoder().decode(parts[0])
  const all = new Uint8Array(size)
  let at = 0
  for (const p of parts) {
    all.set(p, at)
    at += p.byteLength
  }
  return new TextDecoder().decode(all)
}

/**
 * anySignal is a signal that aborts when a or b does (with its reason);
 * either alone when the other is undefined. AbortSignal.any where the
 * runtime has it.
 */
function anySignal(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  if (a === undefined) return b
  if (b === undefined) return a
  const any = (AbortSignal as { any?: (signals: AbortSignal[]) => AbortSignal }).any
  if (typeof any === 'function') return any.call(AbortSignal, [a, b])
  const ac = new AbortController()
  for (const s of [a, b]) {
    if (s.aborted) {
      ac.abort(s.reason)
      break
    }
    s.addEventListener('abort', () => ac.abort(s.reason), { once: true })
  }
  return ac.signal
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
