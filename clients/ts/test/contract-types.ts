// A type-level test, checked by `tsc --noEmit` in `npm test` (never run):
// TanStack's store interfaces, declared here in our words with the names,
// fields and optionality of the upstream source (TanStack/ai at d3aa1049:
// packages/ai-sandbox/src/checkpoint-store.ts and instance-store.ts, the
// MessageStore of packages/ai-persistence/src/types.ts, and what the three
// conformance kits take), and @ckptstore/client checked against them in
// both directions: each store of the client is assignable to TanStack's
// interface, TanStack's interface is assignable to the client's members of
// the same names, and each data type of the client is mutually assignable
// with TanStack's. Members are function-typed properties, as upstream, so
// parameters are compared contravariantly under strictFunctionTypes. It is
// checked twice: strict with exactOptionalPropertyTypes and the DOM lib
// only (a Workers-like harness), and strict with @types/node and no DOM.
//
// The published @tanstack/ai-sandbox (0.2.4) predates these interfaces, so
// they cannot be imported; and nothing of TanStack's is copied here.

import {
  CheckpointErrorCode,
  CkptstoreError,
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
  type BlobReference,
  type Checkpoint,
  type CheckpointArtifact,
  type CheckpointDirEntry,
  type CheckpointEntry,
  type CheckpointFileEntry,
  type CheckpointReason,
  type CheckpointStoreClient,
  type CheckpointWriter,
  type CheckpointWriterLease,
  type ClientOptions,
  type ForkFromCheckpointInput,
  type InstanceRecord,
  type InstanceStoreClient,
  type MessageStoreClient,
  type SandboxCheckpointErrorCode as ClientErrorCode,
} from '@ckptstore/client'

// ---- TanStack's types, as upstream declares them ------------------------

/**
 * @tanstack/ai's ModelMessage, abridged to the members a store could ever
 * look at (the store keeps messages opaque, so the client is generic in
 * them). Roles are exactly upstream's three: there is no 'system'.
 */
interface ModelMessage {
  role: 'user' | 'assistant' | 'tool'
  content: string | null | Array<{ type: string; [k: string]: unknown }>
  name?: string
  toolCallId?: string
  id?: string
}

interface SandboxSnapshotFileEntry {
  path: string
  kind: 'file'
  blobKey: string
  size: number
}
interface SandboxSnapshotDirectoryEntry {
  path: string
  kind: 'dir'
}
type SandboxSnapshotEntry = SandboxSnapshotFileEntry | SandboxSnapshotDirectoryEntry
interface SandboxSnapshotArtifact {
  artifactId: string
  name: string
  mimeType: string
  size: number
  blobKey: string
  createdAt: number
}
/** The arrays are read-only upstream. */
interface SandboxCheckpoint {
  id: string
  threadId: string
  parentCheckpointId: string | null
  createdAt: number
  reason: 'automatic' | 'named' | 'fork-root'
  label?: string
  sourceRunId?: string
  files: ReadonlyArray<SandboxSnapshotEntry>
  conversation: ReadonlyArray<ModelMessage>
  artifacts: ReadonlyArray<SandboxSnapshotArtifact>
}

interface SandboxCheckpointWriter {
  threadId: string
  ownerToken: string
  fence: number
}
interface SandboxCheckpointWriterLease extends SandboxCheckpointWriter {
  expiresAt: number
  renewAfterMs: number
  renew: () => Promise<{ expiresAt: number }>
  release: () => Promise<void>
}
interface SandboxCheckpointForkInput {
  sourceThreadId: string
  sourceCheckpointId: string
  destinationThreadId: string
  destinationCheckpointId: string
  createdAt: number
  writer: SandboxCheckpointWriter
}
interface SandboxCheckpointForkCapability {
  forkFromCheckpoint: (input: SandboxCheckpointForkInput) => Promise<{ checkpoint: SandboxCheckpoint }>
}

/** The required methods and the one optional one, fork; upstream has no deleteCheckpoints. */
interface SandboxCheckpointStore {
  get: (id: string) => Promise<SandboxCheckpoint | null>
  list: (threadId: string) => Promise<Array<SandboxCheckpoint>>
  getHead: (threadId: string) => Promise<string | null>
  append: (input: {
    checkpoint: SandboxCheckpoint
    expectedHeadId: string | null
    writer: SandboxCheckpointWriter
  }) => Promise<{ headId: string }>
  deleteHead: (input: { threadId: string; checkpointId: string; writer: SandboxCheckpointWriter }) => Promise<void>
  acquireWriter: (threadId: string) => Promise<SandboxCheckpointWriterLease>
  listBlobReferences: () => Promise<Array<{ key: string; references: number }>>
  forkFromCheckpoint?: SandboxCheckpointForkCapability['forkFromCheckpoint']
}
type ForkCapableSandboxCheckpointStore = SandboxCheckpointStore & SandboxCheckpointForkCapability

