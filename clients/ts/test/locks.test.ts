// createLockStore against a real ckptserver (--dev): exclusion across two
// client objects, and across two ckptserver processes over one
// redis-server; the lock outlives its lease while renewed; the signal
// aborts when the server says the lease is lost and when renewals go
// unconfirmed; a stale holder's release never frees its successor; what
// goes on the wire (a scripted server). No timed assertions: orderings and
// states only.

import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import { setTimeout as wait } from 'node:timers/promises'
import { createLockStore, type LockStoreClient } from '@ckptstore/client'
import { redisUnavailable, startRedis, startServer, type Running } from './helpers.js'

/** One raw POST to the server, as the lock protocol's steps go: the namespace and clock headers given. */
async function post(url: string, method: string, body: object, headers: Record<string, string>): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${url}/v1/${method}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  return { status: res.status, json: (await res.json()) as Record<string, unknown> }
}

/**
 * Runs n critical sections on key through the stores in turn, each
 * awaiting real I/O inside, and reports the greatest number ever inside at
 * once and the order they entered.
 */
async function contend(stores: LockStoreClient[], key: string, n: number) {
  let inside = 0
  let most = 0
  const entered: number[] = []
  await Promise.all(
    Array.from({ length: n }, (_, i) =>
      stores[i % stores.length]!.withLock(key, async (signal) => {
        inside++
        most = Math.max(most, inside)
        entered.push(i)
        await wait(5)
        assert.equal(signal.aborted, false)
        inside--
        return i
      }),
    ),
  )
  return { most, entered }
}

