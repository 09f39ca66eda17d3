// Normalized caches with no type policies: urql's graphcache with
// relayPagination() and Apollo's InMemoryCache with relayStylePagination()
// on the paged fields, nothing else. Each pages a feed of channels that
// share message numbers (hadashot_today and retro_channel) forwards to the
// end and, in a cache of its own, backwards from the end to the start, and
// pages one channel's posts; the merged lists must hold every post once,
// the same posts plain HTTP paging returns, each with its own channel and
// text. Then the other root fields' documents go through both caches.
// Every console warning or error either library prints is counted: there
// must be none. URL is the server's /graphql.
import { readFileSync } from 'node:fs';
import { parse } from 'graphql';
import { Client, fetchExchange } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { relayPagination } from '@urql/exchange-graphcache/extras';
import { ApolloClient, InMemoryCache, HttpLink } from '@apollo/client';
import { relayStylePagination } from '@apollo/client/utilities';
import { loadDevMessages, loadErrorMessages } from '@apollo/client/dev';

// The feed's channels: every demo channel but just_launched, whose posts
// come and go every 15 s while the feed is paged.
export const feedChannels = ['tmefeed_news', 'emoji_party', 'hadashot_today', 'kanal_novostei', 'late_edition',
  'nameless_notes', 'retro_channel', 'video_desk'];
const pageSize = 7;
const postsChannel = 'tmefeed_news';

const fragments = readFileSync(new URL('documents/fragments.graphql', import.meta.url), 'utf8');
// doc is documents/<name>.graphql, with the shared fragments if it uses them.
const doc = (name) => {
  const text = readFileSync(new URL(`documents/${name}.graphql`, import.meta.url), 'utf8');
  return parse(text.includes('...') ? text + fragments : text);
};
const FEED = doc('feed');
const POSTS = doc('posts');
const others = { post: doc('post'), previews: doc('previews'), search: doc('search') };

// warnings holds every console.warn and console.error of the libraries.
const warnings = [];
for (const level of ['warn', 'error']) {
  const orig = console[level].bind(console);
  console[level] = (...args) => { warnings.push(`${level}: ${args.map(String).join(' ')}`); orig(...args); };
}
loadDevMessages();
loadErrorMessages();

// identity is what a cache must not mix up between channels sharing message
// numbers: the post's id, channel, number and text.
const identity = (p) => `${p.id} ${p.inChannel.username}/${p.messageId} ${JSON.stringify(p.text?.plain ?? '')}`;

async function http(url, query, variables) {
  const res = await fetch(url, {
    method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    body: JSON.stringify({ query, variables }), signal: AbortSignal.timeout(15000),
  });
  const body = await res.json();
  if (!res.ok || body.errors) throw new Error(`HTTP ${res.status}: ${JSON.stringify(body.errors)}`);
  return body.data;
}

// pageAll pages conn (a function from variables to a connection) to the
// end, forwards or backwards, and returns the last answer's connection:
// in a client with a pagination policy, every page merged.
async function pageAll(conn, backwards, limit = 100) {
  let vars = backwards ? { last: pageSize } : { first: pageSize };
  let c;
  let pages = 0;
  for (;;) {
    c = await conn(vars);
    pages++;
    const more = backwards ? c.pageInfo.hasPreviousPage : c.pageInfo.hasNextPage;
    if (!more) return { conn: c, pages };
    if (pages > limit) throw new Error('paging does not end');
    vars = backwards ? { last: pageSize, before: c.pageInfo.startCursor } : { first: pageSize, after: c.pageInfo.endCursor };
  }
}

const feedOf = (d) => d.feed;
const postsOf = (d) => d.channel.posts;
const feedPosts = (c) => c.edges.map((e) => identity(e.node.post));
const channelPosts = (c) => c.edges.map((e) => identity(e.node));

function urqlClient(url) {
  return new Client({
    url,
    preferGetMethod: false,
    exchanges: [cacheExchange({ resolvers: { Query: { feed: relayPagination() }, Channel: { posts: relayPagination() } } }), fetchExchange],
  });
}

function apolloClient(url) {
  return new ApolloClient({
    link: new HttpLink({ uri: url }),
    cache: new InMemoryCache({
      typePolicies: {
        Query: { fields: { feed: relayStylePagination(['channels', 'order', 'filter']) } },
        Channel: { fields: { posts: relayStylePagination() } },
      },
    }),
  });
}

