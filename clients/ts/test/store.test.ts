// Every method and every error code of @ckptstore/client against a real
// ckptserver: on memstore always, and on a real redis-server when one is
// installed.

import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import {
  createCheckpointStore,
  createInstanceStore,
  createMessageStore,
  SandboxCheckpointConflictError,
  SandboxCheckpointDuplicateIdError,
  SandboxCheckpointError,
  SandboxCheckpointForkDestinationNotEmptyError,
  SandboxCheckpointForkSourceNotFoundError,
  SandboxCheckpointForkSourceThreadMismatchError,
  SandboxCheckpointInvalidEntryError,
  SandboxCheckpointInvalidIdError,
  SandboxCheckpointNotHeadError,
  SandboxCheckpointParentMismatchError,
  SandboxCheckpointWriterConflictError,
  SandboxCheckpointWriterLostError,
  type Checkpoint,
  type ClientOptions,
} from '@ckptstore/client'
import { artifactKey, checkpoint, fileKey, onMemAndRedis, rejects, type Msg, type Running } from './helpers.js'

const C = {
  staleHead: 'SANDBOX_SNAPSHOT_STALE_HEAD',
  parentMismatch: 'SANDBOX_SNAPSHOT_PARENT_MISMATCH',
  duplicateId: 'SANDBOX_SNAPSHOT_DUPLICATE_ID',
  notHead: 'SANDBOX_SNAPSHOT_NOT_HEAD',
  writerConflict: 'SANDBOX_SNAPSHOT_WRITER_CONFLICT',
  writerLost: 'SANDBOX_SNAPSHOT_WRITER_LOST',
  invalidId: 'SANDBOX_SNAPSHOT_INVALID_ID',
  invalidEntry: 'SANDBOX_SNAPSHOT_INVALID_ENTRY',
  forkSourceNotFound: 'SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND',
  forkSourceThreadMismatch: 'SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH',
  forkDestinationNotEmpty: 'SANDBOX_SNAPSHOT_FORK_DESTINATION_NOT_EMPTY',
} as const

// Ids the JSON encoder cannot turn into UTF-8: JSON.stringify escapes a lone
// surrogate as \udXXX, and the server must answer INVALID_ID.
const loneHigh = 'thread-\uD800'
const loneLow = '\uDC00'

