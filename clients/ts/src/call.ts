// withCallOptions: per-call abort signals and headers without touching
// TanStack's method signatures. A store this package creates is registered
// here with how to build it again over a transport; a view is that store
// built over a copy of its transport that carries the call options, so it
// has exactly the store's shape and can be handed to TanStack for one run.

import type { CallOptions, Transport } from './transport.js'

const views = new WeakMap<object, (call: CallOptions) => object>()

/** viewable builds a store over t and registers how to build its views. */
export function viewable<S extends object>(t: Transport, build: (t: Transport) => S): S {
  const store = build(t)
  views.set(store, (call) => viewable(t.with(call), build))
  return store
}

/**
 * withCallOptions returns a view of a store of this package (a checkpoint,
 * instance, message or lock store, or createPersistence's result) whose
 * calls carry `call`: they abort when `call.signal` does (rejecting with its
 * reason, never retried) and send `call.headers` too (a trace context, say).
 * The view has the store's type and talks to the same server and
 * namespace over the same connections; the store itself is unchanged.
 * Leases and locks a view hands out renew and release through the view.
 *
 *     const run = withCallOptions(checkpoints, { signal: controller.signal, headers: { traceparent } })
 *     await run.getHead('thread-1')
 */
export function withCallOptions<S extends object>(store: S, call: CallOptions): S {
  const view = views.get(store)
  if (view === undefined) throw new TypeError('ckptstore: withCallOptions takes a store that @ckptstore/client created')
  return view(call) as S
}
