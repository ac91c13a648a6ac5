// The errors of the contract, named as @tanstack/ai-sandbox names them. A
// harness that tells rejections apart by `error.code` or by `error.name`
// (or by `instanceof` with the classes exported here) behaves the same with
// this client as with InMemorySandboxCheckpointStore.

/** The SANDBOX_SNAPSHOT_* codes of the contract, as they cross the wire. */
export const CheckpointErrorCode = {
  staleHead: 'SANDBOX_SNAPSHOT_STALE_HEAD',
  parentMismatch: 'SANDBOX_SNAPSHOT_PARENT_MISMATCH',
  duplicateId: 'SANDBOX_SNAPSHOT_DUPLICATE_ID',
  notHead: 'SANDBOX_SNAPSHOT_NOT_HEAD',
  writerConflict: 'SANDBOX_SNAPSHOT_WRITER_CONFLICT',
  writerLost: 'SANDBOX_SNAPSHOT_WRITER_LOST',
  invalidId: 'SANDBOX_SNAPSHOT_INVALID_ID',
  invalidEntry: 'SANDBOX_SNAPSHOT_INVALID_ENTRY',
  // TanStack's harness raises these two (a restore of a missing checkpoint;
  // a fork on a store without forkFromCheckpoint); no store method does, so
  // the server never sends them, but a harness's code union includes them.
  checkpointNotFound: 'SANDBOX_SNAPSHOT_CHECKPOINT_NOT_FOUND',
  atomicForkRequired: 'SANDBOX_SNAPSHOT_ATOMIC_FORK_REQUIRED',
  forkSourceNotFound: 'SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND',
  forkSourceThreadMismatch: 'SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH',
  forkDestinationNotEmpty: 'SANDBOX_SNAPSHOT_FORK_DESTINATION_NOT_EMPTY',
} as const

/** One of the SANDBOX_SNAPSHOT_* codes. */
export type CheckpointErrorCode =
  (typeof CheckpointErrorCode)[keyof typeof CheckpointErrorCode]

/** The same union under TanStack's name. */
export type SandboxCheckpointErrorCode = CheckpointErrorCode

/**
 * The base of every contract rejection: an Error with the wire `code` and
 * the HTTP `status` it came with. Its subclasses carry TanStack's class
 * names in `name`.
 */
export class SandboxCheckpointError extends Error {
  /** The SANDBOX_SNAPSHOT_* code. */
  readonly code: CheckpointErrorCode
  /** The HTTP status of the reply (400, 404 or 409). */
  readonly status: number | undefined

  constructor(code: CheckpointErrorCode, message: string, status?: number) {
    super(message)
    this.code = code
    this.status = status
    // Set explicitly, not from new.target.name: a bundler that renames
    // classes must not change what a harness sees.
    this.name = 'SandboxCheckpointError'
  }
}

/** The head is not expectedHeadId (code SANDBOX_SNAPSHOT_STALE_HEAD). */
export class SandboxCheckpointConflictError extends SandboxCheckpointError {
  constructor(message = 'the head is not expectedHeadId', status?: number) {
    super(CheckpointErrorCode.staleHead, message, status)
    this.name = 'SandboxCheckpointConflictError'
  }
}

/** parentCheckpointId is not expectedHeadId. */
export class SandboxCheckpointParentMismatchError extends SandboxCheckpointError {
  constructor(message = 'parentCheckpointId is not expectedHeadId', status?: number) {
    super(CheckpointErrorCode.parentMismatch, message, status)
    this.name = 'SandboxCheckpointParentMismatchError'
  }
}

/** The checkpoint id is already used in some thread. */
export class SandboxCheckpointDuplicateIdError extends SandboxCheckpointError {
  constructor(message = 'the checkpoint id is already used', status?: number) {
    super(CheckpointErrorCode.duplicateId, message, status)
    this.name = 'SandboxCheckpointDuplicateIdError'
  }
}

/** deleteHead named a checkpoint that is not the head. */
export class SandboxCheckpointNotHeadError extends SandboxCheckpointError {
  constructor(message = 'the checkpoint is not the head', status?: number) {
    super(CheckpointErrorCode.notHead, message, status)
    this.name = 'SandboxCheckpointNotHeadError'
  }
}

/** acquireWriter found an unexpired lease of the thread. */
export class SandboxCheckpointWriterConflictError extends SandboxCheckpointError {
  constructor(message = 'another writer holds the lease', status?: number) {
    super(CheckpointErrorCode.writerConflict, message, status)
    this.name = 'SandboxCheckpointWriterConflictError'
  }
}

/** The writer is not the thread's current, unexpired lease. */
export class SandboxCheckpointWriterLostError extends SandboxCheckpointError {
  constructor(message = 'the writer lease is lost', status?: number) {
    super(CheckpointErrorCode.writerLost, message, status)
    this.name = 'SandboxCheckpointWriterLostError'
  }
}