async function urqlQuery(client, query, variables) {
  const r = await client.query(query, variables).toPromise();
  if (r.error) throw new Error(`urql: ${r.error.message}`);
  return r.data;
}

// apolloQuery asks the network for each page (cache-first would answer
// the paged field from the pages already merged) and answers from the
// cache, where relayStylePagination merges it.
async function apolloQuery(client, query, variables) {
  const r = await client.query({ query, variables, fetchPolicy: 'network-only' });
  if (r.error) throw new Error(`apollo: ${r.error.message}`);
  return r.data;
}

// compare checks that got holds every post of want once, and nothing else.
function compare(what, got, want, problems) {
  const seen = new Set();
  for (const p of got) {
    if (seen.has(p)) problems.push(`${what}: ${p} twice`);
    seen.add(p);
  }
  const wanted = new Set(want);
  for (const p of wanted) if (!seen.has(p)) problems.push(`${what}: missing ${p}`);
  for (const p of seen) if (!wanted.has(p)) problems.push(`${what}: not in the feed: ${p}`);
  if (got.length !== want.length) problems.push(`${what}: ${got.length} posts, plain paging ${want.length}`);
  return got.length;
}

export async function runCaches(url) {
  const problems = [];
  const feedVars = { channels: feedChannels, order: 'NEWEST' };
  const feedQ = FEED.loc.source.body;
  const postsQ = POSTS.loc.source.body;

  // What plain HTTP paging returns.
  const plainFeed = [];
  await pageAll(async (v) => {
    const c = feedOf(await http(url, feedQ, { ...feedVars, ...v }));
    plainFeed.push(...feedPosts(c));
    return c;
  }, false);
  const plainPosts = [];
  await pageAll(async (v) => {
    const c = postsOf(await http(url, postsQ, { username: postsChannel, first: v.first, after: v.after }));
    plainPosts.push(...channelPosts(c));
    return c;
  }, false);
  const byChannel = new Map();
  for (const p of plainFeed) {
    const [ch, num] = p.split(' ')[1].split('/');
    byChannel.set(num, (byChannel.get(num) ?? new Set()).add(ch));
  }
  const sharedNumbers = [...byChannel.values()].filter((s) => s.size > 1).length;
  if (sharedNumbers === 0) problems.push('no message number is shared by two channels of the feed');

  const summary = { feedPosts: plainFeed.length, sharedNumbers, postsOfChannel: plainPosts.length, compared: 0, runs: [] };
  const clients = [['urql graphcache', urqlClient, urqlQuery], ['Apollo InMemoryCache', apolloClient, apolloQuery]];
  for (const [name, make, query] of clients) {
    for (const backwards of [false, true]) {
      const client = make(url); // a cache of its own for each direction
      const { conn, pages } = await pageAll(async (v) => feedOf(await query(client, FEED, { ...feedVars, ...v })), backwards);
      const what = `${name} feed ${backwards ? 'backwards' : 'forwards'}`;
      summary.compared += compare(what, feedPosts(conn), plainFeed, problems);
      summary.runs.push(`${what}: ${pages} pages, ${conn.edges.length} posts`);
    }
    const client = make(url);
    const { conn, pages } = await pageAll(async (v) => postsOf(await query(client, POSTS, { username: postsChannel, first: v.first, after: v.after })), false);
    const what = `${name} ${postsChannel} posts`;
    summary.compared += compare(what, channelPosts(conn), plainPosts, problems);
    summary.runs.push(`${what}: ${pages} pages, ${conn.edges.length} posts`);
    // The other root fields' documents, in the same cache.
    const post = await query(client, others.post, { channel: 'hadashot_today', messageId: 16 });
    if (post.post?.inChannel.username !== 'hadashot_today') problems.push(`${name} post: ${JSON.stringify(post.post?.inChannel)}`);
    const previews = await query(client, others.previews, { usernames: ['tmefeed_news', 'retro_channel', 'nobody_here_404', 'no'] });
    if (previews.previews.filter((r) => r.preview).length !== 2 || previews.previews.filter((r) => r.error).length !== 2) {
      problems.push(`${name} previews: ${JSON.stringify(previews.previews)}`);
    }
    await query(client, others.search, { username: 'tmefeed_news', query: 'tmefeed' });
  }
  summary.warnings = warnings.length;
  summary.problems = problems;
  return summary;
}
