// Stock graphql-ws and graphql-sse clients, with their default options,
// subscribed to the demo server's just_launched (a post every 15 s)
// through a SIGTERM and a restart on the same port: each must receive a
// post published after the restart with no code of ours reconnecting,
// and report no error; every update carries its event id in extensions.
import WebSocket from 'ws';
import { createClient as wsClient } from 'graphql-ws';
import { createClient as sseClient } from 'graphql-sse';

const query = 'subscription { feedUpdates(channels: ["just_launched"]) { kind post { messageId } } }';

const until = async (pred, ms) => {
  const end = Date.now() + ms;
  while (!pred() && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
  return pred();
};

// restartSubscriptions subscribes through server (a running demo server:
// url, restart()) and restarts it once an event has arrived on both.
export async function restartSubscriptions(server) {
  const got = { ws: [], sse: [] };
  const errors = [];
  const ws = wsClient({ url: server.url.replace('http', 'ws'), webSocketImpl: WebSocket });
  const sse = sseClient({ url: server.url });
  for (const [name, client] of [['ws', ws], ['sse', sse]]) {
    (async () => {
      try {
        for await (const r of client.iterate({ query })) {
          if (r.errors) { errors.push(`${name}: ${JSON.stringify(r.errors)}`); continue; }
          // Each update carries its event id, to resume after it.
          if (!r.extensions || !/^\d+-\d+$/.test(r.extensions.eventId)) errors.push(`${name}: no extensions.eventId in ${JSON.stringify(r)}`);
          got[name].push(`${r.data.feedUpdates.kind} ${r.data.feedUpdates.post.messageId} ${r.extensions && r.extensions.eventId}`);
          console.log(new Date().toISOString(), name, got[name].at(-1));
        }
        errors.push(`${name}: the iteration completed`);
      } catch (e) { errors.push(`${name}: ${e && e.message || JSON.stringify(e)}`); }
    })();
  }
  // One event before the restart (the demo publishes every 15 s).
  const first = await until(() => got.ws.length > 0 && got.sse.length > 0, 40000);
  const before = { ws: got.ws.length, sse: got.sse.length };
  console.log('SIGTERM');
  await server.restart();
  console.log('restarted on the same port');
  const ok = first && await until(() => got.ws.length > before.ws && got.sse.length > before.sse, 60000);
  const errs = [...errors]; // ending the clients below ends their iterations
  ws.dispose();
  sse.dispose();
  const after = { ws: got.ws.length - before.ws, sse: got.sse.length - before.sse };
  return { ok: ok && errs.length === 0, before, after, events: got, errors: errs };
}