/** What the checkpoint kit passes to its factory: all three optional. */
interface SandboxCheckpointStoreOptions {
  now?: () => number
  leaseDurationMs?: number
  renewAfterMs?: number
}

type SandboxCheckpointErrorCode =
  | 'SANDBOX_SNAPSHOT_STALE_HEAD'
  | 'SANDBOX_SNAPSHOT_PARENT_MISMATCH'
  | 'SANDBOX_SNAPSHOT_DUPLICATE_ID'
  | 'SANDBOX_SNAPSHOT_NOT_HEAD'
  | 'SANDBOX_SNAPSHOT_WRITER_CONFLICT'
  | 'SANDBOX_SNAPSHOT_WRITER_LOST'
  | 'SANDBOX_SNAPSHOT_INVALID_ID'
  | 'SANDBOX_SNAPSHOT_INVALID_ENTRY'
  | 'SANDBOX_SNAPSHOT_CHECKPOINT_NOT_FOUND'
  | 'SANDBOX_SNAPSHOT_ATOMIC_FORK_REQUIRED'
  | 'SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND'
  | 'SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH'
  | 'SANDBOX_SNAPSHOT_FORK_DESTINATION_NOT_EMPTY'
/** Upstream's base error: an Error with a code of the union (and its message constructor). */
interface SandboxCheckpointErrorShape extends Error {
  readonly code: SandboxCheckpointErrorCode
}

interface SandboxInstanceRecord {
  key: string
  provider: string
  providerSandboxId: string
  latestSnapshotId?: string
  threadId: string
  latestRunId?: string
  updatedAt: number
}
interface SandboxInstanceStore {
  get: (key: string) => Promise<SandboxInstanceRecord | null>
  upsert: (record: SandboxInstanceRecord) => Promise<void>
  delete: (key: string) => Promise<void>
}

/** @tanstack/ai-persistence's MessageStore. */
interface MessageStore {
  loadThread: (threadId: string) => Promise<Array<ModelMessage>>
  saveThread: (threadId: string, messages: Array<ModelMessage>) => Promise<void>
}

/** What runSandboxCheckpointForkConformance's factory returns; the factory takes no argument. */
interface SandboxCheckpointForkConformanceInput {
  persistence: { stores: { messages: MessageStore } }
  checkpoints: ForkCapableSandboxCheckpointStore
}

declare function runSandboxCheckpointStoreConformance(
  name: string,
  makeStore: (options?: SandboxCheckpointStoreOptions) => SandboxCheckpointStore | Promise<SandboxCheckpointStore>,
  options?: SandboxCheckpointStoreOptions,
): void
declare function runSandboxCheckpointForkConformance(
  name: string,
  makeSnapshots: () => SandboxCheckpointForkConformanceInput | Promise<SandboxCheckpointForkConformanceInput>,
): void
declare function runSandboxInstanceStoreConformance(
  name: string,
  makeStore: () => SandboxInstanceStore | Promise<SandboxInstanceStore>,
): void

// ---- The checks ----------------------------------------------------------

/** true when each of A and B is assignable to the other. */
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
/**
 * true when A and B are mutually assignable and have the same keys:
 * assignability alone would let either side lack an optional field.
 */
type Same<A, B> = Mutual<A, B> extends true ? Mutual<keyof A, keyof B> : false
/** true when A is assignable to B. */
type Extends<A, B> = [A] extends [B] ? true : false
/** Compiles only when T is exactly true. */
function check<T extends true>(): void {}

