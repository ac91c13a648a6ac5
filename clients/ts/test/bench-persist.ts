// `npm run bench:persist`: one chat turn's persistence calls through
// createPersistence against a real ckptserver, on memstore and (when
// redis-server is installed) on Redis: runs.createOrResume,
// messages.saveThread (a growing transcript of 2 KB messages), runs.update
// to completed, runs.findActiveRun. Prints turns/s (and calls/s), and
// p50/p99 of a whole turn and of each call, at 1 and 16 concurrent
// conversations.
//
//   npm run bench:persist -- [--seconds S] [--conversations 1,16] [--kb 2] [--messages 8]

import { parseArgs } from 'node:util'
import { createPersistence } from '@ckptstore/client'
import { redisUnavailable, startRedis, startServer, type Running } from './helpers.js'
import { counts, quantile } from './bench-common.js'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    conversations: { type: 'string', default: '1,16' },
    kb: { type: 'string', default: '2' },
    messages: { type: 'string', default: '8' },
  },
})
const seconds = Number(values.seconds)
const content = 'x'.repeat(Number(values.kb) * 1024)
const keep = Number(values.messages)

type Step = 'createOrResume' | 'saveThread' | 'update' | 'findActiveRun'
const steps: Step[] = ['createOrResume', 'saveThread', 'update', 'findActiveRun']

async function measure(url: string, conversations: number, secs: number) {
  const { stores } = createPersistence<{ role: string; content: string }>({ url })
  const turns: number[] = []
  const per: Record<Step, number[]> = { createOrResume: [], saveThread: [], update: [], findActiveRun: [] }
  const t0 = performance.now()
  const end = t0 + secs * 1000
  await Promise.all(
    Array.from({ length: conversations }, async (_, c) => {
      const threadId = `conv-${c}`
      const transcript: Array<{ role: string; content: string }> = []
      for (let n = 0; performance.now() < end; n++) {
        transcript.push({ role: 'user', content }, { role: 'assistant', content })
        while (transcript.length > keep) transcript.shift()
        const runId = `${threadId}-run-${n}`
        const s = performance.now()
        let a = s
        const lap = (step: Step) => {
          const b = performance.now()
          per[step].push(b - a)
          a = b
        }
        await stores.runs.createOrResume({ runId, threadId, startedAt: n })
        lap('createOrResume')
        await stores.messages.saveThread(threadId, transcript)
        lap('saveThread')
        await stores.runs.update(runId, { status: 'completed', finishedAt: n + 1, usage: { promptTokens: 10, completionTokens: 20, totalTokens: 30 } })
        lap('update')
        const active = await stores.runs.findActiveRun(threadId)
        lap('findActiveRun')
        if (active !== null) throw new Error('a completed turn left an active run')
        turns.push(performance.now() - s)
      }
    }),
  )
  return { elapsed: (performance.now() - t0) / 1000, turns, per }
}

async function run(label: string, server: Running) {
  for (const conversations of counts(values.conversations)) {
    await measure(server.url, conversations, 0.5) // warm-up, unmeasured
    const r = await measure(server.url, conversations, seconds)
    const rate = r.turns.length / r.elapsed
    console.log(
      `${label.padEnd(6)} ${String(conversations).padStart(3)} conv  ${rate.toFixed(0).padStart(6)} turns/s  ${(rate * 4).toFixed(0).padStart(6)} calls/s  turn p50 ${quantile(r.turns, 0.5).toFixed(2)} ms p99 ${quantile(r.turns, 0.99).toFixed(2)} ms  | ` +
        steps.map((s) => `${s} ${quantile(r.per[s], 0.5).toFixed(2)}/${quantile(r.per[s], 0.99).toFixed(2)}`).join('  '),
    )
  }
}

console.log(`one chat turn = createOrResume + saveThread (${keep} messages of ${values.kb} KB) + update(completed) + findActiveRun; ${seconds} s per cell; per call p50/p99 ms`)
const mem = await startServer('mem')
await run('mem', mem)
await mem.stop()
const why = redisUnavailable()
if (why) console.log(`# no Redis run: ${why}`)
else {
  const redis = await startRedis()
  const server = await startServer(`${redis.url}?prefix=bench`)
  await run('redis', server)
  await server.stop()
  await redis.stop()
}
