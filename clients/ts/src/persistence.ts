// createPersistence: @tanstack/ai-persistence's seven stores over a
// ckptserver's /v1/<store>/<method> routes (docs/http-api.md). Invariants:
// - every promise a method returns is marked handled when it is made (see
//   handled in index.ts), so a late handler never meets an unhandledRejection;
// - a patch's explicit `undefined` goes as JSON null (JSON.stringify would
//   drop the key, and the server would keep the field), a left-out key
//   stays left out;
// - a record's optional field that the server sends as null reads as
//   absent, except where the field is unknown-typed (an interrupt's
//   response, a generation run's result), where null is a value;
// - blob bytes are never JSON: put streams the body (chunked on node:http,
//   duplex 'half' over fetch) and is retried only when the body can be sent
//   again; get's body is the reply's own stream.

import { viewable } from './call.js'
import { CkptstoreError } from './errors.js'
import { reviveMessages } from './messages.js'
import { field, type ClientOptions, type RawBody, type RawReply, Transport } from './transport.js'
import type {
  ArtifactRecord,
  ArtifactStoreClient,
  BlobBody,
  BlobListPage,
  BlobObject,
  BlobRecord,
  BlobStoreClient,
  GenerationRunRecord,
  GenerationRunStoreClient,
  InterruptCommitEntry,
  InterruptRecord,
  InterruptStoreClient,
  MetadataStoreClient,
  RunRecord,
  RunStoreClient,
} from './persist-types.js'

const ignore = () => {}

/** As in index.ts: the returned promise is the caller's, already marked handled. */
export function handled<A extends unknown[], R>(f: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return (...args) => {
    let p: Promise<R>
    try {
      p = f(...args)
    } catch (err) {
      p = Promise.reject(err)
    }
    p.catch(ignore)
    return p
  }
}

/** Removes the listed members whose value is null: absent, as the wire allows either. */
function absentNulls<T extends object>(rec: T, keys: readonly string[]): T {
  if (rec === null || typeof rec !== 'object') return rec
  const r = rec as Record<string, unknown>
  for (const k of keys) if (r[k] === null) delete r[k]
  return rec
}

const runOptional = ['finishedAt', 'error', 'usage', 'sandboxKey', 'detachedSince', 'cancelRequested', 'driverEpoch'] as const
const genOptional = ['finishedAt', 'error', 'artifacts', 'usage'] as const
const interruptOptional = ['resolvedAt'] as const
const artifactOptional = ['blobKey', 'sourceUrl'] as const
const blobOptional = ['size', 'etag', 'contentType', 'customMetadata', 'createdAt', 'updatedAt'] as const

function runOf(v: unknown): RunRecord | null {
  return v == null ? null : absentNulls(v as RunRecord, runOptional)
}
function genOf(v: unknown): GenerationRunRecord | null {
  return v == null ? null : absentNulls(v as GenerationRunRecord, genOptional)
}
function interruptOf(v: unknown): InterruptRecord | null {
  return v == null ? null : absentNulls(v as InterruptRecord, interruptOptional)
}
function artifactOf(v: unknown): ArtifactRecord | null {
  return v == null ? null : absentNulls(v as ArtifactRecord, artifactOptional)
}
function blobOf(v: unknown): BlobRecord | null {
  return v == null ? null : absentNulls(v as BlobRecord, blobOptional)
}
function listOf<T>(v: unknown, one: (x: unknown) => T | null, method: string): T[] {
  if (!Array.isArray(v)) throw new CkptstoreError('BAD_RESPONSE', `ckptstore ${method}: the list is not an array`)
  return v.map((x) => one(x) as T)
}

/**
 * wirePatch is the patch as the server reads it: a member the caller named
 * with undefined is null (clear), one it left out stays out (keep). status
 * can only be set, so an undefined status is left out rather than sent as a
 * clear the server would refuse.
 */
function wirePatch(patch: object, method: string): Record<string, unknown> {
  if (patch === null || typeof patch !== 'object') {
    throw new CkptstoreError('PERSIST_INVALID_ENTRY', `ckptstore ${method}: the patch must be an object`, 400)
  }
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) {
      if (k !== 'status') out[k] = null
    } else out[k] = v
  }
  return out
}

/** Copies the named members that are defined: the record as the server takes it, without what a caller added. */
function pick(src: object, keys: readonly string[]): Record<string, unknown> {
  const s = src as Record<string, unknown>
  const out: Record<string, unknown> = {}
  for (const k of keys) if (s[k] !== undefined) out[k] = s[k]
  return out
}

const utf8 = new TextEncoder()

