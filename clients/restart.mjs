// Stock graphql-ws and graphql-sse clients, with their default options,
// subscribed to the demo server's just_launched (a post every 15 s)
// through a SIGTERM and a restart on the same port: each must receive a
// post published after the restart with no code of ours reconnecting,
// and report no error; every update carries its event id in extensions. TMEFEED is the server's executable.
import { spawn } from 'node:child_process';
import WebSocket from 'ws';
import { createClient as wsClient } from 'graphql-ws';
import { createClient as sseClient } from 'graphql-sse';

const port = process.env.PORT || '18431';
const url = `http://127.0.0.1:${port}/graphql`;
const query = 'subscription { feedUpdates(channels: ["just_launched"]) { kind post { messageId } } }';
let server;
function start() {
  server = spawn(process.env.TMEFEED, ['serve', '--demo', '--port', port, '--log-level', 'warn'], { stdio: 'inherit' });
}
async function ready() {
  for (;;) {
    try { if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return; } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
}
const got = { ws: [], sse: [] };
const warn = [];
start(); await ready();
const ws = wsClient({ url: url.replace('http', 'ws'), webSocketImpl: WebSocket });
const sse = sseClient({ url });
for (const [name, client] of [['ws', ws], ['sse', sse]]) {
  (async () => {
    try {
      for await (const r of client.iterate({ query })) {
        if (r.errors) { warn.push(`${name}: ${JSON.stringify(r.errors)}`); continue; }
        // Each update carries its event id, to resume after it.
        if (!r.extensions || !/^\d+-\d+$/.test(r.extensions.eventId)) warn.push(`${name}: no extensions.eventId in ${JSON.stringify(r)}`);
        got[name].push(`${r.data.feedUpdates.kind} ${r.data.feedUpdates.post.messageId} ${r.extensions && r.extensions.eventId}`);
        console.log(new Date().toISOString(), name, got[name].at(-1));
      }
      warn.push(`${name}: the iteration completed`);
    } catch (e) { warn.push(`${name}: ${e && e.message || JSON.stringify(e)}`); }
  })();
}
const until = async (pred, ms) => { const end = Date.now() + ms; while (!pred() && Date.now() < end) await new Promise((r) => setTimeout(r, 100)); return pred(); };
// One event before the restart (the demo publishes every 15 s).
await until(() => got.ws.length > 0 && got.sse.length > 0, 40000);
const before = { ws: got.ws.length, sse: got.sse.length };
console.log('SIGTERM');
server.kill('SIGTERM');
await new Promise((r) => server.once('exit', r));
start(); await ready();
console.log('restarted on the same port');
const ok = await until(() => got.ws.length > before.ws && got.sse.length > before.sse, 60000);
console.log(JSON.stringify({ before, after: { ws: got.ws.length, sse: got.sse.length }, events: got, warnings: warn.length, messages: warn, ok }));
server.kill('SIGTERM');
process.exit(ok && warn.length === 0 ? 0 : 1);
