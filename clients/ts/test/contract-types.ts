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
// The persistence half restates, the same way, @tanstack/ai-persistence's
// store interfaces (packages/ai-persistence/src/types.ts), @tanstack/ai's
// RunStore and RunRecord (packages/ai/src/activities/chat/middleware/
// run-store.ts), LockStore (…/middleware/locks.ts), TokenUsage
// (packages/ai-event-client) and PersistedArtifactRef (packages/ai/src/
// types.ts), and checks createPersistence's stores and createLockStore
// against them. Upstream's optional methods (runs.listByThread,
// runs.listReclaimable, interrupts.commitBatch) are required on the client,
// so TanStack's direction compares with Required<…> of the store.
//
// The run's event log restates @tanstack/ai's StreamDurability and
// UpsertableStreamDurability (packages/ai/src/stream-durability.ts, as
// @tanstack/ai 0.58 declares them) and checks createStreamDurability's
// adapter against them, both ways.
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
  createLockStore,
  createPersistence,
  type ArtifactRecord as CArtifactRecord,
  type ArtifactStoreClient,
  type BlobBody as CBlobBody,
  type BlobGetOptions as CBlobGetOptions,
  type BlobListOptions as CBlobListOptions,
  type BlobListPage as CBlobListPage,
  type BlobObject as CBlobObject,
  type BlobPutOptions as CBlobPutOptions,
  type BlobRange as CBlobRange,
  type BlobRecord as CBlobRecord,
  type BlobStoreClient,
  type GenerationRunRecord as CGenerationRunRecord,
  type GenerationRunStoreClient,
  type InterruptCommitEntry as CInterruptCommitEntry,
  type InterruptRecord as CInterruptRecord,
  type InterruptStatus as CInterruptStatus,
  type InterruptStoreClient,
  type LockStoreClient,
  type MetadataStoreClient,
  type PersistedArtifactRef as CPersistedArtifactRef,
  type PersistenceClient,
  type RunError as CRunError,
  type RunRecord as CRunRecord,
  type RunStatus as CRunStatus,
  type RunStoreClient,
  type TerminalRunStatus as CTerminalRunStatus,
  type TokenUsage as CTokenUsage,
  createStreamDurability,
  type StreamDurabilityClient,
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
  /** A Date, as upstream declares it: the client's reads give one back (README, "Dates"). */
  createdAt?: Date
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


// ---- @tanstack/ai-persistence and @tanstack/ai, as upstream declares them --

type UsageUnit = 'tokens' | 'seconds' | 'characters' | 'images' | 'videos' | 'megapixels' | 'requests' | 'units' | (string & {})
interface UsageTotals<D = Record<string, NonNullable<unknown>>> {
  promptTokens: number
  completionTokens: number
  totalTokens: number
  promptTokensDetails?: {
    cachedTokens?: number
    cacheWriteTokens?: number
    audioTokens?: number
    videoTokens?: number
    imageTokens?: number
    textTokens?: number
    documentTokens?: number
  }
  completionTokensDetails?: {
    reasoningTokens?: number
    audioTokens?: number
    videoTokens?: number
    imageTokens?: number
    textTokens?: number
    documentTokens?: number
  }
  billed?: { quantity: number; unit: UsageUnit }
  durationSeconds?: number
  unitsBilled?: number
  providerUsageDetails?: D
  cost?: number
  costDetails?: { upstreamCost?: number; upstreamInputCost?: number; upstreamOutputCost?: number }
}

type UpRunStatus = 'running' | 'interrupted' | 'completed' | 'failed' | 'aborted'
type UpTerminalRunStatus = 'completed' | 'failed' | 'aborted'
interface UpRunError {
  message: string
  code?: string
}
interface UpRunRecord {
  runId: string
  threadId: string
  status: UpRunStatus
  startedAt: number
  finishedAt?: number
  error?: UpRunError
  usage?: UsageTotals
  sandboxKey?: string
  detachedSince?: number
  cancelRequested?: boolean
  driverEpoch?: number
}
/** Upstream's two list methods are optional. */
interface UpRunStore {
  createOrResume: (input: Pick<UpRunRecord, 'runId' | 'threadId' | 'startedAt'> & { status?: UpRunStatus }) => Promise<UpRunRecord>
  update: (
    runId: string,
    patch: Partial<Pick<UpRunRecord, 'status' | 'finishedAt' | 'error' | 'usage' | 'sandboxKey' | 'detachedSince' | 'cancelRequested' | 'driverEpoch'>>,
  ) => Promise<void>
  get: (runId: string) => Promise<UpRunRecord | null>
  listByThread?: (threadId: string) => Promise<Array<UpRunRecord>>
  listReclaimable?: (opts: { now: number; ttlMs: number }) => Promise<Array<UpRunRecord>>
  findActiveRun: (threadId: string) => Promise<UpRunRecord | null>
}

