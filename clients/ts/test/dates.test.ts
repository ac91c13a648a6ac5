// A message's createdAt comes back as a Date wherever TanStack's in-memory
// stores hand one back: loadThread (of createMessageStore and of
// createPersistence), the conversation of every checkpoint a read returns
// (get, list, listPage, forkFromCheckpoint) and a fork's transcript. The
// stored JSON is what JSON.stringify wrote, byte for byte, before and after
// a read and a re-save (read raw through the HTTP API), and nothing but a
// message's own createdAt in toISOString's exact form changes type. On
// memstore always, and on a real redis-server when one is installed.

import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createCheckpointStore, createMessageStore, createPersistence, type ClientOptions } from '@ckptstore/client'
import { dateOf } from '../dist/messages.js'
import { checkpoint, onMemAndRedis, type Running } from './helpers.js'

const serverArgs = ['--dev', '--bucket', 'mem://']

/** A message as a harness builds it: @tanstack/ai's ModelMessage stamps createdAt with a Date. */
interface Message {
  role: 'user' | 'assistant' | 'tool'
  content: unknown
  id?: string
  createdAt?: unknown
  [k: string]: unknown
}

const at = new Date('2026-01-01T00:00:05.123Z')

/** Dates a Date can hold at the edges: epoch 0, year 0, expanded years both ways. */
const edgeDates = [new Date(0), new Date('0000-01-01T00:00:00.000Z'), new Date(-8.64e15), new Date(8.64e15)]

/** createdAt values that are not what a Date writes: each must read back exactly as stored. */
const notDates: unknown[] = [
  '2026-01-01', // a date without a time
  '2026-01-01T00:00:05Z', // no milliseconds
  '2026-01-01T00:00:05.123+00:00', // an offset instead of Z
  '2026-01-01t00:00:05.123z', // lower case
  '2026-02-30T00:00:00.000Z', // parses, but to 2026-03-02: no Date writes it
  '+002026-01-01T00:00:05.123Z', // an expanded year a Date writes in four digits
  '-000000-01-01T00:00:00.000Z', // the one year the format forbids
  'yesterday',
  ' 2026-01-01T00:00:05.123Z', // padded
  '',
  1767225605123, // epoch milliseconds
  null,
  { iso: '2026-01-01T00:00:05.123Z' },
]

/** The transcript a harness saves: Dates, no createdAt, and createdAt values no Date wrote. */
function transcript(): Message[] {
  return [
    { role: 'user', content: 'hi', id: 'm1', createdAt: at },
    { role: 'assistant', content: 'no createdAt at all', id: 'm2' },
    ...edgeDates.map((d, i): Message => ({ role: 'assistant', content: `edge ${i}`, createdAt: d })),
    ...notDates.map((v, i): Message => ({ role: 'tool', content: `not a date ${i}`, createdAt: v })),
    // only a message's own createdAt: the same string deeper stays a string.
    {
      role: 'tool',
      content: [{ type: 'text', content: 'x', createdAt: '2026-01-01T00:00:05.123Z' }],
      metadata: { createdAt: '2026-01-01T00:00:05.123Z' },
      createdAt: at,
    },
  ]
}

/** What the store keeps: JSON.stringify of the transcript, as the client always sent it. */
const stored = (m: unknown) => JSON.stringify(m)

/**
 * assertRevived checks a transcript read back against the one saved: each
 * Date is a Date of the same time, and everything else is what JSON gives
 * (deepStrictEqual, so a string never passes for a Date or the reverse).
 */
function assertRevived(got: readonly unknown[], sent: readonly Message[]) {
  assert.equal(got.length, sent.length)
  sent.forEach((s, i) => {
    const g = got[i] as Message
    if (s.createdAt instanceof Date) {
      assert.ok(g.createdAt instanceof Date, `message ${i}: createdAt is a Date, got ${typeof g.createdAt} ${String(g.createdAt)}`)
      assert.equal(g.createdAt.getTime(), s.createdAt.getTime(), `message ${i}: the same time`)
      const { createdAt: _g, ...gRest } = g
      const { createdAt: _s, ...sRest } = s
      assert.deepStrictEqual(gRest, JSON.parse(stored(sRest)), `message ${i}: the rest as saved`)
    } else {
      assert.deepStrictEqual(g, JSON.parse(stored(s)), `message ${i}: exactly as saved, createdAt included`)
      assert.equal('createdAt' in g, 'createdAt' in s, `message ${i}: createdAt present only where it was`)
    }
  })
  // deeper createdAt strings stay strings.
  const last = got[got.length - 1] as { content: Array<{ createdAt: unknown }>; metadata: { createdAt: unknown } }
  assert.equal(typeof last.content[0]!.createdAt, 'string')
  assert.equal(typeof last.metadata.createdAt, 'string')
}