/** The body of a put as the transport sends it, and the Blob's own type (the content type when none is given). */
function rawBodyOf(body: BlobBody): { raw: RawBody; blobType?: string } {
  if (typeof body === 'string') return { raw: { bytes: utf8.encode(body) } }
  if (body instanceof ArrayBuffer) return { raw: { bytes: new Uint8Array(body) } }
  if (ArrayBuffer.isView(body)) return { raw: { bytes: new Uint8Array(body.buffer, body.byteOffset, body.byteLength) } }
  if (typeof Blob !== 'undefined' && body instanceof Blob) {
    return { raw: { stream: () => body.stream() as ReadableStream<Uint8Array>, replayable: true }, ...(body.type ? { blobType: body.type } : {}) }
  }
  if (typeof ReadableStream !== 'undefined' && body instanceof ReadableStream) {
    return { raw: { stream: () => body, replayable: false } }
  }
  throw new TypeError('ckptstore blobs.put: the body must be a ReadableStream, ArrayBuffer, ArrayBufferView, string or Blob')
}

/** encodeURIComponent of a header's JSON; a lone surrogate (which it cannot encode) is the server's INVALID_ID. */
function headerJSON(v: object, method: string): string {
  try {
    return encodeURIComponent(JSON.stringify(v))
  } catch {
    throw new CkptstoreError('PERSIST_INVALID_ID', `ckptstore ${method}: a key or metadata string is not well-formed Unicode`, 400)
  }
}

async function drain(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  let n = 0
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    chunks.push(value)
    n += value.byteLength
  }
  if (chunks.length === 1 && chunks[0]!.byteOffset === 0 && chunks[0]!.byteLength === chunks[0]!.buffer.byteLength) return chunks[0]!
  const out = new Uint8Array(n)
  let o = 0
  for (const c of chunks) {
    out.set(c, o)
    o += c.byteLength
  }
  return out
}

function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(c) {
      if (bytes.byteLength > 0) c.enqueue(bytes)
      c.close()
    },
  })
}

/** Replies up to this size are read whole before get returns, so an object whose body is never read holds no connection. */
const bufferedBlobBytes = 64 * 1024

/**
 * blobObjectOf builds get's BlobObject. arrayBuffer() and text() read the
 * body (once: a second call answers from the first read); reading body
 * yourself consumes it, as with a fetch Response.
 */
async function blobObjectOf(reply: RawReply, method: string): Promise<BlobObject | null> {
  if (reply.body === undefined) {
    // A JSON reply: {blob: null} for an absent key.
    let v: unknown
    try {
      v = JSON.parse(reply.text ?? '')
    } catch {
      throw new CkptstoreError('BAD_RESPONSE', `ckptstore ${method}: reply is neither bytes nor JSON`, reply.status)
    }
    if (v !== null && typeof v === 'object' && 'blob' in v && (v as { blob: unknown }).blob === null) return null
    throw new CkptstoreError('BAD_RESPONSE', `ckptstore ${method}: a JSON reply must be {blob: null}`, reply.status)
  }
  const h = reply.header('ckpt-blob')
  let meta: { blob?: unknown; range?: { offset: number; length: number } }
  try {
    meta = JSON.parse(decodeURIComponent(h ?? '')) as typeof meta
  } catch {
    await reply.body.cancel().catch(ignore)
    throw new CkptstoreError('BAD_RESPONSE', `ckptstore ${method}: the reply has no valid Ckpt-Blob header`, reply.status)
  }
  const rec = blobOf(meta.blob)
  if (rec === null || typeof rec !== 'object') {
    await reply.body.cancel().catch(ignore)
    throw new CkptstoreError('BAD_RESPONSE', `ckptstore ${method}: the Ckpt-Blob header has no blob`, reply.status)
  }
  let body = reply.body
  const length = Number(reply.header('content-length'))
  if (Number.isFinite(length) && length <= bufferedBlobBytes) body = streamOf(await drain(body))
  let read: Promise<Uint8Array> | undefined
  const bytes = () => (read ??= drain(body))
  return {
    ...rec,
    ...(meta.range != null ? { range: { offset: meta.range.offset, length: meta.range.length } } : {}),
    body,
    arrayBuffer: handled(async () => {
      const b = await bytes()
      return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer
        ? b.buffer
        : (b.slice().buffer as ArrayBuffer)
    }),
    text: handled(async () => new TextDecoder().decode(await bytes())),
  }
}

/** Options of createPersistence: those of createCheckpointStore. */
export type PersistenceOptions = ClientOptions

/** The stores createPersistence returns, every one of TanStack's seven. */
export interface PersistenceStores<M = any> {
  messages: {
    loadThread: (threadId: string) => Promise<Array<M>>
    saveThread: (threadId: string, messages: Array<M>) => Promise<void>
  }
  runs: RunStoreClient
  interrupts: InterruptStoreClient
  metadata: MetadataStoreClient
  generationRuns: GenerationRunStoreClient
  artifacts: ArtifactStoreClient
  blobs: BlobStoreClient
}

