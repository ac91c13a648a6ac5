// Calls under faked timers: a test suite that fakes the clock (vitest's
// vi.useFakeTimers, which installs @sinonjs/fake-timers on the globals;
// node:test's mock.timers) still talks to a real server over real sockets.
// The default Node transport must settle every call meanwhile and go back
// to undici once the timers are real. Its deadline stays a timer of the
// process, faked with the rest: TanStack's own tests count the timers
// (vi.getTimerCount) while a call is in flight.
//
// The clock is installed as vitest installs it: every timer the library
// knows but nextTick and queueMicrotask.

import { after, before, describe, mock, test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import FakeTimers from '@sinonjs/fake-timers'
import { CkptstoreError, createCheckpointStore, createInstanceStore } from '@ckptstore/client'
import { checkpoint, startServer, type Running } from './helpers.js'

// Real timers, taken before any test fakes them: the guard against a hang.
const realSetTimeout = globalThis.setTimeout
const realClearTimeout = globalThis.clearTimeout

/** settles resolves with p, or rejects when p has not settled within ms of real time. */
async function settles<T>(p: Promise<T>, what: string, ms = 5_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const hung = new Promise<never>((_, reject) => {
    timer = realSetTimeout(() => reject(new Error(`${what}: not settled within ${ms} ms of real time`)), ms)
  })
  try {
    return await Promise.race([p, hung])
  } finally {
    realClearTimeout(timer)
  }
}

/**
 * vitest's vi.useFakeTimers(): @sinonjs/fake-timers on the globals, all but
 * nextTick and queueMicrotask, a clearTimeout of a timer made before
 * passed on to the real one (vitest's default).
 */
function useFakeTimers(): FakeTimers.InstalledClock {
  const toFake = (Object.keys(FakeTimers.timers) as FakeTimers.FakeMethod[]).filter((t) => t !== 'nextTick' && t !== 'queueMicrotask')
  return FakeTimers.withGlobal(globalThis).install({ toFake, loopLimit: 10_000, shouldClearNativeTimers: true })
}

/**
 * A server that answers every call with {"headId":null} after delayMs of
 * real time and records which transport sent it: node:http capitalises the
 * Host header it adds, undici does not.
 */
async function recording(delayMs = 0) {
  const via: string[] = []
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    via.push(req.rawHeaders.includes('Host') ? 'node:http' : 'undici')
    req.resume()
    req.on('end', () => {
      const reply = () => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{"headId":null}')
      }
      if (delayMs > 0) realSetTimeout(reply, delayMs)
      else reply()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const addr = server.address()
  return {
    url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`,
    via,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()) }),
  }
}

describe('under faked timers', () => {
  let server: Running
  before(async () => {
    server = await startServer('mem')
  })
  after(async () => server?.stop())

  test('a harness\'s calls on a warm connection all settle: sequential and 16 at once', async () => {
    const store = createCheckpointStore({ url: server.url })
    const instances = createInstanceStore({ url: server.url, namespace: store.namespace })
    // The keep-alive connection exists before the clock is faked: reusing
    // it is where undici waits on setImmediate.
    const w = await store.acquireWriter('t')
    const clock = useFakeTimers()
    try {
      let head: string | null = null
      for (let i = 1; i <= 20; i++) {
        await settles(store.append({ checkpoint: checkpoint(`c${i}`, 't', head, i), expectedHeadId: head, writer: w }), `append ${i}`)
        head = `c${i}`
      }
      assert.equal(await settles(store.getHead('t'), 'getHead'), 'c20')
      const record = (i: number) => ({ key: `k${i}`, provider: 'p', providerSandboxId: `s${i}`, threadId: 't', updatedAt: i })
      await settles(Promise.all(Array.from({ length: 16 }, (_, i) => instances.upsert(record(i)))), '16 upserts at once')
      const got = await settles(Promise.all(Array.from({ length: 16 }, (_, i) => instances.get(`k${i}`))), '16 gets at once')
      assert.deepEqual(got, Array.from({ length: 16 }, (_, i) => record(i)))
    } finally {
      clock.uninstall()
    }
  })

  test('the deadline is a timer of the process like any other: the fake clock counts it and, run past timeoutMs, times the call out', async () => {
    const s = await recording(300)
    const clock = useFakeTimers()
    try {
      const store = createCheckpointStore({ url: s.url, timeoutMs: 1_000, maxAttempts: 1 })
      const call = store.getHead('t')
      const failed = call.then(() => undefined, (e: unknown) => e)
      assert.equal(clock.countTimers(), 1, "the call's deadline, counted as vi.getTimerCount() counts it")
      clock.tick(1_000)
      const err = await settles(failed, 'getHead')
      assert.ok(err instanceof CkptstoreError && err.code === 'TIMEOUT', `a TIMEOUT, not ${String(err)}`)
      assert.equal(clock.countTimers(), 0)
    } finally {
      clock.uninstall()
      await s.close()
    }
  })

  test('undici carries the calls while the timers are real, node:http while they are faked, undici again after', async () => {
    const s = await recording()
    try {
      const store = createCheckpointStore({ url: s.url })
      await store.getHead('a')
      await store.getHead('b')
      const clock = useFakeTimers()
      try {
        await settles(store.getHead('c'), 'getHead under fake-timers')
      } finally {
        clock.uninstall()
      }
      mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'setImmediate', 'Date'] })
      try {
        await settles(store.getHead('d'), "getHead under node:test's mock.timers")
      } finally {
        mock.timers.reset()
      }
      await store.getHead('e')
      assert.deepEqual(s.via, ['undici', 'undici', 'node:http', 'node:http', 'undici'])
      const pinned = createCheckpointStore({ url: s.url, nodeTransport: 'node:http' })
      await pinned.getHead('f')
      assert.equal(s.via.at(-1), 'node:http', "nodeTransport: 'node:http' keeps node:http")
      assert.throws(() => createCheckpointStore({ url: s.url, nodeTransport: 'fetch' as never }), TypeError)
    } finally {
      await s.close()
    }
  })
})