function suite(backend: string, servers: () => Running[], store: () => string) {
  describe(`${backend}: exclusion`, () => {
    test('two client objects of one namespace: one critical section at a time, every one runs, fn\'s value comes back', async () => {
      const [s] = servers()
      const a = createLockStore({ url: s!.url })
      const b = createLockStore({ url: s!.url, namespace: a.namespace! })
      const { most, entered } = await contend([a, b], 'k', 12)
      assert.equal(most, 1)
      assert.equal(entered.length, 12)
      assert.equal(await a.withLock('k', async () => 'value'), 'value')
    })

    test('different keys do not exclude each other, and namespaces are apart', async () => {
      const [s] = servers()
      const a = createLockStore({ url: s!.url })
      const other = createLockStore({ url: s!.url })
      let release!: () => void
      const held = new Promise<void>((r) => (release = r))
      const first = a.withLock('x', () => held)
      // Both of these enter while x is held: another key, another namespace.
      await a.withLock('y', async () => {})
      await other.withLock('x', async () => {})
      release()
      await first
    })

    test('a throwing fn rejects with its own error and releases', async () => {
      const [s] = servers()
      const a = createLockStore({ url: s!.url })
      const boom = new Error('boom')
      await assert.rejects(a.withLock('k', async () => {
        throw boom
      }), (e) => e === boom)
      await assert.rejects(a.withLock('k', () => {
        throw boom
      }), (e) => e === boom)
      // Released: the next one enters (a held key would make this wait forever).
      assert.equal(await a.withLock('k', async () => 1), 1)
    })

    test('a lock outlives its lease while renewed: a contender waits the whole section', async () => {
      const [s] = servers()
      const a = createLockStore({ url: s!.url, leaseDurationMs: 600, renewAfterMs: 150 })
      const b = createLockStore({ url: s!.url, namespace: a.namespace! })
      let done = false
      const order: string[] = []
      const first = a.withLock('k', async (signal) => {
        order.push('a in')
        await wait(1_500) // 2.5 leases
        assert.equal(signal.aborted, false, 'renewals kept the lease')
        done = true
        order.push('a out')
      })
      await wait(50)
      await b.withLock('k', async () => {
        assert.equal(done, true, 'b entered only after a left')
        order.push('b in')
      })
      await first
      assert.deepEqual(order, ['a in', 'a out', 'b in'])
    })
  })

  describe(`${backend}: losing the lease`, () => {
    test('the signal aborts on PERSIST_LOCK_LOST, withLock rejects with it, and the stale release does not free the successor', async () => {
      const [s] = servers()
      // Frozen clocks: neither holder's own deadline can pass, so only the
      // server's answer can end a's hold. b's clock is past a's lease.
      const t0 = Date.now()
      const a = createLockStore({ url: s!.url, now: () => t0, leaseDurationMs: 1_000, renewAfterMs: 100 })
      const ns = a.namespace!
      const b = createLockStore({ url: s!.url, namespace: ns, now: () => t0 + 5_000 })
      let aSignal: AbortSignal | undefined
      let bEntered!: () => void
      const bIn = new Promise<void>((r) => (bEntered = r))
      let finishB!: () => void
      const bHold = new Promise<void>((r) => (finishB = r))
      let aEntered!: () => void
      const aIn = new Promise<void>((r) => (aEntered = r))
      const aRun = a.withLock('k', async (signal) => {
        aSignal = signal
        aEntered()
        await bIn
        await new Promise<void>((r) => (signal.aborted ? r() : signal.addEventListener('abort', () => r())))
        return 'a finished'
      })
      aRun.catch(() => {})
      await aIn // b asks only once a holds (else b could come first and a wait for ever on its frozen clock)
      let bSignal: AbortSignal | undefined
      const bRun = b.withLock('k', async (signal) => {
        bSignal = signal
        bEntered()
        await bHold
      })
      await assert.rejects(aRun, (e: unknown) => (e as { code?: string }).code === 'PERSIST_LOCK_LOST' && /no longer holds/.test((e as Error).message))
      assert.equal(aSignal?.aborted, true)
      assert.equal((aSignal?.reason as { code?: string }).code, 'PERSIST_LOCK_LOST')
      // a's withLock has released (in its finally) before rejecting. b still
      // holds: a fresh token, at b's clock, is not granted.
      const h = { 'ckpt-namespace': encodeURIComponent(ns), 'ckpt-now': String(t0 + 5_000) }
      const probe = `probe-${crypto.randomUUID()}`
      const r = await post(s!.url, 'locks/acquire', { key: 'k', token: probe, waitMs: 0 }, h)
      assert.equal(r.status, 200, JSON.stringify(r.json))
      assert.equal(r.json['held'], false, 'the stale release freed the successor')
      await post(s!.url, 'locks/release', { key: 'k', token: probe }, h)
      assert.equal(bSignal?.aborted, false)
      finishB()
      await bRun
    })

    test('the signal aborts when renewals go unconfirmed past the deadline (the server is gone)', async () => {
      // A server of its own, stopped mid-section.
      const own = await startServer(store(), ['--dev'])
      try {
        const a = createLockStore({ url: own.url, leaseDurationMs: 600, renewAfterMs: 150, maxAttempts: 1, timeoutMs: 2_000 })
        const run = a.withLock('k', async (signal) => {
          await own.stop()
          await new Promise<void>((r) => (signal.aborted ? r() : signal.addEventListener('abort', () => r())))
          return signal.reason as Error
        })
        await assert.rejects(run, (e: unknown) => (e as { code?: string }).code === 'PERSIST_LOCK_LOST' && /no renewal/.test((e as Error).message))
      } finally {
        await own.stop()
      }
    })

    test('a section that resolves after losing the lock still rejects with the loss', async () => {
      const [s] = servers()
      const t0 = Date.now()
      const a = createLockStore({ url: s!.url, now: () => t0, leaseDurationMs: 1_000, renewAfterMs: 100 })
      const b = createLockStore({ url: s!.url, namespace: a.namespace!, now: () => t0 + 5_000 })
      let stolen!: () => void
      const taken = new Promise<void>((r) => (stolen = r))
      let aEntered!: () => void
      const aIn = new Promise<void>((r) => (aEntered = r))
      const aRun = a.withLock('k', async (signal) => {
        aEntered()
        await taken
        await new Promise<void>((r) => (signal.aborted ? r() : signal.addEventListener('abort', () => r())))
        return 'ignored the signal'
      })
      aRun.catch(() => {})
      await aIn
      await b.withLock('k', async () => stolen())
      await assert.rejects(aRun, (e: unknown) => (e as { code?: string }).code === 'PERSIST_LOCK_LOST')
    })
  })
}

