// createLockStore: @tanstack/ai's LockStore over the server's lock leases
// (docs/http-api.md, /v1/locks/*), with the client protocol the Go
// persist.Locks runs. Invariants:
// - one random token per withLock: a release or renew with it never
//   touches another holder's lease (the server checks the token);
// - waiting is the server's (acquire with waitMs, which waits for the key
//   to change); the client only asks again, and a server that answers at
//   once gets a growing pause, so nothing spins;
// - the holder judges its own safety by its own clock (options.now): the
//   signal aborts when the server says the lease is lost, or when no renew
//   has been confirmed by renewAfter + (lease − renewAfter)/2 after the send
//   time of the last confirmed acquire or renew. The server's lease runs
//   from a moment no earlier than that send, so the holder stops before the
//   key can go to anyone else (clocks running at about the same rate);
// - the lock is released however fn ends; a throwing fn rejects with its own
//   error; a fn that resolves after the lock was lost rejects with the loss
//   (its work may have overlapped a successor's); every promise made here is
//   handled, so none ever surfaces as an unhandledRejection.

import { viewable } from './call.js'
import { CkptstoreError } from './errors.js'
import { handled } from './persistence.js'
import { field, randomToken, Transport, type ClientOptions } from './transport.js'
import type { LockStoreClient } from './persist-types.js'

/**
 * Options of createLockStore: those of createCheckpointStore. leaseDurationMs
 * and renewAfterMs are sent as a --dev server's namespace options (as the
 * checkpoint store sends them); the lease the client keeps to is the one
 * the server answers with (expiresAt − now of a grant), and its renew-after
 * is renewAfterMs when given and below that lease, else 3/8 of it (the
 * server's own default ratio).
 */
export type LockStoreOptions = ClientOptions

/** A LockStore of one namespace. */
export interface LockStoreClientWithNamespace extends LockStoreClient {
  readonly namespace: string | undefined
}

/** The server's default lease (docs/http-api.md), used until a grant says otherwise. */
const defaultLeaseMs = 120_000
const maxWaitMs = 20_000
const minPauseMs = 10
const maxPauseMs = 1_000

const ignore = () => {}

/** A timer that can be cut short: wait resolves after ms, or at once when cancel is called. */
function pause(ms: number): { wait: Promise<void>; cancel: () => void } {
  let done = ignore
  let timer: ReturnType<typeof setTimeout> | undefined
  const wait = new Promise<void>((r) => {
    done = r
    timer = setTimeout(r, Math.max(0, ms))
  })
  return {
    wait,
    cancel: () => {
      clearTimeout(timer)
      done()
    },
  }
}

function lostError(message: string): CkptstoreError {
  return new CkptstoreError('PERSIST_LOCK_LOST', message, 409)
}

interface Grant {
  held: boolean
  fence: number
  expiresAt: number
  now: number
  leaseMs?: number
  renewAfterMs?: number
}

function grantOf(r: Record<string, unknown>, method: string): Grant {
  const g: Grant = {
    held: field<boolean>(r, method, 'held'),
    fence: Number(r['fence']),
    expiresAt: Number(r['expiresAt']),
    now: Number(r['now']),
  }
  if (typeof r['leaseMs'] === 'number') g.leaseMs = r['leaseMs']
  if (typeof r['renewAfterMs'] === 'number') g.renewAfterMs = r['renewAfterMs']
  return g
}

/**
 * createLockStore opens the locks of one namespace on a ckptserver: pass
 * it to withLocks(...) where InMemoryLockStore would go; unlike that one,
 * it excludes across processes and servers sharing a store.
 */
export function createLockStore(options: LockStoreOptions): LockStoreClientWithNamespace {
  return viewable(new Transport(options), (t) => lockStoreOver(t, options))
}