function suite(backend: string, server: () => Running) {
  // A fresh namespace per store: every test starts from an empty store.
  const open = (o: Partial<ClientOptions> = {}) => {
    const store = createCheckpointStore<Msg>({ url: server().url, ...o })
    const messages = createMessageStore<Msg>({ url: server().url, ...o, namespace: store.namespace! })
    const instances = createInstanceStore({ url: server().url, ...o, namespace: store.namespace! })
    return { store, messages, instances }
  }

  describe(`${backend}: reads and append`, () => {
    test('a fresh namespace is an empty store', async () => {
      const { store, messages, instances } = open()
      assert.match(store.namespace ?? '', /^ts-[A-Za-z0-9_-]{22}$/)
      assert.equal(await store.get('c1'), null)
      assert.deepEqual(await store.list('t1'), [])
      assert.equal(await store.getHead('t1'), null)
      assert.deepEqual(await store.listBlobReferences(), [])
      assert.deepEqual(await store.threads(), { threads: [], next: null })
      assert.deepEqual(await store.listPage('t1'), { checkpoints: [], next: null })
      assert.deepEqual(await messages.loadThread('t1'), [])
      assert.equal(await instances.get('k1'), null)
    })

    test('append builds a chain; get, list and getHead read it back as given', async () => {
      const { store } = open()
      const w = await store.acquireWriter('t1')
      const c1 = { ...checkpoint('c1', 't1', null, 100, [1, 2]), label: 'first', sourceRunId: 'run-1', reason: 'named' as const }
      c1.artifacts.push({ artifactId: 'a1', name: 'report.pdf', mimeType: 'application/pdf', size: 7, blobKey: artifactKey(9), createdAt: 99.5 })
      assert.deepEqual(await store.append({ checkpoint: c1, expectedHeadId: null, writer: w }), { headId: 'c1' })
      const c2 = checkpoint('c2', 't1', 'c1', 200.25, [2, 3])
      assert.deepEqual(await store.append({ checkpoint: c2, expectedHeadId: 'c1', writer: w }), { headId: 'c2' })

      assert.deepEqual(await store.get('c1'), c1)
      const got2 = await store.get('c2')
      assert.deepEqual(got2, c2)
      assert.equal(got2 && 'label' in got2, false, 'an optional field not stored is absent')
      assert.equal(await store.getHead('t1'), 'c2')
      assert.deepEqual(await store.list('t1'), [c1, c2])
      assert.deepEqual(await store.list('t2'), [])

      // Reads are copies: changing one changes nothing stored.
      got2!.files.length = 0
      got2!.conversation.push({ role: 'user', content: 'x' })
      assert.deepEqual(await store.get('c2'), c2)
    })

    test('a missing parentCheckpointId counts as null, and comes back as null', async () => {
      const { store } = open()
      const w = await store.acquireWriter('t1')
      // The type requires both fields, as TanStack's SandboxCheckpoint does;
      // a plain-JavaScript caller may still leave them out.
      const { parentCheckpointId: _, conversation: __, ...noParent } = checkpoint('c1', 't1', null, 1)
      assert.deepEqual(await store.append({ checkpoint: noParent as unknown as Checkpoint<Msg>, expectedHeadId: null, writer: w }), { headId: 'c1' })
      const got = await store.get('c1')
      assert.equal(got?.parentCheckpointId, null)
      assert.deepEqual(got?.conversation, [], 'a missing conversation is []')
    })

    test('list sorts by createdAt, then by the UTF-8 bytes of the id (not UTF-16 order)', async () => {
      const { store } = open()
      const w = await store.acquireWriter('t')
      // U+FFFF sorts before U+1F600 in UTF-8 (EF BF BF < F0 9F 98 80) but
      // after it in UTF-16 (FFFF > D83D).
      const ids = ['x😀', 'x\uFFFF', 'xa']
      let head: string | null = null
      for (const id of ids) {
        head = (await store.append({ checkpoint: checkpoint(id, 't', head, 5), expectedHeadId: head, writer: w })).headId
      }
      await store.append({ checkpoint: checkpoint('early', 't', head, 1), expectedHeadId: head, writer: w })
      assert.deepEqual((await store.list('t')).map((c) => c.id), ['early', 'xa', 'x\uFFFF', 'x😀'])
    })

    test('ids of any Unicode go through as they are', async () => {
      const { store } = open()
      const thread = 'thread/ä 😀 %2F?#&'
      const w = await store.acquireWriter(thread)
      const id = '\u0000nul\u2028line 😀'
      await store.append({ checkpoint: checkpoint(id, thread, null, 1), expectedHeadId: null, writer: w })
      assert.equal((await store.get(id))?.id, id)
      assert.equal(await store.getHead(thread), id)
      assert.deepEqual((await store.threads()).threads, [thread])
    })

    test('listBlobReferences counts each distinct key once per checkpoint, over all threads, by bytes', async () => {
      const { store } = open()
      const wa = await store.acquireWriter('ta')
      const wb = await store.acquireWriter('tb')
      const c1 = checkpoint('c1', 'ta', null, 1, [2, 2, 1]) // blob 2 twice: counts once
      c1.artifacts.push({ artifactId: 'a', name: 'n', mimeType: 'text/plain', size: 1, blobKey: artifactKey(5), createdAt: 1 })
      await store.append({ checkpoint: c1, expectedHeadId: null, writer: wa })
      await store.append({ checkpoint: checkpoint('c2', 'ta', 'c1', 2, [1]), expectedHeadId: 'c1', writer: wa })
      await store.append({ checkpoint: checkpoint('c3', 'tb', null, 3, [1, 3]), expectedHeadId: null, writer: wb })
      assert.deepEqual(await store.listBlobReferences(), [
        { key: artifactKey(5), references: 1 },
        { key: fileKey(1), references: 3 },
        { key: fileKey(2), references: 1 },
        { key: fileKey(3), references: 1 },
      ])
      await store.deleteHead({ threadId: 'tb', checkpointId: 'c3', writer: wb })
      assert.deepEqual(await store.listBlobReferences(), [
        { key: artifactKey(5), references: 1 },
        { key: fileKey(1), references: 2 },
        { key: fileKey(2), references: 1 },
      ])
    })

    test('deleteHead moves the head to the parent; a non-head is NOT_HEAD', async () => {
      const { store } = open()
      const w = await store.acquireWriter('t')
      await store.append({ checkpoint: checkpoint('c1', 't', null, 1, [1]), expectedHeadId: null, writer: w })
      await store.append({ checkpoint: checkpoint('c2', 't', 'c1', 2, [2]), expectedHeadId: 'c1', writer: w })
      await rejects(store.deleteHead({ threadId: 't', checkpointId: 'c1', writer: w }), SandboxCheckpointNotHeadError, C.notHead)
      await rejects(store.deleteHead({ threadId: 't', checkpointId: 'nope', writer: w }), SandboxCheckpointNotHeadError, C.notHead)
      assert.equal(await store.deleteHead({ threadId: 't', checkpointId: 'c2', writer: w }), undefined)
      assert.equal(await store.getHead('t'), 'c1')
      assert.equal(await store.get('c2'), null)
      await store.deleteHead({ threadId: 't', checkpointId: 'c1', writer: w })
      assert.equal(await store.getHead('t'), null)
      assert.deepEqual(await store.list('t'), [])
      assert.deepEqual(await store.listBlobReferences(), [])
      // An id deleted can be used again.
      await store.append({ checkpoint: checkpoint('c2', 't', null, 3), expectedHeadId: null, writer: w })
      assert.equal(await store.getHead('t'), 'c2')
    })
  })

  describe(`${backend}: rejections`, () => {
    test('errors are Errors with code, status and TanStack class names', async () => {
      const { store } = open()
      const w = await store.acquireWriter('t')
      const err = await store.append({ checkpoint: checkpoint('c1', 't', null, 1), expectedHeadId: 'zz', writer: w }).then(
        () => assert.fail('append resolved'),
        (e: unknown) => e,
      )
      assert.ok(err instanceof Error)
      assert.ok(err instanceof SandboxCheckpointError)
      assert.ok(err instanceof SandboxCheckpointConflictError)
      assert.equal(err.name, 'SandboxCheckpointConflictError')
      assert.equal(err.code, C.staleHead)
      assert.equal(err.status, 409)
      assert.ok(err.message.length > 0)
    })

    test('append: each check in order, and a failed append changes nothing', async () => {
      const { store } = open()
      const w = await store.acquireWriter('t')
      const other = await store.acquireWriter('u')
      await store.append({ checkpoint: checkpoint('c1', 't', null, 1, [1]), expectedHeadId: null, writer: w })
      await store.append({ checkpoint: checkpoint('u1', 'u', null, 1), expectedHeadId: null, writer: other })
      const state = async () => [await store.list('t'), await store.getHead('t'), await store.listBlobReferences()]
      const before = await state()
      const cp = (o: object) => ({ ...checkpoint('c2', 't', 'c1', 2, [2]), ...o })
      const append = (c: object, expectedHeadId: string | null = 'c1', writer: typeof w = w) =>
        store.append({ checkpoint: c as ReturnType<typeof checkpoint>, expectedHeadId, writer })

      // 1. ids: empty, lone surrogates, not strings, missing.
      await rejects(append(cp({ id: '' })), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(append(cp({ id: loneLow })), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(append(cp({ threadId: loneHigh })), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(append(cp({ parentCheckpointId: loneLow })), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(append(cp({}), loneLow), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(append(cp({ id: 42 })), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(append(cp({ id: undefined })), SandboxCheckpointInvalidIdError, C.invalidId)
      // ids come before entries: a bad id with a bad createdAt is INVALID_ID.
      await rejects(append(cp({ id: loneLow, createdAt: NaN })), SandboxCheckpointInvalidIdError, C.invalidId)

      // 2. entries: a non-finite createdAt (JSON null), bad blob key, bad path, bad reason, bad size.
      await rejects(append(cp({ createdAt: NaN })), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      await rejects(append(cp({ createdAt: Infinity })), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      await rejects(append(cp({ files: [{ path: 'a', kind: 'file', blobKey: 'sandbox-files/sha256/XYZ', size: 1 }] })), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      await rejects(append(cp({ files: [{ path: '/etc/passwd', kind: 'dir' }] })), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      await rejects(append(cp({ files: [{ path: 'a/../b', kind: 'dir' }] })), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      await rejects(append(cp({ files: [{ path: 'a', kind: 'file', blobKey: fileKey(1), size: 1.5 }] })), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      await rejects(append(cp({ reason: 'because' })), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      await rejects(append(cp({ conversation: { not: 'an array' } })), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      await rejects(
        append(cp({ artifacts: [{ artifactId: 'a', name: 'n', mimeType: 'm', size: 1, blobKey: artifactKey(1), createdAt: NaN }] })),
        SandboxCheckpointInvalidEntryError,
        C.invalidEntry,
      )
      // entries come before the writer.
      await rejects(append(cp({ createdAt: NaN }), 'c1', other), SandboxCheckpointInvalidEntryError, C.invalidEntry)

      // 3. writer: another thread's lease, a made-up token, a stale fence.
      await rejects(append(cp({}), 'c1', other), SandboxCheckpointWriterLostError, C.writerLost)
      await rejects(append(cp({}), 'c1', { ...w, ownerToken: 'forged' } as typeof w), SandboxCheckpointWriterLostError, C.writerLost)
      await rejects(append(cp({}), 'c1', { ...w, fence: w.fence + 1 } as typeof w), SandboxCheckpointWriterLostError, C.writerLost)
      // the writer comes before a duplicate id.
      await rejects(append(cp({ id: 'u1' }), 'c1', other), SandboxCheckpointWriterLostError, C.writerLost)

      // 4. duplicate id, in this thread or another.
      await rejects(append(cp({ id: 'u1' })), SandboxCheckpointDuplicateIdError, C.duplicateId)
      await rejects(append(cp({ id: 'c1' })), SandboxCheckpointDuplicateIdError, C.duplicateId)
      // duplicate comes before a stale head.
      await rejects(append(cp({ id: 'u1' }), null), SandboxCheckpointDuplicateIdError, C.duplicateId)

      // 5. stale head.
      await rejects(append(cp({}), null), SandboxCheckpointConflictError, C.staleHead)
      await rejects(append(cp({}), 'c0'), SandboxCheckpointConflictError, C.staleHead)
      // stale head comes before a parent mismatch.
      await rejects(append(cp({ parentCheckpointId: 'zz' }), null), SandboxCheckpointConflictError, C.staleHead)

      // 6. parent mismatch.
      await rejects(append(cp({ parentCheckpointId: null })), SandboxCheckpointParentMismatchError, C.parentMismatch)
      await rejects(append(cp({ parentCheckpointId: 'zz' })), SandboxCheckpointParentMismatchError, C.parentMismatch)

      assert.deepEqual(await state(), before, 'no failed append changed the store')
      assert.equal(await store.get('c2'), null)
    })

    test('reads check their ids', async () => {
      const { store, messages, instances } = open()
      await rejects(store.get(''), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(store.get(loneLow), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(store.get(7 as unknown as string), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(store.list(loneHigh), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(store.list(''), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(store.getHead(loneHigh), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(store.listPage(loneLow), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(store.acquireWriter(''), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(store.acquireWriter(loneHigh), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(messages.loadThread(loneLow), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(messages.saveThread('', []), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(instances.get(''), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(instances.get(loneLow), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(instances.delete(''), SandboxCheckpointInvalidIdError, C.invalidId)
    })
  })

  describe(`${backend}: writer leases and the dev clock`, () => {
    test('the lease is the writer: fields, conflict, expiry by moving now, takeover, renew, release', async () => {
      let now = 1_000
      const { store } = open({ now: () => now, leaseDurationMs: 100, renewAfterMs: 25 })
      const a = await store.acquireWriter('t')
      assert.equal(a.threadId, 't')
      assert.equal(typeof a.ownerToken, 'string')
      assert.ok(a.ownerToken.length > 0)
      assert.equal(typeof a.fence, 'number')
      assert.equal(a.expiresAt, 1_100)
      assert.equal(a.renewAfterMs, 25)

      now = 1_099.5 // still live: now < expiresAt
      await rejects(store.acquireWriter('t'), SandboxCheckpointWriterConflictError, C.writerConflict)
      await store.append({ checkpoint: checkpoint('c1', 't', null, 1), expectedHeadId: null, writer: a })

      now = 1_050
      assert.deepEqual(await a.renew(), { expiresAt: 1_150 })
      assert.equal(a.expiresAt, 1_150, 'renew moves the lease object itself')

      now = 1_150 // expired at now >= expiresAt
      await rejects(store.append({ checkpoint: checkpoint('c2', 't', 'c1', 2), expectedHeadId: 'c1', writer: a }), SandboxCheckpointWriterLostError, C.writerLost)
      await rejects(a.renew(), SandboxCheckpointWriterLostError, C.writerLost)
      const b = await store.acquireWriter('t')
      assert.ok(b.fence > a.fence, 'a takeover gets a higher fence')
      assert.notEqual(b.ownerToken, a.ownerToken)
      assert.equal(b.expiresAt, 1_250)
      await rejects(a.renew(), SandboxCheckpointWriterLostError, C.writerLost)
      await rejects(store.deleteHead({ threadId: 't', checkpointId: 'c1', writer: a }), SandboxCheckpointWriterLostError, C.writerLost)

      // release of a replaced lease does nothing and does not throw.
      assert.equal(await a.release(), undefined)
      await store.append({ checkpoint: checkpoint('c2', 't', 'c1', 2), expectedHeadId: 'c1', writer: b })
      await rejects(store.acquireWriter('t'), SandboxCheckpointWriterConflictError, C.writerConflict)

      // release ends the lease: the thread can be taken at once, with a higher fence.
      await b.release()
      await rejects(b.renew(), SandboxCheckpointWriterLostError, C.writerLost)
      await rejects(store.append({ checkpoint: checkpoint('c3', 't', 'c2', 3), expectedHeadId: 'c2', writer: b }), SandboxCheckpointWriterLostError, C.writerLost)
      const c = await store.acquireWriter('t')
      assert.ok(c.fence > b.fence, 'the fence survives a release')
      await b.release() // twice, and after being replaced: still no throw
      await store.append({ checkpoint: checkpoint('c3', 't', 'c2', 3), expectedHeadId: 'c2', writer: c })
      assert.equal(await store.getHead('t'), 'c3')
    })

    test('without lease options: 120 s lease, renew after 45 s', async () => {
      const { store } = open({ now: () => 5_000 })
      const a = await store.acquireWriter('t')
      assert.equal(a.expiresAt, 125_000)
      assert.equal(a.renewAfterMs, 45_000)
    })

    test('without a client clock the server clock decides', async () => {
      const { store } = open()
      const before = Date.now()
      const a = await store.acquireWriter('t')
      assert.ok(a.expiresAt >= before + 120_000 - 1_000 && a.expiresAt <= Date.now() + 120_000 + 1_000, `expiresAt ${a.expiresAt}`)
    })
  })

  describe(`${backend}: prune, fork, transcripts, deleteThread`, () => {
    const chain = async (store: ReturnType<typeof open>['store'], thread: string, n: number) => {
      const w = await store.acquireWriter(thread)
      let head: string | null = null
      for (let i = 1; i <= n; i++) {
        // createdAt falls along the chain: "newest" follows the chain, not createdAt.
        head = (await store.append({ checkpoint: checkpoint(`${thread}-${i}`, thread, head, 100 - i, [i]), expectedHeadId: head, writer: w })).headId
      }
      return w
    }

    test('deleteCheckpoints keeps the head and the newest before it, returns the removed oldest first', async () => {
      const { store } = open()
      const w = await chain(store, 't', 5)
      assert.deepEqual(await store.deleteCheckpoints({ threadId: 't', keep: 2, writer: w }), { deleted: ['t-1', 't-2', 't-3'] })
      assert.deepEqual((await store.list('t')).map((c) => c.id).sort(), ['t-4', 't-5'])
      assert.equal(await store.getHead('t'), 't-5')
      assert.deepEqual((await store.listBlobReferences()).map((r) => r.key), [fileKey(4), fileKey(5)])
      assert.deepEqual(await store.deleteCheckpoints({ threadId: 't', keep: 2, writer: w }), { deleted: [] })
      const e = await store.acquireWriter('empty')
      assert.deepEqual(await store.deleteCheckpoints({ threadId: 'empty', keep: 1, writer: e }), { deleted: [] })
    })

    test('deleteCheckpoints: ids, then keep, then the writer', async () => {
      const { store } = open()
      const w = await chain(store, 't', 2)
      const other = await store.acquireWriter('u')
      for (const keep of [0, -1, 1.5, NaN, Infinity, 2 ** 53]) {
        await rejects(store.deleteCheckpoints({ threadId: 't', keep, writer: w }), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      }
      await rejects(store.deleteCheckpoints({ threadId: loneHigh, keep: 0, writer: w }), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(store.deleteCheckpoints({ threadId: 't', keep: 0, writer: other }), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      await rejects(store.deleteCheckpoints({ threadId: 't', keep: 1, writer: other }), SandboxCheckpointWriterLostError, C.writerLost)
      assert.equal((await store.list('t')).length, 2)
    })

    test('the keepNewest of the contract page: a held lease is WRITER_CONFLICT', async () => {
      const { store } = open()
      const w = await chain(store, 't', 3)
      await rejects(store.acquireWriter('t'), SandboxCheckpointWriterConflictError, C.writerConflict)
      await w.release()
      const writer = await store.acquireWriter('t')
      try {
        assert.deepEqual((await store.deleteCheckpoints({ threadId: 't', keep: 1, writer })).deleted, ['t-1', 't-2'])
      } finally {
        await writer.release()
      }
    })

    test('forkFromCheckpoint copies one checkpoint into a new thread as its root, with the transcript', async () => {
      const { store, messages } = open()
      await chain(store, 'src', 3)
      const src = await store.get('src-2')
      const d = await store.acquireWriter('dst')
      const { checkpoint: root } = await store.forkFromCheckpoint({
        sourceThreadId: 'src',
        sourceCheckpointId: 'src-2',
        destinationThreadId: 'dst',
        destinationCheckpointId: 'dst-root',
        createdAt: 5_000.5,
        writer: d,
      })
      const want = { ...src!, id: 'dst-root', threadId: 'dst', parentCheckpointId: null, createdAt: 5_000.5, reason: 'fork-root' }
      assert.deepEqual(root, want)
      assert.deepEqual(await store.get('dst-root'), want)
      assert.equal(await store.getHead('dst'), 'dst-root')
      assert.deepEqual(await messages.loadThread('dst'), src!.conversation)
      assert.deepEqual((await store.listBlobReferences()).find((r) => r.key === fileKey(2)), { key: fileKey(2), references: 2 })
      // the fork's thread goes on like any other.
      await store.append({ checkpoint: checkpoint('dst-2', 'dst', 'dst-root', 6_000), expectedHeadId: 'dst-root', writer: d })
    })

    test('forkFromCheckpoint: every refusal, in order, and nothing changes', async () => {
      const { store, messages } = open()
      const s = await chain(store, 'src', 2)
      await chain(store, 'other', 1)
      const d = await store.acquireWriter('dst')
      const fork = (o: object = {}) =>
        store.forkFromCheckpoint({
          sourceThreadId: 'src',
          sourceCheckpointId: 'src-1',
          destinationThreadId: 'dst',
          destinationCheckpointId: 'dst-root',
          createdAt: 1,
          writer: d,
          ...o,
        })
      await rejects(fork({ sourceThreadId: '' }), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(fork({ sourceCheckpointId: loneLow }), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(fork({ destinationThreadId: loneHigh }), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(fork({ destinationCheckpointId: '' }), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(fork({ createdAt: NaN }), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      await rejects(fork({ destinationThreadId: 'src', writer: s }), SandboxCheckpointForkSourceThreadMismatchError, C.forkSourceThreadMismatch)
      await rejects(fork({ sourceCheckpointId: 'missing' }), SandboxCheckpointForkSourceNotFoundError, C.forkSourceNotFound)
      await rejects(fork({ sourceCheckpointId: 'other-1' }), SandboxCheckpointForkSourceThreadMismatchError, C.forkSourceThreadMismatch)
      await rejects(fork({ writer: s }), SandboxCheckpointWriterLostError, C.writerLost)
      await rejects(fork({ destinationCheckpointId: 'src-2' }), SandboxCheckpointForkDestinationNotEmptyError, C.forkDestinationNotEmpty)
      assert.equal(await store.getHead('dst'), null)
      assert.deepEqual(await store.list('dst'), [])

      // a destination with only a transcript is not empty.
      await messages.saveThread('dst', [{ role: 'user', content: 'hi' }])
      await rejects(fork(), SandboxCheckpointForkDestinationNotEmptyError, C.forkDestinationNotEmpty)
      // nor is one with a checkpoint.
      const e = await store.acquireWriter('dst2')
      await store.append({ checkpoint: checkpoint('dst2-1', 'dst2', null, 1), expectedHeadId: null, writer: e })
      await rejects(fork({ destinationThreadId: 'dst2', writer: e }), SandboxCheckpointForkDestinationNotEmptyError, C.forkDestinationNotEmpty)
      assert.equal(await store.get('dst-root'), null)
    })

    test('transcripts: [] by default, saved byte for byte, replaced whole, arrays only', async () => {
      const { messages } = open()
      assert.deepEqual(await messages.loadThread('t'), [])
      const msgs: Msg[] = [{ role: 'user', content: 'a 😀 \u2028' }, { role: 'assistant', content: '' }]
      assert.equal(await messages.saveThread('t', msgs), undefined)
      assert.deepEqual(await messages.loadThread('t'), msgs)
      await messages.saveThread('t', [])
      assert.deepEqual(await messages.loadThread('t'), [])
      await rejects(messages.saveThread('t', { role: 'user' } as unknown as Msg[]), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      await rejects(messages.saveThread('t', null as unknown as Msg[]), SandboxCheckpointInvalidEntryError, C.invalidEntry)
    })

    test('deleteThread removes every checkpoint, the head and the transcript; the lease stays', async () => {
      const { store, messages } = open()
      const w = await chain(store, 't', 3)
      await chain(store, 'keep', 1)
      await messages.saveThread('t', [{ role: 'user', content: 'x' }])
      const other = await store.acquireWriter('u')
      await rejects(store.deleteThread({ threadId: loneHigh, writer: w }), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(store.deleteThread({ threadId: 't', writer: other }), SandboxCheckpointWriterLostError, C.writerLost)
      assert.deepEqual(await store.deleteThread({ threadId: 't', writer: w }), { deleted: 3 })
      assert.deepEqual(await store.list('t'), [])
      assert.equal(await store.getHead('t'), null)
      assert.deepEqual(await messages.loadThread('t'), [])
      assert.deepEqual((await store.listBlobReferences()).map((r) => r.key), [fileKey(1)], "only 'keep' still uses a blob")
      assert.deepEqual((await store.threads()).threads, ['keep'])
      assert.deepEqual(await store.deleteThread({ threadId: 't', writer: w }), { deleted: 0 })
      await store.append({ checkpoint: checkpoint('t-1', 't', null, 1), expectedHeadId: null, writer: w })
    })
  })

  describe(`${backend}: paging`, () => {
    test('listPage pages list order both ways; the cursor survives deletes', async () => {
      const { store } = open()
      const w = await store.acquireWriter('t')
      const ids = ['a', 'b', 'c', 'd', 'e']
      let head: string | null = null
      for (const [i, id] of ids.entries()) {
        head = (await store.append({ checkpoint: checkpoint(id, 't', head, i), expectedHeadId: head, writer: w })).headId
      }
      const pages = async (reverse: boolean) => {
        const out: string[][] = []
        let after: string | null = null
        for (;;) {
          const p = await store.listPage('t', { after, limit: 2, reverse })
          out.push(p.checkpoints.map((c) => c.id))
          if (p.next === null) return out
          assert.equal(typeof p.next, 'string')
          after = p.next
        }
      }
      assert.deepEqual(await pages(false), [['a', 'b'], ['c', 'd'], ['e']])
      assert.deepEqual(await pages(true), [['e', 'd'], ['c', 'b'], ['a']])
      assert.deepEqual((await store.listPage('t')).checkpoints.map((c) => c.id), ids, 'default limit 100')
      assert.deepEqual((await store.listPage('t', { limit: 5 })).next, null)

      const first = await store.listPage('t', { limit: 3 })
      await store.deleteHead({ threadId: 't', checkpointId: 'e', writer: w })
      await store.deleteHead({ threadId: 't', checkpointId: 'd', writer: w })
      assert.deepEqual(await store.listPage('t', { after: first.next, limit: 3 }), { checkpoints: [], next: null })

      for (const limit of [1001, -1, 1.5]) {
        await rejects(store.listPage('t', { limit }), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      }
      await rejects(store.listPage('t', { after: 'not a cursor!' }), SandboxCheckpointInvalidEntryError, C.invalidEntry)
    })

    test('threads lists threads with a head, a checkpoint or a transcript, in byte order, paged', async () => {
      const { store, messages } = open()
      for (const t of ['b', 'a😀', 'a\uFFFF']) {
        const w = await store.acquireWriter(t)
        await store.append({ checkpoint: checkpoint(`${t}-1`, t, null, 1), expectedHeadId: null, writer: w })
      }
      await messages.saveThread('c-transcript-only', [])
      await store.acquireWriter('d-lease-only') // a lease alone makes no thread
      assert.deepEqual(await store.threads(), { threads: ['a\uFFFF', 'a😀', 'b', 'c-transcript-only'], next: null })
      const p1 = await store.threads({ limit: 3 })
      assert.deepEqual(p1.threads, ['a\uFFFF', 'a😀', 'b'])
      assert.equal(typeof p1.next, 'string')
      assert.deepEqual(await store.threads({ after: p1.next, limit: 3 }), { threads: ['c-transcript-only'], next: null })
      await rejects(store.threads({ limit: 0.5 }), SandboxCheckpointInvalidEntryError, C.invalidEntry)
      await rejects(store.threads({ limit: 5000 }), SandboxCheckpointInvalidEntryError, C.invalidEntry)
    })
  })

  describe(`${backend}: instance store`, () => {
    test('get, upsert (whole record, last write wins), delete', async () => {
      const { instances } = open()
      const full = { key: 'k1', provider: 'cf', providerSandboxId: 'sb-1', latestSnapshotId: 'snap-1', threadId: 't1', latestRunId: 'run-1', updatedAt: 1_700_000_000_000 }
      const other = { key: 'k2', provider: 'e2b', providerSandboxId: 'sb-2', threadId: 't2', updatedAt: 1 }
      assert.equal(await instances.upsert(full), undefined)
      await instances.upsert(other)
      assert.deepEqual(await instances.get('k1'), full)
      const bare = { key: 'k1', provider: 'cf', providerSandboxId: 'sb-9', threadId: 't1', updatedAt: 2 }
      await instances.upsert(bare)
      const got = await instances.get('k1')
      assert.deepEqual(got, bare)
      assert.equal('latestSnapshotId' in got!, false, 'an optional field not stored is absent, not undefined or null')
      assert.equal('latestRunId' in got!, false)
      assert.deepEqual(await instances.get('k2'), other)
      assert.equal(await instances.delete('k1'), undefined)
      assert.equal(await instances.get('k1'), null)
      await instances.delete('k1') // a missing key is no error
      assert.deepEqual(await instances.get('k2'), other)
      await rejects(instances.upsert({ ...other, key: '' }), SandboxCheckpointInvalidIdError, C.invalidId)
      await rejects(instances.upsert({ ...other, key: loneLow }), SandboxCheckpointInvalidIdError, C.invalidId)
    })
  })

  describe(`${backend}: namespaces`, () => {
    test('each fresh store is isolated; one namespace name is one store', async () => {
      const x = open()
      const y = open()
      assert.notEqual(x.store.namespace, y.store.namespace)
      const w = await x.store.acquireWriter('t')
      await x.store.append({ checkpoint: checkpoint('c1', 't', null, 1, [1]), expectedHeadId: null, writer: w })
      await x.messages.saveThread('m', [{ role: 'user', content: 'x' }])
      await x.instances.upsert({ key: 'k', provider: 'p', providerSandboxId: 's', threadId: 't', updatedAt: 1 })

      assert.equal(await y.store.get('c1'), null)
      assert.deepEqual(await y.store.list('t'), [])
      assert.equal(await y.store.getHead('t'), null)
      assert.deepEqual(await y.store.listBlobReferences(), [])
      assert.deepEqual(await y.store.threads(), { threads: [], next: null })
      assert.deepEqual(await y.messages.loadThread('m'), [])
      assert.equal(await y.instances.get('k'), null)
      // the same id in another namespace is no duplicate, and its lease is its own.
      const wy = await y.store.acquireWriter('t')
      await y.store.append({ checkpoint: checkpoint('c1', 't', null, 2), expectedHeadId: null, writer: wy })
      await rejects(y.store.append({ checkpoint: checkpoint('c2', 't', 'c1', 2), expectedHeadId: 'c1', writer: w }), SandboxCheckpointWriterLostError, C.writerLost)
      assert.equal((await x.store.get('c1'))?.createdAt, 1)

      // a second client of the same name sees the same store.
      const again = createCheckpointStore({ url: server().url, namespace: x.store.namespace! })
      assert.equal(await again.getHead('t'), 'c1')
      await rejects(again.acquireWriter('t'), SandboxCheckpointWriterConflictError, C.writerConflict)
    })

    test('namespace names of any Unicode, and names that look like one another, stay apart', async () => {
      const base = `ns-${Math.random().toString(36).slice(2)}`
      const names = [base, `${base}\u0000`, `${base}}`, `${base}{b}`, `${base}:x`, `${base}/`, `${base}%2F`, `${base} ä😀`]
      for (const [i, namespace] of names.entries()) {
        const s = createCheckpointStore({ url: server().url, namespace })
        const w = await s.acquireWriter('t')
        await s.append({ checkpoint: checkpoint(`c${i}`, 't', null, i), expectedHeadId: null, writer: w })
      }
      for (const [i, namespace] of names.entries()) {
        const s = createCheckpointStore({ url: server().url, namespace })
        assert.deepEqual((await s.list('t')).map((c) => c.id), [`c${i}`], `namespace ${JSON.stringify(namespace)}`)
      }
    })
  })
}

// memstore, always; Redis when redis-server is installed.
onMemAndRedis('tsclient', undefined, suite)
