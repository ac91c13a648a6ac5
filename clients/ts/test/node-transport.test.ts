// The node:http transport (Node without options.fetch): what goes on the
// wire, one keep-alive connection for sequential calls, and the retry
// rules of retry.test.ts (there through a scripted fetch) through a
// scripted server instead: 503s, dropped connections, replies cut off
// mid-way, silence, and answers that are never retried.

import { after, before, describe, mock, test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { CkptstoreError, createCheckpointStore, createInstanceStore, SandboxCheckpointConflictError } from '@ckptstore/client'
import { checkpoint, rejects, requestHeaders, startServer, type Running } from './helpers.js'

type Action =
  | { status: number; body: string }
  | 'destroy' // close the connection before any reply
  | 'cut' // send the head and half of the body, then close
  | 'hang' // never answer

interface Seen {
  method: string
  headers: IncomingHttpHeaders
  body: string
  socket: number
}

/** A server that answers each request from script(method, nth). */
async function scripted(script: (method: string, nth: number) => Action) {
  const seen: Seen[] = []
  const counts = new Map<string, number>()
  let sockets = 0
  const ids = new WeakMap<object, number>()
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => (body += c))
    req.on('end', () => {
      const method = (req.url ?? '').slice((req.url ?? '').lastIndexOf('/') + 1)
      const nth = (counts.get(method) ?? 0) + 1
      counts.set(method, nth)
      seen.push({ method, headers: req.headers, body, socket: ids.get(req.socket) ?? -1 })
      const a = script(method, nth)
      if (a === 'hang') return
      if (a === 'destroy') return req.socket.destroy()
      if (a === 'cut') {
        const full = '{"headId":"c1","padding":"' + 'x'.repeat(100) + '"}'
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(full.length) })
        res.write(full.slice(0, 20), () => req.socket.destroy())
        return
      }
      res.writeHead(a.status, { 'content-type': 'application/json' })
      res.end(a.body)
    })
  })
  server.on('connection', (s) => ids.set(s, ++sockets))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const addr = server.address()
  return {
    url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`,
    seen,
    of: (m: string) => seen.filter((s) => s.method === m),
    sockets: () => sockets,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()) }),
  }
}

const ok = (body: string): Action => ({ status: 200, body })
const unavailable: Action = { status: 503, body: '{"code":"UNAVAILABLE","message":"draining"}' }
const keyForm = /^[A-Za-z0-9_-]{22}$/

for (const nodeTransport of ['undici', 'node:http'] as const) {
  describe(`${nodeTransport}: the request`, () => {
    test('POST /v1/<method> with the same headers as through fetch, Content-Length set, no fetch headers', async () => {
      const s = await scripted(() => ok('{"headId":null}'))
      try {
        let now = 1_234.5
        const store = createCheckpointStore({
          nodeTransport,
          url: `${s.url}/prefix/`,
          token: 'tok',
          namespace: 'a/ä 😀',
          now: () => now,
          leaseDurationMs: 100,
          renewAfterMs: 25,
        })
        await store.getHead('t\uD800ä')
        now = 99
        await store.getHead('u')
        const [c1, c2] = s.seen
        assert.equal(c1!.method, 'getHead')
        assert.equal(c1!.body, '{"threadId":"t\\ud800ä"}')
        const { host, connection, ...h } = c1!.headers
        assert.equal(host, new URL(s.url).host)
        assert.equal(connection, 'keep-alive')
        assert.deepEqual(h, { ...requestHeaders, 'content-length': String(Buffer.byteLength(c1!.body)) })
        assert.equal(c2!.headers['ckpt-now'], '99', 'the clock is read per request')
      } finally {
        await s.close()
      }
    })

    test('sequential calls share one keep-alive connection; options.fetch switches to fetch', async () => {
      const s = await scripted(() => ok('{"headId":null}'))
      try {
        const store = createCheckpointStore({ nodeTransport, url: s.url })
        for (let i = 0; i < 20; i++) await store.getHead('t')
        // undici's Pool may open a second connection while the first is
        // still settling its first reply; after that, calls reuse them.
        assert.ok(s.sockets() <= (nodeTransport === 'undici' ? 2 : 1), `connections for 20 sequential calls: ${s.sockets()}`)
        assert.equal(s.seen[0]!.headers['sec-fetch-mode'], undefined, 'not fetch')
        const viaFetch = createCheckpointStore({ nodeTransport, url: s.url, fetch: (input, init) => fetch(input, init) })
        await viaFetch.getHead('t')
        assert.equal(s.seen.at(-1)!.headers['sec-fetch-mode'], 'cors', 'options.fetch is used when given')
      } finally {
        await s.close()
      }
    })
  })

  describe(`${nodeTransport}: idempotency keys`, () => {
    test('every write has its own key of 16 random bytes, across refills of the random pool', async () => {
      const s = await scripted(() => ok('{}'))
      try {
        const instances = createInstanceStore({ nodeTransport, url: s.url })
        // 600 writes: more than two pools of 256 keys.
        for (let i = 0; i < 600; i++) await instances.delete(`k${i}`)
        const keys = s.seen.map((c) => String(c.headers['idempotency-key']))
        assert.equal(keys.length, 600)
        assert.equal(new Set(keys).size, 600, 'no key repeats')
        for (const k of keys) {
          assert.match(k, keyForm)
          assert.equal(Buffer.from(k, 'base64url').toString('base64url'), k, 'canonical base64url of 16 bytes')
        }
      } finally {
        await s.close()
      }
    })
  })

  describe(`${nodeTransport}: retries`, () => {
    test('503s are retried with one key, then the call succeeds', async () => {
      const s = await scripted((m, n) => (m === 'append' && n <= 2 ? unavailable : ok('{"headId":"c1"}')))
      try {
        const store = createCheckpointStore({ nodeTransport, url: s.url })
        const w = { threadId: 't', ownerToken: 'o', fence: 1 }
        assert.deepEqual(await store.append({ checkpoint: checkpoint('c1', 't', null, 1), expectedHeadId: null, writer: w }), { headId: 'c1' })
        const keys = s.of('append').map((c) => c.headers['idempotency-key'])
        assert.equal(keys.length, 3)
        assert.match(String(keys[0]), keyForm)
        assert.equal(new Set(keys).size, 1)
      } finally {
        await s.close()
      }
    })

    test('an always-503 server: UNAVAILABLE after maxAttempts', async () => {
      const s = await scripted(() => unavailable)
      try {
        const store = createCheckpointStore({ nodeTransport, url: s.url, maxAttempts: 3 })
        await assert.rejects(store.getHead('t'), (e: unknown) => e instanceof CkptstoreError && e.code === 'UNAVAILABLE' && e.status === 503)
        assert.equal(s.seen.length, 3)
      } finally {
        await s.close()
      }
    })

    test('a dropped connection and a reply cut off mid-way are retried with the same key', async () => {
      const s = await scripted((m, n) => (n === 1 ? 'destroy' : n === 2 ? 'cut' : ok(m === 'append' ? '{"headId":"c1"}' : '{"headId":null}')))
      try {
        const store = createCheckpointStore({ nodeTransport, url: s.url })
        assert.equal(await store.getHead('t'), null)
        assert.equal(s.of('getHead').length, 3)
        assert.equal(s.of('getHead')[0]!.headers['idempotency-key'], undefined, 'reads carry no key')
        const w = { threadId: 't', ownerToken: 'o', fence: 1 }
        assert.deepEqual(await store.append({ checkpoint: checkpoint('c1', 't', null, 1), expectedHeadId: null, writer: w }), { headId: 'c1' })
        const keys = s.of('append').map((c) => c.headers['idempotency-key'])
        assert.equal(keys.length, 3)
        assert.equal(new Set(keys).size, 1)
      } finally {
        await s.close()
      }
    })

    test('a server that never answers: TIMEOUT per attempt, bounded', async () => {
      const s = await scripted(() => 'hang')
      try {
        const store = createCheckpointStore({ nodeTransport, url: s.url, timeoutMs: 30, maxAttempts: 2 })
        await assert.rejects(store.get('c'), (e: unknown) => e instanceof CkptstoreError && e.code === 'TIMEOUT')
        assert.equal(s.seen.length, 2)
      } finally {
        await s.close()
      }
    })

    test('an unreachable server: NETWORK_ERROR after the retries', async () => {
      const store = createCheckpointStore({ nodeTransport, url: 'http://127.0.0.1:1', maxAttempts: 2 })
      await assert.rejects(store.list('t'), (e: unknown) => e instanceof CkptstoreError && e.code === 'NETWORK_ERROR' && e.cause instanceof Error)
    })

    test('answers that are not retried: 502 as HTTP_502, 500 INTERNAL; BAD_RESPONSE for a reply off the protocol', async () => {
      const s = await scripted((m) =>
        m === 'get' ? { status: 502, body: '<html>bad gateway</html>' } : m === 'acquireWriter' ? { status: 500, body: '{"code":"INTERNAL","message":"x"}' } : m === 'list' ? ok('not json') : ok('{"other":1}'),
      )
      try {
        const store = createCheckpointStore({ nodeTransport, url: s.url })
        await assert.rejects(store.get('c'), (e: unknown) => e instanceof CkptstoreError && e.code === 'HTTP_502' && e.status === 502)
        await assert.rejects(store.acquireWriter('u'), (e: unknown) => e instanceof CkptstoreError && e.code === 'INTERNAL' && e.status === 500)
        await assert.rejects(store.list('t'), (e: unknown) => e instanceof CkptstoreError && e.code === 'BAD_RESPONSE')
        await assert.rejects(store.getHead('t'), (e: unknown) => e instanceof CkptstoreError && e.code === 'BAD_RESPONSE')
        assert.deepEqual(s.seen.map((c) => c.method), ['get', 'acquireWriter', 'list', 'getHead'], 'each sent once')
      } finally {
        await s.close()
      }
    })
  })

  describe(`${nodeTransport}: against ckptserver`, () => {
    let server: Running
    before(async () => {
      server = await startServer('mem')
    })
    after(async () => server?.stop())

    test('a contract rejection is the contract class, and is not retried; 16 calls at once all answer', async () => {
      const store = createCheckpointStore({ nodeTransport, url: server.url })
      const w = await store.acquireWriter('t')
      await rejects(store.append({ checkpoint: checkpoint('c1', 't', null, 1), expectedHeadId: 'x', writer: w }), SandboxCheckpointConflictError, 'SANDBOX_SNAPSHOT_STALE_HEAD')
      const leases = await Promise.all(Array.from({ length: 16 }, (_, i) => store.acquireWriter(`p${i}`)))
      await Promise.all(leases.map((l, i) => store.append({ checkpoint: checkpoint(`p${i}-1`, `p${i}`, null, 1, [i]), expectedHeadId: null, writer: l })))
      assert.equal((await store.threads()).threads.length, 16, 'the 16 threads with a checkpoint (t has only a lease)')
      assert.equal((await store.listBlobReferences()).length, 16)
    })
  })
}