/** lockStoreOver is createLockStore's store over t (a view's, for withCallOptions). */
function lockStoreOver(t: Transport, options: LockStoreOptions): LockStoreClientWithNamespace {
  const clock = options.now ?? Date.now
  const timeoutMs = options.timeoutMs ?? 30_000

  /** The lease and renew-after the holder keeps to, from a grant. */
  function timing(g: Grant): { lease: number; renewAfter: number } {
    // The server's own numbers when it sends them (leaseMs, renewAfterMs),
    // else what the grant implies, else the options.
    const answered = g.leaseMs ?? g.expiresAt - g.now
    const lease = Number.isFinite(answered) && answered > 0 ? answered : (options.leaseDurationMs ?? defaultLeaseMs)
    let renewAfter = g.renewAfterMs ?? options.renewAfterMs
    if (renewAfter === undefined || !(renewAfter > 0) || renewAfter >= lease) renewAfter = (lease * 3) / 8
    return { lease, renewAfter }
  }

  async function release(key: string, token: string): Promise<void> {
    try {
      await t.call('locks/release', { key, token }, 'read')
    } catch {
      // A lease a release cannot end runs out by itself.
    }
  }

  /** Asks until token holds key; returns the grant and when the asking step was sent, by the holder's clock. */
  async function acquire(key: string, token: string): Promise<{ grant: Grant; sent: number }> {
    let lease = options.leaseDurationMs ?? defaultLeaseMs
    let pauseMs = minPauseMs
    for (;;) {
      const waitMs = Math.max(0, Math.floor(Math.min(maxWaitMs, lease / 3, timeoutMs / 2)))
      const sent = clock()
      const started = Date.now()
      let g: Grant
      try {
        g = grantOf(await t.call('locks/acquire', { key, token, waitMs }, 'read'), 'locks/acquire')
      } catch (err) {
        void release(key, token) // give our place in the queue up
        throw err
      }
      if (g.held) return { grant: g, sent }
      if (typeof g.leaseMs === 'number' && g.leaseMs > 0) lease = g.leaseMs
      // The server waited waitMs (or until the key changed and it stepped
      // again). One that answers not-held much sooner does not wait: pause,
      // growing, so this never spins.
      if (Date.now() - started < waitMs / 2) {
        await pause(pauseMs).wait
        pauseMs = Math.min(2 * pauseMs, maxPauseMs)
      } else pauseMs = minPauseMs
    }
  }

  async function withLockImpl<T>(key: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (typeof fn !== 'function') throw new TypeError('ckptstore withLock: fn must be a function')
    const token = randomToken()
    const { grant, sent } = await acquire(key, token)
    const { lease, renewAfter } = timing(grant)
    const abortAfter = renewAfter + (lease - renewAfter) / 2
    const ac = new AbortController()
    let lastSent = sent
    let stopped = false
    let deadline: ReturnType<typeof setTimeout> | undefined
    let sleeping: { wait: Promise<void>; cancel: () => void } | undefined

    const abort = (err: CkptstoreError) => {
      if (!ac.signal.aborted) ac.abort(err)
    }
    // The watchdog: checks the holder's clock when the deadline should
    // have come (a clock that runs behind the timers is checked again when
    // its remaining time has passed, never in a loop).
    const armDeadline = () => {
      clearTimeout(deadline)
      const check = () => {
        if (stopped || ac.signal.aborted) return
        const left = lastSent + abortAfter - clock()
        if (left <= 0) return abort(lostError(`ckptstore withLock: no renewal of "${key}" was confirmed within ${abortAfter} ms`))
        deadline = setTimeout(check, Math.max(1, left))
      }
      check()
    }

    const keep = async () => {
      for (;;) {
        sleeping = pause(lastSent + renewAfter - clock())
        await sleeping.wait
        if (stopped || ac.signal.aborted) return
        let pauseMs = minPauseMs
        for (;;) {
          const s = clock()
          try {
            await t.call('locks/renew', { key, token }, 'read')
            if (stopped) return
            lastSent = s
            armDeadline()
            break
          } catch (err) {
            if (stopped || ac.signal.aborted) return
            if ((err as { code?: unknown }).code === 'PERSIST_LOCK_LOST') {
              return abort(lostError(`ckptstore withLock: the lease of "${key}" is lost (the server no longer holds it)`))
            }
            // A transport failure: try again until the watchdog aborts.
            sleeping = pause(pauseMs)
            await sleeping.wait
            if (stopped || ac.signal.aborted) return
            pauseMs = Math.min(2 * pauseMs, maxPauseMs)
          }
        }
      }
    }

    armDeadline()
    keep().catch(ignore)
    try {
      let result: T
      try {
        result = await fn(ac.signal)
      } finally {
        stopped = true
        clearTimeout(deadline)
        sleeping?.cancel()
      }
      if (ac.signal.aborted) throw ac.signal.reason
      return result
    } finally {
      await release(key, token)
    }
  }

  return {
    namespace: t.namespace,
    withLock: handled(withLockImpl) as LockStoreClient['withLock'],
  }
}
