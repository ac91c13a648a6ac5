// Outside --dev: the bearer token picks the namespace, and the dev headers
// (client clock, lease options) are refused with 400 BAD_REQUEST.

import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { CkptstoreError, createCheckpointStore, createInstanceStore } from '@ckptstore/client'
import { checkpoint, startServer, writeTokens, type Running } from './helpers.js'

let server: Running
before(async () => {
  server = await startServer('mem', ['--tokens', writeTokens(['tok-alpha-0123456789 alpha', 'tok-beta-0123456789 beta'])])
})
after(async () => server?.stop())

const refusedWith = (code: string, status: number) => (e: unknown) => {
  assert.ok(e instanceof CkptstoreError, `a CkptstoreError, got ${String(e)}`)
  assert.equal(e.name, 'CkptstoreError')
  assert.equal(e.code, code)
  assert.equal(e.status, status)
  return true
}

describe('a server with --tokens', () => {
  test('the token picks the namespace; tenants do not see each other', async () => {
    const a = createCheckpointStore({ url: server.url, token: 'tok-alpha-0123456789' })
    const b = createCheckpointStore({ url: server.url, token: 'tok-beta-0123456789' })
    assert.equal(a.namespace, undefined, 'no namespace header: the token decides')
    const w = await a.acquireWriter('t')
    await a.append({ checkpoint: checkpoint('c1', 't', null, 1), expectedHeadId: null, writer: w })
    assert.equal(await a.getHead('t'), 'c1')
    assert.equal(await b.getHead('t'), null)
    assert.deepEqual(await b.threads(), { threads: [], next: null })
    await createInstanceStore({ url: server.url, token: 'tok-alpha-0123456789' }).upsert({ key: 'k', provider: 'p', providerSandboxId: 's', threadId: 't', updatedAt: 1 })
    assert.equal(await createInstanceStore({ url: server.url, token: 'tok-beta-0123456789' }).get('k'), null)
  })

  test('a missing or unknown token is UNAUTHORIZED', async () => {
    await assert.rejects(createCheckpointStore({ url: server.url, token: 'nope' }).getHead('t'), refusedWith('UNAUTHORIZED', 401))
    await assert.rejects(createCheckpointStore({ url: server.url, namespace: 'alpha' }).getHead('t'), refusedWith('UNAUTHORIZED', 401))
  })

  test('a client clock or lease options are BAD_REQUEST', async () => {
    await assert.rejects(createCheckpointStore({ url: server.url, token: 'tok-alpha-0123456789', now: () => 1 }).getHead('t'), refusedWith('BAD_REQUEST', 400))
    await assert.rejects(createCheckpointStore({ url: server.url, token: 'tok-alpha-0123456789', leaseDurationMs: 100 }).getHead('t'), refusedWith('BAD_REQUEST', 400))
    await assert.rejects(createCheckpointStore({ url: server.url, token: 'tok-alpha-0123456789', renewAfterMs: 10 }).acquireWriter('t'), refusedWith('BAD_REQUEST', 400))
  })
})
