// `npm run bench:turn`: the four store calls TanStack's persistence
// middleware makes per chat turn (runs.createOrResume, runs.findActiveRun,
// runs.update to completed, messages.saveThread of the transcript so far),
// at 1 and 16 concurrent conversations, through createPersistence against
// a real ckptserver on memstore and on a redis-server with an append-only
// file fsynced every second; in the same process, in interleaved rounds,
// TanStack's SQLite example (examples/ts-react-chat/src/lib/sqlite-persistence.ts
// in the TanStack/ai repository) on a database file in WAL mode with
// synchronous=NORMAL, the SQLite setting comparable to Redis's everysec.
//
// TanStack's code is not part of this repository: --sqlite (or
// $CKPT_BENCH_SQLITE) names a module, built beside the repository from
// that file, that exports its sqlitePersistence({ url, migrate }) and
// opens every database with PRAGMA journal_mode=WAL and PRAGMA
// synchronous=NORMAL (for instance a bundle in which node:sqlite's
// DatabaseSync is a subclass that runs both pragmas in its constructor).
// node:sqlite needs Node ≥ 22.5. Without the module, or on an older Node,
// the bench says so and runs our side alone.
//
// Prints, per store and number of conversations, the median turns/s over
// the rounds, p50 and p99 of a whole turn, this process's CPU time per turn
// (the client's, or all of SQLite's, which runs in it), and the ratio to SQLite: of the
// medians, and the median (min–max) of the ratios of each round to the
// SQLite round next to it.
//
// --base names another ckptserver binary (a build of an earlier commit):
// its mem and Redis sides (base-mem, base-redis, each on a fresh server and
// redis-server) run in the same interleaved rounds, for a before/after
// comparison under the same load.
//
//   npm run bench:turn -- [--sqlite module] [--base ckptserver] [--rounds N] [--seconds S] [--conversations 1,16] [--kb 1] [--messages 10]

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { createPersistence } from '@ckptstore/client'
import { redisUnavailable, startRedis, startServer, type Running } from './helpers.js'
import { counts, cpuPerOp, interleaved, median, p50p99, pairedRatios, rate, roundOptions, roundSettings, timedRound, type Round } from './bench-common.js'

const { values } = parseArgs({
  options: {
    sqlite: { type: 'string', default: process.env['CKPT_BENCH_SQLITE'] ?? '' },
    base: { type: 'string', default: '' },
    ...roundOptions('8', '0.5', '1'),
    conversations: { type: 'string', default: '1,16' },
    messages: { type: 'string', default: '10' },
  },
})
const { rounds, seconds, content } = roundSettings(values)
const keep = Number(values.messages)

interface Msg {
  role: string
  content: string
}
/** The two stores of a turn, as both persistences shape them. */
interface TurnStores {
  runs: {
    createOrResume(input: { runId: string; threadId: string; startedAt: number }): Promise<unknown>
    findActiveRun(threadId: string): Promise<unknown>
    update(runId: string, patch: Record<string, unknown>): Promise<unknown>
  }
  messages: { saveThread(threadId: string, messages: Msg[]): Promise<unknown> }
}

let roundSeq = 0

/** One round: conversations concurrent conversations, each taking turns for secs. */
function round(stores: TurnStores, conversations: number, secs: number): Promise<Round> {
  const r = roundSeq++
  return timedRound(conversations, secs, (c) => {
    const threadId = `r${r}-conv-${c}`
    const transcript: Msg[] = []
    return (n) => {
      transcript.push({ role: 'user', content }, { role: 'assistant', content })
      while (transcript.length > keep) transcript.shift()
      const runId = `${threadId}-run-${n}`
      return async () => {
        await stores.runs.createOrResume({ runId, threadId, startedAt: n })
        await stores.runs.findActiveRun(threadId)
        await stores.runs.update(runId, { status: 'completed', finishedAt: n + 1, usage: { promptTokens: 10, completionTokens: 20, totalTokens: 30 } })
        await stores.messages.saveThread(threadId, transcript)
      }
    }
  })
}