interface UpArtifactRef {
  role: 'input' | 'output'
  artifactId: string
  threadId: string
  runId: string
  name: string
  mimeType: string
  size: number
  createdAt: string
  sourceUrl?: string
  url?: string
  source: {
    activity: 'image' | 'audio' | 'tts' | 'video' | 'transcription'
    path: string
    provider: string
    model: string
    mediaType?: 'image' | 'audio' | 'video' | 'document' | 'json'
    jobId?: string
    expiresAt?: string
  }
}
interface UpGenerationRunRecord {
  runId: string
  threadId: string
  activity: string
  provider: string
  model: string
  status: UpRunStatus
  startedAt: number
  finishedAt?: number
  error?: { message: string; code?: string }
  result?: unknown
  artifacts?: Array<UpArtifactRef>
  usage?: UsageTotals
}
interface UpGenerationRunStore {
  createOrResume: (
    input: Pick<UpGenerationRunRecord, 'runId' | 'threadId' | 'activity' | 'provider' | 'model' | 'startedAt'> & { status?: UpRunStatus },
  ) => Promise<UpGenerationRunRecord>
  update: (
    runId: string,
    patch: Partial<Pick<UpGenerationRunRecord, 'status' | 'finishedAt' | 'error' | 'result' | 'artifacts' | 'usage'>>,
  ) => Promise<void>
  get: (runId: string) => Promise<UpGenerationRunRecord | null>
  findLatestForThread: (threadId: string) => Promise<UpGenerationRunRecord | null>
}

type UpInterruptStatus = 'pending' | 'resolved' | 'cancelled'
interface UpInterruptRecord {
  interruptId: string
  runId: string
  threadId: string
  status: UpInterruptStatus
  requestedAt: number
  resolvedAt?: number
  payload: Record<string, unknown>
  response?: unknown
}
type UpInterruptCommitEntry =
  | { interruptId: string; status: 'resolved'; response?: unknown }
  | { interruptId: string; status: 'cancelled' }
/** commitBatch is optional upstream. */
interface UpInterruptStore {
  create: (record: Omit<UpInterruptRecord, 'status' | 'resolvedAt'>) => Promise<void>
  resolve: (interruptId: string, response?: unknown) => Promise<void>
  cancel: (interruptId: string) => Promise<void>
  commitBatch?: (entries: ReadonlyArray<UpInterruptCommitEntry>) => Promise<void>
  get: (interruptId: string) => Promise<UpInterruptRecord | null>
  list: (threadId: string) => Promise<Array<UpInterruptRecord>>
  listPending: (threadId: string) => Promise<Array<UpInterruptRecord>>
  listByRun: (runId: string) => Promise<Array<UpInterruptRecord>>
  listPendingByRun: (runId: string) => Promise<Array<UpInterruptRecord>>
}

interface UpMetadataStore {
  get: (namespace: string, key: string) => Promise<unknown | null>
  set: (namespace: string, key: string, value: unknown) => Promise<void>
  delete: (namespace: string, key: string) => Promise<void>
}

interface UpArtifactRecord {
  artifactId: string
  runId: string
  threadId: string
  blobKey?: string
  name: string
  mimeType: string
  size: number
  sourceUrl?: string
  createdAt: number
}
interface UpArtifactStore {
  save: (record: UpArtifactRecord) => Promise<void>
  get: (artifactId: string) => Promise<UpArtifactRecord | null>
  list: (runId: string) => Promise<Array<UpArtifactRecord>>
  listForThread: (threadId: string) => Promise<Array<UpArtifactRecord>>
  delete: (artifactId: string) => Promise<void>
  deleteForRun: (runId: string) => Promise<void>
}

