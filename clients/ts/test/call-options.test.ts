// Per-call and per-store abort signals and extra headers: ClientOptions'
// signal and headers, and withCallOptions' views, against a real
// ckptserver behind a TCP relay that records what the client sent, and
// against two small servers that stand for a server that never answers
// and one that answers 503 (the conditions an abort must cut short).

import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http'
import { createServer, type Server, type Socket } from 'node:net'
import { createCheckpointStore, createMessageStore, createPersistence, withCallOptions } from '@ckptstore/client'
import { relay, startServer, type Relay, type Running } from './helpers.js'

let server: Running
let tcp: Relay
before(async () => {
  server = await startServer('mem')
  tcp = await relay(Number(new URL(server.url).port))
})
after(async () => {
  await tcp?.close()
  await server?.stop()
})

/** The request heads the relay saw since mark, each as a lower-cased header map. */
function heads(from: number): Array<Record<string, string[]>> {
  return tcp
    .seen()
    .slice(from)
    .split(/(?=POST \/v1\/)/)
    .filter((r) => r.startsWith('POST '))
    .map((r) => {
      const h: Record<string, string[]> = {}
      for (const line of r.split('\r\n\r\n')[0]!.split('\r\n').slice(1)) {
        const i = line.indexOf(':')
        const k = line.slice(0, i).toLowerCase()
        ;(h[k] ??= []).push(line.slice(i + 1).trim())
      }
      return h
    })
}

test('headers: the store-level function runs per request; a view adds its own; the protocol headers stay', async () => {
  let n = 0
  const store = createCheckpointStore({
    url: tcp.url('http'),
    namespace: 'call-headers',
    headers: () => ({ 'X-Store': `s${++n}`, 'Ckpt-Namespace': 'someone-else', 'Content-Type': 'text/plain' }),
  })
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
  const view = withCallOptions(store, { headers: { traceparent } })
  assert.equal(view.namespace, 'call-headers')

  const mark = tcp.seen().length
  assert.equal(await store.getHead('t'), null)
  const w = await view.acquireWriter('t')
  await w.release() // through the view too
  const hs = heads(mark)
  assert.equal(hs.length, 3)
  assert.deepEqual(hs.map((h) => h['x-store']), [['s1'], ['s2'], ['s3']])
  assert.deepEqual(hs.map((h) => h['traceparent']), [undefined, [traceparent], [traceparent]])
  for (const h of hs) {
    assert.deepEqual(h['ckpt-namespace'], ['call-headers'], 'an extra header never replaces the namespace')
    assert.deepEqual(h['content-type'], ['application/json'])
  }
  assert.equal(await store.getHead('t'), null, 'the store itself is unchanged; the view wrote in its namespace')
})

test('withCallOptions: a view of each kind of store; anything else is refused', async () => {
  const messages = createMessageStore({ url: tcp.url('http'), namespace: 'call-views' })
  await withCallOptions(messages, { headers: { 'x-a': '1' } }).saveThread('t', [{ role: 'user', content: 'hi' }])
  assert.deepEqual(await messages.loadThread('t'), [{ role: 'user', content: 'hi' }])
  const p = createPersistence({ url: tcp.url('http'), namespace: 'call-views' })
  const pv = withCallOptions(p, { headers: { 'x-a': '1' } })
  assert.deepEqual(await pv.stores.messages.loadThread('t'), [{ role: 'user', content: 'hi' }])
  assert.throws(() => withCallOptions({ getHead: async () => null }, {}), /a store that @ckptstore\/client created/)
})

/**
 * A server that accepts connections and never answers. It counts requests,
 * not connections: after an aborted request undici (the default Node
 * transport, and fetch) may open a fresh idle connection, which sends
 * nothing and is no retry.
 */
async function silent(): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let n = 0
  const socks: Socket[] = []
  const s: Server = createServer((c) => {
    socks.push(c)
    c.once('data', () => n++)
    c.on('error', () => {})
  })
  await new Promise<void>((res) => s.listen(0, '127.0.0.1', res))
  const a = s.address()
  return {
    url: `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`,
    requests: () => n,
    close: () => {
      for (const c of socks) c.destroy()
      return new Promise((res) => s.close(() => res()))
    },
  }
}

test('signal: a call in flight rejects with the reason, over undici, node:http and fetch, and is not retried', async () => {
  const srv = await silent()
  try {
    const transports = [
      { name: 'undici', options: {} },
      { name: 'node:http', options: { nodeTransport: 'node:http' as const } },
      { name: 'fetch', options: { fetch: globalThis.fetch } },
    ]
    for (const { name, options } of transports) {
      const ac = new AbortController()
      const store = createCheckpointStore({ url: srv.url, namespace: 'n', ...options, timeoutMs: 60_000 })
      const before = srv.requests()
      const call = withCallOptions(store, { signal: ac.signal }).getHead('t')
      while (srv.requests() === before) await new Promise((r) => setTimeout(r, 5))
      const reason = new Error('the run was cancelled')
      ac.abort(reason)
      await assert.rejects(call, (err) => err === reason)
      assert.equal(srv.requests() - before, 1, `${name}: one request`)
    }
    // A signal aborted before the call: no request at all.
    const before = srv.requests()
    await assert.rejects(createCheckpointStore({ url: srv.url, namespace: 'n', signal: AbortSignal.abort() }).getHead('t'), { name: 'AbortError' })
    assert.equal(srv.requests(), before)
  } finally {
    await srv.close()
  }
})

test('signal: an abort during the wait between retries ends the call, with no further attempt', async () => {
  let requests = 0
  const ac = new AbortController()
  const srv: HttpServer = createHttpServer((req, res) => {
    requests++
    req.resume()
    res.writeHead(503, { 'content-type': 'application/json' }).end('{"code":"UNAVAILABLE","message":"try again"}')
    ac.abort()
  })
  await new Promise<void>((res) => srv.listen(0, '127.0.0.1', res))
  try {
    const a = srv.address()
    const store = createCheckpointStore({ url: `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`, namespace: 'n', signal: ac.signal })
    await assert.rejects(store.getHead('t'), { name: 'AbortError' })
    // Attempt 2 would have come 10–20 ms after the first; wait well past it.
    await new Promise((r) => setTimeout(r, 200))
    assert.equal(requests, 1)
  } finally {
    srv.closeAllConnections()
    await new Promise<void>((res) => srv.close(() => res()))
  }
})

test('signal: a blob upload in flight (the raw routes) rejects with the reason, over node:http and fetch', async () => {
  const srv = await silent()
  try {
    for (const fetch of [undefined, globalThis.fetch]) {
      const ac = new AbortController()
      const p = createPersistence({ url: srv.url, namespace: 'n', fetch, timeoutMs: 60_000 })
      const before = srv.requests()
      const put = withCallOptions(p, { signal: ac.signal }).stores.blobs.put('b', new Uint8Array([1, 2, 3]))
      while (srv.requests() === before) await new Promise((r) => setTimeout(r, 5))
      const reason = new Error('stop the upload')
      ac.abort(reason)
      await assert.rejects(put, (err) => err === reason)
      assert.equal(srv.requests() - before, 1, `${fetch ? 'fetch' : 'node:http'}: one request`)
    }
  } finally {
    await srv.close()
  }
})