// The sides: ckptserver on mem, on Redis (AOF everysec), and SQLite when present.
const sides: Array<{ name: string; stores: TurnStores; stop: () => Promise<void> | void }> = []
const noRedis = redisUnavailable()
if (noRedis) console.log(`# no Redis side: ${noRedis}`)
/** The mem and Redis sides of one ckptserver binary, named with prefix. */
async function serverSides(prefix: string, binary?: string): Promise<string> {
  const mem = await startServer('mem', undefined, binary)
  sides.push({ name: `${prefix}mem`, stores: createPersistence<Msg>({ url: mem.url }).stores as unknown as TurnStores, stop: () => mem.stop() })
  if (!noRedis) {
    const redis: Running = await startRedis(true)
    const server = await startServer(`${redis.url}?prefix=bench`, undefined, binary)
    sides.push({
      name: `${prefix}redis`,
      stores: createPersistence<Msg>({ url: server.url }).stores as unknown as TurnStores,
      stop: async () => {
        await server.stop()
        await redis.stop()
      },
    })
  }
  return mem.url
}
const memURL = await serverSides('ckpt-')
if (values.base !== '') await serverSides('base-', resolve(values.base))
let sqliteWhy: string | undefined
const nodeMajor = Number(process.versions.node.split('.')[0])
if (values.sqlite === '') sqliteWhy = "no --sqlite module (nor $CKPT_BENCH_SQLITE): TanStack's SQLite example is not present"
else if (nodeMajor < 22) sqliteWhy = `Node ${process.version} has no node:sqlite (it needs Node ≥ 22.5)`
if (sqliteWhy === undefined) {
  const mod = (await import(pathToFileURL(resolve(values.sqlite)).href)) as {
    sqlitePersistence?: (o: { url: string; migrate: boolean }) => { stores: TurnStores; close: () => void }
  }
  if (typeof mod.sqlitePersistence !== 'function') sqliteWhy = `${values.sqlite} exports no sqlitePersistence`
  else {
    const dir = mkdtempSync(join(tmpdir(), 'bench-turn-sqlite-'))
    const p = mod.sqlitePersistence({ url: join(dir, 'chat.db'), migrate: true })
    sides.push({
      name: 'sqlite-wal',
      stores: p.stores,
      stop: () => {
        p.close()
        rmSync(dir, { recursive: true, force: true })
      },
    })
  }
}
if (sqliteWhy !== undefined) console.log(`# our side alone: ${sqliteWhy}`)

console.log(
  `one turn = runs.createOrResume + runs.findActiveRun + runs.update(completed) + messages.saveThread (${keep} messages of ${values.kb} KB); ` +
    `Node ${process.version}; ${rounds} rounds of ${seconds} s per side, interleaved (order rotated); ckptserver on mem at ${memURL}${values.base === '' ? '' : `; base- sides: ${values.base}`}`,
)
console.log('conv  side         turns/s (median)  p50 ms  p99 ms  Node CPU µs/turn  vs sqlite-wal: of medians, median of paired rounds (min–max)')
for (const conversations of counts(values.conversations)) {
  const got = await interleaved(sides, rounds, seconds, (s, secs) => round(s.stores, conversations, secs))
  const sq = sides.findIndex((s) => s.name === 'sqlite-wal')
  sides.forEach((s, j) => {
    const rs = got[j]!
    const vs = sq >= 0 && j !== sq ? `${(median(rs.map(rate)) / median(got[sq]!.map(rate))).toFixed(2)}, ${pairedRatios(rs, got[sq]!)}` : ''
    console.log(`${String(conversations).padStart(4)}  ${s.name.padEnd(11)}  ${median(rs.map(rate)).toFixed(0).padStart(16)}  ${p50p99(rs, 2)}  ${cpuPerOp(rs).toFixed(0).padStart(16)}  ${vs}`)
  })
}
for (const s of sides) await s.stop()
