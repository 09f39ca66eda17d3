// The peer tools/hitbench -yoga measures beside tmefeed: GraphQL Yoga with
// @envelop/response-cache, serving tmefeed's schema (graph/schema.graphqls)
// on /graphql, POST and GET, as a Node GraphQL server with a response cache
// would serve tmefeed's dashboard query.
//
// Its one resolver answers Query.feed with the feed tmefeed answered to
// that query (YOGAPEER_ANSWER, a {"data": {"feed": …}} file hitbench
// writes), whatever the arguments: the other fields are read from it by
// Yoga's default resolvers. The response cache keeps the whole result per
// document and variables, so a repeated query is parsed (Yoga keeps parsed
// and validated documents), looked up and serialized: what a cached hit
// costs in Yoga.
//
//	YOGAPEER_ANSWER=answer.json PORT=4000 node server.mjs
//
// YOGAPEER_SCHEMA overrides the schema file. The server listens on
// 127.0.0.1:PORT and ends on SIGTERM or SIGINT.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createSchema, createYoga } from 'graphql-yoga';
import { useResponseCache } from '@envelop/response-cache';

const schemaFile = process.env.YOGAPEER_SCHEMA || new URL('../../graph/schema.graphqls', import.meta.url);
const answerFile = process.env.YOGAPEER_ANSWER;
const port = Number(process.env.PORT || 4000);
if (!answerFile) {
  console.error('yogapeer: YOGAPEER_ANSWER must name the answer file');
  process.exit(2);
}
const answer = JSON.parse(readFileSync(answerFile, 'utf8'));
if (!answer?.data?.feed) {
  console.error(`yogapeer: ${answerFile} holds no data.feed`);
  process.exit(2);
}

const yoga = createYoga({
  schema: createSchema({
    typeDefs: readFileSync(schemaFile, 'utf8'),
    resolvers: {
      Query: { feed: () => answer.data.feed },
      Node: { __resolveType: (obj) => obj.__typename },
    },
  }),
  // One cache for every client (no sessions), entries kept until the
  // process ends: every repeated request is a hit. No id fields: the
  // cache would add id to every object selected without it, and the
  // answer has only the ids the query selects (tmefeed's ids are opaque).
  plugins: [useResponseCache({ session: () => null, ttl: Infinity, idFields: [] })],
  logging: false,
  graphiql: false,
  landingPage: false,
});

const server = createServer(yoga);
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => {
  console.log(`yogapeer: listening on 127.0.0.1:${port}`);
});
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => server.close(() => process.exit(0)));
}