type UpBlobBody = ReadableStream<Uint8Array> | ArrayBuffer | ArrayBufferView | string | Blob
interface UpBlobRecord {
  key: string
  size?: number
  etag?: string
  contentType?: string
  customMetadata?: Record<string, string>
  createdAt?: number
  updatedAt?: number
}
interface UpBlobRange {
  offset: number
  length?: number
}
interface UpBlobGetOptions {
  range?: UpBlobRange
}
interface UpBlobObject extends UpBlobRecord {
  arrayBuffer: () => Promise<ArrayBuffer>
  text: () => Promise<string>
  body?: ReadableStream<Uint8Array>
  range?: { offset: number; length: number }
}
interface UpBlobListPage {
  objects: Array<UpBlobRecord>
  cursor?: string
  truncated?: boolean
}
interface UpBlobPutOptions {
  contentType?: string
  customMetadata?: Record<string, string>
  expectedLength?: number
}
interface UpBlobListOptions {
  prefix?: string
  cursor?: string
  limit?: number
}
interface UpBlobStore {
  put: (key: string, body: UpBlobBody, options?: UpBlobPutOptions) => Promise<UpBlobRecord>
  get: (key: string, options?: UpBlobGetOptions) => Promise<UpBlobObject | null>
  head: (key: string) => Promise<UpBlobRecord | null>
  delete: (key: string) => Promise<void>
  list: (options?: UpBlobListOptions) => Promise<UpBlobListPage>
}

/** The sparse bag of AIPersistence and the full aggregate createPersistence must fit. */
interface UpPersistenceStores {
  messages?: MessageStore
  runs?: UpRunStore
  interrupts?: UpInterruptStore
  metadata?: UpMetadataStore
  generationRuns?: UpGenerationRunStore
  artifacts?: UpArtifactStore
  blobs?: UpBlobStore
}
interface UpAIPersistence<S extends UpPersistenceStores = UpPersistenceStores> {
  stores: S
}
/** memoryPersistence()'s chat shape: the four state stores required. */
interface UpChatPersistenceStores {
  messages: MessageStore
  runs: UpRunStore
  interrupts: UpInterruptStore
  metadata: UpMetadataStore
}

interface UpLockStore {
  withLock: <T>(key: string, fn: (signal: AbortSignal) => Promise<T>) => Promise<T>
}

// ---- @tanstack/ai's StreamDurability, as 0.58 declares it -----------------

/**
 * @tanstack/ai's StreamChunk (the AG-UI events), abridged to two of them:
 * the log keeps chunks opaque, so the client is generic in them.
 */
type StreamChunk =
  | { type: 'TEXT_MESSAGE_CONTENT'; messageId: string; delta: string; content?: string; timestamp: number }
  | { type: 'RUN_FINISHED'; runId: string; finishReason?: string | null; timestamp: number }
interface UpStreamDurability<TOffset extends string = string> {
  resumeFrom: () => TOffset | null
  append: (chunks: Array<StreamChunk>) => Promise<Array<TOffset>>
  read: (offset: TOffset, signal?: AbortSignal) => AsyncIterable<{ offset: TOffset; chunk: StreamChunk }>
  close: () => Promise<void>
  snapshot: () => Promise<Array<{ offset: TOffset; chunk: StreamChunk }>>
}
interface UpUpsertableStreamDurability<TOffset extends string = string> extends UpStreamDurability<TOffset> {
  upsert: (entries: Array<{ chunk: StreamChunk; offset: TOffset }>) => Promise<Array<TOffset>>
}
/** How core consumes an adapter: replay from an offset until the log closes. */
declare function replayRunStream<TOffset extends string>(durability: UpStreamDurability<TOffset>, offset?: TOffset, signal?: AbortSignal): AsyncGenerator<StreamChunk>

declare function runPersistenceConformance(
  name: string,
  makePersistence: () => Promise<UpAIPersistence> | UpAIPersistence,
  options?: { skip?: Array<keyof UpPersistenceStores>; skipMethods?: Array<'runs.listByThread' | 'runs.listReclaimable'> },
): void
declare function runDurableRunFieldsConformance(name: string, makeStore: () => UpRunStore | Promise<UpRunStore>): void

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


