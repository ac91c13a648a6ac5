// A type-level test, checked by `tsc --noEmit` in `npm test` (never run):
// a harness written against the checkpoint-store interfaces of TanStack's
// "Store Checkpoints" page type-checks with @ckptstore/client in place of
// InMemorySandboxCheckpointStore. The published @tanstack/ai-sandbox
// (0.2.4) predates these interfaces, so they are declared here from the
// page: method shapes, the lease that is the writer, the optional prune and
// fork methods, the instance store, and the persistence messages store the
// fork conformance takes. Members are declared as function-typed properties
// (as 0.2.4's SandboxStore is), so parameters are checked contravariantly
// under strictFunctionTypes, the stricter of the two ways to declare them.
// It is checked twice: strict with exactOptionalPropertyTypes and the DOM
// lib only (a Workers-like harness), and strict with @types/node and no DOM.

import {
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
  type CheckpointStoreClient,
} from '@ckptstore/client'

// ---- Declared from the contract page ----------------------------------

/** The harness's message type (TanStack's ModelMessage, abridged). */
interface ModelMessage {
  role: 'system' | 'user' | 'assistant' | 'tool'
  content: string | null | Array<{ type: string; [k: string]: unknown }>
  toolCallId?: string
}

interface SandboxCheckpointFileEntry {
  path: string
  kind: 'file'
  blobKey: string
  size: number
}
interface SandboxCheckpointDirEntry {
  path: string
  kind: 'dir'
}
interface SandboxCheckpointArtifact {
  artifactId: string
  name: string
  mimeType: string
  size: number
  blobKey: string
  createdAt: number
}
interface SandboxCheckpoint {
  id: string
  threadId: string
  parentCheckpointId: string | null
  createdAt: number
  reason: 'automatic' | 'named' | 'fork-root'
  label?: string
  sourceRunId?: string
  files: Array<SandboxCheckpointFileEntry | SandboxCheckpointDirEntry>
  conversation: ModelMessage[]
  artifacts: SandboxCheckpointArtifact[]
}

/** "writer.threadId is the thread of the write, and the lease is current." */
interface SandboxCheckpointWriter {
  threadId: string
  ownerToken: string
  fence: number
}

/** The lease object is the writer, with renew() and release(). */
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

/** The required methods, and the two optional ones. */
interface SandboxCheckpointStore {
  get: (id: string) => Promise<SandboxCheckpoint | null>
  list: (threadId: string) => Promise<SandboxCheckpoint[]>
  getHead: (threadId: string) => Promise<string | null>
  append: (input: {
    checkpoint: SandboxCheckpoint
    expectedHeadId: string | null
    writer: SandboxCheckpointWriter
  }) => Promise<{ headId: string }>
  deleteHead: (input: { threadId: string; checkpointId: string; writer: SandboxCheckpointWriter }) => Promise<void>
  acquireWriter: (threadId: string) => Promise<SandboxCheckpointWriterLease>
  listBlobReferences: () => Promise<Array<{ blobKey: string; count: number }>>
  deleteCheckpoints?: (input: {
    threadId: string
    keep: number
    writer: SandboxCheckpointWriter
  }) => Promise<{ deleted: string[] }>
  forkFromCheckpoint?: (input: SandboxCheckpointForkInput) => Promise<{ checkpoint: SandboxCheckpoint }>
}

/** A store that can prune ("Keep only the newest checkpoints"). */
type SandboxCheckpointPruneStore = SandboxCheckpointStore & Required<Pick<SandboxCheckpointStore, 'deleteCheckpoints'>>
/** A store that can fork (runSandboxCheckpointForkConformance). */
type SandboxCheckpointForkStore = SandboxCheckpointStore & Required<Pick<SandboxCheckpointStore, 'forkFromCheckpoint'>>

/** TanStack's SandboxRecord (as in 0.2.4). */
interface SandboxRecord {
  key: string
  provider: string
  providerSandboxId: string
  latestSnapshotId?: string
  threadId: string
  latestRunId?: string
  updatedAt: number
}
interface SandboxInstanceStore {
  get: (key: string) => Promise<SandboxRecord | null>
  upsert: (record: SandboxRecord) => Promise<void>
  delete: (key: string) => Promise<void>
}

/** The persistence messages store: the thread transcripts. */
interface MessageStore {
  loadThread: (threadId: string) => Promise<ModelMessage[]>
  saveThread: (threadId: string, messages: ModelMessage[]) => Promise<void>
}

/** What runSandboxCheckpointForkConformance takes. */
interface SandboxForkConformanceStores {
  persistence: { stores: { messages: MessageStore } }
  checkpoints: SandboxCheckpointForkStore
}

