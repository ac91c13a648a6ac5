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

import { Agent, request } from 'node:http'
import { parseArgs } from 'node:util'
import { createCheckpointStore, type Checkpoint, type CheckpointWriter } from '@ckptstore/client'
import { fileKey, startServer } from './helpers.js'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '0.25' },
    writers: { type: 'string', default: '1,16' },
    kb: { type: 'string', default: '2' },
    fetch: { type: 'boolean', default: false },
    'node-http': { type: 'boolean', default: false },
  },
})
const rounds = Number(values.rounds)
const seconds = Number(values.seconds)
const writerCounts = values.writers.split(',').map(Number)
const content = 'x'.repeat(Number(values.kb) * 1024)

interface Msg {
  role: 'user'
  content: string
}

function cp(id: string, threadId: string, parent: string | null, n: number): Checkpoint<Msg> {
  return {
    id,
    threadId,
    parentCheckpointId: parent,
    createdAt: n,
    reason: 'automatic',
    files: [{ path: 'f.txt', kind: 'file', blobKey: fileKey(n % 64), size: content.length }],
    conversation: [{ role: 'user', content }],
    artifacts: [],
  }
}

const server = await startServer('mem')
const store = createCheckpointStore<Msg>(values.fetch ? { url: server.url, fetch: globalThis.fetch } : values['node-http'] ? { url: server.url, nodeTransport: 'node:http' } : { url: server.url })
const u = new URL(server.url)
const agent = new Agent({ keepAlive: true })
const b64url = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
const randomKey = () => Array.from(crypto.getRandomValues(new Uint8Array(22)), (b) => b64url[b & 63]).join('')

/** One append as bare node:http: the body the client would send, POSTed, the reply read. */
function bareAppend(body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        hostname: u.hostname,
        port: u.port,
        path: '/v1/append',
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'ckpt-namespace': encodeURIComponent(store.namespace!),
          'idempotency-key': randomKey(),
        },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => (text += c))
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`append: ${res.statusCode} ${text}`))))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

type Side = 'client' | 'bare'

interface Round {
  appends: number
  seconds: number
  cpuMicros: number
  latencies: number[]
}

let seq = 0

/** Runs writers concurrent writers, each appending a chain to its own thread, for `seconds`. */
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
        const checkpoint = cp(`${writer.threadId}-${n}`, writer.threadId, head, n)
        const s = performance.now()
        if (side === 'client') {
          head = (await store.append({ checkpoint, expectedHeadId: head, writer })).headId
        } else {
          await bareAppend(JSON.stringify({ checkpoint, expectedHeadId: head, writer }))
          head = checkpoint.id
        }
        latencies.push(performance.now() - s)
      }
    }),
  )
  const elapsed = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  // Free the server's memory, outside the timed part.
  for (const writer of leases) await store.deleteThread({ threadId: writer.threadId, writer })
  return { appends: latencies.length, seconds: elapsed, cpuMicros: cpu.user + cpu.system, latencies }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!
}

console.log(`client over ${values.fetch ? 'fetch' : values['node-http'] ? 'node:http' : 'undici'}; ckptserver on memstore at ${server.url}; ${Number(values.kb)} KB conversation per append; ${rounds} rounds of ${seconds} s per side, interleaved`)
console.log('writers  side    appends/s (median)  p50 ms  p99 ms  CPU µs/append (whole process)')
for (const writers of writerCounts) {
  // Warm both sides (JIT, sockets, the server's namespace), unmeasured.
  await round('client', writers, 0.3)
  await round('bare', writers, 0.3)
  const got: Record<Side, Round[]> = { client: [], bare: [] }
  for (let i = 0; i < rounds; i++) {
    // Alternate which side goes first, so neither always runs on the warmer machine.
    const order: Side[] = i % 2 === 0 ? ['client', 'bare'] : ['bare', 'client']
    for (const side of order) got[side].push(await round(side, writers, seconds))
  }
  const rate: Record<Side, number> = { client: 0, bare: 0 }
  for (const side of ['client', 'bare'] as const) {
    const rs = got[side]
    rate[side] = median(rs.map((x) => x.appends / x.seconds))
    const all = rs.flatMap((x) => x.latencies)
    const cpuPer = rs.reduce((a, x) => a + x.cpuMicros, 0) / rs.reduce((a, x) => a + x.appends, 0)
    console.log(
      `${String(writers).padStart(7)}  ${side.padEnd(6)}  ${rate[side].toFixed(0).padStart(18)}  ${quantile(all, 0.5).toFixed(3).padStart(6)}  ${quantile(all, 0.99).toFixed(3).padStart(6)}  ${cpuPer.toFixed(0).padStart(6)}`,
    )
  }
  const paired = median(got.client.map((c, i) => c.appends / c.seconds / (got.bare[i]!.appends / got.bare[i]!.seconds)))
  console.log(`${String(writers).padStart(7)}  ratio   client/bare = ${(rate.client / rate.bare).toFixed(2)} (median of the ${rounds} paired rounds: ${paired.toFixed(2)})`)
}
agent.destroy()
await server.stop()