// Data types: the same keys, each side assignable to the other (so the
// same field types, optionality and read-only arrays).
check<Same<CheckpointFileEntry, SandboxSnapshotFileEntry>>()
check<Same<CheckpointDirEntry, SandboxSnapshotDirectoryEntry>>()
check<Same<CheckpointEntry, SandboxSnapshotEntry>>()
check<Same<CheckpointArtifact, SandboxSnapshotArtifact>>()
check<Mutual<CheckpointReason, SandboxCheckpoint['reason']>>()
check<Same<Checkpoint<ModelMessage>, SandboxCheckpoint>>()
check<Same<CheckpointWriter, SandboxCheckpointWriter>>()
check<Same<CheckpointWriterLease, SandboxCheckpointWriterLease>>()
check<Same<ForkFromCheckpointInput, SandboxCheckpointForkInput>>()
check<Same<BlobReference, { key: string; references: number }>>()
check<Same<InstanceRecord, SandboxInstanceRecord>>()
check<Mutual<ClientErrorCode, SandboxCheckpointErrorCode>>()
check<Mutual<CheckpointErrorCode, SandboxCheckpointErrorCode>>()

// Stores, the client's way: each client store is assignable to TanStack's.
type ModelCheckpoints = CheckpointStoreClient<ModelMessage>
check<Extends<ModelCheckpoints, SandboxCheckpointStore>>()
check<Extends<ModelCheckpoints, ForkCapableSandboxCheckpointStore>>()
check<Extends<InstanceStoreClient, SandboxInstanceStore>>()
check<Extends<MessageStoreClient<ModelMessage>, MessageStore>>()
// And TanStack's way: the members of the same names are mutually
// assignable, so no method of the client takes or returns more or less
// than TanStack's.
check<Same<Pick<ModelCheckpoints, keyof ForkCapableSandboxCheckpointStore>, ForkCapableSandboxCheckpointStore>>()
check<Same<Pick<InstanceStoreClient, keyof SandboxInstanceStore>, SandboxInstanceStore>>()
check<Same<Pick<MessageStoreClient<ModelMessage>, keyof MessageStore>, MessageStore>>()
// The kit's options fit the client's options as they are.
check<Extends<SandboxCheckpointStoreOptions, Partial<ClientOptions>>>()
// The client's errors are upstream's: an Error with a code of the union.
check<Extends<SandboxCheckpointError, SandboxCheckpointErrorShape>>()

// ---- The kits and a harness, with @ckptstore/client in place ------------

const url = 'http://127.0.0.1:7070'

// Where InMemorySandboxCheckpointStore would go: the type argument is
// inferred from the place.
const checkpoints: SandboxCheckpointStore = createCheckpointStore({ url })
const forkable: ForkCapableSandboxCheckpointStore = createCheckpointStore({ url })
const instances: SandboxInstanceStore = createInstanceStore({ url })
const messages: MessageStore = createMessageStore({ url })

// Opened once, with the message type named, and used everywhere.
const store = createCheckpointStore<ModelMessage>({ url, token: 'secret' })
const asStore: SandboxCheckpointStore = store
const asFork: ForkCapableSandboxCheckpointStore = store
void [checkpoints, forkable, instances, messages, asStore, asFork]

// The kits, called as docs and the kit test files call them.
runSandboxCheckpointStoreConformance('ckptstore', (options) => createCheckpointStore({ url, ...options }), {
  now: () => 1_000,
  leaseDurationMs: 100,
  renewAfterMs: 25,
})
runSandboxCheckpointStoreConformance('ckptstore', (options) => createCheckpointStore({ url, ...options }))
runSandboxCheckpointForkConformance('ckptstore', async () => {
  const c = createCheckpointStore({ url })
  return { persistence: { stores: { messages: createMessageStore({ url, namespace: c.namespace! }) } }, checkpoints: c }
})
runSandboxInstanceStoreConformance('ckptstore', async () => createInstanceStore({ url }))

// The contract page's keepNewest takes a store with deleteCheckpoints; the
// page, not upstream's interface, names the method, so a harness writes
// the capability itself.
interface SandboxCheckpointPruneCapability {
  deleteCheckpoints: (input: { threadId: string; keep: number; writer: SandboxCheckpointWriter }) => Promise<{ deleted: string[] }>
}
export async function keepNewest(s: SandboxCheckpointStore & SandboxCheckpointPruneCapability, threadId: string, keep: number) {
  const writer = await s.acquireWriter(threadId)
  try {
    const { deleted } = await s.deleteCheckpoints({ threadId, keep, writer })
    return deleted
  } finally {
    await writer.release()
  }
}
export const pruned: Promise<string[]> = keepNewest(createCheckpointStore({ url }), 't', 3)