// The persistence records: the same keys, mutually assignable.
check<Mutual<CRunStatus, UpRunStatus>>()
check<Mutual<CTerminalRunStatus, UpTerminalRunStatus>>()
check<Same<CRunError, UpRunError>>()
check<Same<CTokenUsage, UsageTotals>>()
check<Same<CRunRecord, UpRunRecord>>()
check<Same<CPersistedArtifactRef, UpArtifactRef>>()
check<Same<CGenerationRunRecord, UpGenerationRunRecord>>()
check<Mutual<CInterruptStatus, UpInterruptStatus>>()
check<Same<CInterruptRecord, UpInterruptRecord>>()
check<Mutual<CInterruptCommitEntry, UpInterruptCommitEntry>>()
check<Same<CArtifactRecord, UpArtifactRecord>>()
check<Mutual<CBlobBody, UpBlobBody>>()
check<Same<CBlobRecord, UpBlobRecord>>()
check<Same<CBlobRange, UpBlobRange>>()
check<Same<CBlobGetOptions, UpBlobGetOptions>>()
check<Same<CBlobObject, UpBlobObject>>()
check<Same<CBlobListPage, UpBlobListPage>>()
check<Same<CBlobPutOptions, UpBlobPutOptions>>()
check<Same<CBlobListOptions, UpBlobListOptions>>()

// The persistence stores, the client's way: each fits TanStack's store.
check<Extends<RunStoreClient, UpRunStore>>()
check<Extends<GenerationRunStoreClient, UpGenerationRunStore>>()
check<Extends<InterruptStoreClient, UpInterruptStore>>()
check<Extends<MetadataStoreClient, UpMetadataStore>>()
check<Extends<ArtifactStoreClient, UpArtifactStore>>()
check<Extends<BlobStoreClient, UpBlobStore>>()
check<Extends<LockStoreClient, UpLockStore>>()
type ModelPersistence = PersistenceClient<ModelMessage>
check<Extends<ModelPersistence, UpAIPersistence>>()
check<Extends<ModelPersistence, UpAIPersistence<UpChatPersistenceStores>>>()
check<Extends<ModelPersistence['stores'], Required<UpPersistenceStores>>>()
// And TanStack's way: the client's stores have exactly upstream's members
// (its optional ones made required), each mutually assignable.
check<Same<RunStoreClient, Required<UpRunStore>>>()
check<Same<GenerationRunStoreClient, UpGenerationRunStore>>()
check<Same<InterruptStoreClient, Required<UpInterruptStore>>>()
check<Same<MetadataStoreClient, UpMetadataStore>>()
check<Same<ArtifactStoreClient, UpArtifactStore>>()
check<Same<BlobStoreClient, UpBlobStore>>()
check<Same<LockStoreClient, UpLockStore>>()
check<Same<Pick<ModelPersistence['stores']['messages'], keyof MessageStore>, MessageStore>>()
check<Mutual<keyof ModelPersistence['stores'], keyof UpPersistenceStores>>()
// The run's event log, the client's way: it is an UpsertableStreamDurability
// (so a StreamDurability); and TanStack's way: its members of upstream's
// names are mutually assignable with upstream's, so none takes or returns
// more or less.
type ChunkLog = StreamDurabilityClient<StreamChunk>
check<Extends<ChunkLog, UpUpsertableStreamDurability>>()
check<Extends<ChunkLog, UpStreamDurability>>()
check<Same<Pick<ChunkLog, keyof UpUpsertableStreamDurability>, UpUpsertableStreamDurability>>()
check<Same<Pick<ChunkLog, keyof UpStreamDurability>, UpStreamDurability>>()
// Its options are the client's.
check<Extends<ClientOptions, Parameters<typeof createStreamDurability>[1]>>()
// The lock store's options are the client's.
check<Extends<SandboxCheckpointStoreOptions, Partial<Parameters<typeof createLockStore>[0]>>>()

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