describe('the wire (a scripted server)', () => {
  test("the dev options go as createCheckpointStore's headers; acquire waits on the server (waitMs); renew and release carry the same random token", async () => {
    const seen: Array<{ method: string; headers: IncomingHttpHeaders; body: Record<string, unknown> }> = []
    let acquires = 0
    const server = createServer((req, res) => {
      let text = ''
      req.setEncoding('utf8')
      req.on('data', (c: string) => (text += c))
      req.on('end', () => {
        const method = (req.url ?? '').replace(/^\/v1\//, '')
        const body = JSON.parse(text) as Record<string, unknown>
        seen.push({ method, headers: req.headers, body })
        res.setHeader('content-type', 'application/json')
        const now = 1_000
        if (method === 'locks/acquire') {
          acquires++
          // Not held the first time, as after a wait that saw no release.
          const held = acquires > 1
          const reply = () => res.end(JSON.stringify({ held, fence: 7, expiresAt: now + 900, now }))
          if (held) return reply()
          setTimeout(reply, Number(body['waitMs']))
          return
        }
        if (method === 'locks/renew') return res.end(JSON.stringify({ held: true, fence: 7, expiresAt: now + 900, now }))
        if (method === 'locks/release') return res.end(JSON.stringify({ held: false }))
        res.statusCode = 404
        res.end('{"code":"NOT_FOUND","message":"no"}')
      })
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const addr = server.address()
    const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`
    try {
      const store = createLockStore({ url, namespace: 'ns ✓', now: () => 1_000, leaseDurationMs: 900, renewAfterMs: 100 })
      const value = await store.withLock('key', async () => {
        await wait(350) // room for renewals
        return 42
      })
      assert.equal(value, 42)
    } finally {
      server.close()
    }
    const methods = seen.map((s) => s.method)
    assert.deepEqual(methods.slice(0, 2), ['locks/acquire', 'locks/acquire'])
    assert.equal(methods.at(-1), 'locks/release')
    assert.ok(methods.filter((m) => m === 'locks/renew').length >= 1, methods.join(','))
    const token = seen[0]!.body['token']
    assert.match(String(token), /^[A-Za-z0-9_-]{1,1024}$/)
    for (const s of seen) {
      assert.equal(s.body['key'], 'key')
      assert.equal(s.body['token'], token, `${s.method} carries the same token`)
      assert.equal(s.headers['ckpt-namespace'], encodeURIComponent('ns ✓'))
      assert.equal(s.headers['ckpt-now'], '1000')
      assert.equal(s.headers['ckpt-lease-duration-ms'], '900')
      assert.equal(s.headers['ckpt-renew-after-ms'], '100')
      assert.equal(s.headers['idempotency-key'], undefined, 'lock steps repeat to the same state: no key')
    }
    assert.equal(seen[0]!.body['waitMs'], 300, 'min(20000, lease/3)')
    const other = await (async () => {
      const s2 = createLockStore({ url: 'http://127.0.0.1:1', maxAttempts: 1 })
      return s2.withLock('k', async () => 1).then(
        () => 'resolved',
        (e: unknown) => (e as { code?: string }).code,
      )
    })()
    assert.equal(other, 'NETWORK_ERROR')
  })
})

// memstore, always.
{
  let mem: Running
  before(async () => {
    mem = await startServer('mem')
  })
  after(async () => mem?.stop())
  describe('memstore', () => suite('mem', () => [mem], () => 'mem'))
}

// Redis, when redis-server is installed: two ckptserver processes over one redis-server.
{
  const why = redisUnavailable()
  if (why) {
    console.log(`# skipping the Redis tests: ${why}`)
    test('redis', { skip: why }, () => {})
  } else {
    let redis: Running
    let one: Running
    let two: Running
    before(async () => {
      redis = await startRedis()
      one = await startServer(`${redis.url}?prefix=tslocks`)
      two = await startServer(`${redis.url}?prefix=tslocks`)
    })
    after(async () => {
      await one?.stop()
      await two?.stop()
      await redis?.stop()
    })
    describe('redis', () => suite('redis', () => [one, two], () => `${redis.url}?prefix=tslocks`))
    describe('redis: two servers', () => {
      test('clients of two ckptserver processes over one redis-server exclude each other', async () => {
        const a = createLockStore({ url: one.url })
        const b = createLockStore({ url: two.url, namespace: a.namespace! })
        const { most, entered } = await contend([a, b], 'shared', 12)
        assert.equal(most, 1)
        assert.equal(entered.length, 12)
      })
    })
  }
}