/** What createPersistence returns: TanStack's AIPersistence with all seven stores. */
export interface PersistenceClient<M = any> {
  /** The namespace (generated when none was given against a --dev server): open the checkpoint store of the same one. */
  readonly namespace: string | undefined
  stores: PersistenceStores<M>
}

/**
 * createPersistence opens @tanstack/ai-persistence's seven stores of one
 * namespace on a ckptserver: pass its result where memoryPersistence()
 * would go. Rejections are Errors with the wire `code` (PERSIST_… or the
 * transport's); reads and writes (each write with its own
 * Idempotency-Key, a commitBatch's one key on every attempt) are retried
 * on network errors and 503.
 */
export function createPersistence<M = any>(options: PersistenceOptions): PersistenceClient<M> {
  return viewable(new Transport(options), (t) => persistenceOver<M>(t))
}

/** persistenceOver is createPersistence's stores over t (a view's, for withCallOptions). */
function persistenceOver<M>(t: Transport): PersistenceClient<M> {
  const call = (method: string, body: object, kind: 'read' | 'write') => t.call(method, body, kind)

  const messages: PersistenceStores<M>['messages'] = {
    loadThread: handled(async (threadId) => reviveMessages(field<M[]>(await call('loadThread', { threadId }, 'read'), 'loadThread', 'messages'))),
    saveThread: handled(async (threadId, msgs) => {
      await call('saveThread', { threadId, messages: msgs }, 'write')
    }),
  }

  const runs: RunStoreClient = {
    createOrResume: handled(async (input) => {
      const r = await call('runs/createOrResume', pick(input, ['runId', 'threadId', 'startedAt', 'status']), 'write')
      return runOf(field(r, 'runs/createOrResume', 'run'))!
    }),
    update: handled(async (runId, patch) => {
      await call('runs/update', { runId, patch: wirePatch(patch, 'runs/update') }, 'write')
    }),
    get: handled(async (runId) => runOf(field(await call('runs/get', { runId }, 'read'), 'runs/get', 'run'))),
    listByThread: handled(async (threadId) =>
      listOf(field(await call('runs/listByThread', { threadId }, 'read'), 'runs/listByThread', 'runs'), runOf, 'runs/listByThread'),
    ),
    listReclaimable: handled(async (opts) =>
      listOf(
        field(await call('runs/listReclaimable', { now: opts.now, ttlMs: opts.ttlMs }, 'read'), 'runs/listReclaimable', 'runs'),
        runOf,
        'runs/listReclaimable',
      ),
    ),
    findActiveRun: handled(async (threadId) => runOf(field(await call('runs/findActiveRun', { threadId }, 'read'), 'runs/findActiveRun', 'run'))),
  }

  const generationRuns: GenerationRunStoreClient = {
    createOrResume: handled(async (input) => {
      const body = pick(input, ['runId', 'threadId', 'activity', 'provider', 'model', 'startedAt', 'status'])
      return genOf(field(await call('generationRuns/createOrResume', body, 'write'), 'generationRuns/createOrResume', 'run'))!
    }),
    update: handled(async (runId, patch) => {
      await call('generationRuns/update', { runId, patch: wirePatch(patch, 'generationRuns/update') }, 'write')
    }),
    get: handled(async (runId) => genOf(field(await call('generationRuns/get', { runId }, 'read'), 'generationRuns/get', 'run'))),
    findLatestForThread: handled(async (threadId) =>
      genOf(field(await call('generationRuns/findLatestForThread', { threadId }, 'read'), 'generationRuns/findLatestForThread', 'run')),
    ),
  }

  const interruptList = (method: string, arg: 'threadId' | 'runId') =>
    handled(async (id: string) => listOf(field(await call(`interrupts/${method}`, { [arg]: id }, 'read'), `interrupts/${method}`, 'interrupts'), interruptOf, method))
  const interrupts: InterruptStoreClient = {
    create: handled(async (record) => {
      await call('interrupts/create', { record: pick(record, ['interruptId', 'runId', 'threadId', 'requestedAt', 'payload', 'response']) }, 'write')
    }),
    // resolve(id) sends no response; resolve(id, v) sends v, null included.
    resolve: handled(async (interruptId, response?: unknown) => {
      await call('interrupts/resolve', response === undefined ? { interruptId } : { interruptId, response }, 'write')
    }),
    cancel: handled(async (interruptId) => {
      await call('interrupts/cancel', { interruptId }, 'write')
    }),
    commitBatch: handled(async (entries: ReadonlyArray<InterruptCommitEntry>) => {
      if (!Array.isArray(entries)) throw new CkptstoreError('PERSIST_INVALID_ENTRY', 'ckptstore interrupts/commitBatch: entries must be an array', 400)
      const wire = entries.map((e) => pick(e, ['interruptId', 'status', 'response']))
      await call('interrupts/commitBatch', { entries: wire }, 'write')
    }),
    get: handled(async (interruptId) =>
      interruptOf(field(await call('interrupts/get', { interruptId }, 'read'), 'interrupts/get', 'interrupt')),
    ),
    list: interruptList('list', 'threadId'),
    listPending: interruptList('listPending', 'threadId'),
    listByRun: interruptList('listByRun', 'runId'),
    listPendingByRun: interruptList('listPendingByRun', 'runId'),
  }

  const metadata: MetadataStoreClient = {
    get: handled(async (namespace, key) => {
      const v = field<unknown>(await call('metadata/get', { namespace, key }, 'read'), 'metadata/get', 'value')
      return v === undefined ? null : v
    }),
    set: handled(async (namespace, key, value) => {
      // undefined is no JSON value: stored as null, which reads as absent.
      await call('metadata/set', { namespace, key, value: value === undefined ? null : value }, 'write')
    }),
    delete: handled(async (namespace, key) => {
      await call('metadata/delete', { namespace, key }, 'write')
    }),
  }

  const artifactList = (method: string, arg: 'threadId' | 'runId') =>
    handled(async (id: string) => listOf(field(await call(`artifacts/${method}`, { [arg]: id }, 'read'), `artifacts/${method}`, 'artifacts'), artifactOf, method))
  const artifacts: ArtifactStoreClient = {
    save: handled(async (record) => {
      const rec = pick(record, ['artifactId', 'runId', 'threadId', 'blobKey', 'name', 'mimeType', 'size', 'sourceUrl', 'createdAt'])
      await call('artifacts/save', { record: rec }, 'write')
    }),
    get: handled(async (artifactId) => artifactOf(field(await call('artifacts/get', { artifactId }, 'read'), 'artifacts/get', 'artifact'))),
    list: artifactList('list', 'runId'),
    listForThread: artifactList('listForThread', 'threadId'),
    delete: handled(async (artifactId) => {
      await call('artifacts/delete', { artifactId }, 'write')
    }),
    deleteForRun: handled(async (runId) => {
      await call('artifacts/deleteForRun', { runId }, 'write')
    }),
  }

  const blobs: BlobStoreClient = {
    put: handled(async (key, body, opts = {}) => {
      const { raw, blobType } = rawBodyOf(body)
      const meta: Record<string, unknown> = { key }
      const contentType = opts.contentType ?? blobType
      if (contentType !== undefined) meta['contentType'] = contentType
      if (opts.customMetadata !== undefined) meta['customMetadata'] = opts.customMetadata
      if (opts.expectedLength !== undefined) meta['expectedLength'] = opts.expectedLength
      const headers = { 'content-type': 'application/octet-stream', 'ckpt-blob-put': headerJSON(meta, 'blobs/put') }
      const reply = await t.raw('blobs/put', raw, headers, false)
      let v: unknown
      try {
        v = JSON.parse(reply.text ?? '')
      } catch {
        throw new CkptstoreError('BAD_RESPONSE', 'ckptstore blobs/put: reply is not JSON', reply.status)
      }
      const rec = v !== null && typeof v === 'object' ? blobOf((v as { blob?: unknown }).blob) : null
      if (rec === null) throw new CkptstoreError('BAD_RESPONSE', 'ckptstore blobs/put: reply has no "blob"', reply.status)
      return rec
    }),
    get: handled(async (key, opts = {}) => {
      const body: Record<string, unknown> = { key }
      if (opts.range !== undefined) body['range'] = pick(opts.range, ['offset', 'length'])
      const reply = await t.raw('blobs/get', JSON.stringify(body), { accept: 'application/octet-stream, application/json' }, true)
      return blobObjectOf(reply, 'blobs/get')
    }),
    head: handled(async (key) => blobOf(field(await call('blobs/head', { key }, 'read'), 'blobs/head', 'blob'))),
    delete: handled(async (key) => {
      await call('blobs/delete', { key }, 'write')
    }),
    list: handled(async (opts = {}) => {
      const r = await call('blobs/list', pick(opts, ['prefix', 'cursor', 'limit']), 'read')
      const page: BlobListPage = { objects: listOf(field(r, 'blobs/list', 'objects'), blobOf, 'blobs/list') }
      if (typeof r['cursor'] === 'string') page.cursor = r['cursor']
      if (typeof r['truncated'] === 'boolean') page.truncated = r['truncated']
      return page
    }),
  }

  return { namespace: t.namespace, stores: { messages, runs, interrupts, metadata, generationRuns, artifacts, blobs } }
}
