// The parts the benchmark scripts share: their round options, the timed
// round (concurrent workers, each looping until the round's deadline), the
// interleaved rounds of several sides, the append workload of bench and
// bench:transport, and the statistics they print. Not a test: *.test.ts
// files are the suite.

import { request, type Agent } from 'node:http'
import type { Checkpoint, CheckpointStoreClient, CheckpointWriter } from '@ckptstore/client'
import { fileKey } from './helpers.js'

/** The parseArgs options every interleaved bench takes, with its own defaults. */
export function roundOptions(rounds: string, seconds: string, kb: string) {
  return {
    rounds: { type: 'string', default: rounds },
    seconds: { type: 'string', default: seconds },
    kb: { type: 'string', default: kb },
  } as const
}

/** The numbers roundOptions parses to, and the message content of kb KB. */
export function roundSettings(values: { rounds: string; seconds: string; kb: string }) {
  return { rounds: Number(values.rounds), seconds: Number(values.seconds), content: 'x'.repeat(Number(values.kb) * 1024) }
}

/** A comma-separated list of counts (--writers, --conversations). */
export const counts = (s: string) => s.split(',').map(Number)

/** One timed round: ops operations done, in seconds, with this process's CPU time (user + system) and every operation's latency in ms. */
export interface Round {
  ops: number
  seconds: number
  cpuMicros: number
  latencies: number[]
}

/**
 * timedRound runs workers concurrent workers for secs. worker(w) returns
 * that worker's step: step(n), for n = 0, 1, …, prepares the nth operation
 * untimed and returns it; only the operation itself is timed.
 */
export async function timedRound(workers: number, secs: number, worker: (w: number) => (n: number) => () => Promise<unknown>): Promise<Round> {
  const latencies: number[] = []
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const end = t0 + secs * 1000
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const step = worker(w)
      for (let n = 0; performance.now() < end; n++) {
        const op = step(n)
        const s = performance.now()
        await op()
        latencies.push(performance.now() - s)
      }
    }),
  )
  const seconds = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  return { ops: latencies.length, seconds, cpuMicros: cpu.user + cpu.system, latencies }
}

/**
 * interleaved warms every side with one unmeasured 0.3 s round, then runs
 * rounds rounds of secs per side, rotating which side goes first so that
 * none always runs on the warmer machine (on a shared, noisy one, many short
 * paired rounds beat a few long ones). Returns each side's rounds, in the
 * order of sides.
 */
export async function interleaved<S>(sides: readonly S[], rounds: number, secs: number, round: (side: S, secs: number) => Promise<Round>): Promise<Round[][]> {
  for (const side of sides) await round(side, 0.3)
  const got = sides.map(() => [] as Round[])
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < sides.length; k++) {
      const j = (i + k) % sides.length
      got[j]!.push(await round(sides[j]!, secs))
    }
  }
  return got
}

/** The median of xs, the mean of the middle two for an even count. */
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

/** The q quantile of xs (NaN for none). */
export const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN
}

/** Operations per second in a round. */
export const rate = (r: Round) => r.ops / r.seconds

/** The p50 and p99 latency in ms over every operation of rounds, with digits decimals, each padded to 6. */
export function p50p99(rounds: Round[], digits: number): string {
  const all = rounds.flatMap((x) => x.latencies)
  return `${quantile(all, 0.5).toFixed(digits).padStart(6)}  ${quantile(all, 0.99).toFixed(digits).padStart(6)}`
}

/** This process's CPU µs per operation over rounds. */
export const cpuPerOp = (rounds: Round[]) => rounds.reduce((a, x) => a + x.cpuMicros, 0) / rounds.reduce((a, x) => a + x.ops, 0)

/** The median (min–max) of the ratios of each round's rate to its paired round in base. */
export function pairedRatios(rounds: Round[], base: Round[]): string {
  const ratios = rounds.map((x, i) => rate(x) / rate(base[i]!))
  return `${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`
}

/** The message of the append workload's conversations. */
export interface Msg {
  role: 'user'
  content: string
}

/** An append as the bench sends it: a checkpoint, the head it expects, the writer's lease. */
export interface AppendInput {
  checkpoint: Checkpoint<Msg>
  expectedHeadId: string | null
  writer: CheckpointWriter
}

/**
 * appendRound is one round of the append workload: writers concurrent
 * writers, each holding a lease on its own thread (named label-round-w) and
 * appending a chain of checkpoints with a content-sized conversation through
 * append (which returns the new head), for secs. The threads are deleted afterwards, outside the timed
 * part, to free the server's memory.
 */
export async function appendRound(
  store: Pick<CheckpointStoreClient, 'acquireWriter' | 'deleteThread'>,
  label: string,
  writers: number,
  secs: number,
  content: string,
  append: (input: AppendInput) => Promise<string>,
): Promise<Round> {
  const r = appendSeq++
  const leases: CheckpointWriter[] = []
  for (let w = 0; w < writers; w++) {
    const l = await store.acquireWriter(`${label}-${r}-${w}`)
    leases.push({ threadId: l.threadId, ownerToken: l.ownerToken, fence: l.fence })
  }
  const got = await timedRound(writers, secs, (w) => {
    const writer = leases[w]!
    let head: string | null = null
    return (i) => {
      const n = i + 1
      const checkpoint: Checkpoint<Msg> = {
        id: `${writer.threadId}-${n}`,
        threadId: writer.threadId,
        parentCheckpointId: head,
        createdAt: n,
        reason: 'automatic',
        files: [{ path: 'f.txt', kind: 'file', blobKey: fileKey(n % 64), size: content.length }],
        conversation: [{ role: 'user', content }],
        artifacts: [],
      }
      return async () => {
        head = await append({ checkpoint, expectedHeadId: head, writer })
      }
    }
  })
  for (const writer of leases) await store.deleteThread({ threadId: writer.threadId, writer })
  return got
}
let appendSeq = 0

/**
 * nodeAppend POSTs body to /v1/append at url over node:http with agent and
 * headers, and reads the reply: bare node:http, nothing else. parseReply
 * also parses the reply's JSON, as a client would.
 */
export function nodeAppend(agent: Agent, url: URL, headers: Record<string, string>, body: string, parseReply: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, hostname: url.hostname, port: url.port, path: '/v1/append', method: 'POST', headers }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (text += c))
      res.on('end', () => {
        if (parseReply) JSON.parse(text)
        res.statusCode === 200 ? resolve() : reject(new Error(`append: ${res.statusCode} ${text}`))
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}
