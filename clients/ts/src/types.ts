// The @tanstack/ai-sandbox shapes, as the server reads and writes them
// (docs/http-api.md; the Go root package's json.go). Each is TanStack's type
// of the same role, field for field and with the same optionality (its
// upstream name is in the doc comment; test/contract-types.ts holds both
// side by side and checks them in both directions). `M` is the type of one
// conversation message: opaque to the store, kept byte for byte, so a
// harness picks it (TanStack's ModelMessage) and TypeScript infers it from
// where the store is put.

/** A file of a checkpoint (SandboxSnapshotFileEntry): its bytes live in the bucket under blobKey. */
export interface CheckpointFileEntry {
  path: string
  kind: 'file'
  /** sandbox-files/sha256/<64 lowercase hex> */
  blobKey: string
  size: number
}

/** A directory of a checkpoint (SandboxSnapshotDirectoryEntry); it has no blob. */
export interface CheckpointDirEntry {
  path: string
  kind: 'dir'
}

/** One entry of a checkpoint's files (SandboxSnapshotEntry). */
export type CheckpointEntry = CheckpointFileEntry | CheckpointDirEntry

/** An artifact a run produced (SandboxSnapshotArtifact); its bytes live under blobKey. */
export interface CheckpointArtifact {
  artifactId: string
  name: string
  mimeType: string
  size: number
  /** sandbox-artifacts/sha256/<64 lowercase hex> */
  blobKey: string
  createdAt: number
}

/** Why a checkpoint was taken. */
export type CheckpointReason = 'automatic' | 'named' | 'fork-root'

/**
 * A checkpoint (SandboxCheckpoint), as append takes it and the reads return
 * it. Its arrays are read-only, as TanStack's are, so a checkpoint built
 * from `as const` data or another store's read goes to append unchanged.
 */
export interface Checkpoint<M = unknown> {
  id: string
  threadId: string
  /** null for the first checkpoint of a thread (and a fork root). */
  parentCheckpointId: string | null
  /** Epoch milliseconds; finite. */
  createdAt: number
  reason: CheckpointReason
  label?: string
  sourceRunId?: string
  files: ReadonlyArray<CheckpointEntry>
  conversation: ReadonlyArray<M>
  artifacts: ReadonlyArray<CheckpointArtifact>
}

/** What every write carries: the thread's writer lease (SandboxCheckpointWriter). */
export interface CheckpointWriter {
  threadId: string
  ownerToken: string
  fence: number
}

/**
 * The lease acquireWriter returns (SandboxCheckpointWriterLease). It is the writer itself: pass it as
 * `writer` to append, deleteHead, deleteCheckpoints, forkFromCheckpoint and
 * deleteThread.
 */
export interface CheckpointWriterLease extends CheckpointWriter {
  /** Epoch milliseconds; renew() moves it. */
  expiresAt: number
  /** Renew after this many milliseconds; shorter than the lease. */
  renewAfterMs: number
  /** Moves expiresAt to now + the lease duration; SandboxCheckpointWriterLostError when the lease expired or was replaced. */
  renew: () => Promise<{ expiresAt: number }>
  /** Ends the lease; does nothing when a newer lease replaced it, and never throws. */
  release: () => Promise<void>
}

/**
 * One blob key and the number of checkpoints that use it (above 0): an
 * element of TanStack's `Array<{ key: string; references: number }>`.
 */
export interface BlobReference {
  key: string
  references: number
}

/** The input of forkFromCheckpoint (SandboxCheckpointForkInput). */
export interface ForkFromCheckpointInput {
  sourceThreadId: string
  sourceCheckpointId: string
  destinationThreadId: string
  destinationCheckpointId: string
  createdAt: number
  /** The destination thread's writer lease. */
  writer: CheckpointWriter
}

/** One page of listPage. */
export interface CheckpointPage<M = unknown> {
  checkpoints: Checkpoint<M>[]
  /** The cursor of the next page (pass it as `after`), null at the end. */
  next: string | null
}

/** Options of listPage. */
export interface ListPageOptions {
  /** A cursor from a previous page's `next`; absent or null = from the start. */
  after?: string | null | undefined
  /** 1…1000; absent = 100. */
  limit?: number | undefined
  /** Newest first. */
  reverse?: boolean | undefined
}

/** One page of threads. */
export interface ThreadPage {
  threads: string[]
  next: string | null
}

/** Options of threads. */
export interface ThreadsOptions {
  /** A cursor from a previous page's `next`. */
  after?: string | null | undefined
  /** 1…1000; absent = 100. */
  limit?: number | undefined
}

/** The record of one sandbox instance (SandboxInstanceRecord). */
export interface InstanceRecord {
  key: string
  provider: string
  providerSandboxId: string
  latestSnapshotId?: string
  threadId: string
  latestRunId?: string
  /** Epoch milliseconds. */
  updatedAt: number
}
