/**
 * @ckptstore/client: the checkpoint store, instance store and message store
 * of @tanstack/ai-sandbox, @tanstack/ai-persistence's seven stores
 * (createPersistence), @tanstack/ai's LockStore (createLockStore) and a
 * run's event log, its UpsertableStreamDurability (createStreamDurability),
 * over a ckptserver. Put `createCheckpointStore(…)`
 * where InMemorySandboxCheckpointStore would go; it keeps the same promises,
 * with the checkpoints in whatever store the server runs on (memory, Redis,
 * FoundationDB).
 *
 * @packageDocumentation
 */

import { reviveCheckpoint, reviveCheckpoints, reviveMessages } from './messages.js'
import { viewable } from './call.js'
import { field, Transport, type ClientOptions } from './transport.js'
import type {
  BlobReference,
  Checkpoint,
  CheckpointPage,
  CheckpointWriter,
  CheckpointWriterLease,
  ForkFromCheckpointInput,
  InstanceRecord,
  ListPageOptions,
  ThreadPage,
  ThreadsOptions,
} from './types.js'

export * from './errors.js'
export type * from './types.js'
export type * from './persist-types.js'
export type { CallOptions, ClientOptions, HeadersOption } from './transport.js'
export { withCallOptions } from './call.js'
export { createPersistence, type PersistenceClient, type PersistenceOptions, type PersistenceStores } from './persistence.js'
export { createLockStore, type LockStoreClientWithNamespace, type LockStoreOptions } from './locks.js'
export {
  createStreamDurability,
  type StreamDurabilityClient,
  type StreamDurabilityEntry,
  type StreamDurabilityOptions,
  type StreamDurabilityRequest,
  type StreamDurabilitySource,
} from './streams.js'

/** The checkpoint store: TanStack's SandboxCheckpointStore with fork and prune, and three operator methods. */
// The message type defaults to any, not unknown: a harness that opens the
// store once (`const store = createCheckpointStore({ url })`) and passes it
// where TanStack's SandboxCheckpointStore (with its ModelMessage) is
// expected must type-check as it does with InMemorySandboxCheckpointStore.
// Name the type (`createCheckpointStore<ModelMessage>(…)`) to have the
// conversations checked; where the store is put in a typed place,
// TypeScript infers it. Members are function-typed properties, as
// TanStack's are, so their parameters are checked contravariantly (a
// method's would be bivariant and hide a mismatch).
export interface CheckpointStoreClient<M = any> {
  /** The namespace this store talks to (generated when none was given against a --dev server). */
  readonly namespace: string | undefined
  /** The checkpoint, or null. A conversation message's createdAt that a Date wrote reads back as a Date (README, "Dates"). */
  get: (id: string) => Promise<Checkpoint<M> | null>
  /** Every checkpoint of the thread, by createdAt then by the UTF-8 bytes of the id; [] for an unknown thread. */
  list: (threadId: string) => Promise<Array<Checkpoint<M>>>
  /** The head id, or null. */
  getHead: (threadId: string) => Promise<string | null>
  /** Adds the checkpoint and makes it the head, as one compare-and-swap. */
  append: (input: {
    checkpoint: Checkpoint<M>
    expectedHeadId: string | null
    writer: CheckpointWriter
  }) => Promise<{ headId: string }>
  /** Removes the head and moves the head to its parent. */
  deleteHead: (input: { threadId: string; checkpointId: string; writer: CheckpointWriter }) => Promise<void>
  /** Takes the thread's writer lease, without waiting. */
  acquireWriter: (threadId: string) => Promise<CheckpointWriterLease>
  /** Each blob key with its count (above 0), over all threads, by UTF-8 bytes: `{ key, references }`. */
  listBlobReferences: () => Promise<Array<BlobReference>>
  /** Keeps the head and the keep−1 checkpoints before it; returns the removed ids, oldest first. */
  deleteCheckpoints: (input: { threadId: string; keep: number; writer: CheckpointWriter }) => Promise<{ deleted: string[] }>
  /** Copies one checkpoint into a new, empty thread as its root (and the thread's transcript). */
  forkFromCheckpoint: (input: ForkFromCheckpointInput) => Promise<{ checkpoint: Checkpoint<M> }>
  /** Removes every checkpoint of the thread, its head and its transcript; the lease stays. */
  deleteThread: (input: { threadId: string; writer: CheckpointWriter }) => Promise<{ deleted: number }>
  /** One page of list's order (or its reverse). */
  listPage: (threadId: string, options?: ListPageOptions) => Promise<CheckpointPage<M>>
  /** The ids of the threads that have a head, a checkpoint or a transcript, in byte order, paged. */
  threads: (options?: ThreadsOptions) => Promise<ThreadPage>
}

