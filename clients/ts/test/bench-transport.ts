// `npm run bench:transport`: the bare transports the Node path could use,
// on the same append bodies and headers through a real ckptserver on
// memstore, in interleaved short rounds: node:http with a plain keep-alive
// agent (what the client used before), node:http with a tuned agent
// (keep-alive, maxSockets, LIFO scheduling, no Nagle), and undici's Pool
// with request(). No client code runs: this measures the transports alone,
// so that the client keeps the fastest.
//
//   npm run bench:transport -- [--rounds N] [--seconds S] [--writers 1,16] [--kb 2]

import { Agent, request } from 'node:http'
import { parseArgs } from 'node:util'
import { Pool } from 'undici'
import { createCheckpointStore, type CheckpointWriter } from '@ckptstore/client'
import { fileKey, startServer } from './helpers.js'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '12' },
    seconds: { type: 'string', default: '0.25' },
    writers: { type: 'string', default: '1,16' },
    kb: { type: 'string', default: '2' },
  },
})
const rounds = Number(values.rounds)
const seconds = Number(values.seconds)
const writerCounts = values.writers.split(',').map(Number)
const content = 'x'.repeat(Number(values.kb) * 1024)

const server = await startServer('mem')
const store = createCheckpointStore({ url: server.url })
const u = new URL(server.url)
const plainAgent = new Agent({ keepAlive: true })
const tunedAgent = new Agent({ keepAlive: true, maxSockets: 64, scheduling: 'lifo', noDelay: true, keepAliveMsecs: 30_000 })
const pool = new Pool(u.origin, { connections: 64, pipelining: 1, keepAliveTimeout: 30_000 })

const baseHeaders = { 'content-type': 'application/json', accept: 'application/json', 'ckpt-namespace': encodeURIComponent(store.namespace!) }
let keyN = 0
const key = () => `k${process.pid}x${keyN++}`

function nodeAppend(agent: Agent, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      { agent, hostname: u.hostname, port: u.port, path: '/v1/append', method: 'POST', headers: { ...baseHeaders, 'idempotency-key': key() } },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => (text += c))
        res.on('end', () => {
          JSON.parse(text)
          res.statusCode === 200 ? resolve() : reject(new Error(`append: ${res.statusCode} ${text}`))
        })
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

async function undiciAppend(body: string): Promise<void> {
  const res = await pool.request({ path: '/v1/append', method: 'POST', headers: { ...baseHeaders, 'idempotency-key': key() }, body })
  const text = await res.body.text()
  JSON.parse(text)
  if (res.statusCode !== 200) throw new Error(`append: ${res.statusCode} ${text}`)
}

const sides = ['http', 'tuned', 'undici'] as const
type Side = (typeof sides)[number]
const send: Record<Side, (body: string) => Promise<void>> = {
  http: (b) => nodeAppend(plainAgent, b),
  tuned: (b) => nodeAppend(tunedAgent, b),
  undici: undiciAppend,
}

interface Round {
  appends: number
  seconds: number
  cpuMicros: number
  latencies: number[]
}
let seq = 0

async function round(side: Side, writers: number, secs: number): Promise<Round> {
  const r = seq++
  const leases: CheckpointWriter[] = []
  for (let w = 0; w < writers; w++) {
    const l = await store.acquireWriter(`${side}-${r}-${w}`)
    leases.push({ threadId: l.threadId, ownerToken: l.ownerToken, fence: l.fence })
  }
  const latencies: number[] = []
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const end = t0 + secs * 1000
  await Promise.all(
    leases.map(async (writer) => {
      let head: string | null = null
      for (let n = 1; performance.now() < end; n++) {
        const id = `${writer.threadId}-${n}`
        const checkpoint = {
          id, threadId: writer.threadId, parentCheckpointId: head, createdAt: n, reason: 'automatic',
          files: [{ path: 'f.txt', kind: 'file', blobKey: fileKey(n % 64), size: content.length }],
          conversation: [{ role: 'user', content }], artifacts: [],
        }
        const s = performance.now()
        await send[side](JSON.stringify({ checkpoint, expectedHeadId: head, writer }))
        latencies.push(performance.now() - s)
        head = id
      }
    }),
  )
  const elapsed = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  for (const writer of leases) await store.deleteThread({ threadId: writer.threadId, writer })
  return { appends: latencies.length, seconds: elapsed, cpuMicros: cpu.user + cpu.system, latencies }
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
const median = (xs: number[]) => {
  const s = sorted(xs)
  const m = s.length >> 1
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}
const quantile = (xs: number[], q: number) => {
  const s = sorted(xs)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!
}

console.log(`transports alone; ckptserver on memstore at ${server.url}; ${Number(values.kb)} KB per append; ${rounds} rounds of ${seconds} s per side, interleaved (order rotated)`)
console.log('writers  side     appends/s (median)  p50 ms  p99 ms  CPU µs/append  vs http (median of paired rounds, min–max)')
for (const writers of writerCounts) {
  for (const side of sides) await round(side, writers, 0.3)
  const got: Record<Side, Round[]> = { http: [], tuned: [], undici: [] }
  for (let i = 0; i < rounds; i++) {
    const order = [...sides.slice(i % 3), ...sides.slice(0, i % 3)]
    for (const side of order) got[side].push(await round(side, writers, seconds))
  }
  const rateOf = (x: Round) => x.appends / x.seconds
  for (const side of sides) {
    const rs = got[side]
    const all = rs.flatMap((x) => x.latencies)
    const cpuPer = rs.reduce((a, x) => a + x.cpuMicros, 0) / rs.reduce((a, x) => a + x.appends, 0)
    const ratios = rs.map((x, i) => rateOf(x) / rateOf(got.http[i]!))
    console.log(
      `${String(writers).padStart(7)}  ${side.padEnd(7)}  ${median(rs.map(rateOf)).toFixed(0).padStart(18)}  ${quantile(all, 0.5).toFixed(3).padStart(6)}  ${quantile(all, 0.99).toFixed(3).padStart(6)}  ${cpuPer.toFixed(0).padStart(13)}  ${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
    )
  }
}
plainAgent.destroy()
tunedAgent.destroy()
await pool.close()
await server.stop()
