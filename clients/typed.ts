// Type-checked (tsc --strict --noEmit) against the types graphql-codegen's
// client preset makes of documents/*.graphql, which use every root field.
// Each check fails to compile when the schema gives a client a looser type:
// a scalar typed any, an enum that is an open string, a nullable id.
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { useFragment, type FragmentType } from './gen';
import {
  ChannelFieldsFragmentDoc, PostFieldsFragmentDoc,
  FeedDocument, ChannelPostsDocument, ChannelSearchDocument, OnePostDocument, OneNodeDocument, SomeNodesDocument,
  PreviewsDocument, FeedUpdatesDocument,
  type FeedUpdateKind, type MediaKind, type ChannelErrorCode, type PostFieldsFragment,
} from './gen/graphql';

type IsAny<T> = 0 extends 1 & T ? true : false;
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
const expect = <T extends true>(): void => undefined;

// DateTime is a string (strictScalars names it; any other would fail codegen).
expect<Equal<PostFieldsFragment['date'], string | null>>();
expect<IsAny<PostFieldsFragment['date']> extends false ? true : false>();
// Keys for normalized caches are non-null on every object a post holds.
type Elem<T> = T extends ReadonlyArray<infer E> ? E : NonNullable<T>;
type Keys = { [K in 'text' | 'media' | 'poll' | 'location' | 'inlineButtons' | 'reply' | 'linkPreview' | 'reactions' | 'forwardedFrom' | 'service']: Elem<PostFieldsFragment[K]>['id'] };
expect<Equal<Keys[keyof Keys], string>>();
// Closed sets are enums, not strings.
expect<Equal<FeedUpdateKind, 'EDITED' | 'NEW' | 'REMOVED'>>();
expect<string extends MediaKind ? false : true>();
expect<string extends ChannelErrorCode ? false : true>();

function describe(kind: FeedUpdateKind): string {
  switch (kind) {
    case 'NEW': return 'new';
    case 'EDITED': return 'edited';
    case 'REMOVED': return 'removed';
  }
}

function postLine(ref: FragmentType<typeof PostFieldsFragmentDoc>): string {
  const p = useFragment(PostFieldsFragmentDoc, ref);
  const ch = useFragment(ChannelFieldsFragmentDoc, p.inChannel);
  const when: string = p.date ?? 'undated';
  const media = p.media.map((m) => `${m.kind}${m.available ? '' : ' (unavailable)'}`).join(', ');
  return `${ch.username}/${p.messageId ?? '-'} ${when} ${p.text?.plain ?? ''} ${media}`;
}

// Every root field, with its variables checked.
type Run = <R, V>(doc: TypedDocumentNode<R, V>, vars: V) => R;
export function everyRootField(run: Run): string[] {
  const out: string[] = [];
  const feed = run(FeedDocument, { channels: ['tmefeed_news', 'retro_channel'], first: 5, order: 'NEWEST', filter: { mediaKinds: ['IMAGE'], since: '2024-01-01T00:00:00Z' } });
  for (const e of feed.feed.edges) out.push(`${e.node.score.toFixed(2)} ${postLine(e.node.post)}`);
  for (const f of feed.feed.failedChannels) out.push(`${f.username}: ${f.code satisfies ChannelErrorCode}`);
  const posts = run(ChannelPostsDocument, { username: 'tmefeed_news', first: 3 });
  for (const e of posts.channel?.posts.edges ?? []) out.push(postLine(e.node));
  const found = run(ChannelSearchDocument, { username: 'tmefeed_news', query: 'release' });
  out.push(`${found.channel?.search.edges.length ?? 0} found`);
  const post = run(OnePostDocument, { channel: 'tmefeed_news', messageId: 52 });
  if (post.post) out.push(postLine(post.post));
  const node = run(OneNodeDocument, { id: 'x' });
  if (node.node?.__typename === 'Post') out.push(postLine(node.node));
  const nodes = run(SomeNodesDocument, { ids: ['x', 'y'] });
  for (const n of nodes.nodes) if (n?.__typename === 'Channel') out.push(useFragment(ChannelFieldsFragmentDoc, n).title);
  const previews = run(PreviewsDocument, { usernames: ['durov'] });
  for (const r of previews.previews) out.push(r.preview ? `${r.preview.username} ${r.preview.subscribers ?? '?'}` : `${r.username}: ${r.error?.code}`);
  const update = run(FeedUpdatesDocument, { channels: ['just_launched'] });
  out.push(`${describe(update.feedUpdates.kind)} ${postLine(update.feedUpdates.post)}`);
  return out;
}
