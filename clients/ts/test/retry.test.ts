// Retries, idempotency keys and the request headers: a response lost after
// commit (a proxy that forwards the request and drops the reply), 503s,
// network errors and timeouts, bounded; and what goes on the wire.

import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http'
import {
  CkptstoreError,
  createCheckpointStore,
  createInstanceStore,
  createMessageStore,
  SandboxCheckpointConflictError,
  SandboxCheckpointWriterConflictError,
} from '@ckptstore/client'
import { checkpoint, fileKey, redisUnavailable, rejects, requestHeaders, startRedis, startServer, type Running } from './helpers.js'

let server: Running
before(async () => {
  server = await startServer('mem')
})
after(async () => server?.stop())

interface Seen {
  method: string
  key: string | undefined
}

type Fate = 'forward' | 'drop' | '503-after-commit'

/**
 * startProxy forwards every request to the server. For the requests that
 * fate marks, it waits for the server's whole reply (the write has
 * committed) and then either destroys the client's connection without a
 * byte of it, or answers 503 instead.
 */
async function startProxy(upstream: string | ((method: string, nth: number) => string), fate: (method: string, nth: number) => Fate) {
  const seen: Seen[] = []
  const counts = new Map<string, number>()
  const route = typeof upstream === 'string' ? () => upstream : upstream
  const proxy: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const method = (req.url ?? '').replace(/^\/v1\//, '')
      const nth = (counts.get(method) ?? 0) + 1
      counts.set(method, nth)
      seen.push({ method, key: header(req.headers, 'idempotency-key') })
      const f = fate(method, nth)
      const target = new URL(route(method, nth))
      const up = request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (upRes) => {
          const body: Buffer[] = []
          upRes.on('data', (c: Buffer) => body.push(c))
          upRes.on('end', () => {
            if (f === 'drop') {
              req.socket.destroy() // committed, and the reply is lost
              return
            }
            if (f === '503-after-commit') {
              res.writeHead(503, { 'content-type': 'application/json' })
              res.end(JSON.stringify({ code: 'UNAVAILABLE', message: 'proxy: upstream reply discarded' }))
              return
            }
            res.writeHead(upRes.statusCode ?? 502, upRes.headers)
            res.end(Buffer.concat(body))
          })
        },
      )
      up.on('error', () => req.socket.destroy())
      up.end(Buffer.concat(chunks))
    })
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  const a = proxy.address()
  const url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`
  return {
    url,
    seen,
    of: (method: string) => seen.filter((s) => s.method === method),
    close: () => new Promise<void>((r) => { proxy.closeAllConnections(); proxy.close(() => r()) }),
  }
}

function header(h: IncomingHttpHeaders, name: string): string | undefined {
  const v = h[name]
  return Array.isArray(v) ? v[0] : v
}

const keyForm = /^[A-Za-z0-9_-]{22}$/

function lostResponse(backend: string, up: () => Running) {
  describe(`${backend}: a response lost after commit`, () => {
    test('append: the retry gets {headId}, and the checkpoint is written once', async () => {
      const proxy = await startProxy(up().url, (m, n) => (m === 'append' && n === 1 ? 'drop' : 'forward'))
      try {
        const store = createCheckpointStore({ url: proxy.url })
        const direct = createCheckpointStore({ url: up().url, namespace: store.namespace! })
        const w = await store.acquireWriter('t')
        assert.deepEqual(await store.append({ checkpoint: checkpoint('c1', 't', null, 1, [7]), expectedHeadId: null, writer: w }), { headId: 'c1' })
        const appends = proxy.of('append')
        assert.equal(appends.length, 2, 'the first reply was dropped, so the client sent it again')
        assert.match(appends[0]!.key ?? '', keyForm)
        assert.equal(appends[1]!.key, appends[0]!.key, 'one Idempotency-Key for every attempt of one call')
        assert.deepEqual((await direct.list('t')).map((c) => c.id), ['c1'])
        assert.deepEqual(await direct.listBlobReferences(), [{ key: fileKey(7), references: 1 }], 'the blob is counted once')

        // The next logical call has a key of its own and builds on the one head.
        await store.append({ checkpoint: checkpoint('c2', 't', 'c1', 2), expectedHeadId: 'c1', writer: w })
        assert.notEqual(proxy.of('append')[2]!.key, appends[0]!.key)
        assert.equal(await direct.getHead('t'), 'c2')
      } finally {
        await proxy.close()
      }
    })

    test('append answered 503 after it committed: the retry gets {headId}', async () => {
      const proxy = await startProxy(up().url, (m, n) => (m === 'append' && n === 1 ? '503-after-commit' : 'forward'))
      try {
        const store = createCheckpointStore({ url: proxy.url })
        const w = await store.acquireWriter('t')
        assert.deepEqual(await store.append({ checkpoint: checkpoint('c1', 't', null, 1, [7]), expectedHeadId: null, writer: w }), { headId: 'c1' })
        assert.equal(proxy.of('append').length, 2)
        assert.equal((await store.list('t')).length, 1)
        assert.deepEqual(await store.listBlobReferences(), [{ key: fileKey(7), references: 1 }])
      } finally {
        await proxy.close()
      }
    })

    test('acquireWriter: the retry gets the same lease, not WRITER_CONFLICT', async () => {
      const proxy = await startProxy(up().url, (m, n) => (m === 'acquireWriter' && n === 1 ? 'drop' : 'forward'))
      try {
        const store = createCheckpointStore({ url: proxy.url })
        const lease = await store.acquireWriter('t')
        const tries = proxy.of('acquireWriter')
        assert.equal(tries.length, 2)
        assert.equal(tries[1]!.key, tries[0]!.key)
        assert.equal(lease.ownerToken, tries[0]!.key, 'docs/http-api.md: the lease whose ownerToken is the key')
        await store.append({ checkpoint: checkpoint('c1', 't', null, 1), expectedHeadId: null, writer: lease })
        await rejects(store.acquireWriter('t'), SandboxCheckpointWriterConflictError, 'SANDBOX_SNAPSHOT_WRITER_CONFLICT')
      } finally {
        await proxy.close()
      }
    })

    test('deleteHead: the retry succeeds and the head moves once', async () => {
      const proxy = await startProxy(up().url, (m, n) => (m === 'deleteHead' && n === 1 ? 'drop' : 'forward'))
      try {
        const store = createCheckpointStore({ url: proxy.url })
        const w = await store.acquireWriter('t')
        await store.append({ checkpoint: checkpoint('c1', 't', null, 1), expectedHeadId: null, writer: w })
        await store.append({ checkpoint: checkpoint('c2', 't', 'c1', 2), expectedHeadId: 'c1', writer: w })
        assert.equal(await store.deleteHead({ threadId: 't', checkpointId: 'c2', writer: w }), undefined)
        assert.equal(proxy.of('deleteHead').length, 2)
        assert.equal(await store.getHead('t'), 'c1')
        assert.deepEqual((await store.list('t')).map((c) => c.id), ['c1'])
      } finally {
        await proxy.close()
      }
    })

    test('forkFromCheckpoint: the retry gets {checkpoint}, and the fork is written once', async () => {
      const proxy = await startProxy(up().url, (m, n) => (m === 'forkFromCheckpoint' && n === 1 ? 'drop' : 'forward'))
      try {
        const store = createCheckpointStore({ url: proxy.url })
        const s = await store.acquireWriter('src')
        await store.append({ checkpoint: checkpoint('s1', 'src', null, 1, [3]), expectedHeadId: null, writer: s })
        const d = await store.acquireWriter('dst')
        const { checkpoint: root } = await store.forkFromCheckpoint({
          sourceThreadId: 'src', sourceCheckpointId: 's1', destinationThreadId: 'dst', destinationCheckpointId: 'd1', createdAt: 2, writer: d,
        })
        assert.equal(root.id, 'd1')
        assert.equal(root.reason, 'fork-root')
        assert.equal(proxy.of('forkFromCheckpoint').length, 2)
        assert.deepEqual(await store.listBlobReferences(), [{ key: fileKey(3), references: 2 }])
      } finally {
        await proxy.close()
      }
    })

    test('deleteCheckpoints, saveThread, instanceUpsert: the retries repeat to the same state', async () => {
      const lost = new Set(['deleteCheckpoints', 'saveThread', 'instanceUpsert', 'instanceDelete', 'renew'])
      const proxy = await startProxy(up().url, (m, n) => (lost.has(m) && n === 1 ? 'drop' : 'forward'))
      try {
        const store = createCheckpointStore({ url: proxy.url })
        const opts = { url: proxy.url, namespace: store.namespace! }
        const w = await store.acquireWriter('t')
        let head: string | null = null
        for (let i = 1; i <= 4; i++) head = (await store.append({ checkpoint: checkpoint(`c${i}`, 't', head, i), expectedHeadId: head, writer: w })).headId
        const { deleted } = await store.deleteCheckpoints({ threadId: 't', keep: 2, writer: w })
        assert.ok(Array.isArray(deleted))
        assert.deepEqual((await store.list('t')).map((c) => c.id), ['c3', 'c4'], 'kept exactly keep, no more deleted by the retry')
        assert.equal(typeof (await w.renew()).expiresAt, 'number')

        const messages = createMessageStore(opts)
        await messages.saveThread('t', [{ n: 1 }])
        assert.deepEqual(await messages.loadThread('t'), [{ n: 1 }])

        const instances = createInstanceStore(opts)
        const rec = { key: 'k', provider: 'p', providerSandboxId: 's', threadId: 't', updatedAt: 3 }
        await instances.upsert(rec)
        assert.deepEqual(await instances.get('k'), rec)
        await instances.delete('k')
        assert.equal(await instances.get('k'), null)
        for (const m of lost) assert.equal(proxy.of(m).length, 2, `${m} was sent twice`)
      } finally {
        await proxy.close()
      }
    })
  })
}

lostResponse('mem', () => server)

// The stores recognise a repeated write each their own way (memstore, the
// Redis scripts): the lost replies go through redis-server too, when it is here.
{
  const why = redisUnavailable()
  if (why) {
    test('redis: a response lost after commit', { skip: why }, () => {})
  } else {
    let redis: Running
    let onRedis: Running
    before(async () => {
      redis = await startRedis()
      onRedis = await startServer(`${redis.url}?prefix=tsretry`)
    })
    after(async () => {
      await onRedis?.stop()
      await redis?.stop()
    })
    lostResponse('redis', () => onRedis)

    describe('redis: two servers over one store', () => {
      let second: Running
      before(async () => {
        second = await startServer(`${redis.url}?prefix=tsretry`)
      })
      after(async () => second?.stop())

      test('a lease taken through one server conflicts through the other', async () => {
        const a = createCheckpointStore({ url: onRedis.url })
        const b = createCheckpointStore({ url: second.url, namespace: a.namespace! })
        const w = await a.acquireWriter('t')
        await rejects(b.acquireWriter('t'), SandboxCheckpointWriterConflictError, 'SANDBOX_SNAPSHOT_WRITER_CONFLICT')
        await b.append({ checkpoint: checkpoint('c1', 't', null, 1), expectedHeadId: null, writer: w })
        assert.equal(await a.getHead('t'), 'c1')
      })

      test('a retry that reaches the other server is recognised: {headId}, written once', async () => {
        // The first append goes to one server, which commits and loses the
        // reply; the retry goes to the other.
        const proxy = await startProxy(
          (m, n) => (m === 'append' && n > 1 ? second.url : onRedis.url),
          (m, n) => (m === 'append' && n === 1 ? 'drop' : 'forward'),
        )
        try {
          const store = createCheckpointStore({ url: proxy.url })
          const w = await store.acquireWriter('t')
          assert.deepEqual(await store.append({ checkpoint: checkpoint('c1', 't', null, 1, [4]), expectedHeadId: null, writer: w }), { headId: 'c1' })
          assert.equal(proxy.of('append').length, 2)
          const direct = createCheckpointStore({ url: second.url, namespace: store.namespace! })
          assert.deepEqual((await direct.list('t')).map((c) => c.id), ['c1'])
          assert.deepEqual(await direct.listBlobReferences(), [{ key: fileKey(4), references: 1 }])
        } finally {
          await proxy.close()
        }
      })
    })
  }
}

/** A fetch that answers from script for the calls it is told to, and passes the rest on. */
function scriptedFetch(script: (method: string, nth: number, init: RequestInit) => Response | Error | 'hang' | undefined) {
  const calls: Array<{ url: string; method: string; headers: Record<string, string>; body: string }> = []
  const counts = new Map<string, number>()
  const f: typeof fetch = async (input, init = {}) => {
    const url = String(input)
    const method = url.slice(url.lastIndexOf('/') + 1)
    const nth = (counts.get(method) ?? 0) + 1
    counts.set(method, nth)
    calls.push({ url, method, headers: { ...(init.headers as Record<string, string>) }, body: String(init.body) })
    const r = script(method, nth, init)
    if (r === 'hang') {
      return new Promise<Response>((_, reject) => {
        init.signal?.addEventListener('abort', () => reject(init.signal?.reason))
      })
    }
    if (r instanceof Error) throw r
    if (r) return r
    return fetch(input, init)
  }
  return { fetch: f, calls, of: (m: string) => calls.filter((c) => c.method === m) }
}

const unavailable = () => new Response(JSON.stringify({ code: 'UNAVAILABLE', message: 'draining' }), { status: 503 })

describe('retries', () => {
  test('503s are retried with one key, then the call succeeds', async () => {
    const s = scriptedFetch((m, n) => (m === 'append' && n <= 2 ? unavailable() : undefined))
    const store = createCheckpointStore({ url: server.url, fetch: s.fetch })
    const w = await store.acquireWriter('t')
    assert.deepEqual(await store.append({ checkpoint: checkpoint('c1', 't', null, 1), expectedHeadId: null, writer: w }), { headId: 'c1' })
    const keys = s.of('append').map((c) => c.headers['idempotency-key'])
    assert.equal(keys.length, 3)
    assert.match(keys[0] ?? '', keyForm)
    assert.deepEqual(new Set(keys).size, 1)
  })

  test('retries are bounded: an always-503 server fails with UNAVAILABLE after maxAttempts', async () => {
    const s = scriptedFetch(() => unavailable())
    const store = createCheckpointStore({ url: server.url, fetch: s.fetch, maxAttempts: 3 })
    await assert.rejects(store.getHead('t'), (e: unknown) => {
      assert.ok(e instanceof CkptstoreError)
      assert.equal(e.name, 'CkptstoreError')
      assert.equal(e.code, 'UNAVAILABLE')
      assert.equal(e.status, 503)
      return true
    })
    assert.equal(s.calls.length, 3)
  })

  test('network errors are retried; reads carry no key', async () => {
    const s = scriptedFetch((m, n) => (m === 'getHead' && n === 1 ? new TypeError('fetch failed') : undefined))
    const store = createCheckpointStore({ url: server.url, fetch: s.fetch })
    assert.equal(await store.getHead('t'), null)
    assert.equal(s.of('getHead').length, 2)
    assert.equal(s.of('getHead')[0]!.headers['idempotency-key'], undefined)
  })

  test('a server that never answers: TIMEOUT per attempt, bounded', async () => {
    const s = scriptedFetch(() => 'hang')
    const store = createCheckpointStore({ url: server.url, fetch: s.fetch, timeoutMs: 30, maxAttempts: 2 })
    await assert.rejects(store.get('c'), (e: unknown) => e instanceof CkptstoreError && e.code === 'TIMEOUT')
    assert.equal(s.calls.length, 2)
  })

  test('an unreachable server: NETWORK_ERROR after the retries', async () => {
    const store = createCheckpointStore({ url: 'http://127.0.0.1:1', maxAttempts: 2 })
    await assert.rejects(store.list('t'), (e: unknown) => e instanceof CkptstoreError && e.code === 'NETWORK_ERROR')
  })

  test('a contract rejection is not retried', async () => {
    const s = scriptedFetch(() => undefined)
    const store = createCheckpointStore({ url: server.url, fetch: s.fetch })
    const w = await store.acquireWriter('t')
    await rejects(store.append({ checkpoint: checkpoint('c1', 't', null, 1), expectedHeadId: 'x', writer: w }), SandboxCheckpointConflictError, 'SANDBOX_SNAPSHOT_STALE_HEAD')
    assert.equal(s.of('append').length, 1)
  })

  test('an error reply that is not the protocol: HTTP_<status>, not retried', async () => {
    const s = scriptedFetch(() => new Response('<html>bad gateway</html>', { status: 502 }))
    const store = createCheckpointStore({ url: server.url, fetch: s.fetch })
    await assert.rejects(store.get('c'), (e: unknown) => e instanceof CkptstoreError && e.code === 'HTTP_502' && e.status === 502)
    assert.equal(s.calls.length, 1)
  })

  test('a reply without its field: BAD_RESPONSE', async () => {
    const s = scriptedFetch(() => new Response('{"other":1}', { status: 200 }))
    const store = createCheckpointStore({ url: server.url, fetch: s.fetch })
    await assert.rejects(store.getHead('t'), (e: unknown) => e instanceof CkptstoreError && e.code === 'BAD_RESPONSE')
    const t = scriptedFetch(() => new Response('not json', { status: 200 }))
    await assert.rejects(createCheckpointStore({ url: server.url, fetch: t.fetch }).getHead('t'), (e: unknown) => e instanceof CkptstoreError && e.code === 'BAD_RESPONSE')
  })

  test('release never throws, even when the server cannot be reached', async () => {
    let down = false
    const s = scriptedFetch(() => (down ? new TypeError('fetch failed') : undefined))
    const store = createCheckpointStore({ url: server.url, fetch: s.fetch, maxAttempts: 2 })
    const lease = await store.acquireWriter('t')
    down = true
    assert.equal(await lease.release(), undefined)
    assert.equal(s.of('release').length, 2)
  })

  test('a server error (500 INTERNAL) is a CkptstoreError and is not retried', async () => {
    const s = scriptedFetch(() => new Response('{"code":"INTERNAL","message":"x"}', { status: 500 }))
    const store = createCheckpointStore({ url: server.url, fetch: s.fetch })
    await assert.rejects(store.acquireWriter('u'), (e: unknown) => e instanceof CkptstoreError && e.code === 'INTERNAL' && e.status === 500)
    assert.equal(s.calls.length, 1)
  })
})

describe('the request', () => {
  test('POST /v1/<method>, JSON body, dev headers, namespace percent-encoded, token as Bearer', async () => {
    const s = scriptedFetch(() => new Response('{"headId":null}', { status: 200 }))
    let now = 1_234.5
    const store = createCheckpointStore({
      url: 'http://example.invalid/prefix/',
      fetch: s.fetch,
      token: 'tok',
      namespace: 'a/ä 😀',
      now: () => now,
      leaseDurationMs: 100,
      renewAfterMs: 25,
    })
    assert.equal(store.namespace, 'a/ä 😀')
    await store.getHead('t\uD800')
    now = 99
    await store.getHead('u')
    const [c1, c2] = s.calls
    assert.equal(c1!.url, 'http://example.invalid/prefix/v1/getHead')
    assert.equal(c1!.body, '{"threadId":"t\\ud800"}', 'a lone surrogate goes as an escape, for the server to refuse')
    assert.deepEqual(c1!.headers, requestHeaders)
    assert.equal(c2!.headers['ckpt-now'], '99', 'the clock is read per request')
  })

  test('writers go as {threadId, ownerToken, fence}; expectedHeadId undefined goes as null', async () => {
    const s = scriptedFetch(() => new Response('{"headId":"c1"}', { status: 200 }))
    const store = createCheckpointStore({ url: 'http://example.invalid', fetch: s.fetch })
    const lease = { threadId: 't', ownerToken: 'o', fence: 3, expiresAt: 9, renewAfterMs: 1, renew: async () => ({ expiresAt: 1 }), release: async () => {} }
    await store.append({ checkpoint: checkpoint('c1', 't', null, 1), expectedHeadId: undefined as unknown as null, writer: lease })
    const body = JSON.parse(s.calls[0]!.body) as Record<string, unknown>
    assert.deepEqual(body['writer'], { threadId: 't', ownerToken: 'o', fence: 3 })
    assert.equal(body['expectedHeadId'], null)
  })

  test('namespaces: generated when neither token nor namespace is given, none with a token', async () => {
    const s = scriptedFetch(() => new Response('{"headId":null}', { status: 200 }))
    const a = createCheckpointStore({ url: 'http://example.invalid', fetch: s.fetch })
    const b = createCheckpointStore({ url: 'http://example.invalid', fetch: s.fetch })
    assert.match(a.namespace ?? '', /^ts-[A-Za-z0-9_-]{22}$/)
    assert.notEqual(a.namespace, b.namespace)
    const c = createCheckpointStore({ url: 'http://example.invalid', fetch: s.fetch, token: 't' })
    assert.equal(c.namespace, undefined)
    await c.getHead('x')
    assert.equal(s.calls[0]!.headers['ckpt-namespace'], undefined)
    assert.equal(s.calls[0]!.headers['ckpt-now'], undefined)
  })

  test('bad options are refused when the store is created', () => {
    assert.throws(() => createCheckpointStore({} as never), TypeError)
    assert.throws(() => createCheckpointStore({ url: 'not a url' }), TypeError)
    assert.throws(() => createCheckpointStore({ url: 'ftp://x' }), TypeError)
    assert.throws(() => createCheckpointStore({ url: 'http://x', namespace: '' }), TypeError)
    assert.throws(() => createCheckpointStore({ url: 'http://x', namespace: 'bad\uD800' }), URIError)
  })
})