interface SandboxCheckpointStoreConformanceOptions {
  now: () => number
  leaseDurationMs: number
  renewAfterMs: number
}
declare function runSandboxCheckpointStoreConformance(
  name: string,
  factory: (options: SandboxCheckpointStoreConformanceOptions) => Promise<SandboxCheckpointStore> | SandboxCheckpointStore,
  options: SandboxCheckpointStoreConformanceOptions,
): void
declare function runSandboxCheckpointForkConformance(
  name: string,
  factory: (options: SandboxCheckpointStoreConformanceOptions) => Promise<SandboxForkConformanceStores>,
  options: SandboxCheckpointStoreConformanceOptions,
): void
declare function runSandboxInstanceStoreConformance(name: string, factory: () => Promise<SandboxInstanceStore>): void
declare function sweepSandboxBlobs(input: {
  checkpoints: SandboxCheckpointStore
  blobs: { list: (prefix: string) => Promise<Array<{ key: string; uploadedAt: number }>>; delete: (key: string) => Promise<void> }
  olderThanMs: number
}): Promise<string[]>

// ---- The harness, with @ckptstore/client in place ----------------------

const url = 'http://127.0.0.1:7070'

// Where InMemorySandboxCheckpointStore would go: the type argument is
// inferred from the place.
const checkpoints: SandboxCheckpointStore = createCheckpointStore({ url })
const prunable: SandboxCheckpointPruneStore = createCheckpointStore({ url })
const forkable: SandboxCheckpointForkStore = createCheckpointStore({ url })
const instances: SandboxInstanceStore = createInstanceStore({ url })
const messages: MessageStore = createMessageStore({ url })

// Opened once, with the message type named, and used everywhere.
const store = createCheckpointStore<ModelMessage>({ url, token: 'secret' })
const asStore: SandboxCheckpointStore = store
const asFork: SandboxCheckpointForkStore = store
void [checkpoints, prunable, forkable, instances, messages, asStore, asFork]

// The page's conformance calls.
runSandboxCheckpointStoreConformance(
  'ckptstore',
  async (options) => createCheckpointStore({ url, ...options }),
  { now: () => 1_000, leaseDurationMs: 100, renewAfterMs: 25 },
)
runSandboxCheckpointForkConformance(
  'ckptstore',
  async (options) => {
    const c = createCheckpointStore({ url, ...options })
    return {
      persistence: { stores: { messages: createMessageStore({ url, ...options, namespace: c.namespace! }) } },
      checkpoints: c,
    }
  },
  { now: () => 1_000, leaseDurationMs: 100, renewAfterMs: 25 },
)
runSandboxInstanceStoreConformance('ckptstore', async () => createInstanceStore({ url }))

// The page's keepNewest, verbatim in shape.
export async function keepNewest(checkpoints: SandboxCheckpointStore, threadId: string, keep: number) {
  if (!checkpoints.deleteCheckpoints) throw new Error('This store cannot delete checkpoints')
  const writer = await checkpoints.acquireWriter(threadId)
  try {
    const { deleted } = await checkpoints.deleteCheckpoints({ threadId, keep, writer })
    return deleted
  } finally {
    await writer.release()
  }
}
export const pruned: Promise<string[]> = keepNewest(createCheckpointStore({ url }), 't', 3)

// The page's sweep.
export const swept: Promise<string[]> = sweepSandboxBlobs({
  checkpoints: createCheckpointStore({ url }),
  blobs: { list: async () => [], delete: async () => {} },
  olderThanMs: 24 * 60 * 60 * 1000,
})

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

// The client's own types line up with the page's, both ways.
export async function roundTrip(c: CheckpointStoreClient<ModelMessage>) {
  const cp: SandboxCheckpoint | null = await c.get('x')
  if (cp) await c.append({ checkpoint: cp, expectedHeadId: cp.parentCheckpointId, writer: await c.acquireWriter(cp.threadId) })
  const { checkpoint: root }: { checkpoint: SandboxCheckpoint } = await c.forkFromCheckpoint({
    sourceThreadId: 'a', sourceCheckpointId: 'b', destinationThreadId: 'c', destinationCheckpointId: 'd', createdAt: 1,
    writer: await c.acquireWriter('c'),
  })
  const page: { checkpoints: SandboxCheckpoint[]; next: string | null } = await c.listPage('t', { limit: 10 })
  const threads: { threads: string[]; next: string | null } = await c.threads({ after: page.next })
  const { deleted }: { deleted: number } = await c.deleteThread({ threadId: 't', writer: await c.acquireWriter('t') })
  void [root, threads, deleted]
}

// Rejections: Errors with .code, named as TanStack's classes.
function codeOf(e: unknown): string | undefined {
  if (e instanceof SandboxCheckpointError) {
    const err: Error = e
    const code: `SANDBOX_SNAPSHOT_${string}` = e.code
    return err.name + code
  }
  if (e instanceof CkptstoreError) return e.code
  return undefined
}
void codeOf
const classes: Array<new () => Error & { code: string }> = [
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
const stale: 'SANDBOX_SNAPSHOT_STALE_HEAD' = new SandboxCheckpointConflictError().code as 'SANDBOX_SNAPSHOT_STALE_HEAD'
void stale

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
  // @ts-expect-error createCheckpointStore needs a url
  createCheckpointStore({ token: 'x' })
  void [h, g]
}
