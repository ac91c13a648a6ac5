// createPersistence's seven stores against a real ckptserver (--dev,
// --bucket mem://): every method, the patch rules (an explicit undefined
// clears), commitBatch's all-or-nothing codes, and blobs streamed both
// ways over node:http and over fetch. On memstore always, and on a real
// redis-server when one is installed.

import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createPersistence, type ClientOptions, type PersistenceClient } from '@ckptstore/client'
import { onRedis, startServer, type Msg, type Running } from './helpers.js'

const bucketArgs = ['--dev', '--bucket', 'mem://']

/** Asserts that p rejects with an Error of the wire code and HTTP status, whose message contains words when given. */
async function rejectsCode(p: Promise<unknown>, code: string, status?: number, words?: string) {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof Error, 'an Error')
    assert.equal((err as { code?: string }).code, code, `${(err as Error).message}`)
    if (status !== undefined) assert.equal((err as { status?: number }).status, status)
    if (words !== undefined) assert.ok(err.message.includes(words), `the message ${JSON.stringify(err.message)} contains ${JSON.stringify(words)}`)
    return true
  })
}

function bytes(n: number, seed = 0): Uint8Array {
  return new Uint8Array(n).map((_, i) => (i * 7 + seed) % 251)
}

/** A one-shot stream of data in chunks of size, with no declared length. */
function chunked(data: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let o = 0
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (o >= data.length) return c.close()
      c.enqueue(data.slice(o, o + size))
      o += size
    },
  })
}

async function readChunks(s: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = []
  const r = s.getReader()
  for (;;) {
    const { value, done } = await r.read()
    if (done) return out
    out.push(value)
  }
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((a, c) => a + c.byteLength, 0))
  let o = 0
  for (const c of chunks) {
    out.set(c, o)
    o += c.byteLength
  }
  return out
}