/** A raw POST /v1/<method> in namespace ns: the reply's exact text. */
async function raw(url: string, ns: string, method: string, body: object): Promise<string> {
  const res = await fetch(`${url}/v1/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'ckpt-namespace': encodeURIComponent(ns) },
    body: JSON.stringify(body),
  })
  assert.equal(res.status, 200)
  return res.text()
}

/** The rule as the README states it, the slow way: the Date whose toISOString is s. */
function oracle(s: string): Date | undefined {
  const d = new Date(s)
  if (Number.isNaN(d.getTime())) return undefined
  return d.toISOString() === s ? d : undefined
}

/** A small deterministic generator (xorshift32), so a failure repeats. */
function rng(seed: number) {
  let x = seed
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) / 2 ** 32
  }
}

test('dateOf gives exactly the Date whose toISOString is the string, and nothing for any other string', () => {
  const agree = (s: string) => {
    const got = dateOf(s)
    const want = oracle(s)
    assert.equal(got === undefined, want === undefined, `${JSON.stringify(s)}: ${String(got)} vs ${String(want)}`)
    if (got !== undefined) assert.equal(got.getTime(), want!.getTime(), JSON.stringify(s))
  }
  const edges = [
    '2024-02-29T00:00:00.000Z', '2026-02-29T00:00:00.000Z', '1900-02-29T00:00:00.000Z', '2000-02-29T12:00:00.000Z',
    '-000004-02-29T00:00:00.000Z', '-000100-02-29T00:00:00.000Z', '-000400-02-29T00:00:00.000Z',
    '+275760-09-13T00:00:00.000Z', '+275760-09-13T00:00:00.001Z', '-271821-04-20T00:00:00.000Z', '-271821-04-19T23:59:59.999Z',
    '0000-01-01T00:00:00.000Z', '-000000-01-01T00:00:00.000Z', '+000000-01-01T00:00:00.000Z', '+009999-12-31T00:00:00.000Z',
    '+010000-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '-000001-12-31T23:59:59.999Z', '1970-01-01T00:00:00.000Z',
    '2026-01-01T24:00:00.000Z', '2026-01-01T23:60:00.000Z', '2026-01-01T23:59:60.000Z', '2026-13-01T00:00:00.000Z',
    '2026-00-01T00:00:00.000Z', '2026-01-00T00:00:00.000Z', '2026-04-31T00:00:00.000Z', '2026-01-01T00:00:00.000z',
    '2026-01-01 00:00:00.000Z', '2026-01-01T00:00:00,000Z', '2026-1-01T00:00:00.0000Z', '20260101T000000.000Z.....',
    ...notDates.filter((v): v is string => typeof v === 'string'),
  ]
  for (const s of edges) agree(s)
  assert.equal(dateOf('+275760-09-13T00:00:00.000Z')?.getTime(), 8.64e15)
  assert.equal(dateOf('-271821-04-20T00:00:00.000Z')?.getTime(), -8.64e15)
  // Random times over the whole range and near now, each as toISOString
  // writes it and with one character changed.
  const r = rng(0x9e3779b9)
  const chars = '0123456789+-TZ:. x'
  for (let i = 0; i < 20_000; i++) {
    const span = i % 2 === 0 ? 8.64e15 : 4e12
    const s = new Date(Math.round((r() * 2 - 1) * span)).toISOString()
    agree(s)
    const p = Math.floor(r() * s.length)
    agree(s.slice(0, p) + chars[Math.floor(r() * chars.length)] + s.slice(p + 1))
  }
})

function suite(backend: string, server: () => Running) {
  const open = (o: Partial<ClientOptions> = {}) => {
    const store = createCheckpointStore<Message>({ url: server().url, ...o })
    const ns = store.namespace!
    return {
      ns,
      store,
      messages: createMessageStore<Message>({ url: server().url, namespace: ns }),
      persistence: createPersistence<Message>({ url: server().url, namespace: ns }),
    }
  }

  describe(`${backend}: createdAt comes back as a Date`, () => {
    test('loadThread (message store and persistence): Dates where a Date was, all else as stored', async () => {
      const { messages, persistence } = open()
      const sent = transcript()
      await messages.saveThread('t', sent)
      assertRevived(await messages.loadThread('t'), sent)
      assertRevived(await persistence.stores.messages.loadThread('t'), sent)
      await persistence.stores.messages.saveThread('p', sent)
      assertRevived(await persistence.stores.messages.loadThread('p'), sent)
      assertRevived(await messages.loadThread('p'), sent)
    })

    test('loadThread: the stored JSON is what JSON.stringify wrote, and a read and re-save changes no byte', async () => {
      const { ns, messages, persistence } = open()
      const sent = transcript()
      await messages.saveThread('t', sent)
      const want = `{"messages":${stored(sent)}}`
      assert.equal(await raw(server().url, ns, 'loadThread', { threadId: 't' }), want)
      assert.ok(want.includes('"createdAt":"2026-01-01T00:00:05.123Z"'), 'a Date is stored as its ISO string')
      await messages.saveThread('t', await messages.loadThread('t'))
      assert.equal(await raw(server().url, ns, 'loadThread', { threadId: 't' }), want, 'message store: re-saved byte for byte')
      await persistence.stores.messages.saveThread('t', await persistence.stores.messages.loadThread('t'))
      assert.equal(await raw(server().url, ns, 'loadThread', { threadId: 't' }), want, 'persistence: re-saved byte for byte')
    })

    test('checkpoints: get, list and listPage revive the conversation; the checkpoint and its artifacts keep numbers', async () => {
      const { ns, store } = open()
      const w = await store.acquireWriter('t')
      const sent = transcript()
      const cp = {
        ...checkpoint('c1', 't', null, 1_000.5, [1]),
        conversation: sent,
        artifacts: [{ artifactId: 'a', name: 'n', mimeType: 'text/plain', size: 1, blobKey: `sandbox-artifacts/sha256/${'0'.repeat(64)}`, createdAt: 7 }],
      }
      await store.append({ checkpoint: cp, expectedHeadId: null, writer: w })
      await store.append({ checkpoint: { ...checkpoint('c2', 't', 'c1', 2_000), conversation: [] }, expectedHeadId: 'c1', writer: w })

      const got = await store.get('c1')
      assertRevived(got!.conversation, sent)
      assert.equal(got!.createdAt, 1_000.5)
      assert.equal(got!.artifacts[0]!.createdAt, 7)
      const list = await store.list('t')
      assert.deepEqual(list.map((c) => c.id), ['c1', 'c2'])
      assertRevived(list[0]!.conversation, sent)
      assert.deepEqual(list[1]!.conversation, [])
      for (const reverse of [false, true]) {
        const page = await store.listPage('t', { limit: 10, reverse })
        assert.equal(page.checkpoints.length, 2)
        assertRevived(page.checkpoints.find((c) => c.id === 'c1')!.conversation, sent)
      }

      // stored byte for byte, and appending what get returned stores the same bytes again.
      const text = await raw(server().url, ns, 'get', { id: 'c1' })
      assert.ok(text.includes(`"conversation":${stored(sent)}`), 'the conversation as JSON.stringify wrote it')
      await store.append({ checkpoint: { ...got!, id: 'c3', parentCheckpointId: 'c2', createdAt: 3_000 }, expectedHeadId: 'c2', writer: w })
      assert.ok((await raw(server().url, ns, 'get', { id: 'c3' })).includes(`"conversation":${stored(sent)}`), 're-appended byte for byte')
      await w.release()
    })

    test('forkFromCheckpoint: the returned checkpoint, the fork read back and its transcript all have Dates', async () => {
      const { ns, store, messages, persistence } = open()
      const w = await store.acquireWriter('src')
      const sent = transcript()
      await store.append({ checkpoint: { ...checkpoint('s1', 'src', null, 1), conversation: sent }, expectedHeadId: null, writer: w })
      const d = await store.acquireWriter('dst')
      const { checkpoint: root } = await store.forkFromCheckpoint({
        sourceThreadId: 'src',
        sourceCheckpointId: 's1',
        destinationThreadId: 'dst',
        destinationCheckpointId: 'd1',
        createdAt: 9,
        writer: d,
      })
      assertRevived(root.conversation, sent)
      assert.equal(root.createdAt, 9)
      assertRevived((await store.get('d1'))!.conversation, sent)
      assertRevived(await messages.loadThread('dst'), sent)
      assertRevived(await persistence.stores.messages.loadThread('dst'), sent)
      assert.equal(await raw(server().url, ns, 'loadThread', { threadId: 'dst' }), `{"messages":${stored(sent)}}`, 'the fork transcript as the conversation was stored')
      await w.release()
      await d.release()
    })

    test('the Dates of one read are separate objects, as a structured clone gives', async () => {
      const { store, messages } = open()
      const w = await store.acquireWriter('t')
      await store.append({ checkpoint: { ...checkpoint('c1', 't', null, 1), conversation: [{ role: 'user', content: 'x', createdAt: at }] }, expectedHeadId: null, writer: w })
      const a = await store.get('c1')
      const b = await store.get('c1')
      const da = a!.conversation[0]!.createdAt as Date
      da.setTime(0)
      assert.equal((b!.conversation[0]!.createdAt as Date).getTime(), at.getTime(), 'changing one read changes no other')
      await messages.saveThread('t2', [{ role: 'user', content: 'x', createdAt: at }])
      assert.equal(((await messages.loadThread('t2'))[0]!.createdAt as Date).getTime(), at.getTime())
      await w.release()
    })
  })
}

// memstore, always; Redis when redis-server is installed.
onMemAndRedis('tsdates', serverArgs, suite)
