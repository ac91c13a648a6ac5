// Run as its own process by contract.test.ts, with Node's default
// --unhandled-rejections=throw spelled out: `node late-handler.js <url>`.
// It does what TanStack's fork kit does (start a call that will reject,
// await several real reads, and only then attach the handler) for a
// rejecting call of every store. An unhandledRejection ends the process
// with a non-zero code; success prints one line per case and "done".

import assert from 'node:assert/strict'
import { setTimeout as wait } from 'node:timers/promises'
import { createCheckpointStore, createInstanceStore, createLockStore, createMessageStore, createPersistence } from '@ckptstore/client'
import { checkpoint } from './helpers.js'

const url = process.argv[2]
if (!url) throw new Error('usage: late-handler.js <ckptserver url>')

const checkpoints = createCheckpointStore({ url })
const same = { url, namespace: checkpoints.namespace! }
const messages = createMessageStore(same)
const instances = createInstanceStore(same)
const { stores } = createPersistence(same)
const locks = createLockStore(same)

/** The fork kit's destinationState: four reads with real I/O. */
async function reads() {
  return {
    transcript: await messages.loadThread('destination'),
    head: await checkpoints.getHead('destination'),
    checkpoints: await checkpoints.list('destination'),
    references: await checkpoints.listBlobReferences(),
  }
}

/** Starts nothing itself: op is already running (and rejecting) when it comes in. */
async function late(name: string, op: Promise<unknown>, code: string) {
  const before = await reads()
  // Longer than any reply here takes: op has surely rejected by now.
  await wait(50)
  await assert.rejects(op, (e: unknown) => (e as { code?: string }).code === code)
  assert.deepEqual(await reads(), before)
  console.log(`ok ${name}: ${code}, handler attached after the reads`)
}

const source = await checkpoints.acquireWriter('source')
await checkpoints.append({ checkpoint: checkpoint('source-root', 'source', null, 10, [1]), expectedHeadId: null, writer: source })
const destination = await checkpoints.acquireWriter('destination')
const fork = {
  sourceThreadId: 'source',
  sourceCheckpointId: 'source-root',
  destinationThreadId: 'destination',
  destinationCheckpointId: 'fork-root',
  createdAt: 20,
  writer: destination,
}

await late('fork, missing source', checkpoints.forkFromCheckpoint({ ...fork, sourceCheckpointId: 'missing' }), 'SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND')
await late('fork, thread mismatch', checkpoints.forkFromCheckpoint({ ...fork, sourceThreadId: 'other' }), 'SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH')
await late('fork, lost writer', checkpoints.forkFromCheckpoint({ ...fork, writer: { threadId: 'destination', ownerToken: 'missing-owner', fence: 1 } }), 'SANDBOX_SNAPSHOT_WRITER_LOST')
await late('append, stale head', checkpoints.append({ checkpoint: checkpoint('c2', 'source', null, 11), expectedHeadId: null, writer: source }), 'SANDBOX_SNAPSHOT_STALE_HEAD')
await late('deleteHead, not the head', checkpoints.deleteHead({ threadId: 'source', checkpointId: 'nope', writer: source }), 'SANDBOX_SNAPSHOT_NOT_HEAD')
await late('acquireWriter, held', checkpoints.acquireWriter('source'), 'SANDBOX_SNAPSHOT_WRITER_CONFLICT')
await late('deleteCheckpoints, keep 0', checkpoints.deleteCheckpoints({ threadId: 'source', keep: 0, writer: source }), 'SANDBOX_SNAPSHOT_INVALID_ENTRY')
await late('deleteThread, lost writer', checkpoints.deleteThread({ threadId: 'x', writer: { threadId: 'x', ownerToken: 'o', fence: 1 } }), 'SANDBOX_SNAPSHOT_WRITER_LOST')
await late('get, invalid id', checkpoints.get(''), 'SANDBOX_SNAPSHOT_INVALID_ID')
await late('list, invalid id', checkpoints.list('\uD800'), 'SANDBOX_SNAPSHOT_INVALID_ID')
await late('getHead, invalid id', checkpoints.getHead(''), 'SANDBOX_SNAPSHOT_INVALID_ID')
await late('listPage, invalid id', checkpoints.listPage(''), 'SANDBOX_SNAPSHOT_INVALID_ID')
await late('threads, bad limit', checkpoints.threads({ limit: 5000 }), 'SANDBOX_SNAPSHOT_INVALID_ENTRY')
const stale = await checkpoints.acquireWriter('stale')
await stale.release()
await late('renew, released lease', stale.renew(), 'SANDBOX_SNAPSHOT_WRITER_LOST')
await late('loadThread, invalid id', messages.loadThread(''), 'SANDBOX_SNAPSHOT_INVALID_ID')
await late('saveThread, invalid id', messages.saveThread('', []), 'SANDBOX_SNAPSHOT_INVALID_ID')
await late('instance get, invalid key', instances.get(''), 'SANDBOX_SNAPSHOT_INVALID_ID')
await late('instance upsert, invalid key', instances.upsert({ key: '', provider: 'p', providerSandboxId: 's', threadId: 't', updatedAt: 1 }), 'SANDBOX_SNAPSHOT_INVALID_ID')
await late('instance delete, invalid key', instances.delete(''), 'SANDBOX_SNAPSHOT_INVALID_ID')
// The persistence stores and the lock store: each rejection, its handler
// attached only after the reads.
await stores.interrupts.create({ interruptId: 'i1', runId: 'r1', threadId: 't1', requestedAt: 1, payload: {} })
await stores.interrupts.resolve('i1', 'yes')
await late('runs createOrResume, invalid id', stores.runs.createOrResume({ runId: '', threadId: 't', startedAt: 1 }), 'PERSIST_INVALID_ID')
await late('runs update, bad status', stores.runs.update('r1', { status: 'sleeping' as never }), 'PERSIST_INVALID_ENTRY')
await late('generationRuns get, invalid id', stores.generationRuns.get('\uD800'), 'PERSIST_INVALID_ID')
await late('interrupts commitBatch, not pending', stores.interrupts.commitBatch([{ interruptId: 'i1', status: 'cancelled' }]), 'PERSIST_BATCH_NOT_PENDING')
await late('interrupts commitBatch, missing', stores.interrupts.commitBatch([{ interruptId: 'nope', status: 'cancelled' }]), 'PERSIST_BATCH_MISSING_ID')
await late('metadata set, invalid key', stores.metadata.set('ns', '', 1), 'PERSIST_INVALID_ID')
await late('artifacts save, invalid id', stores.artifacts.save({ artifactId: '', runId: 'r', threadId: 't', name: 'n', mimeType: 'text/plain', size: 1, createdAt: 1 }), 'PERSIST_INVALID_ID')
await stores.blobs.put('b1', 'hello')
await late('blobs get, range outside', stores.blobs.get('b1', { range: { offset: 99 } }), 'PERSIST_RANGE_NOT_SATISFIABLE')
await late('blobs head, invalid key', stores.blobs.head(''), 'PERSIST_INVALID_ID')
await late('withLock, invalid key', locks.withLock('', async () => 1), 'PERSIST_INVALID_ID')
class Thrown extends Error {
  code = 'FN_THREW'
}
await late('withLock, fn throws', locks.withLock('k', async () => { throw new Thrown('no') }), 'FN_THREW')
// A network failure rejects too: a server that is not there.
const gone = createCheckpointStore({ url: 'http://127.0.0.1:1', maxAttempts: 1 })
await late('get, no server', gone.get('x'), 'NETWORK_ERROR')
console.log('done')
