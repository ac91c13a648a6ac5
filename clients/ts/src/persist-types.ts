// The @tanstack/ai-persistence and @tanstack/ai store shapes that
// createPersistence and createLockStore return, as the server reads and
// writes them (docs/http-api.md, the persistence routes; the Go
// persist/driver records). Each is the upstream type of the same name (or
// the one named in its doc comment), member for member, with the same
// optionality; test/contract-types.ts restates upstream's and checks both
// directions. Times are epoch milliseconds throughout. Members are
// function-typed properties, as upstream's are, so a parameter is compared
// contravariantly under strictFunctionTypes.
//
// Where upstream marks a store method optional (RunStore.listByThread and
// listReclaimable, InterruptStore.commitBatch) this client always has it,
// so the client's types declare it required: a caller never has to test
// for it.

/** Where a run is in its life: the last three are terminal, `interrupted` is a pause. */
export type RunStatus = 'running' | 'interrupted' | 'completed' | 'failed' | 'aborted'

/** The statuses after which a run appends nothing more. */
export type TerminalRunStatus = 'completed' | 'failed' | 'aborted'

/** A failure of a run: the provider's text and, when it gave one, a code to branch on. */
export interface RunError {
  message: string
  code?: string
}

/** Input tokens by kind, each present only when the provider counts it. */
export interface PromptTokensDetails {
  cachedTokens?: number
  cacheWriteTokens?: number
  audioTokens?: number
  videoTokens?: number
  imageTokens?: number
  textTokens?: number
  documentTokens?: number
}

/** Output tokens by kind, each present only when the provider counts it. */
export interface CompletionTokensDetails {
  reasoningTokens?: number
  audioTokens?: number
  videoTokens?: number
  imageTokens?: number
  textTokens?: number
  documentTokens?: number
}

/** What a gateway reports it paid upstream. */
export interface UsageCostBreakdown {
  upstreamCost?: number
  upstreamInputCost?: number
  upstreamOutputCost?: number
}

/** The unit of a billed quantity: a known one, or any provider's own name. */
export type BillingUnit =
  | 'tokens'
  | 'seconds'
  | 'characters'
  | 'images'
  | 'videos'
  | 'megapixels'
  | 'requests'
  | 'units'
  | (string & {})

/** A quantity billed in a unit other than tokens. */
export interface BilledUsage {
  quantity: number
  unit: BillingUnit
}

/** A provider's extra usage fields: any non-null JSON values by name. */
export type ProviderUsageDetails = Record<string, NonNullable<unknown>>

/**
 * The usage of one run (@tanstack/ai's TokenUsage). The store keeps it as
 * opaque JSON, so whatever a provider put here reads back the same.
 */
export interface TokenUsage<TProviderDetails = ProviderUsageDetails> {
  promptTokens: number
  completionTokens: number
  totalTokens: number
  promptTokensDetails?: PromptTokensDetails
  completionTokensDetails?: CompletionTokensDetails
  billed?: BilledUsage
  /** Upstream deprecates it in favour of billed; kept for the same shape. */
  durationSeconds?: number
  /** Upstream deprecates it in favour of billed; kept for the same shape. */
  unitsBilled?: number
  providerUsageDetails?: TProviderDetails
  cost?: number
  costDetails?: UsageCostBreakdown
}

/** One chat run of a thread (RunRecord); the last four fields are the durable-run fields of @tanstack/ai-sandbox. */
export interface RunRecord {
  runId: string
  threadId: string
  status: RunStatus
  startedAt: number
  finishedAt?: number
  error?: RunError
  usage?: TokenUsage
  /** The sandbox the run was bound to, kept for a later reclaimer. */
  sandboxKey?: string
  /** When the last viewer went away; absent while one is attached. */
  detachedSince?: number
  /** An explicit cancel was asked for; false is kept apart from absent. */
  cancelRequested?: boolean
  /** The fencing number a host bumps when it claims the run. */
  driverEpoch?: number
}

/** The fields of a run that update may set or clear (an explicit `undefined` clears). */
export type RunPatch = Partial<
  Pick<RunRecord, 'status' | 'finishedAt' | 'error' | 'usage' | 'sandboxKey' | 'detachedSince' | 'cancelRequested' | 'driverEpoch'>
>

/** The runs store (RunStore), with both of upstream's optional methods. */
export interface RunStoreClient {
  /** Creates the run (status `running` unless given), or returns the existing one untouched. */
  createOrResume: (input: Pick<RunRecord, 'runId' | 'threadId' | 'startedAt'> & { status?: RunStatus }) => Promise<RunRecord>
  /** Sets the named fields; a field named with `undefined` is removed; an unknown run is left alone. */
  update: (runId: string, patch: RunPatch) => Promise<void>
  /** The run, or null. */
  get: (runId: string) => Promise<RunRecord | null>
  /** The thread's runs by startedAt. */
  listByThread: (threadId: string) => Promise<Array<RunRecord>>
  /** Running runs detached at or before now − ttlMs, in no promised order. */
  listReclaimable: (opts: { now: number; ttlMs: number }) => Promise<Array<RunRecord>>
  /** The running run of the thread with the greatest startedAt, or null. */
  findActiveRun: (threadId: string) => Promise<RunRecord | null>
}