function suite(backend: string, server: () => Running) {
  const open = (o: Partial<ClientOptions> = {}): PersistenceClient<Msg> => createPersistence<Msg>({ url: server().url, ...o })

  describe(`${backend}: messages, runs, generation runs`, () => {
    test('messages: [] for an unknown thread, a save replaces the transcript', async () => {
      const { stores } = open()
      assert.deepEqual(await stores.messages.loadThread('t'), [])
      await stores.messages.saveThread('t', [{ role: 'user', content: 'hi ✓' }, { role: 'assistant', content: 'hello' }])
      await stores.messages.saveThread('t', [{ role: 'user', content: 'redo' }])
      assert.deepEqual(await stores.messages.loadThread('t'), [{ role: 'user', content: 'redo' }])
    })

    test('runs: createOrResume is idempotent, update patches, an unknown run is left alone', async () => {
      const { stores } = open()
      const { runs } = stores
      assert.equal(await runs.get('r1'), null)
      assert.deepEqual(await runs.createOrResume({ runId: 'r1', threadId: 't', startedAt: 10 }), {
        runId: 'r1',
        threadId: 't',
        status: 'running',
        startedAt: 10,
      })
      await runs.update('r1', { status: 'completed', finishedAt: 20, usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 } })
      const resumed = await runs.createOrResume({ runId: 'r1', threadId: 'other', startedAt: 99, status: 'running' })
      assert.deepEqual(resumed, {
        runId: 'r1',
        threadId: 't',
        status: 'completed',
        startedAt: 10,
        finishedAt: 20,
        usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 },
      })
      assert.deepEqual(await runs.get('r1'), resumed)
      await runs.update('r1', { status: 'failed', error: { message: 'boom', code: 'x' } })
      assert.deepEqual((await runs.get('r1'))?.error, { message: 'boom', code: 'x' })
      await runs.update('nope', { status: 'completed' })
      assert.equal(await runs.get('nope'), null)
      assert.deepEqual(await runs.createOrResume({ runId: 'r2', threadId: 't', startedAt: 5, status: 'interrupted' }), {
        runId: 'r2',
        threadId: 't',
        status: 'interrupted',
        startedAt: 5,
      })
    })

    test('runs: a patch member named with undefined clears the field; one left out keeps it; status undefined keeps the status', async () => {
      const { runs } = open().stores
      await runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
      await runs.update('r', { sandboxKey: 'sb', detachedSince: 5, cancelRequested: true, driverEpoch: 1 })
      assert.deepEqual(await runs.get('r'), { runId: 'r', threadId: 't', status: 'running', startedAt: 1, sandboxKey: 'sb', detachedSince: 5, cancelRequested: true, driverEpoch: 1 })
      // The patch type forbids undefined under exactOptionalPropertyTypes (as upstream's); callers without it send one.
      const clear = { sandboxKey: undefined, status: undefined } as unknown as { sandboxKey: string }
      await runs.update('r', clear)
      assert.deepEqual(await runs.get('r'), { runId: 'r', threadId: 't', status: 'running', startedAt: 1, detachedSince: 5, cancelRequested: true, driverEpoch: 1 })
      await runs.update('r', { cancelRequested: false })
      assert.equal((await runs.get('r'))?.cancelRequested, false)
      await runs.update('r', { detachedSince: undefined, cancelRequested: undefined, driverEpoch: undefined } as unknown as { driverEpoch: number })
      assert.deepEqual(await runs.get('r'), { runId: 'r', threadId: 't', status: 'running', startedAt: 1 })
    })

    test('runs: findActiveRun, listByThread, listReclaimable (inclusive cutoff, running only)', async () => {
      const { runs } = open().stores
      assert.equal(await runs.findActiveRun('t'), null)
      await runs.createOrResume({ runId: 'b', threadId: 't', startedAt: 2 })
      await runs.createOrResume({ runId: 'a', threadId: 't', startedAt: 1 })
      await runs.createOrResume({ runId: 'o', threadId: 'other', startedAt: 3 })
      assert.equal((await runs.findActiveRun('t'))?.runId, 'b')
      assert.deepEqual((await runs.listByThread('t')).map((r) => r.runId), ['a', 'b'])
      assert.deepEqual(await runs.listByThread('none'), [])
      await runs.update('b', { status: 'completed', finishedAt: 4 })
      assert.equal((await runs.findActiveRun('t'))?.runId, 'a')
      await runs.update('a', { detachedSince: 5_000 })
      await runs.update('o', { detachedSince: 5_001 })
      await runs.update('b', { detachedSince: 1 })
      assert.deepEqual((await runs.listReclaimable({ now: 10_000, ttlMs: 5_000 })).map((r) => r.runId), ['a'])
      assert.deepEqual((await runs.listReclaimable({ now: 10_001, ttlMs: 5_000 })).map((r) => r.runId).sort(), ['a', 'o'])
      await runs.update('a', { detachedSince: undefined } as unknown as { detachedSince: number })
      assert.deepEqual((await runs.listReclaimable({ now: 10_001, ttlMs: 5_000 })).map((r) => r.runId), ['o'])
    })

    test('generationRuns: createOrResume, update (result, artifacts, usage), findLatestForThread, clear by undefined', async () => {
      const { generationRuns: g } = open().stores
      assert.equal(await g.get('g1'), null)
      assert.equal(await g.findLatestForThread('slot'), null)
      const created = await g.createOrResume({ runId: 'g1', threadId: 'slot', activity: 'image', provider: 'p', model: 'm', startedAt: 1 })
      assert.deepEqual(created, { runId: 'g1', threadId: 'slot', activity: 'image', provider: 'p', model: 'm', status: 'running', startedAt: 1 })
      assert.deepEqual(await g.createOrResume({ runId: 'g1', threadId: 'x', activity: 'video', provider: 'q', model: 'n', startedAt: 9 }), created)
      const artifacts = [
        {
          role: 'output' as const,
          artifactId: 'a1',
          runId: 'g1',
          threadId: 'slot',
          name: 'a.png',
          mimeType: 'image/png',
          size: 3,
          createdAt: '2024-01-01T00:00:00.000Z',
          source: { activity: 'image' as const, path: 'images.0', provider: 'p', model: 'm' },
        },
      ]
      await g.update('g1', { status: 'completed', finishedAt: 2, result: { images: [{ url: 'u' }] }, artifacts, usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 } })
      assert.deepEqual(await g.get('g1'), { ...created, status: 'completed', finishedAt: 2, result: { images: [{ url: 'u' }] }, artifacts, usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 } })
      await g.createOrResume({ runId: 'g2', threadId: 'slot', activity: 'image', provider: 'p', model: 'm', startedAt: 5 })
      assert.equal((await g.findLatestForThread('slot'))?.runId, 'g2')
      await g.update('g1', { result: undefined, artifacts: undefined } as unknown as { finishedAt: number })
      const back = await g.get('g1')
      assert.equal(back !== null && 'result' in back, false)
      assert.equal(back !== null && 'artifacts' in back, false)
      assert.equal(back?.finishedAt, 2)
      await g.update('missing', { status: 'failed' })
      assert.equal(await g.get('missing'), null)
    })
  })

  describe(`${backend}: interrupts, metadata, artifacts`, () => {
    test('interrupts: create is insert-if-absent; resolve with and without a response; cancel; the four lists by requestedAt', async () => {
      const { interrupts: s } = open().stores
      assert.equal(await s.get('i1'), null)
      await s.create({ interruptId: 'i3', runId: 'r2', threadId: 't', requestedAt: 30, payload: {} })
      await s.create({ interruptId: 'i1', runId: 'r1', threadId: 't', requestedAt: 10, payload: { tool: 'x', args: { q: 1 } } })
      await s.create({ interruptId: 'i2', runId: 'r1', threadId: 't', requestedAt: 20, payload: {} })
      assert.deepEqual(await s.get('i1'), { interruptId: 'i1', runId: 'r1', threadId: 't', status: 'pending', requestedAt: 10, payload: { tool: 'x', args: { q: 1 } } })
      assert.deepEqual((await s.list('t')).map((r) => r.interruptId), ['i1', 'i2', 'i3'])
      assert.deepEqual((await s.listByRun('r1')).map((r) => r.interruptId), ['i1', 'i2'])
      await s.resolve('i1', { ok: true })
      await s.resolve('i2')
      await s.create({ interruptId: 'i1', runId: 'r9', threadId: 't', requestedAt: 99, payload: { again: 1 } })
      const i1 = await s.get('i1')
      assert.equal(i1?.status, 'resolved')
      assert.deepEqual(i1?.response, { ok: true })
      assert.deepEqual(i1?.payload, { tool: 'x', args: { q: 1 } })
      assert.equal(typeof i1?.resolvedAt, 'number')
      const i2 = await s.get('i2')
      assert.equal(i2?.status, 'resolved')
      assert.equal(i2 !== null && 'response' in i2, false, 'resolve(id) stores no response')
      await s.cancel('i3')
      assert.equal((await s.get('i3'))?.status, 'cancelled')
      assert.deepEqual(await s.listPending('t'), [])
      assert.deepEqual(await s.listPendingByRun('r1'), [])
      await s.resolve('missing')
      await s.cancel('missing')
      assert.equal(await s.get('missing'), null)
      // A present null is the value null.
      await s.create({ interruptId: 'n', runId: 'r', threadId: 't2', requestedAt: 1, payload: {} })
      await s.resolve('n', null)
      const n = await s.get('n')
      assert.equal(n !== null && 'response' in n && n.response === null, true)
    })

    test('interrupts: commitBatch applies every entry or none, with the wire codes and TanStack\'s words', async () => {
      const { interrupts: s } = open().stores
      for (const [id, at] of [['a', 1], ['b', 2], ['c', 3]] as const) await s.create({ interruptId: id, runId: 'r', threadId: 't', requestedAt: at, payload: {} })
      await s.cancel('c')
      // The message names the id as TanStack's in-memory store does, for harness tests that match on it.
      await rejectsCode(s.commitBatch([{ interruptId: 'a', status: 'cancelled' }, { interruptId: 'a', status: 'resolved' }]), 'PERSIST_BATCH_DUPLICATE_ID', 409, 'duplicate id: a')
      await rejectsCode(s.commitBatch([{ interruptId: 'a', status: 'cancelled' }, { interruptId: 'zz', status: 'cancelled' }]), 'PERSIST_BATCH_MISSING_ID', 409, 'missing id: zz')
      await rejectsCode(s.commitBatch([{ interruptId: 'a', status: 'cancelled' }, { interruptId: 'c', status: 'cancelled' }]), 'PERSIST_BATCH_NOT_PENDING', 409, 'non-pending id: c')
      await rejectsCode(s.commitBatch([{ interruptId: 'b', status: 'cancelled' }, { interruptId: 'a b ✓', status: 'cancelled' }]), 'PERSIST_BATCH_MISSING_ID', 409, 'missing id: a b ✓')
      await rejectsCode(s.commitBatch([{ interruptId: 'tab\there', status: 'cancelled' }]), 'PERSIST_BATCH_MISSING_ID', 409, 'missing id: "tab\\there"')
      assert.deepEqual((await s.listPending('t')).map((r) => r.interruptId), ['a', 'b'], 'a refused batch wrote nothing')
      await s.commitBatch([{ interruptId: 'a', status: 'resolved', response: { v: 1 } }, { interruptId: 'b', status: 'cancelled' }])
      assert.deepEqual(await s.listPending('t'), [])
      assert.deepEqual((await s.get('a'))?.response, { v: 1 })
      assert.equal((await s.get('b'))?.status, 'cancelled')
    })

    test('metadata: set, get, delete by (namespace, key), no aliasing across colons; absent is null', async () => {
      const { metadata: m } = open().stores
      assert.equal(await m.get('a', 'k'), null)
      await m.set('a', 'k', { n: 1 })
      await m.set('b', 'k', [1, 'two', null])
      await m.set('a:b', 'c', 'left')
      await m.set('a', 'b:c', 'right')
      assert.deepEqual(await m.get('a', 'k'), { n: 1 })
      assert.deepEqual(await m.get('b', 'k'), [1, 'two', null])
      assert.equal(await m.get('a:b', 'c'), 'left')
      assert.equal(await m.get('a', 'b:c'), 'right')
      await m.set('a', 'k', 0)
      assert.equal(await m.get('a', 'k'), 0)
      await m.delete('a', 'k')
      await m.delete('a', 'k')
      assert.equal(await m.get('a', 'k'), null)
      assert.deepEqual(await m.get('b', 'k'), [1, 'two', null])
    })

    test('artifacts: save replaces, lists by createdAt then UTF-8 bytes of the id, deletes one and a run', async () => {
      const { artifacts: a } = open().stores
      const rec = (artifactId: string, runId: string, createdAt: number, extra = {}) => ({ artifactId, runId, threadId: 'th', name: 'n', mimeType: 'image/png', size: 1, createdAt, ...extra })
      assert.equal(await a.get('x'), null)
      await a.save(rec('\u{10000}', 'r', 1, { blobKey: 'artifacts/r/x', sourceUrl: 'https://e/x' }))
      await a.save(rec('\u{e000}', 'r', 1))
      await a.save(rec('b', 'r', 1))
      await a.save(rec('early', 'r2', 0))
      assert.deepEqual((await a.list('r')).map((r) => r.artifactId), ['b', '\u{e000}', '\u{10000}'])
      assert.deepEqual((await a.listForThread('th')).map((r) => r.artifactId), ['early', 'b', '\u{e000}', '\u{10000}'])
      assert.deepEqual(await a.get('\u{10000}'), rec('\u{10000}', 'r', 1, { blobKey: 'artifacts/r/x', sourceUrl: 'https://e/x' }))
      await a.save(rec('\u{10000}', 'r', 1, { name: 'renamed' }))
      const back = await a.get('\u{10000}')
      assert.equal(back?.name, 'renamed')
      assert.equal(back !== null && 'blobKey' in back, false, 'a save replaces the whole record')
      await a.delete('b')
      await a.delete('b')
      assert.equal(await a.get('b'), null)
      await a.deleteForRun('r')
      await a.deleteForRun('r')
      assert.deepEqual(await a.list('r'), [])
      assert.deepEqual((await a.list('r2')).map((r) => r.artifactId), ['early'])
    })

    test('ids that are not well-formed Unicode reject with PERSIST_INVALID_ID', async () => {
      const { stores } = open()
      await rejectsCode(stores.runs.get('\uD800'), 'PERSIST_INVALID_ID', 400)
      await rejectsCode(stores.metadata.set('ns', '\uDC00', 1), 'PERSIST_INVALID_ID', 400)
      await rejectsCode(stores.blobs.put('\uD800', 'x'), 'PERSIST_INVALID_ID', 400)
    })
  })

  for (const transport of ['node:http', 'fetch'] as const) {
    const opts: Partial<ClientOptions> = transport === 'fetch' ? { fetch: globalThis.fetch } : {}
    describe(`${backend}: blobs over ${transport}`, () => {
      test('put and get bytes, strings, ArrayBuffers and Blobs with their metadata; head; absent is null', async () => {
        const { blobs } = open(opts).stores
        assert.equal(await blobs.get('missing'), null)
        assert.equal(await blobs.head('missing'), null)
        const put = await blobs.put('b/a', new Uint8Array([1, 2, 3, 4]), { contentType: 'image/png', customMetadata: { runId: 'r' } })
        assert.equal(put.key, 'b/a')
        assert.equal(put.size, 4)
        assert.equal(put.contentType, 'image/png')
        assert.deepEqual(put.customMetadata, { runId: 'r' })
        assert.equal(typeof put.etag, 'string')
        const got = await blobs.get('b/a')
        assert.ok(got)
        assert.deepEqual(new Uint8Array(await got.arrayBuffer()), new Uint8Array([1, 2, 3, 4]))
        assert.deepEqual(new Uint8Array(await got.arrayBuffer()), new Uint8Array([1, 2, 3, 4]), 'a second read answers the same bytes')
        assert.equal(got.contentType, 'image/png')
        assert.equal(got.range, undefined)
        assert.deepEqual(await blobs.head('b/a'), put)
        await blobs.put('b/text', 'héllo ✓')
        assert.equal(await (await blobs.get('b/text'))!.text(), 'héllo ✓')
        await blobs.put('b/buf', new Uint8Array([9, 9, 9]).buffer)
        assert.deepEqual(new Uint8Array(await (await blobs.get('b/buf'))!.arrayBuffer()), new Uint8Array([9, 9, 9]))
        const view = new Uint8Array([0, 1, 2, 3, 4, 5]).subarray(2, 4)
        await blobs.put('b/view', view)
        assert.deepEqual(new Uint8Array(await (await blobs.get('b/view'))!.arrayBuffer()), new Uint8Array([2, 3]))
        const blobPut = await blobs.put('b/blob', new Blob(['from a blob'], { type: 'text/plain' }))
        assert.equal(blobPut.contentType, 'text/plain', "a Blob's type is the content type when none is given")
        assert.equal(await (await blobs.get('b/blob'))!.text(), 'from a blob')
        await blobs.put('b/empty', new Uint8Array(0))
        const empty = await blobs.get('b/empty')
        assert.equal(empty?.size, 0)
        assert.equal((await empty!.arrayBuffer()).byteLength, 0)
      })

      test('a stream body goes chunked with no length (and with expectedLength), and a large get streams its body', async () => {
        const { blobs } = open(opts).stores
        const data = bytes(1 << 20)
        const put = await blobs.put('big', chunked(data, 16 * 1024), { contentType: 'application/octet-stream' })
        assert.equal(put.size, data.byteLength)
        const hinted = await blobs.put('hinted', chunked(bytes(9 * 1024, 3), 1000), { expectedLength: 9 * 1024 })
        assert.equal(hinted.size, 9 * 1024)
        assert.deepEqual(new Uint8Array(await (await blobs.get('hinted'))!.arrayBuffer()), bytes(9 * 1024, 3))
        const got = await blobs.get('big')
        assert.ok(got?.body)
        assert.equal(got.size, data.byteLength)
        const chunks = await readChunks(got.body)
        assert.ok(chunks.length > 1, `the body arrived as a stream (${chunks.length} chunks)`)
        assert.deepEqual(concat(chunks), data)
      })

      test('ranges: a slice and the slice served, to the end, clamped; a start outside the object is 416', async () => {
        const { blobs } = open(opts).stores
        const data = bytes(1024)
        await blobs.put('r', data)
        const mid = await blobs.get('r', { range: { offset: 100, length: 50 } })
        assert.deepEqual(new Uint8Array(await mid!.arrayBuffer()), data.slice(100, 150))
        assert.equal(mid!.size, 1024)
        assert.deepEqual(mid!.range, { offset: 100, length: 50 })
        const tail = await blobs.get('r', { range: { offset: 1000 } })
        assert.deepEqual(tail!.range, { offset: 1000, length: 24 })
        assert.deepEqual(new Uint8Array(await tail!.arrayBuffer()), data.slice(1000))
        const clamped = await blobs.get('r', { range: { offset: 1000, length: 1000 } })
        assert.deepEqual(clamped!.range, { offset: 1000, length: 24 })
        const streamed = await blobs.get('r', { range: { offset: 10, length: 5 } })
        assert.deepEqual(concat(await readChunks(streamed!.body!)), data.slice(10, 15))
        await rejectsCode(blobs.get('r', { range: { offset: 1024 } }), 'PERSIST_RANGE_NOT_SATISFIABLE', 416)
        const big = bytes(300 * 1024, 1)
        await blobs.put('rbig', big)
        const slice = await blobs.get('rbig', { range: { offset: 1000, length: 200 * 1024 } })
        assert.deepEqual(concat(await readChunks(slice!.body!)), big.slice(1000, 1000 + 200 * 1024))
      })

      test('overwrite gives a new etag; delete is silent; list by literal prefix, paged by cursor, limit 0 empty', async () => {
        const { blobs } = open(opts).stores
        const first = await blobs.put('o', new Uint8Array([1]), { customMetadata: { v: '1' } })
        const second = await blobs.put('o', new Uint8Array([2, 2]), { customMetadata: { v: '2' } })
        assert.notEqual(second.etag, first.etag)
        assert.deepEqual(second.customMetadata, { v: '2' })
        assert.deepEqual(new Uint8Array(await (await blobs.get('o'))!.arrayBuffer()), new Uint8Array([2, 2]))
        await blobs.delete('o')
        await blobs.delete('o')
        assert.equal(await blobs.get('o'), null)
        for (const k of ['list_/b', 'list_/a', 'list_/c', 'list-x/d', 'LIST_/e']) await blobs.put(k, new Uint8Array([1]))
        const page = await blobs.list({ prefix: 'list_/' })
        assert.deepEqual(page.objects.map((o) => o.key), ['list_/a', 'list_/b', 'list_/c'])
        assert.ok(!page.truncated)
        assert.equal(page.cursor, undefined)
        const empty = await blobs.list({ prefix: 'list_/', limit: 0 })
        assert.deepEqual(empty.objects, [])
        assert.equal(empty.cursor, undefined)
        assert.ok(!empty.truncated)
        const seen: string[] = []
        let cursor: string | undefined
        for (let i = 0; i < 10; i++) {
          const p = await blobs.list({ prefix: 'list_/', limit: 2, ...(cursor !== undefined ? { cursor } : {}) })
          seen.push(...p.objects.map((o) => o.key))
          if (!p.truncated) break
          assert.equal(p.cursor, p.objects.at(-1)?.key)
          cursor = p.cursor
        }
        assert.deepEqual(seen, ['list_/a', 'list_/b', 'list_/c'])
        assert.deepEqual((await blobs.list()).objects.map((o) => o.key), ['LIST_/e', 'list-x/d', 'list_/a', 'list_/b', 'list_/c'])
      })

      test("a put whose stream fails rejects with the stream's error and keeps the old bytes", async () => {
        const { blobs } = open(opts).stores
        await blobs.put('keep', 'old bytes')
        let sent = 0
        const failing = new ReadableStream<Uint8Array>({
          pull(c) {
            if (sent++ < 3) return c.enqueue(bytes(8 * 1024, sent))
            c.error(new Error('the producer failed'))
          },
        })
        await assert.rejects(blobs.put('keep', failing), /the producer failed/)
        assert.equal(await (await blobs.get('keep'))!.text(), 'old bytes')
        assert.equal((await blobs.head('keep'))?.size, 9)
      })
    })
  }
}

// memstore, always.
{
  let mem: Running
  let bare: Running
  before(async () => {
    mem = await startServer('mem', bucketArgs)
    bare = await startServer('mem')
  })
  after(async () => {
    await mem?.stop()
    await bare?.stop()
  })
  describe('memstore', () => suite('mem', () => mem))
  describe('memstore without --bucket', () => {
    test('blob routes reject with UNSUPPORTED (501); the other stores work', async () => {
      const { stores } = createPersistence({ url: bare.url })
      await rejectsCode(stores.blobs.put('k', 'x'), 'UNSUPPORTED', 501)
      await rejectsCode(stores.blobs.get('k'), 'UNSUPPORTED', 501)
      await rejectsCode(stores.blobs.list(), 'UNSUPPORTED', 501)
      await stores.metadata.set('n', 'k', 1)
      assert.equal(await stores.metadata.get('n', 'k'), 1)
    })
  })
}

// Redis, when redis-server is installed.
onRedis('tspersist', bucketArgs, (server) => suite('redis', server))