// The persistence kits and a chat harness, with createPersistence in place.
runPersistenceConformance('ckptstore', () => createPersistence({ url }))
runPersistenceConformance('ckptstore', async () => createPersistence({ url, token: 'secret' }), { skip: [], skipMethods: [] })
runDurableRunFieldsConformance('ckptstore', () => createPersistence({ url }).stores.runs)
const chat: UpAIPersistence<UpChatPersistenceStores> = createPersistence({ url })
const sparse: UpAIPersistence = createPersistence<ModelMessage>({ url, namespace: 'n' })
const locks: UpLockStore = createLockStore({ url, now: () => 1, leaseDurationMs: 100, renewAfterMs: 25 })
void [chat, sparse, locks]
export async function turn(p: PersistenceClient<ModelMessage>, l: UpLockStore, threadId: string) {
  return l.withLock(`thread:${threadId}`, async (signal) => {
    const run: UpRunRecord = await p.stores.runs.createOrResume({ runId: 'r', threadId, startedAt: 1 })
    await p.stores.messages.saveThread(threadId, [{ role: 'user', content: 'hi' }])
    if (signal.aborted) throw signal.reason
    // (An explicit `sandboxKey: undefined`, which clears, is upstream's type
    // too, so exactOptionalPropertyTypes refuses it here as it does there.)
    await p.stores.runs.update(run.runId, { status: 'completed', finishedAt: 2 })
    const active: UpRunRecord | null = await p.stores.runs.findActiveRun(threadId)
    const listed: UpRunRecord[] = await p.stores.runs.listByThread(threadId)
    await p.stores.interrupts.commitBatch([{ interruptId: 'i', status: 'resolved', response: { ok: true } }, { interruptId: 'j', status: 'cancelled' }])
    const blob: UpBlobRecord = await p.stores.blobs.put('k', new Uint8Array([1]), { contentType: 'x/y' })
    const got: UpBlobObject | null = await p.stores.blobs.get('k', { range: { offset: 0 } })
    const bytes: ArrayBuffer | undefined = await got?.arrayBuffer()
    return { active, listed, blob, bytes }
  })
}

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

// The event log where memoryStream(…) would go: from a request, or from a
// run id; the chunk type inferred from the place, or named.
const fromRequest: UpUpsertableStreamDurability = createStreamDurability(new Request('http://app.test/api/chat?runId=r'), { url })
const fromRun: UpStreamDurability = createStreamDurability({ runId: 'r', offset: null }, { url, token: 'secret', producerEpoch: 3, producerFence: 'stream' })
void [fromRequest, fromRun]
export async function tail(signal: AbortSignal): Promise<string[]> {
  const log = createStreamDurability<StreamChunk>({ runId: 'r' }, { url, namespace: 'n' })
  const offsets: string[] = await log.append([{ type: 'RUN_FINISHED', runId: 'r', timestamp: 1 }])
  await log.upsert([{ chunk: { type: 'RUN_FINISHED', runId: 'r', timestamp: 1 }, offset: offsets[0]! }])
  const seen: string[] = []
  for await (const { offset, chunk } of log.read(log.resumeFrom() ?? '-1', signal)) seen.push(`${offset}:${chunk.type}`)
  for await (const chunk of replayRunStream(log, '-1', signal)) seen.push(chunk.type)
  const prefix: Array<{ offset: string; chunk: StreamChunk }> = await log.snapshot()
  await log.close()
  return [...seen, ...prefix.map((e) => e.offset)]
}
export async function refusedLog(log: StreamDurabilityClient<StreamChunk>) {
  // @ts-expect-error upsert pairs each chunk with its offset
  await log.upsert([{ type: 'RUN_FINISHED', runId: 'r', timestamp: 1 }])
  // @ts-expect-error a chunk that is no StreamChunk
  await log.append([{ nope: 1 }])
  // @ts-expect-error resumeFrom may answer null
  const o: string = log.resumeFrom()
  // @ts-expect-error producerFence is 'stream' or absent
  createStreamDurability({ runId: 'r' }, { url, producerFence: 'id' })
  void o
}

// And what must not type-check in the persistence half.
export async function refusedPersistence(p: PersistenceClient<ModelMessage>) {
  // @ts-expect-error a run needs its threadId
  await p.stores.runs.createOrResume({ runId: 'r', startedAt: 1 })
  // @ts-expect-error runId is not a patchable field
  await p.stores.runs.update('r', { runId: 'other' })
  // @ts-expect-error a status outside the five
  await p.stores.runs.update('r', { status: 'done' })
  // @ts-expect-error create takes no status: an interrupt is born pending
  await p.stores.interrupts.create({ interruptId: 'i', runId: 'r', threadId: 't', requestedAt: 1, payload: {}, status: 'resolved' })
  // @ts-expect-error a cancelled entry carries no response
  await p.stores.interrupts.commitBatch([{ interruptId: 'i', status: 'cancelled', response: 1 }])
  // @ts-expect-error a number is no blob body
  await p.stores.blobs.put('k', 42)
  // @ts-expect-error get may answer null
  const o: UpBlobObject = await p.stores.blobs.get('k')
  // @ts-expect-error there is no locks store among the stores
  void p.stores.locks
  void o
}
