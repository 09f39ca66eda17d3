package web

import (
	"encoding/json"
	"fmt"
)

// Examples returns the queries the playground opens with, using the given
// channels.
func Examples(channels []string) []Tab {
	names, _ := json.Marshal(channels)
	one := channels[0]
	return []Tab{
		{
			Query: `# The newest posts of several channels, merged, de-duplicated and ranked.
# Press the run button (or Ctrl-Enter) to execute.
query Feed($channels: [String!]!) {
  feed(channels: $channels, first: 10, order: RANKED) {
    totalCount
    edges {
      cursor
      node {
        score
        channel { username title }
        post { messageId url date views text { plain } media { kind url } }
      }
    }
    pageInfo { hasNextPage endCursor }
    failedChannels { username code reason }
  }
}
`,
			Variables: fmt.Sprintf(`{"channels": %s}`, names),
		},
		{
			Query: fmt.Sprintf(`# A channel's header and its newest posts.
query Channel {
  channel(username: %q) {
    title
    description
    verified
    counters { subscribers subscribersText photos videos }
    posts(first: 5) {
      edges { node { messageId date text { plain entities { kind offset length url } } reactions { emoji count } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}
`, one),
		},
		{
			Query: `# Newest first, photos and videos only, without forwards.
query Filtered($channels: [String!]!) {
  feed(
    channels: $channels
    order: NEWEST
    filter: { mediaKinds: [IMAGE, VIDEO], excludeForwarded: true }
  ) {
    totalCount
    edges { node { channel { username } post { messageId date media { kind url } } } }
  }
}
`,
			Variables: fmt.Sprintf(`{"channels": %s}`, names),
		},
		{
			Query: fmt.Sprintf(`# Telegram's own search of a channel, newest matches first.
query Search($query: String!) {
  channel(username: %q) {
    search(query: $query, first: 10) {
      edges { node { messageId date url text { plain } } }
      pageInfo { hasNextPage }
    }
  }
}
`, one),
			Variables: `{"query": "tmefeed"}`,
		},
		{
			Query: fmt.Sprintf(`# Preview cards; unknown names get an error of their own.
query Previews {
  previews(usernames: [%q, "no_such_channel_here"]) {
    username
    preview { title subscribers verified }
    error { code message }
  }
}
`, one),
		},
		{
			Query: `# Live updates: posts as they are published,
# edited and removed, over a WebSocket. It runs
# until stopped (the same button); each event
# replaces the last one shown.
subscription Updates($channels: [String!]!) {
  feedUpdates(channels: $channels) {
    kind
    channel { username }
    post { messageId date url text { plain } }
  }
}
`,
			Variables: fmt.Sprintf(`{"channels": %s}`, names),
		},
	}
}