/** The instance store: TanStack's SandboxInstanceStore. */
export interface InstanceStoreClient {
  readonly namespace: string | undefined
  /** The record, or null; optional fields not stored are absent. */
  get: (key: string) => Promise<InstanceRecord | null>
  /** Replaces the whole record of record.key. */
  upsert: (record: InstanceRecord) => Promise<void>
  /** Removes the record; a missing key is no error. */
  delete: (key: string) => Promise<void>
}

/** The thread transcripts of a namespace: TanStack's persistence MessageStore. */
export interface MessageStoreClient<M = any> {
  readonly namespace: string | undefined
  /** The saved messages, or [] when none were saved; a createdAt that a Date wrote reads back as a Date (README, "Dates"). */
  loadThread: (threadId: string) => Promise<Array<M>>
  /** Replaces the thread's whole transcript. */
  saveThread: (threadId: string, messages: Array<M>) => Promise<void>
}

const ignore = () => {}

/**
 * handled marks the promise f returns as handled the moment it exists, and
 * returns that same promise: a caller that attaches its handler late (a
 * test kit that starts a call, awaits other reads, then attaches
 * `.rejects`) still sees the rejection, and Node never reports an
 * unhandledRejection for it, as with TanStack's in-memory store. A caller
 * that drops the promise unawaited loses the rejection silently, as there.
 */
function handled<A extends unknown[], R>(f: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return (...args) => {
    const p = f(...args)
    p.catch(ignore)
    return p
  }
}

/** The writer fields a write sends: a lease object carries more (expiresAt, methods) that the server does not take. */
function writerOf(w: CheckpointWriter): CheckpointWriter {
  if (w === null || typeof w !== 'object') return w
  return { threadId: w.threadId, ownerToken: w.ownerToken, fence: w.fence }
}

function leaseOf(t: Transport, wire: Record<string, unknown>): CheckpointWriterLease {
  const lease: CheckpointWriterLease = {
    threadId: field<string>(wire, 'acquireWriter', 'threadId'),
    ownerToken: field<string>(wire, 'acquireWriter', 'ownerToken'),
    fence: field<number>(wire, 'acquireWriter', 'fence'),
    expiresAt: field<number>(wire, 'acquireWriter', 'expiresAt'),
    renewAfterMs: field<number>(wire, 'acquireWriter', 'renewAfterMs'),
    renew: handled(async () => {
      const r = await t.call('renew', { writer: writerOf(lease) }, 'write')
      const expiresAt = field<number>(r, 'renew', 'expiresAt')
      lease.expiresAt = expiresAt
      return { expiresAt }
    }),
    release: handled(async () => {
      try {
        await t.call('release', { writer: writerOf(lease) }, 'write')
      } catch {
        // release never throws: a lease it cannot end expires by itself.
      }
    }),
  }
  return lease
}

/**
 * createCheckpointStore opens the checkpoint store of one namespace on a
 * ckptserver. Every rejection is an Error with the contract's `code`
 * (SANDBOX_SNAPSHOT_…) and TanStack's class name in `name`; reads, and
 * writes (each with its own Idempotency-Key), are retried on network errors
 * and 503, so a lost reply never turns a committed write into an error or
 * a double write.
 */
