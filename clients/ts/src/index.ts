/**
 * @ckptstore/client: the checkpoint store, instance store and message store
 * of @tanstack/ai-sandbox over a ckptserver. Put `createCheckpointStore(…)`
 * where InMemorySandboxCheckpointStore would go; it keeps the same promises,
 * with the checkpoints in whatever store the server runs on (memory, Redis,
 * FoundationDB).
 *
 * @packageDocumentation
 */

import { field, Transport, type ClientOptions } from './transport.js'
import type {
  BlobReference,
  Checkpoint,
  CheckpointInput,
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
export type { ClientOptions } from './transport.js'

/** The checkpoint store: TanStack's SandboxCheckpointStore with fork and prune, and three operator methods. */
// The message type defaults to any, not unknown: a harness that opens the
// store once (`const store = createCheckpointStore({ url })`) and passes it
// where TanStack's SandboxCheckpointStore (with its ModelMessage) is
// expected must type-check as it does with InMemorySandboxCheckpointStore.
// Name the type (`createCheckpointStore<ModelMessage>(…)`) to have the
// conversations checked; where the store is put in a typed place,
// TypeScript infers it.
export interface CheckpointStoreClient<M = any> {
  /** The namespace this store talks to (generated when none was given against a --dev server). */
  readonly namespace: string | undefined
  /** The checkpoint, or null. */
  get(id: string): Promise<Checkpoint<M> | null>
  /** Every checkpoint of the thread, by createdAt then by the UTF-8 bytes of the id; [] for an unknown thread. */
  list(threadId: string): Promise<Checkpoint<M>[]>
  /** The head id, or null. */
  getHead(threadId: string): Promise<string | null>
  /** Adds the checkpoint and makes it the head, as one compare-and-swap. */
  append(input: {
    checkpoint: CheckpointInput<M>
    expectedHeadId: string | null
    writer: CheckpointWriter
  }): Promise<{ headId: string }>
  /** Removes the head and moves the head to its parent. */
  deleteHead(input: { threadId: string; checkpointId: string; writer: CheckpointWriter }): Promise<void>
  /** Takes the thread's writer lease, without waiting. */
  acquireWriter(threadId: string): Promise<CheckpointWriterLease>
  /** Each blob key with a count above 0, over all threads, by UTF-8 bytes. */
  listBlobReferences(): Promise<BlobReference[]>
  /** Keeps the head and the keep−1 checkpoints before it; returns the removed ids, oldest first. */
  deleteCheckpoints(input: { threadId: string; keep: number; writer: CheckpointWriter }): Promise<{ deleted: string[] }>
  /** Copies one checkpoint into a new, empty thread as its root (and the thread's transcript). */
  forkFromCheckpoint(input: ForkFromCheckpointInput): Promise<{ checkpoint: Checkpoint<M> }>
  /** Removes every checkpoint of the thread, its head and its transcript; the lease stays. */
  deleteThread(input: { threadId: string; writer: CheckpointWriter }): Promise<{ deleted: number }>
  /** One page of list's order (or its reverse). */
  listPage(threadId: string, options?: ListPageOptions): Promise<CheckpointPage<M>>
  /** The ids of the threads that have a head, a checkpoint or a transcript, in byte order, paged. */
  threads(options?: ThreadsOptions): Promise<ThreadPage>
}

/** The instance store: TanStack's SandboxInstanceStore. */
export interface InstanceStoreClient {
  readonly namespace: string | undefined
  /** The record, or null; optional fields not stored are absent. */
  get(key: string): Promise<InstanceRecord | null>
  /** Replaces the whole record of record.key. */
  upsert(record: InstanceRecord): Promise<void>
  /** Removes the record; a missing key is no error. */
  delete(key: string): Promise<void>
}

/** The thread transcripts of a namespace: TanStack's persistence messages store. */
export interface MessageStoreClient<M = any> {
  readonly namespace: string | undefined
  /** The saved messages, or [] when none were saved. */
  loadThread(threadId: string): Promise<M[]>
  /** Replaces the thread's whole transcript. */
  saveThread(threadId: string, messages: M[]): Promise<void>
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
    async renew() {
      const r = await t.call('renewWriter', { writer: writerOf(lease) }, 'write')
      const expiresAt = field<number>(r, 'renewWriter', 'expiresAt')
      lease.expiresAt = expiresAt
      return { expiresAt }
    },
    async release() {
      try {
        await t.call('releaseWriter', { writer: writerOf(lease) }, 'write')
      } catch {
        // release never throws: a lease it cannot end expires by itself.
      }
    },
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
  const t = new Transport(options)
  return {
    namespace: t.namespace,
    async get(id) {
      const r = await t.call('get', { id }, 'read')
      return field<Checkpoint<M> | null>(r, 'get', 'checkpoint')
    },
    async list(threadId) {
      const r = await t.call('list', { threadId }, 'read')
      return field<Checkpoint<M>[]>(r, 'list', 'checkpoints')
    },
    async getHead(threadId) {
      const r = await t.call('getHead', { threadId }, 'read')
      return field<string | null>(r, 'getHead', 'headId')
    },
    async append({ checkpoint, expectedHeadId, writer }) {
      const r = await t.call(
        'append',
        { checkpoint, expectedHeadId: expectedHeadId ?? null, writer: writerOf(writer) },
        'write',
      )
      return { headId: field<string>(r, 'append', 'headId') }
    },
    async deleteHead({ threadId, checkpointId, writer }) {
      await t.call('deleteHead', { threadId, checkpointId, writer: writerOf(writer) }, 'write')
    },
    async acquireWriter(threadId) {
      return leaseOf(t, await t.call('acquireWriter', { threadId }, 'write'))
    },
    async listBlobReferences() {
      const r = await t.call('listBlobReferences', {}, 'read')
      return field<BlobReference[]>(r, 'listBlobReferences', 'references')
    },
    async deleteCheckpoints({ threadId, keep, writer }) {
      const r = await t.call('deleteCheckpoints', { threadId, keep, writer: writerOf(writer) }, 'write')
      return { deleted: field<string[]>(r, 'deleteCheckpoints', 'deleted') }
    },
    async forkFromCheckpoint(input) {
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
      return { checkpoint: field<Checkpoint<M>>(r, 'forkFromCheckpoint', 'checkpoint') }
    },
    async deleteThread({ threadId, writer }) {
      const r = await t.call('deleteThread', { threadId, writer: writerOf(writer) }, 'write')
      return { deleted: field<number>(r, 'deleteThread', 'deleted') }
    },
    async listPage(threadId, opts = {}) {
      const body: Record<string, unknown> = { threadId }
      if (opts.after != null) body['after'] = opts.after
      if (opts.limit !== undefined) body['limit'] = opts.limit
      if (opts.reverse !== undefined) body['reverse'] = opts.reverse
      const r = await t.call('listPage', body, 'read')
      return {
        checkpoints: field<Checkpoint<M>[]>(r, 'listPage', 'checkpoints'),
        next: field<string | null>(r, 'listPage', 'next'),
      }
    },
    async threads(opts = {}) {
      const body: Record<string, unknown> = {}
      if (opts.after != null) body['after'] = opts.after
      if (opts.limit !== undefined) body['limit'] = opts.limit
      const r = await t.call('threads', body, 'read')
      return {
        threads: field<string[]>(r, 'threads', 'threads'),
        next: field<string | null>(r, 'threads', 'next'),
      }
    },
  }
}

/** createInstanceStore opens the instance store of one namespace on a ckptserver. */
export function createInstanceStore(options: ClientOptions): InstanceStoreClient {
  const t = new Transport(options)
  return {
    namespace: t.namespace,
    async get(key) {
      const r = await t.call('instanceGet', { key }, 'read')
      return field<InstanceRecord | null>(r, 'instanceGet', 'record')
    },
    async upsert(record) {
      await t.call('instanceUpsert', { record }, 'write')
    },
    async delete(key) {
      await t.call('instanceDelete', { key }, 'write')
    },
  }
}

/**
 * createMessageStore opens the thread transcripts of one namespace: the
 * ones forkFromCheckpoint checks and writes. Against a --dev server, pass
 * the checkpoint store's `namespace`, so both see the same threads.
 */
export function createMessageStore<M = any>(options: ClientOptions): MessageStoreClient<M> {
  const t = new Transport(options)
  return {
    namespace: t.namespace,
    async loadThread(threadId) {
      const r = await t.call('loadThread', { threadId }, 'read')
      return field<M[]>(r, 'loadThread', 'messages')
    },
    async saveThread(threadId, messages) {
      await t.call('saveThread', { threadId, messages }, 'write')
    },
  }
}
