// createStreamDurability against a real ckptserver (--dev) on memstore and
// on a redis-server: append, read and resume; close ends reads (a terminal
// chunk does not); snapshot returns the stored prefix of an open log
// without waiting; upsert writes the new entries of an overlap replay at
// the offsets named, once, and its validation (a hole, a repeat, offsets
// the store did not mint, a different chunk, another writer in between)
// writes nothing; producer fencing by
// epoch, per producer id and per stream; abort ends a parked read; no
// promise goes unhandled. No timed assertions: orderings and states only.

import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import { createStreamDurability, CkptstoreError, type StreamDurabilityClient } from '@ckptstore/client'
import { onMemAndRedis, type Running } from './helpers.js'

interface Chunk {
  type: string
  delta?: string
}

const text = (delta: string): Chunk => ({ type: 'TEXT_MESSAGE_CONTENT', delta })
const finished: Chunk = { type: 'RUN_FINISHED' }

let runs = 0
/** A fresh run id, so no two tests share a log. */
const runId = () => `r-${process.pid}-${++runs}`

async function collect(it: AsyncIterable<{ offset: string; chunk: Chunk }>): Promise<Array<{ offset: string; chunk: Chunk }>> {
  const out: Array<{ offset: string; chunk: Chunk }> = []
  for await (const e of it) out.push(e)
  return out
}

const deltas = (es: Array<{ chunk: Chunk }>) => es.map((e) => e.chunk.delta ?? e.chunk.type)

/** rejectsWith asserts that p rejects with a CkptstoreError of code. */
async function rejectsWith(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof CkptstoreError, `a CkptstoreError, got ${String(err)}`)
    assert.equal(err.code, code, err.message)
    return true
  })
}

/**
 * A proxy in front of url that asks hook about every POST before it
 * forwards it: 'reply' forwards the request and drops the connection
 * instead of the reply (the write is stored, its reply lost); 'request'
 * drops it without forwarding (nothing stored); undefined passes it. The
 * hook may write to the store itself first (another writer). seen holds
 * the status of every POST it forwarded and answered.
 */
async function hookProxy(
  url: string,
  hook: (req: IncomingMessage) => Promise<'reply' | 'request' | undefined> | 'reply' | 'request' | undefined,
): Promise<{ url: string; seen: number[]; close: () => Promise<void> }> {
  const target = new URL(url)
  const seen: number[] = []
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = []
    req.on('data', (c: Buffer) => parts.push(c))
    req.on('end', async () => {
      const lose = req.method === 'POST' ? await hook(req) : undefined
      if (lose === 'request') return res.socket?.destroy()
      const up = httpRequest({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
        const body: Buffer[] = []
        r.on('data', (c: Buffer) => body.push(c))
        r.on('end', () => {
          if (lose === 'reply') return res.socket?.destroy()
          if (req.method === 'POST') seen.push(r.statusCode ?? 0)
          res.writeHead(r.statusCode ?? 502, r.headers)
          res.end(Buffer.concat(body))
        })
      })
      up.end(Buffer.concat(parts))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const a = server.address()
  const port = typeof a === 'object' && a ? a.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections()
      server.close(() => r())
    }),
  }
}

/** A proxy that loses the producer appends of plan, in order (see hookProxy). */
function lossyProxy(url: string, plan: Array<'reply' | 'request'>) {
  return hookProxy(url, (req) => (req.headers['producer-seq'] !== undefined ? plan.shift() : undefined))
}

/** The offset k positions after o (an offset of the adapter, whose last field is the position). */
const shift = (o: string, k: number) => o.replace(/\d{16}$/, (d) => String(Number(d) + k).padStart(16, '0'))