/** A generation run's status: the same five words as a chat run's. */
export type GenerationRunStatus = RunStatus

/** Which activity made an artifact. */
export type PersistedArtifactActivity = 'image' | 'audio' | 'tts' | 'video' | 'transcription'

/** Whether an artifact went into a run or came out of it. */
export type PersistedArtifactRole = 'input' | 'output'

/**
 * A durable reference to an artifact (@tanstack/ai's PersistedArtifactRef),
 * as a generation run lists them; its createdAt is an ISO-8601 string.
 */
export interface PersistedArtifactRef {
  role: PersistedArtifactRole
  artifactId: string
  threadId: string
  runId: string
  name: string
  mimeType: string
  size: number
  createdAt: string
  /** Where the bytes were fetched from (provenance only). */
  sourceUrl?: string
  /** An app URL that serves the stored bytes. */
  url?: string
  source: {
    activity: PersistedArtifactActivity
    path: string
    provider: string
    model: string
    mediaType?: 'image' | 'audio' | 'video' | 'document' | 'json'
    jobId?: string
    expiresAt?: string
  }
}

/** One generation call (GenerationRunRecord), filed under the slot threadId. */
export interface GenerationRunRecord {
  runId: string
  threadId: string
  /** image, audio, tts, video or transcription. */
  activity: string
  provider: string
  model: string
  status: GenerationRunStatus
  startedAt: number
  finishedAt?: number
  error?: { message: string; code?: string }
  /** What the run produced, as metadata (never the bytes). */
  result?: unknown
  artifacts?: Array<PersistedArtifactRef>
  usage?: TokenUsage
}

/** The generation runs store (GenerationRunStore). */
export interface GenerationRunStoreClient {
  /** Creates the run, or returns the existing one untouched. */
  createOrResume: (
    input: Pick<GenerationRunRecord, 'runId' | 'threadId' | 'activity' | 'provider' | 'model' | 'startedAt'> & {
      status?: GenerationRunStatus
    },
  ) => Promise<GenerationRunRecord>
  /** Sets the named fields; `undefined` removes one; an unknown run is left alone. */
  update: (
    runId: string,
    patch: Partial<Pick<GenerationRunRecord, 'status' | 'finishedAt' | 'error' | 'result' | 'artifacts' | 'usage'>>,
  ) => Promise<void>
  /** The run, or null. */
  get: (runId: string) => Promise<GenerationRunRecord | null>
  /** The thread's latest run, or null. */
  findLatestForThread: (threadId: string) => Promise<GenerationRunRecord | null>
}

/** Where an interrupt is: every one starts pending. */
export type InterruptStatus = 'pending' | 'resolved' | 'cancelled'

/** A human-in-the-loop interrupt (InterruptRecord). */
export interface InterruptRecord {
  interruptId: string
  runId: string
  threadId: string
  status: InterruptStatus
  requestedAt: number
  /** When it was resolved or cancelled; absent while pending. */
  resolvedAt?: number
  payload: Record<string, unknown>
  /** Any JSON value; absent when none was given. */
  response?: unknown
}

/** One terminal write of a commitBatch (InterruptCommitEntry). */
export type InterruptCommitEntry =
  | { interruptId: string; status: 'resolved'; response?: unknown }
  | { interruptId: string; status: 'cancelled' }

/** The interrupts store (InterruptStore), with commitBatch. */
export interface InterruptStoreClient {
  /** Adds a pending interrupt; an id that exists is left as it is. */
  create: (record: Omit<InterruptRecord, 'status' | 'resolvedAt'>) => Promise<void>
  /** Resolves it (with the response, when one is passed); an unknown id is no error. */
  resolve: (interruptId: string, response?: unknown) => Promise<void>
  /** Cancels it; an unknown id is no error. */
  cancel: (interruptId: string) => Promise<void>
  /** Applies every entry or none: a repeated, unknown or non-pending id rejects the batch. */
  commitBatch: (entries: ReadonlyArray<InterruptCommitEntry>) => Promise<void>
  /** The interrupt, or null. */
  get: (interruptId: string) => Promise<InterruptRecord | null>
  /** The thread's interrupts by requestedAt. */
  list: (threadId: string) => Promise<Array<InterruptRecord>>
  /** The thread's pending interrupts by requestedAt. */
  listPending: (threadId: string) => Promise<Array<InterruptRecord>>
  /** The run's interrupts by requestedAt. */
  listByRun: (runId: string) => Promise<Array<InterruptRecord>>
  /** The run's pending interrupts by requestedAt. */
  listPendingByRun: (runId: string) => Promise<Array<InterruptRecord>>
}