// The page's sweep reads `key` and `references` of each reference.
export async function unreferenced(s: SandboxCheckpointStore, listed: string[]): Promise<string[]> {
  const used = new Set((await s.listBlobReferences()).filter((r) => r.references > 0).map((r) => r.key))
  return listed.filter((k) => !used.has(k))
}

// A capture: the lease is the writer; append answers {headId}; null for absent.
export async function capture(s: SandboxCheckpointStore, cp: SandboxCheckpoint): Promise<string> {
  const lease = await s.acquireWriter(cp.threadId)
  const head: string | null = await s.getHead(cp.threadId)
  const { headId }: { headId: string } = await s.append({ checkpoint: { ...cp, parentCheckpointId: head }, expectedHeadId: head, writer: lease })
  const { expiresAt }: { expiresAt: number } = await lease.renew()
  void expiresAt
  const back: SandboxCheckpoint | null = await s.get(headId)
  void back
  await lease.release()
  return headId
}
export const captured = capture(createCheckpointStore({ url }), {} as SandboxCheckpoint)

// A checkpoint built from read-only data goes to append as it is.
const frozen = {
  id: 'c', threadId: 't', parentCheckpointId: null, createdAt: 1, reason: 'automatic',
  files: [{ path: 'a', kind: 'file', blobKey: 'sandbox-files/sha256/x', size: 1 }],
  conversation: [{ role: 'user', content: 'hi' }],
  artifacts: [],
} as const
export const appended = store.append({ checkpoint: frozen, expectedHeadId: null, writer: { threadId: 't', ownerToken: 'o', fence: 1 } })

// The client's operator methods.
export async function operator(c: CheckpointStoreClient<ModelMessage>) {
  const page: { checkpoints: Checkpoint<ModelMessage>[]; next: string | null } = await c.listPage('t', { limit: 10 })
  const threads: { threads: string[]; next: string | null } = await c.threads({ after: page.next })
  const { deleted }: { deleted: number } = await c.deleteThread({ threadId: 't', writer: await c.acquireWriter('t') })
  void [threads, deleted]
}

// Rejections: Errors with .code, named as TanStack's classes.
function codeOf(e: unknown): string | undefined {
  if (e instanceof SandboxCheckpointError) {
    const err: Error = e
    const code: SandboxCheckpointErrorCode = e.code
    return err.name + code
  }
  if (e instanceof CkptstoreError) return e.code
  return undefined
}
void codeOf
// Upstream's subclasses take a message; the client's take one too.
const classes: Array<new (message: string) => SandboxCheckpointErrorShape> = [
  SandboxCheckpointConflictError,
  SandboxCheckpointParentMismatchError,
  SandboxCheckpointDuplicateIdError,
  SandboxCheckpointNotHeadError,
  SandboxCheckpointWriterConflictError,
  SandboxCheckpointWriterLostError,
  SandboxCheckpointInvalidIdError,
  SandboxCheckpointInvalidEntryError,
  SandboxCheckpointForkSourceNotFoundError,
  SandboxCheckpointForkSourceThreadMismatchError,
  SandboxCheckpointForkDestinationNotEmptyError,
]
void classes
const base: new (code: SandboxCheckpointErrorCode, message: string) => SandboxCheckpointErrorShape = SandboxCheckpointError
void base

// And what must not type-check.
export async function refused(s: CheckpointStoreClient<ModelMessage>, cp: SandboxCheckpoint) {
  // @ts-expect-error append needs its writer
  await s.append({ checkpoint: cp, expectedHeadId: null })
  // @ts-expect-error append answers {headId}, not a string
  const h: string = await s.append({ checkpoint: cp, expectedHeadId: null, writer: await s.acquireWriter('t') })
  // @ts-expect-error get may answer null
  const g: SandboxCheckpoint = await s.get('x')
  // @ts-expect-error a conversation of the wrong message type
  await s.append({ checkpoint: { ...cp, conversation: [{ nope: 1 }] }, expectedHeadId: null, writer: await s.acquireWriter('t') })
  // @ts-expect-error a checkpoint needs parentCheckpointId, as upstream's does
  await s.append({ checkpoint: { ...cp, parentCheckpointId: undefined }, expectedHeadId: null, writer: await s.acquireWriter('t') })
  // @ts-expect-error the old reference names are gone
  const old: string = (await s.listBlobReferences())[0]!.blobKey
  // @ts-expect-error createCheckpointStore needs a url
  createCheckpointStore({ token: 'x' })
  void [h, g, old]
}