function suite(backend: string, server: () => Running) {
  const open = (id: string, extra: Record<string, unknown> = {}): StreamDurabilityClient<Chunk> =>
    createStreamDurability<Chunk>({ runId: id }, { url: server().url, namespace: `streams-${backend}`, ...extra })

  describe(`${backend}: append, read, resume`, () => {
    test('append returns one offset per chunk, in order; read from each replays exactly what follows; close ends it', async () => {
      const id = runId()
      const p = open(id)
      const a = await p.append([text('a'), text('b')])
      const b = await p.append([text('c')])
      assert.equal(a.length, 2)
      assert.equal(b.length, 1)
      const all = [...a, ...b]
      assert.equal(new Set(all).size, 3)
      assert.deepEqual([...all].sort(), all, 'offsets sort in log order')
      for (const o of all) assert.doesNotMatch(o, /[\r\n\0]|^\s|\s$/)
      await p.close()
      assert.deepEqual(deltas(await collect(p.read('-1'))), ['a', 'b', 'c'])
      assert.deepEqual(deltas(await collect(p.read(a[0]!))), ['b', 'c'])
      assert.deepEqual(deltas(await collect(p.read(b[0]!))), [])
      const got = await collect(open(id).read('-1'))
      assert.deepEqual(got.map((e) => e.offset), all, 'read yields the offsets append returned')
    })

    test('a reader that resumes from a Request (Last-Event-ID) gets the rest live and ends at close, past terminal chunks', async () => {
      const id = runId()
      const p = open(id)
      const [first] = await p.append([text('a'), finished])
      const req = new Request(`http://app.test/api/chat?runId=${encodeURIComponent(id)}`, { headers: { 'Last-Event-ID': first! } })
      const r = createStreamDurability<Chunk>(req, { url: server().url, namespace: `streams-${backend}` })
      assert.equal(r.resumeFrom(), first)
      const reading = collect(r.read(r.resumeFrom()!))
      await p.append([text('b'), finished])
      await p.append([text('c')])
      await p.close()
      assert.deepEqual(deltas(await reading), ['RUN_FINISHED', 'b', 'RUN_FINISHED', 'c'])
    })

    test('an offset alone names its run; ?offset and ?runId work as the headers do; a request naming no run throws', async () => {
      const id = runId()
      const p = open(id)
      const [o] = await p.append([text('a')])
      await p.append([text('b')])
      await p.close()
      const byOffset = createStreamDurability<Chunk>(new Request('http://app.test/x', { headers: { 'Last-Event-ID': o! } }), { url: server().url, namespace: `streams-${backend}` })
      assert.equal(byOffset.stream, `runs/${id}`)
      assert.deepEqual(deltas(await collect(byOffset.read(o!))), ['b'])
      const byQuery = createStreamDurability<Chunk>(new Request(`http://app.test/x?runId=${id}&offset=-1`), { url: server().url, namespace: `streams-${backend}` })
      assert.equal(byQuery.resumeFrom(), '-1')
      assert.deepEqual(deltas(await collect(byQuery.read('-1'))), ['a', 'b'])
      assert.throws(() => createStreamDurability(new Request('http://app.test/x'), { url: server().url }), /runId is required/)
    })

    test("'now' reads only what comes after; a read of a foreign offset rejects; a log that does not exist rejects STREAM_NOT_FOUND", async () => {
      const id = runId()
      const p = open(id)
      await p.append([text('old')])
      const reading = collect(p.read('now'))
      await new Promise((r) => setTimeout(r, 50))
      await p.append([text('new')])
      await p.close()
      // 'now' is the tail when the server takes the read: never before 'old';
      // on a slow machine it may come after 'new' too, and then it is empty.
      const got = deltas(await reading)
      assert.ok(!got.includes('old'), `read('now') replayed the past: ${got}`)
      assert.deepEqual(got, got.length > 0 ? ['new'] : [])
      const other = open(runId())
      const [foreign] = await other.append([text('x')])
      await rejectsWith(collect(p.read(foreign!)), 'STREAM_OFFSET_INVALID')
      await rejectsWith(collect(open(runId()).read('-1')), 'STREAM_NOT_FOUND')
    })

    test('a join from the start that comes before the producer waits for the stream (joinDeadlineMs)', async () => {
      const id = runId()
      const joiner = open(id, { joinDeadlineMs: 10_000 })
      const reading = collect(joiner.read('-1'))
      await new Promise((r) => setTimeout(r, 30))
      const p = open(id)
      await p.append([text('a')])
      await p.close()
      assert.deepEqual(deltas(await reading), ['a'])
      await rejectsWith(collect(open(runId(), { joinDeadlineMs: 0 }).read('now')), 'STREAM_NOT_FOUND')
    })

    test('an aborted signal ends a parked read without an error', async () => {
      const p = open(runId())
      await p.append([text('a')])
      const ac = new AbortController()
      const seen: string[] = []
      const reading = (async () => {
        for await (const e of p.read('-1', ac.signal)) {
          seen.push(e.chunk.delta!)
          ac.abort()
        }
      })()
      await reading
      assert.deepEqual(seen, ['a'])
    })
  })

  describe(`${backend}: snapshot`, () => {
    test('returns the stored prefix of an open log at once, [] for an unknown run, and a fresh array', async () => {
      const id = runId()
      const p = open(id)
      assert.deepEqual(await p.snapshot(), [])
      const offs = await p.append([text('a'), text('b')])
      const s1 = await p.snapshot()
      assert.deepEqual(deltas(s1), ['a', 'b'])
      assert.deepEqual(s1.map((e) => e.offset), offs)
      s1.pop()
      s1[0]!.chunk.delta = 'mutated'
      assert.deepEqual(deltas(await open(id).snapshot()), ['a', 'b'])
      await p.close()
      assert.deepEqual(deltas(await p.snapshot()), ['a', 'b'])
    })

    test('a log of more than one reply comes back whole', async () => {
      const p = open(runId())
      const big = 'x'.repeat(300_000)
      for (let i = 0; i < 5; i++) await p.append([{ type: 'T', delta: `${i}${big}` }])
      const s = await p.snapshot()
      assert.deepEqual(s.map((e) => e.chunk.delta![0]), ['0', '1', '2', '3', '4'])
    })
  })

  describe(`${backend}: upsert`, () => {
    test('re-persisting a stored range is a no-op that returns its offsets', async () => {
      const id = runId()
      const p = open(id)
      const offs = await p.append([text('a'), text('b'), text('c')])
      const back = await p.upsert([
        { chunk: text('b'), offset: offs[1]! },
        { chunk: { delta: 'c', type: 'TEXT_MESSAGE_CONTENT' }, offset: offs[2]! },
        { chunk: text('a'), offset: offs[0]! },
      ])
      assert.deepEqual(back, [offs[1], offs[2], offs[0]])
      assert.deepEqual(await p.upsert([]), [])
      await p.close()
      assert.deepEqual(deltas(await p.snapshot()), ['a', 'b', 'c'])
    })

    test('a hole, a repeat, foreign offsets and a different chunk are refused, and nothing is written', async () => {
      const id = runId()
      const p = open(id)
      const offs = await p.append([text('a'), text('b')])
      const before = await p.snapshot()
      const sparse: Array<{ chunk: Chunk; offset: string }> = []
      sparse[0] = { chunk: text('a'), offset: offs[0]! }
      sparse[2] = { chunk: text('b'), offset: offs[1]! }
      await rejectsWith(p.upsert(sparse), 'STREAM_UPSERT_INVALID')
      await rejectsWith(p.upsert([{ chunk: text('a'), offset: offs[0]! }, { chunk: text('a'), offset: offs[0]! }]), 'STREAM_UPSERT_INVALID')
      const [otherRun] = await open(runId()).append([text('a')])
      const start = offs[0]!.replace(/\d{16}$/, '0'.repeat(16))
      for (const foreign of [otherRun!, start, '-1', 'now', 'memory:v1:x:1', offs[0]!.slice(0, -1)]) {
        await rejectsWith(p.upsert([{ chunk: text('a'), offset: offs[0]! }, { chunk: text('z'), offset: foreign }]), 'STREAM_OFFSET_INVALID')
      }
      await rejectsWith(p.upsert([{ chunk: text('a'), offset: offs[0]! }, { chunk: text('changed'), offset: offs[1]! }]), 'STREAM_UPSERT_CONFLICT')
      // A new chunk at a stored position (the caller thought it new) is a
      // different chunk there, wherever it sits in the batch.
      await rejectsWith(p.upsert([{ chunk: text('c'), offset: shift(offs[1]!, 1) }, { chunk: text('new'), offset: offs[1]! }]), 'STREAM_UPSERT_CONFLICT')
      // New offsets continue the tail one by one, in batch order.
      const tail = offs[1]!
      for (const batch of [
        [shift(tail, 2)], // a hole after the tail
        [shift(tail, 1), shift(tail, 3)], // a hole inside the batch
        [shift(tail, 2), shift(tail, 1)], // out of order
        [offs[0]!, shift(tail, 1), shift(tail, 2), shift(tail, 4)],
      ]) {
        await rejectsWith(p.upsert(batch.map((offset, i) => ({ chunk: text(`n${i}`), offset }))), 'STREAM_UPSERT_INVALID')
      }
      assert.deepEqual(await p.snapshot(), before)
      // And the producer goes on as before.
      const [c] = await p.append([text('c')])
      await p.close()
      assert.deepEqual(deltas(await p.snapshot()), ['a', 'b', 'c'])
      assert.equal((await p.snapshot())[2]!.offset, c)
    })
  })

  describe(`${backend}: upsert writes`, () => {
    test('an overlap replayed with its continuation writes only the new chunks, at the offsets named, in one append', async () => {
      const id = runId()
      const proxy = await hookProxy(server().url, () => undefined)
      after(() => proxy.close())
      const p = createStreamDurability<Chunk>({ runId: id }, { url: proxy.url, namespace: `streams-${backend}` })
      const offs = await p.append([text('a'), text('b'), text('c')])
      const batch = [
        { chunk: text('b'), offset: offs[1]! },
        { chunk: text('c'), offset: offs[2]! },
        { chunk: text('d'), offset: shift(offs[2]!, 1) },
        { chunk: text('e'), offset: shift(offs[2]!, 2) },
      ]
      const posts = proxy.seen.length
      assert.deepEqual(await p.upsert(batch), batch.map((e) => e.offset))
      assert.deepEqual(proxy.seen.slice(posts), [200], 'one append for the two new chunks')
      const s = await open(id).snapshot()
      assert.deepEqual(deltas(s), ['a', 'b', 'c', 'd', 'e'])
      assert.deepEqual(s.map((e) => e.offset), [...offs, batch[2]!.offset, batch[3]!.offset])
      // Replaying the same batch again writes nothing; the producer goes on after it.
      assert.deepEqual(await p.upsert(batch), batch.map((e) => e.offset))
      const [f] = await p.append([text('f')])
      assert.equal(f, shift(offs[2]!, 3))
      // A reader resuming from a returned offset gets what follows it.
      await p.close()
      assert.deepEqual(deltas(await collect(open(id).read(batch[2]!.offset))), ['e', 'f'])
    })

    test('upsert starts a log that does not exist at its first offset, and no other', async () => {
      const id = runId()
      const p = open(id)
      const probe = open(runId())
      const [first] = await probe.append([text('x')]) // an offset of position 1, read off another log's format
      const mine = first!.replace(encodeURIComponent(probe.stream), encodeURIComponent(p.stream))
      await rejectsWith(p.upsert([{ chunk: text('b'), offset: shift(mine, 1) }]), 'STREAM_UPSERT_INVALID')
      assert.deepEqual(await p.snapshot(), [], 'a rejected upsert does not create the log')
      assert.deepEqual(await p.upsert([{ chunk: text('a'), offset: mine }, { chunk: text('b'), offset: shift(mine, 1) }]), [mine, shift(mine, 1)])
      assert.deepEqual((await p.snapshot()).map((e) => [e.offset, e.chunk.delta]), [[mine, 'a'], [shift(mine, 1), 'b']])
    })

    test('another writer that appends between the check and the write makes the call fail whole', async () => {
      const id = runId()
      const other = open(id)
      let raced = false
      const proxy = await hookProxy(server().url, async (req) => {
        if (req.headers['ckpt-expect-offset'] !== undefined && !raced) {
          raced = true
          await other.append([text('other')])
        }
        return undefined
      })
      after(() => proxy.close())
      const p = createStreamDurability<Chunk>({ runId: id }, { url: proxy.url, namespace: `streams-${backend}` })
      const offs = await p.append([text('a')])
      const posts = proxy.seen.length
      await rejectsWith(
        p.upsert([
          { chunk: text('a'), offset: offs[0]! },
          { chunk: text('b'), offset: shift(offs[0]!, 1) },
          { chunk: text('c'), offset: shift(offs[0]!, 2) },
        ]),
        'STREAM_UPSERT_CONFLICT',
      )
      assert.ok(raced, 'the other writer appended in between')
      assert.deepEqual(proxy.seen.slice(posts), [409], 'the server refused the conditional append')
      assert.deepEqual(deltas(await open(id).snapshot()), ['a', 'other'], 'nothing of the batch is stored')
      // The adapter's producer goes on (its seq was not used up).
      await p.append([text('d')])
      assert.deepEqual(deltas(await open(id).snapshot()), ['a', 'other', 'd'])
      // A retry checks afresh: 'other' now sits where 'b' was named.
      await rejectsWith(p.upsert([{ chunk: text('b'), offset: shift(offs[0]!, 1) }]), 'STREAM_UPSERT_CONFLICT')
    })

    test('an upsert whose reply was lost is retried and stored once', async () => {
      const id = runId()
      let lost = false
      const proxy = await hookProxy(server().url, (req) => {
        if (req.headers['ckpt-expect-offset'] !== undefined && !lost) {
          lost = true
          return 'reply'
        }
        return undefined
      })
      after(() => proxy.close())
      const p = createStreamDurability<Chunk>({ runId: id }, { url: proxy.url, namespace: `streams-${backend}` })
      const [a] = await p.append([text('a')])
      const posts = proxy.seen.length
      const batch = [
        { chunk: text('b'), offset: shift(a!, 1) },
        { chunk: text('c'), offset: shift(a!, 2) },
      ]
      assert.deepEqual(await p.upsert(batch), batch.map((e) => e.offset))
      assert.ok(lost, 'the first reply was lost')
      assert.deepEqual(proxy.seen.slice(posts), [204], "the retry is the server's duplicate")
      await p.append([text('d')])
      const s = await open(id).snapshot()
      assert.deepEqual(deltas(s), ['a', 'b', 'c', 'd'])
      assert.deepEqual(s.slice(1, 3).map((e) => e.offset), batch.map((e) => e.offset))
    })

    test('a closed log takes no new entries (STREAM_CLOSED); re-persisting its stored ones still resolves', async () => {
      const p = open(runId())
      const offs = await p.append([text('a')])
      await p.close()
      await rejectsWith(p.upsert([{ chunk: text('b'), offset: shift(offs[0]!, 1) }]), 'STREAM_CLOSED')
      assert.deepEqual(await p.upsert([{ chunk: text('a'), offset: offs[0]! }]), offs)
      assert.deepEqual(deltas(await p.snapshot()), ['a'])
    })
  })

  describe(`${backend}: producers`, () => {
    test('with one producer id, a lower epoch is refused (PRODUCER_STALE_EPOCH) and writes nothing', async () => {
      const id = runId()
      const newer = open(id, { producerId: 'host', producerEpoch: 2 })
      await newer.append([text('a')])
      const zombie = open(id, { producerId: 'host', producerEpoch: 1 })
      await rejectsWith(zombie.append([text('zombie')]), 'PRODUCER_STALE_EPOCH')
      await rejectsWith(zombie.close(), 'PRODUCER_STALE_EPOCH')
      await newer.append([text('b')])
      assert.deepEqual(deltas(await newer.snapshot()), ['a', 'b'])
    })

    test('a second adapter with the same producer id and epoch is refused (STREAM_OFFSETS_UNKNOWN), writing nothing', async () => {
      const id = runId()
      await open(id, { producerId: 'same' }).append([text('a')])
      await rejectsWith(open(id, { producerId: 'same' }).append([text('b')]), 'STREAM_OFFSETS_UNKNOWN')
      assert.deepEqual(deltas(await open(id).snapshot()), ['a'])
    })

    test("with producerFence 'stream', a new adapter of a lower epoch is refused; without it, it is not", async () => {
      const id = runId()
      const fenced = { producerFence: 'stream' as const }
      await open(id, { producerEpoch: 5, ...fenced }).append([text('a')])
      await rejectsWith(open(id, { producerEpoch: 4, ...fenced }).append([text('zombie')]), 'PRODUCER_STALE_EPOCH')
      await open(id, { producerEpoch: 5, ...fenced }).append([text('b')])
      await open(id, { producerEpoch: 1 }).append([text('unfenced')])
      assert.deepEqual(deltas(await open(id).snapshot()), ['a', 'b', 'unfenced'])
    })

    test('close is idempotent, an append after it is STREAM_CLOSED, and a close of a never-written run creates it closed', async () => {
      const id = runId()
      const p = open(id)
      await p.append([text('a')])
      await Promise.all([p.close(), p.close()])
      await p.close()
      await open(id).close()
      await rejectsWith(p.append([text('late')]), 'STREAM_CLOSED')
      const empty = open(runId())
      await empty.close()
      assert.deepEqual(await collect(empty.read('-1')), [])
    })

    test('an append whose reply was lost is retried and stored once, at the offsets it returns', async () => {
      const proxy = await lossyProxy(server().url, ['reply'])
      after(() => proxy.close())
      const id = runId()
      const p = createStreamDurability<Chunk>({ runId: id }, { url: proxy.url, namespace: `streams-${backend}` })
      const first = await p.append([text('a')])
      const lost = await p.append([text('b'), text('c')])
      await p.append([text('d')])
      const s = await open(id).snapshot()
      assert.deepEqual(deltas(s), ['a', 'b', 'c', 'd'])
      assert.deepEqual(s.map((e) => e.offset).slice(0, 3), [...first, ...lost])
    })

    test('an append that never reached the server gives its seq back: the next one is stored', async () => {
      const proxy = await lossyProxy(server().url, ['request'])
      after(() => proxy.close())
      const id = runId()
      const p = createStreamDurability<Chunk>({ runId: id }, { url: proxy.url, namespace: `streams-${backend}`, maxAttempts: 1 })
      await rejectsWith(p.append([text('lost')]), 'NETWORK_ERROR')
      const [o] = await p.append([text('a')])
      await p.close()
      const s = await open(id).snapshot()
      assert.deepEqual(deltas(s), ['a'])
      assert.equal(s[0]!.offset, o)
    })

    test('over fetch as over node:http', async () => {
      const id = runId()
      const p = open(id, { fetch: globalThis.fetch })
      const offs = await p.append([text('a'), text('b')])
      const reading = collect(p.read(offs[0]!))
      await p.close()
      assert.deepEqual(deltas(await reading), ['b'])
      assert.deepEqual((await p.snapshot()).map((e) => e.offset), offs)
      await rejectsWith(p.upsert([{ chunk: text('x'), offset: offs[0]! }]), 'STREAM_UPSERT_CONFLICT')
    })

    test('concurrent appends of one adapter are stored in call order', async () => {
      const p = open(runId())
      const offs = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((d) => p.append([text(d)])))
      await p.close()
      const s = await p.snapshot()
      assert.deepEqual(deltas(s), ['a', 'b', 'c', 'd', 'e'])
      assert.deepEqual(s.map((e) => e.offset), offs.flat())
    })

    test('a rejection nobody handles yet raises no unhandledRejection', async () => {
      let unhandled = 0
      const on = () => unhandled++
      process.on('unhandledRejection', on)
      try {
        const p = open(runId())
        const late = p.upsert([{ chunk: text('a'), offset: 'nope' }])
        const late2 = open(runId()).read('nope')[Symbol.asyncIterator]().next()
        await p.append([text('a')])
        await new Promise((r) => setTimeout(r, 20))
        await rejectsWith(late, 'STREAM_OFFSET_INVALID')
        await rejectsWith(late2, 'STREAM_OFFSET_INVALID')
        assert.equal(unhandled, 0)
      } finally {
        process.off('unhandledRejection', on)
      }
    })
  })
}

onMemAndRedis('tsstreams', undefined, suite)
