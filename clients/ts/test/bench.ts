// `npm run bench`: appends per second and latency through a real ckptserver
// on memstore, for @ckptstore/client and for bare node:http (a keep-alive
// agent, the same JSON bodies and headers, nothing else), in one run,
// interleaved in short rounds so both sides see the same machine (on a
// shared, noisy one, many short paired rounds beat a few long ones).
// Prints the median appends/s of each side, p50/p99 over every append, the
// ratio client / bare (of the medians, and the median of the ratios of
// each pair of adjacent rounds), and the whole process's CPU time per
// append.
//
//   npm run bench -- [--rounds N] [--seconds S] [--writers 1,16] [--kb 2] [--fetch | --node-http]
//
// --fetch makes the client use the global fetch (as on runtimes other than
// Node, or with options.fetch), --node-http node:http instead of undici
// (nodeTransport), to compare the transports.

import { Agent } from 'node:http'
import { parseArgs } from 'node:util'
import { createCheckpointStore } from '@ckptstore/client'
import { startServer } from './helpers.js'
import { appendRound, counts, cpuPerOp, interleaved, median, nodeAppend, p50p99, rate, roundOptions, roundSettings, type Msg, type Round } from './bench-common.js'

const { values } = parseArgs({
  options: {
    ...roundOptions('20', '0.25', '2'),
    writers: { type: 'string', default: '1,16' },
    fetch: { type: 'boolean', default: false },
    'node-http': { type: 'boolean', default: false },
  },
})
const { rounds, seconds, content } = roundSettings(values)

const server = await startServer('mem')
const store = createCheckpointStore<Msg>(values.fetch ? { url: server.url, fetch: globalThis.fetch } : values['node-http'] ? { url: server.url, nodeTransport: 'node:http' } : { url: server.url })
const u = new URL(server.url)
const agent = new Agent({ keepAlive: true })
const b64url = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
const randomKey = () => Array.from(crypto.getRandomValues(new Uint8Array(22)), (b) => b64url[b & 63]).join('')

const sides = ['client', 'bare'] as const
type Side = (typeof sides)[number]
/** One append per side: through the client, or as bare node:http (the body and headers the client would send, POSTed, the reply read). */
const append: Record<Side, Parameters<typeof appendRound>[5]> = {
  client: async (input) => (await store.append(input)).headId,
  bare: async (input) => {
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json',
      'ckpt-namespace': encodeURIComponent(store.namespace!),
      'idempotency-key': randomKey(),
    }
    await nodeAppend(agent, u, headers, JSON.stringify(input), false)
    return input.checkpoint.id
  },
}

console.log(`client over ${values.fetch ? 'fetch' : values['node-http'] ? 'node:http' : 'undici'}; ckptserver on memstore at ${server.url}; ${Number(values.kb)} KB conversation per append; ${rounds} rounds of ${seconds} s per side, interleaved`)
console.log('writers  side    appends/s (median)  p50 ms  p99 ms  CPU µs/append (whole process)')
for (const writers of counts(values.writers)) {
  const [client, bare] = await interleaved(sides, rounds, seconds, (side, secs) => appendRound(store, side, writers, secs, content, append[side]))
  const got: Record<Side, Round[]> = { client: client!, bare: bare! }
  for (const side of sides) {
    console.log(`${String(writers).padStart(7)}  ${side.padEnd(6)}  ${median(got[side].map(rate)).toFixed(0).padStart(18)}  ${p50p99(got[side], 3)}  ${cpuPerOp(got[side]).toFixed(0).padStart(6)}`)
  }
  const ratio = median(got.client.map(rate)) / median(got.bare.map(rate))
  const paired = median(got.client.map((c, i) => rate(c) / rate(got.bare[i]!)))
  console.log(`${String(writers).padStart(7)}  ratio   client/bare = ${ratio.toFixed(2)} (median of the ${rounds} paired rounds: ${paired.toFixed(2)})`)
}
agent.destroy()
await server.stop()
