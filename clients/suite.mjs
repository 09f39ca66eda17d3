// The client conformance suite (make clients): stock clients from npm,
// pinned by package-lock.json, against the demo server (TMEFEED, the
// executable; PORT, default 18431).
//  1. graphql-codegen's client preset (strictScalars) types
//     documents/*.graphql, which use every root field, and tsc --strict
//     checks typed.ts against those types;
//  2. urql graphcache and Apollo InMemoryCache page a feed both ways and a
//     channel's posts, with no warning (caches.mjs);
//  3. graphql-ws and graphql-sse go through a SIGTERM and a restart
//     (restart.mjs).
// Run with node --conditions=development, so that Apollo prints its
// development warnings. Exits non-zero on any failure.
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runCaches } from './caches.mjs';
import { restartSubscriptions } from './restart.mjs';

const dir = fileURLToPath(new URL('.', import.meta.url));
const port = process.env.PORT || '18431';
const url = `http://127.0.0.1:${port}/graphql`;
const failures = [];

function tool(name, args) {
  const r = spawnSync(`${dir}node_modules/.bin/${name}`, args, { cwd: dir, stdio: 'inherit', timeout: 180000 });
  if (r.status !== 0) failures.push(`${name} ${args.join(' ')}: exit ${r.status ?? r.signal ?? r.error}`);
  return r.status === 0;
}
const typed = tool('graphql-codegen', ['--config', 'codegen.yml', '--silent']) && tool('tsc', ['-p', '.']);

let proc;
function start() {
  proc = spawn(process.env.TMEFEED, ['serve', '--demo', '--port', port, '--log-level', 'warn'], { stdio: 'inherit' });
}
async function ready() {
  const end = Date.now() + 30000;
  for (;;) {
    try { if ((await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1000) })).ok) return; } catch {}
    if (Date.now() > end) throw new Error('the server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
}
async function stop() {
  if (proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await exited;
}
const server = { url, restart: async () => { await stop(); start(); await ready(); } };

let caches = { warnings: 0, compared: 0, problems: [] };
let restart = { ok: false, after: {}, errors: [] };
try {
  start();
  await ready();
  caches = await runCaches(url);
  for (const p of caches.problems) failures.push(p);
  if (caches.warnings > 0) failures.push(`${caches.warnings} console warnings from the caches`);
  restart = await restartSubscriptions(server);
  if (!restart.ok) failures.push(`subscriptions across the restart: ${JSON.stringify(restart)}`);
} catch (e) {
  failures.push(String(e && e.stack || e));
} finally {
  if (proc) await stop();
}

console.log('client conformance summary');
console.log(`  codegen client-preset (strictScalars) + tsc --strict over every root field: ${typed ? 'ok' : 'FAILED'}`);
for (const r of caches.runs ?? []) console.log(`  ${r}`);
console.log(`  feed of ${caches.feedPosts ?? '?'} posts (${caches.sharedNumbers ?? '?'} message numbers in two channels), ${caches.postsOfChannel ?? '?'} posts of one channel`);
console.log(`  warnings: ${caches.warnings}`);
console.log(`  posts compared with plain HTTP paging: ${caches.compared}`);
console.log(`  events received across the restart: graphql-ws ${restart.after.ws ?? 0}, graphql-sse ${restart.after.sse ?? 0} (before it: ${restart.before?.ws ?? 0}, ${restart.before?.sse ?? 0})`);
console.log(`  client errors: ${restart.errors.length}`);
console.log(`${failures.length === 0 ? 'ok' : 'FAILED'}: ${failures.length} failures`);
for (const f of failures) console.log(`  ${f}`);
process.exit(failures.length === 0 ? 0 : 1);
