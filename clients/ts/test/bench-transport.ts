// `npm run bench:transport`: the bare transports the Node path could use,
// on the same append bodies and headers through a real ckptserver on
// memstore, in interleaved short rounds: node:http with a plain keep-alive
// agent (what the client used before), node:http with a tuned agent
// (keep-alive, maxSockets, LIFO scheduling, no Nagle), and undici's Pool
// with request(). No client code runs: this measures the transports alone,
// so that the client keeps the fastest.
//
//   npm run bench:transport -- [--rounds N] [--seconds S] [--writers 1,16] [--kb 2]

import { Agent } from 'node:http'
import { parseArgs } from 'node:util'
import { Pool } from 'undici'
import { createCheckpointStore } from '@ckptstore/client'
import { startServer } from './helpers.js'
import { appendRound, counts, cpuPerOp, interleaved, median, nodeAppend, p50p99, pairedRatios, rate, roundOptions, roundSettings, type AppendInput } from './bench-common.js'

const { values } = parseArgs({ options: { ...roundOptions('12', '0.25', '2'), writers: { type: 'string', default: '1,16' } } })
const { rounds, seconds, content } = roundSettings(values)

const server = await startServer('mem')
const store = createCheckpointStore({ url: server.url })
const u = new URL(server.url)
const plainAgent = new Agent({ keepAlive: true })
const tunedAgent = new Agent({ keepAlive: true, maxSockets: 64, scheduling: 'lifo', noDelay: true, keepAliveMsecs: 30_000 })
const pool = new Pool(u.origin, { connections: 64, pipelining: 1, keepAliveTimeout: 30_000 })

const baseHeaders = { 'content-type': 'application/json', accept: 'application/json', 'ckpt-namespace': encodeURIComponent(store.namespace!) }
let keyN = 0
const key = () => `k${process.pid}x${keyN++}`

async function undiciAppend(body: string): Promise<void> {
  const res = await pool.request({ path: '/v1/append', method: 'POST', headers: { ...baseHeaders, 'idempotency-key': key() }, body })
  const text = await res.body.text()
  JSON.parse(text)
  if (res.statusCode !== 200) throw new Error(`append: ${res.statusCode} ${text}`)
}

const sides = ['http', 'tuned', 'undici'] as const
type Side = (typeof sides)[number]
const send: Record<Side, (body: string) => Promise<void>> = {
  http: (b) => nodeAppend(plainAgent, u, { ...baseHeaders, 'idempotency-key': key() }, b, true),
  tuned: (b) => nodeAppend(tunedAgent, u, { ...baseHeaders, 'idempotency-key': key() }, b, true),
  undici: undiciAppend,
}
const append = (side: Side) => async (input: AppendInput) => {
  await send[side](JSON.stringify(input))
  return input.checkpoint.id
}

console.log(`transports alone; ckptserver on memstore at ${server.url}; ${Number(values.kb)} KB per append; ${rounds} rounds of ${seconds} s per side, interleaved (order rotated)`)
console.log('writers  side     appends/s (median)  p50 ms  p99 ms  CPU µs/append  vs http (median of paired rounds, min–max)')
for (const writers of counts(values.writers)) {
  const got = await interleaved(sides, rounds, seconds, (side, secs) => appendRound(store, side, writers, secs, content, append(side)))
  sides.forEach((side, j) => {
    const rs = got[j]!
    console.log(`${String(writers).padStart(7)}  ${side.padEnd(7)}  ${median(rs.map(rate)).toFixed(0).padStart(18)}  ${p50p99(rs, 3)}  ${cpuPerOp(rs).toFixed(0).padStart(13)}  ${pairedRatios(rs, got[0]!)}`)
  })
}
plainAgent.destroy()
tunedAgent.destroy()
await pool.close()
await server.stop()