/** A thread or checkpoint id is empty, not a string, or not well-formed Unicode. */
export class SandboxCheckpointInvalidIdError extends SandboxCheckpointError {
  constructor(message = 'invalid id', status?: number) {
    super(CheckpointErrorCode.invalidId, message, status)
    this.name = 'SandboxCheckpointInvalidIdError'
  }
}

/** Files, artifacts, createdAt, keep or another field is invalid. */
export class SandboxCheckpointInvalidEntryError extends SandboxCheckpointError {
  constructor(message = 'invalid entry', status?: number) {
    super(CheckpointErrorCode.invalidEntry, message, status)
    this.name = 'SandboxCheckpointInvalidEntryError'
  }
}

/** forkFromCheckpoint: the source checkpoint does not exist. */
export class SandboxCheckpointForkSourceNotFoundError extends SandboxCheckpointError {
  constructor(message = 'the fork source checkpoint does not exist', status?: number) {
    super(CheckpointErrorCode.forkSourceNotFound, message, status)
    this.name = 'SandboxCheckpointForkSourceNotFoundError'
  }
}

/** forkFromCheckpoint: the source is in another thread, or source and destination are one thread. */
export class SandboxCheckpointForkSourceThreadMismatchError extends SandboxCheckpointError {
  constructor(message = 'the fork source is not in the source thread', status?: number) {
    super(CheckpointErrorCode.forkSourceThreadMismatch, message, status)
    this.name = 'SandboxCheckpointForkSourceThreadMismatchError'
  }
}

/** forkFromCheckpoint: the destination thread is not empty, or its checkpoint id is used. */
export class SandboxCheckpointForkDestinationNotEmptyError extends SandboxCheckpointError {
  constructor(message = 'the fork destination is not empty', status?: number) {
    super(CheckpointErrorCode.forkDestinationNotEmpty, message, status)
    this.name = 'SandboxCheckpointForkDestinationNotEmptyError'
  }
}

/**
 * A failure outside the contract: a refused request (BAD_REQUEST,
 * UNAUTHORIZED, PAYLOAD_TOO_LARGE, NOT_FOUND, UNSUPPORTED), a server error
 * (INTERNAL, UNAVAILABLE after the retries), the network (NETWORK_ERROR,
 * TIMEOUT), a TLS certificate that did not verify (CERTIFICATE_ERROR, never
 * retried; `cause` is Node's error), or a reply that is not the protocol's
 * (BAD_RESPONSE).
 */
export class CkptstoreError extends Error {
  /** The server's code, or NETWORK_ERROR, TIMEOUT, CERTIFICATE_ERROR, BAD_RESPONSE. */
  readonly code: string
  /** The HTTP status, when a reply came. */
  readonly status: number | undefined

  constructor(code: string, message: string, status?: number, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.status = status
    this.name = 'CkptstoreError'
  }
}

const byCode: Partial<Record<
  CheckpointErrorCode,
  new (message?: string, status?: number) => SandboxCheckpointError
>> = {
  [CheckpointErrorCode.staleHead]: SandboxCheckpointConflictError,
  [CheckpointErrorCode.parentMismatch]: SandboxCheckpointParentMismatchError,
  [CheckpointErrorCode.duplicateId]: SandboxCheckpointDuplicateIdError,
  [CheckpointErrorCode.notHead]: SandboxCheckpointNotHeadError,
  [CheckpointErrorCode.writerConflict]: SandboxCheckpointWriterConflictError,
  [CheckpointErrorCode.writerLost]: SandboxCheckpointWriterLostError,
  [CheckpointErrorCode.invalidId]: SandboxCheckpointInvalidIdError,
  [CheckpointErrorCode.invalidEntry]: SandboxCheckpointInvalidEntryError,
  [CheckpointErrorCode.forkSourceNotFound]: SandboxCheckpointForkSourceNotFoundError,
  [CheckpointErrorCode.forkSourceThreadMismatch]: SandboxCheckpointForkSourceThreadMismatchError,
  [CheckpointErrorCode.forkDestinationNotEmpty]: SandboxCheckpointForkDestinationNotEmptyError,
}

/**
 * errorFromWire turns an error reply into the Error a caller sees: the
 * contract class of a SANDBOX_SNAPSHOT_* code, else a CkptstoreError.
 */
export function errorFromWire(code: string, message: string, status: number): Error {
  const ctor = Object.hasOwn(byCode, code) ? byCode[code as CheckpointErrorCode] : undefined
  if (ctor) return new ctor(message, status)
  if (Object.values(CheckpointErrorCode).includes(code as CheckpointErrorCode)) {
    return new SandboxCheckpointError(code as CheckpointErrorCode, message, status)
  }
  return new CkptstoreError(code, message, status)
}