/** The app's key/value store (MetadataStore): (namespace, key) are two separate parts. */
export interface MetadataStoreClient {
  /** The value, or null when absent (a stored null reads as absent). */
  get: (namespace: string, key: string) => Promise<unknown | null>
  /** Stores value (any JSON value) under (namespace, key). */
  set: (namespace: string, key: string, value: unknown) => Promise<void>
  /** Removes it; absent is no error. */
  delete: (namespace: string, key: string) => Promise<void>
}

/** The metadata of one stored artifact (ArtifactRecord); its bytes are a blob. */
export interface ArtifactRecord {
  artifactId: string
  runId: string
  threadId: string
  /** The blob key of the bytes; absent on records that predate it. */
  blobKey?: string
  name: string
  mimeType: string
  size: number
  sourceUrl?: string
  createdAt: number
}

/** The artifacts store (ArtifactStore). */
export interface ArtifactStoreClient {
  /** Inserts or replaces the record. */
  save: (record: ArtifactRecord) => Promise<void>
  /** The record, or null. */
  get: (artifactId: string) => Promise<ArtifactRecord | null>
  /** The run's records by createdAt, then by the UTF-8 bytes of artifactId. */
  list: (runId: string) => Promise<Array<ArtifactRecord>>
  /** The thread's records in the same order. */
  listForThread: (threadId: string) => Promise<Array<ArtifactRecord>>
  /** Removes one; absent is no error. */
  delete: (artifactId: string) => Promise<void>
  /** Removes every record of the run. */
  deleteForRun: (runId: string) => Promise<void>
}

/** What put takes as bytes: a stream, a buffer or view, a string (as UTF-8) or a Blob. */
export type BlobBody = ReadableStream<Uint8Array> | ArrayBuffer | ArrayBufferView | string | Blob

/** A stored blob's metadata (BlobRecord). This server always sends size, etag, createdAt and updatedAt. */
export interface BlobRecord {
  key: string
  size?: number
  /** Changes whenever the bytes do. */
  etag?: string
  contentType?: string
  customMetadata?: Record<string, string>
  createdAt?: number
  updatedAt?: number
}

/** A slice to read: offset inside the object; length absent = to the end, and clamped to it. */
export interface BlobRange {
  offset: number
  length?: number
}

/** Options of get. */
export interface BlobGetOptions {
  /** Read only this slice; size still reports the whole object and range the slice served. */
  range?: BlobRange
}

/** A blob as get returns it: its metadata and its bytes (BlobObject). */
export interface BlobObject extends BlobRecord {
  /** The bytes (of the slice, when a range was asked). */
  arrayBuffer: () => Promise<ArrayBuffer>
  /** The bytes as UTF-8 text. */
  text: () => Promise<string>
  /** The bytes as a stream; reading it, arrayBuffer() or text() consumes them once. */
  body?: ReadableStream<Uint8Array>
  /** The slice served, when a range was asked: offset as asked, length as served. */
  range?: { offset: number; length: number }
}

/** One page of list (BlobListPage). */
export interface BlobListPage {
  objects: Array<BlobRecord>
  /** Pass it back to read on; present only when truncated. */
  cursor?: string
  truncated?: boolean
}

/** Options of put. */
export interface BlobPutOptions {
  contentType?: string
  customMetadata?: Record<string, string>
  /** The exact byte count of the body when known; advisory. */
  expectedLength?: number
}

/** Options of list. */
export interface BlobListOptions {
  /** A literal, case-sensitive prefix. */
  prefix?: string
  /** Keys strictly after this one. */
  cursor?: string
  limit?: number
}

/** The blob store (BlobStore). */
export interface BlobStoreClient {
  /** Inserts or replaces the bytes at key; the body is streamed to the server. */
  put: (key: string, body: BlobBody, options?: BlobPutOptions) => Promise<BlobRecord>
  /** The object (its body streams from the server), or null; a range starting outside it rejects. */
  get: (key: string, options?: BlobGetOptions) => Promise<BlobObject | null>
  /** The metadata, or null. */
  head: (key: string) => Promise<BlobRecord | null>
  /** Removes it; absent is no error. */
  delete: (key: string) => Promise<void>
  /** Keys in ascending byte order, paged. */
  list: (options?: BlobListOptions) => Promise<BlobListPage>
}

/** A mutex per key (@tanstack/ai's LockStore), here over the server's leases. */
export interface LockStoreClient {
  /**
   * Runs fn while holding key's lock and settles as fn does. The signal
   * aborts when the lock can no longer be counted on; fn must then stop
   * changing anything outside.
   */
  withLock: <T>(key: string, fn: (signal: AbortSignal) => Promise<T>) => Promise<T>
}