export function createCheckpointStore<M = any>(options: ClientOptions): CheckpointStoreClient<M> {
  return viewable(new Transport(options), (t): CheckpointStoreClient<M> => ({
    namespace: t.namespace,
    get: handled(async (id) => {
      const r = await t.call('get', { id }, 'read')
      return reviveCheckpoint(field<Checkpoint<M> | null>(r, 'get', 'checkpoint'))
    }),
    list: handled(async (threadId) => {
      const r = await t.call('list', { threadId }, 'read')
      return reviveCheckpoints(field<Checkpoint<M>[]>(r, 'list', 'checkpoints'))
    }),
    getHead: handled(async (threadId) => {
      const r = await t.call('getHead', { threadId }, 'read')
      return field<string | null>(r, 'getHead', 'headId')
    }),
    append: handled(async ({ checkpoint, expectedHeadId, writer }) => {
      const r = await t.call(
        'append',
        { checkpoint, expectedHeadId: expectedHeadId ?? null, writer: writerOf(writer) },
        'write',
      )
      return { headId: field<string>(r, 'append', 'headId') }
    }),
    deleteHead: handled(async ({ threadId, checkpointId, writer }) => {
      await t.call('deleteHead', { threadId, checkpointId, writer: writerOf(writer) }, 'write')
    }),
    acquireWriter: handled(async (threadId) => {
      return leaseOf(t, await t.call('acquireWriter', { threadId }, 'write'))
    }),
    listBlobReferences: handled(async () => {
      const r = await t.call('listBlobReferences', {}, 'read')
      return field<Array<BlobReference>>(r, 'listBlobReferences', 'references')
    }),
    deleteCheckpoints: handled(async ({ threadId, keep, writer }) => {
      const r = await t.call('deleteCheckpoints', { threadId, keep, writer: writerOf(writer) }, 'write')
      return { deleted: field<string[]>(r, 'deleteCheckpoints', 'deleted') }
    }),
    forkFromCheckpoint: handled(async (input) => {
      const r = await t.call(
        'forkFromCheckpoint',
        {
          sourceThreadId: input.sourceThreadId,
          sourceCheckpointId: input.sourceCheckpointId,
          destinationThreadId: input.destinationThreadId,
          destinationCheckpointId: input.destinationCheckpointId,
          createdAt: input.createdAt,
          writer: writerOf(input.writer),
        },
        'write',
      )
      return { checkpoint: reviveCheckpoint(field<Checkpoint<M>>(r, 'forkFromCheckpoint', 'checkpoint')) }
    }),
    deleteThread: handled(async ({ threadId, writer }) => {
      const r = await t.call('deleteThread', { threadId, writer: writerOf(writer) }, 'write')
      return { deleted: field<number>(r, 'deleteThread', 'deleted') }
    }),
    listPage: handled(async (threadId, opts = {}) => {
      const body: Record<string, unknown> = { threadId }
      if (opts.after != null) body['after'] = opts.after
      if (opts.limit !== undefined) body['limit'] = opts.limit
      if (opts.reverse !== undefined) body['reverse'] = opts.reverse
      const r = await t.call('listPage', body, 'read')
      return {
        checkpoints: reviveCheckpoints(field<Checkpoint<M>[]>(r, 'listPage', 'checkpoints')),
        next: field<string | null>(r, 'listPage', 'next'),
      }
    }),
    threads: handled(async (opts = {}) => {
      const body: Record<string, unknown> = {}
      if (opts.after != null) body['after'] = opts.after
      if (opts.limit !== undefined) body['limit'] = opts.limit
      const r = await t.call('threads', body, 'read')
      return {
        threads: field<string[]>(r, 'threads', 'threads'),
        next: field<string | null>(r, 'threads', 'next'),
      }
    }),
  }))
}

/** createInstanceStore opens the instance store of one namespace on a ckptserver. */
export function createInstanceStore(options: ClientOptions): InstanceStoreClient {
  return viewable(new Transport(options), (t): InstanceStoreClient => ({
    namespace: t.namespace,
    get: handled(async (key) => {
      const r = await t.call('instanceGet', { key }, 'read')
      return field<InstanceRecord | null>(r, 'instanceGet', 'record')
    }),
    upsert: handled(async (record) => {
      await t.call('instanceUpsert', { record }, 'write')
    }),
    delete: handled(async (key) => {
      await t.call('instanceDelete', { key }, 'write')
    }),
  }))
}

/**
 * createMessageStore opens the thread transcripts of one namespace: the
 * ones forkFromCheckpoint checks and writes. Against a --dev server, pass
 * the checkpoint store's `namespace`, so both see the same threads.
 */
export function createMessageStore<M = any>(options: ClientOptions): MessageStoreClient<M> {
  return viewable(new Transport(options), (t): MessageStoreClient<M> => ({
    namespace: t.namespace,
    loadThread: handled(async (threadId) => {
      const r = await t.call('loadThread', { threadId }, 'read')
      return reviveMessages(field<M[]>(r, 'loadThread', 'messages'))
    }),
    saveThread: handled(async (threadId, messages) => {
      await t.call('saveThread', { threadId, messages }, 'write')
    }),
  }))
}
