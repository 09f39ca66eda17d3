package parser

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/tmefeed/tmefeed/tme"
)

// Conformance against real t.me pages that other people captured and
// committed to public repositories. They live outside this repository, in
// ../shared/realpages relative to the module root (override with
// TMEFEED_REALPAGES), and are never copied in. Outside CI, a checkout
// without them skips the test; under CI=true it fails instead, unless
// TMEFEED_REALPAGES=none says the folder is truly absent (.ci/run sets
// it so only then, and otherwise to the folder's absolute path), so that
// CI cannot pass without the real pages by accident.
//
// Every page there must parse without a panic and without an error other than
// the typed ones its content calls for, and no HTML field may carry t.me's
// wrapper elements (see cfUnwrapped). The pages in conformancePages also
// carry expectations written by hand from reading their markup: post ids,
// Unix dates, views, text, media, replies, forwards, polls, link previews,
// reactions, counters and cursors. A failure names the file, the post and the
// field.

const (
	cfRealPagesEnv = "TMEFEED_REALPAGES"
	// cfRealPagesNone as TMEFEED_REALPAGES: the folder is absent, and
	// whoever runs the tests says so.
	cfRealPagesNone = "none"
)

// cfWS says how strictly strings from a page are compared. Pages that someone
// re-indented or pretty-printed carry layout whitespace Telegram never served.
type cfWS int

const (
	wsDefault cfWS = iota // the page's mode (for a post), or wsExact (for a page)
	wsExact               // byte for byte: pages as Telegram served them
	wsTrim                // ASCII space trimmed at both ends
	wsLoose               // runs of ASCII whitespace collapse to one space, ends trimmed
)

// cfPage is one real page with what it must parse to.
type cfPage struct {
	file    string // path below the realpages folder
	ws      cfWS
	err     error // the typed error the page calls for
	body    *cfBody
	preview *cfPreview
	embed   *cfPost
}

// cfBody describes a channel page (or a fragment of one).
type cfBody struct {
	channel *cfChannel // set for whole /s/ pages: header and cursors are checked
	before  int        // from <link rel="prev" href="…?before=N">, 0 when absent
	after   int        // from <link rel="next" href="…?after=N">, 0 when absent
	user    string     // lower-cased username every Post.Channel must hold
	ids     []int      // every post id in page order; nil = not checked
	posts   []cfPost
}

type cfChannel struct {
	username string // compared case-insensitively
	title    string
	desc     string // prefix of Description.String; "" = no description
	counters Counters
	verified bool
}

type cfPreview struct {
	username, title string
	subs            string
	subsN           int64
	desc            string
	avatar          string // substring of Avatar
	verified        bool
}

// cfPost describes one post. Footer fields, media, service mark and the
// presence of reply, forward, poll, link preview, inline buttons and location
// are always checked (zero value = absent); text and reactions only when set.
type cfPost struct {
	id      int
	channel string // embeds: lower-cased username from data-post or the post link
	unix    int64
	views   string
	viewsN  int64
	edited  bool
	author  string // signature; "" = none

	ws       cfWS   // overrides the page's mode
	text     string // prefix of Text.String ("" = not checked)
	textFull bool   // text is the whole Text.String
	textEnd  string // suffix of Text.String
	once     bool   // text occurs once (album text nested in a second text div)
	noText   bool
	html     string   // substring of Text.HTML
	htmlFrom string   // prefix of Text.HTML: the innermost text block's markup
	ents     []Entity // entities that must be present (offsets in UTF-16 units)

	media    []cfMedia
	anyMedia bool      // media not checked
	reacts   []cfReact // nil = not checked
	link     *cfLink
	reply    *cfReply
	fwd      *Forwarded
	poll     *Poll
	inline   []Inline
	loc      *Location
	service  string // "" = not a service message, "*" = any service type
	svcText  string // substring of Service.Text
}

type cfMedia struct {
	kind        MediaKind
	dur         string // "" = no duration shown
	raw         int
	title       string
	extra       string
	unavailable bool
	url         string // substring of URL
	thumb       string // substring of Thumb
	waves       string // prefix of Waves
}

type cfReact struct {
	typ   ReactionKind
	emoji string
	id    string
	count string
	n     int64
}

type cfLink struct {
	url, site, title string
	desc             string // prefix of Description.String; "" = none
	thumb            bool
}

type cfReply struct {
	to    int
	name  string
	text  string // prefix
	cover bool
}

func img() cfMedia                  { return cfMedia{kind: MediaImage} }
func gif() cfMedia                  { return cfMedia{kind: MediaGIF} }
func vid(d string, raw int) cfMedia { return cfMedia{kind: MediaVideo, dur: d, raw: raw} }
func bigVid(d string, r int) cfMedia {
	return cfMedia{kind: MediaVideo, dur: d, raw: r, unavailable: true}
}
func imgs(n int) []cfMedia {
	m := make([]cfMedia, n)
	for i := range m {
		m[i] = img()
	}
	return m
}
func stars(c string, n int64) cfReact { return cfReact{typ: ReactStars, count: c, n: n} }
func custom(id, c string, n int64) cfReact {
	return cfReact{typ: ReactCustomEmoji, id: id, count: c, n: n}
}
func emo(e, c string, n int64) cfReact { return cfReact{typ: ReactEmoji, emoji: e, count: c, n: n} }

// Custom-emoji reaction ids seen on @durov in 2026.
const (
	rHeart   = "5265077361648368841"
	rFire    = "5465587407350942612"
	rLaugh   = "5399847211989246390"
	rThumb   = "5936157098181135162"
	rCat     = "5373223594484587136"
	rSalute2 = "5447193685919811994"
	rPray    = "5447458260200214425"
)

var conformancePages = []cfPage{
	// ---- channel pages ----
	{
		file: "s_2026_durov_full_redacted.html", ws: wsExact,
		body: &cfBody{
			channel: &cfChannel{
				username: "durov", title: "Pavel Durov", desc: "Founder of Telegram.", verified: true,
				counters: Counters{Subscribers: "11.1M", SubscribersCount: 11100000, Photos: "102", PhotosCount: 102,
					Videos: "45", VideosCount: 45, Links: "196", LinksCount: 196},
			},
			before: 523,
			user:   "durov",
			ids:    []int{523, 524, 525, 526, 527, 528, 529, 531, 532, 533, 534, 535, 536, 537, 538, 539, 540, 541, 542, 543},
			posts: []cfPost{
				{id: 523, unix: 1781033631, views: "12.5M", viewsN: 12500000, author: "Pavel Durov",
					text: "\u231a\ufe0f A fully native Telegram app for Apple Watch is out.", textFull: true,
					html:  "<b>Telegram app for Apple Watch</b>",
					ents:  []Entity{{Offset: 18, Length: 28, Type: EntityBold}},
					media: []cfMedia{{kind: MediaGIF, url: "3d8e6da6a4.mp4", thumb: "cdn4.telesco.pe/file/"}},
					reacts: []cfReact{stars("7.03K", 7030), custom(rFire, "55.2K", 55200), custom(rHeart, "18.6K", 18600),
						custom(rLaugh, "13.4K", 13400), custom(rThumb, "825", 825), custom(rCat, "220", 220)}},
				{id: 524, unix: 1781200471, views: "14.7M", viewsN: 14700000, author: "Pavel Durov",
					text:  "\u231a\ufe0f Telegram is now on Wear OS.\n\nOwners of Galaxy Watch, Pixel Watch",
					media: []cfMedia{gif()},
					reacts: []cfReact{stars("5.46K", 5460), custom(rFire, "38.4K", 38400), custom(rLaugh, "12.3K", 12300),
						custom(rHeart, "8.45K", 8450), custom(rThumb, "1.11K", 1110), custom(rCat, "277", 277)}},
				{id: 525, unix: 1781291719, views: "16.3M", viewsN: 16300000, author: "Pavel Durov",
					text: "\U0001f504 Telegram\u2019s new update is out. Lots of great new features.\n\n\U0001f602 But most importantly",
					ents: []Entity{{Offset: 14, Length: 10, Type: EntityTextLink, URL: "https://telegram.org/blog/watch-apps-and-more"}},
					link: &cfLink{url: "https://telegram.org/blog/watch-apps-and-more", site: "Telegram",
						title: "Smartwatch Apps, Rich Text for Bots, AI Guardians for Groups, and Much More",
						desc:  "Today\u2019s update brings Telegram to Apple Watch and Android smartwatches", thumb: true},
					reacts: []cfReact{stars("4.44K", 4440), custom(rHeart, "19.8K", 19800), custom(rFire, "8.04K", 8040),
						custom(rLaugh, "6.05K", 6050), custom(rThumb, "1.16K", 1160), custom(rCat, "244", 244)}},
				{id: 526, unix: 1781381720, views: "22.9M", viewsN: 22900000, author: "Pavel Durov",
					text: "\U0001f5a5 Don't be surprised if you see tables", media: []cfMedia{gif()}},
				{id: 527, unix: 1781538795, views: "24M", viewsN: 24000000, author: "Pavel Durov", edited: true,
					text: "\U0001f3c6 Telegram is launching a $200,000 contest for content creators.\n\n\U0001f3ac Create a video",
					reacts: []cfReact{stars("25.1K", 25100), custom(rHeart, "321K", 321000), custom(rFire, "89.1K", 89100),
						custom(rLaugh, "58.9K", 58900), custom(rThumb, "25.3K", 25300), custom(rCat, "444", 444)}},
				{id: 528, unix: 1781549893, views: "18.6M", viewsN: 18600000, author: "Pavel Durov",
					text:    "\u26d4\ufe0f The UK government wants to ban social media for children under 16.\n\nBut banning",
					textEnd: "P. S. More about digital freedom in my speech \u2014 the source material for our $200,000 clipping contest."},
				// "edited" occurs in this post's text, not in its footer.
				{id: 529, unix: 1781622329, views: "9.23M", viewsN: 9230000, author: "Pavel Durov",
					text: "\U0001f6ab India\u2019s IT ministry banned Telegram for one week"},
				{id: 531, unix: 1784234725, views: "5.39M", viewsN: 5390000, author: "Pavel Durov",
					text: "\U0001fa75 Telegram now has a Rich Text Editor.\n\nIt supports", media: []cfMedia{gif()}},
				{id: 532, unix: 1784497501, views: "5.56M", viewsN: 5560000, author: "Pavel Durov",
					text: "\U0001f3a0 Telegram now supports carousels\n\nOne small step", media: []cfMedia{gif()},
					reacts: []cfReact{stars("5.79K", 5790), custom(rCat, "55.1K", 55100), custom(rLaugh, "13.3K", 13300),
						custom(rThumb, "8.88K", 8880)}},
				{id: 534, unix: 1784819733, views: "5.74M", viewsN: 5740000, author: "Pavel Durov",
					text: "\U0001f1ec\U0001f1ea Very impressed with Georgia.\n\n\U0001f3d4 The country is known"},
				{id: 535, unix: 1785430357, views: "4.91M", viewsN: 4910000, author: "Pavel Durov", edited: true,
					text: "\U0001f4a3 Russia has designated me as a \u201cterrorist\u201d"},
				{id: 536, unix: 1785430501, views: "5.38M", viewsN: 5380000, author: "Pavel Durov",
					text: "\U0001f1e6\U0001f1eb\U0001f608", textFull: true, media: []cfMedia{{kind: MediaImage, url: ".jpg"}},
					reacts: []cfReact{stars("49K", 49000), custom(rCat, "269K", 269000), custom(rLaugh, "68.9K", 68900),
						custom(rThumb, "60.3K", 60300)}},
				{id: 537, unix: 1785741596, views: "2.99M", viewsN: 2990000, author: "Pavel Durov",
					text:    "\U0001f9e0 The 2026 International Olympiad in Artificial Intelligence starts today. \n\nAs a token",
					textEnd: "Good luck, AI coders! \U0001f340", media: []cfMedia{img()}},
				{id: 538, unix: 1785856804, views: "3.4M", viewsN: 3400000, author: "Pavel Durov", edited: true,
					text:    "Last night, Apple briefly removed Telegram from the App Store because a single user had planted illegal pornographic content in a public group chat.\n\n\u2b05\ufe0f Telegram was restored",
					textEnd: "Stay vigilant! \u261d\ufe0f",
					link: &cfLink{url: "https://telegram.org/safety", site: "Telegram", title: "Telegram Safety Overview",
						desc: "Discover how Telegram enforces safety through proactive moderation", thumb: true}},
				{id: 539, unix: 1786223474, views: "2.61M", viewsN: 2610000, author: "Pavel Durov",
					text: "\U0001f3c6 The International Olympiad in AI finished yesterday in Astana.\n\n\U0001f1f7\U0001f1fa The Russian team",
					link: &cfLink{url: "https://t.me/durov/537", site: "Telegram", title: "Pavel Durov",
						desc: "\U0001f9e0 The 2026 International Olympiad in Artificial Intelligence starts today. \n\nAs a token of support", thumb: true},
					reacts: []cfReact{stars("8.02K", 8020), custom(rLaugh, "40K", 40000), custom(rCat, "10.7K", 10700),
						custom(rThumb, "8.7K", 8700)}},
				{id: 540, unix: 1786354198, views: "3.09M", viewsN: 3090000, author: "Pavel Durov",
					text: "\U0001f1fa\U0001f1ff The 2026 International Olympiad in Informatics starts today in Tashkent.", media: []cfMedia{img()}},
				{id: 541, unix: 1786715368, views: "3.36M", viewsN: 3360000, author: "Pavel Durov", edited: true,
					text: "1\ufe0f\u20e33\ufe0f\u20e3 Telegram turns 13 today. \n\nFor over half that time"},
				{id: 542, unix: 1786800560, views: "2.05M", viewsN: 2050000, author: "Pavel Durov", edited: true,
					text: "\U0001f3c6 The International Olympiad in Informatics (IOI) ends today.\n\n\U0001f1f7\U0001f1faStudents from Moscow"},
				{id: 543, unix: 1787074651, views: "1.4M", viewsN: 1400000, author: "Pavel Durov",
					text: "\U0001f48e Telegram has applied for the .gram domain zone.\n\nIf the application is approved by ICANN",
					reacts: []cfReact{stars("16.7K", 16700), custom(rCat, "48.8K", 48800), custom(rLaugh, "18.2K", 18200),
						custom(rThumb, "12.4K", 12400)}},
			},
		},
	},
	{
		// GET /s/durov?before=528: cursors both ways. Every post with text also
		// carries a hidden media_not_supported_cont fallback: none is unsupported.
		file: "s_durov_before_get.html", ws: wsExact,
		body: &cfBody{
			channel: &cfChannel{
				username: "durov", title: "Pavel Durov", desc: "Founder of Telegram.", verified: true,
				counters: Counters{Subscribers: "10.5M", SubscribersCount: 10500000, Photos: "102", PhotosCount: 102,
					Videos: "46", VideosCount: 46, Links: "200", LinksCount: 200},
			},
			before: 508, after: 527,
			user: "durov",
			ids:  []int{508, 509, 510, 512, 513, 514, 515, 516, 517, 518, 519, 520, 521, 522, 523, 524, 525, 526, 527},
			posts: []cfPost{
				// "polls" in the text is not a poll.
				{id: 508, unix: 1778438523, views: "3.42M", viewsN: 3420000, author: "Pavel Durov",
					text:  "\U0001f4ca Channel admins can now run massive polls limited to subscribers",
					media: []cfMedia{img()},
					reacts: []cfReact{stars("5.03K", 5030), custom(rHeart, "59.1K", 59100), emo("\U0001fae1", "18.3K", 18300),
						custom(rSalute2, "12K", 12000), custom(rPray, "4.36K", 4360), custom(rThumb, "197", 197)}},
				{id: 509, unix: 1778527944, views: "3.31M", viewsN: 3310000, author: "Pavel Durov",
					text: "\U0001f6e0 Developing for TON just became 10x faster. The new toolchain",
					link: &cfLink{url: "https://ton-blockchain.github.io/acton", site: "ton-blockchain.github.io",
						title: "Acton \u2014 a unified toolchain for TON", desc: "Acton is an all-in-one CLI built around Tolk", thumb: true}},
				// Album inside tgme_widget_message_one_media with a nested media_supported_cont; its second
				// photo links to 511, which is why 511 is not a post of its own.
				{id: 510, unix: 1778606919, views: "3.81M", viewsN: 3810000, author: "Pavel Durov",
					text: "\U0001f30d With 400 validators across 6 continents, TON is one of the most decentralized", once: true,
					textEnd: "without increasing centralization risk.", media: imgs(2),
					reacts: []cfReact{stars("8.24K", 8240), custom(rHeart, "31.1K", 31100), emo("\U0001fae1", "8.95K", 8950),
						custom(rPray, "6.13K", 6130), custom(rSalute2, "3.57K", 3570), custom(rThumb, "216", 216)}},
				{id: 512, unix: 1778762337, views: "3.26M", viewsN: 3260000, author: "Pavel Durov",
					text:  "\U0001f575\ufe0f\u200d\u2642\ufe0f Now you can search 100M+ Telegram stickers",
					media: []cfMedia{{kind: MediaVideo, dur: "0:09", raw: 9, url: "c7f159051d.mp4", thumb: "cdn4.telesco.pe/file/"}}},
				{id: 513, unix: 1778868872, views: "4.37M", viewsN: 4370000, author: "Pavel Durov",
					text: "$100,400 just went to the 15 winners of the TON Consensus Challenge. \n\n\U0001f9e0 The smartest engineers",
					ents: []Entity{{Offset: 0, Length: 8, Type: EntityBold}, {Offset: 26, Length: 10, Type: EntityBold},
						{Offset: 44, Length: 23, Type: EntityTextLink, URL: "https://t.me/contest/452"}},
					link: &cfLink{url: "https://t.me/contest/452", site: "Telegram", title: "Telegram Contests",
						desc: "\U0001f48e Blockchain Contest, Round 2: Results\n\nWe awarded $100,400 to the winners"}},
				{id: 515, unix: 1779029096, views: "4.84M", viewsN: 4840000, author: "Pavel Durov",
					text: "\U0001f3c6 We just awarded $52,420 to the winners of the Telegram Art Contest.", media: []cfMedia{vid("0:14", 14)}},
				{id: 516, unix: 1779029750, views: "4.27M", viewsN: 4270000, author: "Pavel Durov",
					text: "\U0001f381", textFull: true},
				{id: 517, unix: 1779116181, views: "10.4M", viewsN: 10400000, author: "Pavel Durov",
					text: "\U0001f9e0 AI devs asked for this \u2014 and we delivered.", media: []cfMedia{vid("0:06", 6)}},
				{id: 518, unix: 1779213773, views: "4.64M", viewsN: 4640000, author: "Pavel Durov", edited: true,
					text:  "\U0001f4aa Anyone can now prompt their own text transformation style \u2014 for example, \u201cGym Bro\u201d",
					media: []cfMedia{vid("0:16", 16)}},
				{id: 519, unix: 1779291490, views: "8.84M", viewsN: 8840000, author: "Pavel Durov",
					text: "\U0001f916 Your Telegram inbox can now run itself.", media: []cfMedia{vid("0:09", 9)}},
				{id: 520, unix: 1779542767, views: "11.6M", viewsN: 11600000, author: "Pavel Durov",
					text: "\U0001f3ad WhatsApp encryption is a giant fraud.\n\n\U0001f1fa\U0001f1f8 The state of Texas just sued WhatsApp"},
				{id: 521, unix: 1780328413, views: "6.78M", viewsN: 6780000, author: "Pavel Durov", edited: true,
					text: "\U0001f48e TON\u2019s native currency is becoming Gram.",
					link: &cfLink{url: "https://gram.org/", site: "Gram", desc: "The native currency of TON", thumb: true}},
				// A bare photo: no media_supported_cont, no text.
				{id: 522, unix: 1780328772, views: "7.27M", viewsN: 7270000, author: "Pavel Durov", noText: true,
					media: []cfMedia{img()},
					reacts: []cfReact{stars("15K", 15000), custom(rHeart, "40.8K", 40800), custom(rFire, "14.7K", 14700),
						custom(rLaugh, "10.5K", 10500), custom(rThumb, "712", 712), custom(rCat, "224", 224)}},
				{id: 523, unix: 1781033631, views: "12.7M", viewsN: 12700000, author: "Pavel Durov",
					text: "\u231a\ufe0f A fully native Telegram app for Apple Watch is out.", textFull: true, media: []cfMedia{gif()}},
				{id: 527, unix: 1781538795, views: "24.3M", viewsN: 24300000, author: "Pavel Durov", edited: true,
					text: "\U0001f3c6 Telegram is launching a $200,000 contest"},
			},
		},
	},
	{
		file: "s_2023_lexfridman_full.html", ws: wsExact,
		body: &cfBody{
			channel: &cfChannel{
				username: "lexfridman", title: "Lex Fridman", verified: true,
				desc: "Host of Lex Fridman Podcast.\nResearch Scientist at MIT.\nInterested in robots and humans.",
				counters: Counters{Subscribers: "12.4K", SubscribersCount: 12400, Photos: "50", PhotosCount: 50,
					Videos: "2", VideosCount: 2, Files: "27", FilesCount: 27, Links: "98", LinksCount: 98},
			},
			before: 271,
			user:   "lexfridman",
			ids:    []int{271, 272, 273, 274, 276, 277, 278, 280, 281, 282, 283, 285, 286, 287, 288, 289, 290, 292, 293},
			posts: []cfPost{
				{id: 271, unix: 1686770947, views: "12.3K", viewsN: 12300, media: []cfMedia{{kind: MediaImage, url: ".jpg"}}, reacts: []cfReact{},
					text: "I \u2764\ufe0f Texas. Talked to McConaughey. Put on a cowboy hat. My new country album is dropping soon \U0001f923", textFull: true},
				{id: 272, unix: 1686937023, views: "11.1K", viewsN: 11100, textFull: true,
					text: "All humans are capable of both good and evil. And most who do evil believe they are doing good. History shows this over and over again."},
				{id: 274, unix: 1687132086, views: "14.1K", viewsN: 14100,
					text: "Here's my conversation with Jimmy Wales, co-founder of Wikipedia",
					link: &cfLink{url: "https://www.youtube.com/watch?v=diJp4zoQPqo", site: "YouTube",
						title: "Jimmy Wales: Wikipedia | Lex Fridman Podcast #385",
						desc:  "Jimmy Wales is the co-founder of Wikipedia. Please support this podcast by checking out our sponsors:\n- Hexclad Cookware: https://hexclad.com/lex",
						thumb: true}},
				// "Media is too big": not_supported player, empty video wrap, duration still shown.
				{id: 276, unix: 1687739650, views: "12.1K", viewsN: 12100, media: []cfMedia{bigVid("0:29", 29)},
					text: "Here's a highlight video of Mark Zuckerberg and I training jiu jitsu."},
				// Album text nested in a second text div: counted once.
				{id: 278, unix: 1687909532, views: "12.2K", viewsN: 12200, media: imgs(2),
					text: "I did an impromptu training session with Elon Musk for a few hours yesterday.", once: true,
					textEnd:  "I'm there for them, no matter what.",
					htmlFrom: "I did an impromptu training session with Elon Musk"},
				{id: 280, unix: 1688081246, views: "11.3K", viewsN: 11300,
					text: "Here's my conversation with George Hotz, his 3rd time on the podcast. We discuss everything from the nature of time & reality",
					link: &cfLink{url: "https://www.youtube.com/watch?v=dNrTrx42DGQ", site: "YouTube",
						title: "George Hotz: Tiny Corp, Twitter, AI Safety, Self-Driving, GPT, AGI & God | Lex Fridman Podcast #387",
						desc:  "George Hotz is a programmer, hacker, and the founder of comma-ai and tiny corp.", thumb: true}},
				{id: 288, unix: 1689441925, views: "11.0K", viewsN: 11000, textFull: true,
					text: "\"An eye for an eye makes the whole world blind.\" - Gandhi"},
				{id: 289, unix: 1689485128, views: "11.4K", viewsN: 11400,
					media: []cfMedia{{kind: MediaDocument, title: "lex_bibi_back.jpg", extra: "689 KB"}},
					text:  "I will speak with everyone, and I will get attacked, derided, and slandered for it.\n\nBut I believe"},
				{id: 292, unix: 1689788225, views: "13.9K", viewsN: 13900,
					media: []cfMedia{{kind: MediaDocument, title: "lex_west_bank.jpg", extra: "2.2 MB"}},
					text:  "I traveled to the West Bank and spoke with many Palestinians there"},
				{id: 293, unix: 1690063754, views: "10.9K", viewsN: 10900,
					text: "I had to return to US from the Middle East to collect my thoughts"},
			},
		},
	},
	{
		file: "s_2026_wohnungenberlin_full.html", ws: wsExact,
		body: &cfBody{
			channel: &cfChannel{
				username: "wohnungenberlin", title: "Wohnung Berlin",
				desc: "M\u00f6blierte Wohnungen, meldet euch unter info@guestberlin.de",
				counters: Counters{Subscribers: "284", SubscribersCount: 284, Photos: "140", PhotosCount: 140,
					Videos: "2", VideosCount: 2, Links: "2", LinksCount: 2},
			},
			before: 202,
			user:   "wohnungenberlin",
			ids:    []int{202, 212, 213, 223},
			posts: []cfPost{
				// Album text nested in a second text div.
				{id: 202, unix: 1769691888, views: "217", viewsN: 217, media: imgs(10), once: true,
					text: "1340\u20ac - 42m\u00b2 1-Zimmer Wohnung in Berlin Treptow mit Garten - M\u00f6bliert", textFull: true,
					htmlFrom: "1340\u20ac - 42m\u00b2 1-Zimmer"},
				{id: 212, unix: 1769760020, views: "190", viewsN: 190, textFull: true,
					text: "1580\u20ac warm 70m\u00b2 - 2 Zimmer kaulsdorf, m\u00f6bliert, Einbauk\u00fcche, Ab Sofort"},
				{id: 213, unix: 1769760024, views: "225", viewsN: 225, media: imgs(10), noText: true},
				{id: 223, unix: 1769760024, views: "224", viewsN: 224, media: imgs(1), noText: true},
			},
		},
	},
	{
		// A new channel whose only message is the service message "Channel created";
		// the counter reads "1 subscriber" (singular).
		file: "s_2026_prstnk_eprst_only_service_msg.html", ws: wsExact,
		body: &cfBody{
			channel: &cfChannel{
				username: "prstnk_eprst", title: "PRSTNK - [простенок]",
				counters: Counters{Subscribers: "1", SubscribersCount: 1},
			},
			user: "prstnk_eprst",
			ids:  []int{1},
			posts: []cfPost{
				{id: 1, unix: 1780178189, service: "channel_created", svcText: "Channel created"},
			},
		},
	},
	{
		// 2020 markup, pretty-printed by jsoup: <br> without slash, <time> without class,
		// "members" and "video" counters, inline URL buttons outside the bubble.
		file: "s_2020_xCareers_jsoup_prettified.html", ws: wsLoose,
		body: &cfBody{
			channel: &cfChannel{
				username: "xCareers", title: "xCareers: Digital Jobs",
				desc: "Денежные вакансии с зарплатой до 350 000р Заработать смогут все!",
				counters: Counters{Subscribers: "60K", SubscribersCount: 60000, Photos: "46", PhotosCount: 46,
					Videos: "1", VideosCount: 1, Links: "479", LinksCount: 479},
			},
			before: 1491,
			user:   "xcareers",
			ids:    []int{1491, 1510, 1511},
			posts: []cfPost{
				{id: 1491, unix: 1588266004, views: "4.4K", viewsN: 4400,
					text: "РАЗРАБОТЧИК IOS \U0001f525 Формат: #удаленка (на время карантина) потом #офис Локация: #москва"},
				{id: 1510, unix: 1588518003, views: "4.1K", viewsN: 4100,
					text:    "NODE.JS DEVELOPER Формат: #офис Локация: #казань, #россия",
					textEnd: "ежедневно, чтобы успеть откликаться!",
					inline: []Inline{{Title: "\U0001f6ce\ufe0f Разместить вакансию", URL: "https://xcareers.me/job/"},
						{Title: "\U0001f5c2 Разместить резюме", URL: "https://t.me/xCareersChat"}}},
				{id: 1511, unix: 1588575602, views: "1.5K", viewsN: 1500,
					text: "MIDDLE/ SENIOR JAVA DEVELOPER Формат: #офис",
					inline: []Inline{{Title: "\U0001f6ce\ufe0f Разместить вакансию", URL: "https://xcareers.me/job/"},
						{Title: "\U0001f5c2 Разместить резюме", URL: "https://t.me/xCareersChat"}}},
			},
		},
	},

	// ---- preview pages ----
	{
		file: "preview_2026_durov.html", ws: wsTrim,
		preview: &cfPreview{username: "durov", title: "Pavel Durov", subs: "11 110 268", subsN: 11110268,
			desc: "Founder of Telegram.", avatar: "cdn4.telesco.pe/file/", verified: true},
	},
	{file: "preview_2026_hanoi_chats_group_via_s_redirect_redacted.html", err: ErrNotChannel},
	{file: "preview_2026_nonexistent_username.html", err: ErrNotChannel},

	// ---- embeds ----
	{
		file: "embed_2026_durov_523.html", ws: wsExact,
		embed: &cfPost{id: 523, channel: "durov", unix: 1781033631, views: "12.5M", viewsN: 12500000, author: "Pavel Durov",
			text: "\u231a\ufe0f A fully native Telegram app for Apple Watch is out.", textFull: true,
			ents:  []Entity{{Offset: 18, Length: 28, Type: EntityBold}},
			media: []cfMedia{{kind: MediaGIF, url: "3d8e6da6a4.mp4"}},
			reacts: []cfReact{stars("7.03K", 7030), custom(rFire, "55.2K", 55200), custom(rHeart, "18.6K", 18600),
				custom(rLaugh, "13.4K", 13400), custom(rThumb, "825", 825), custom(rCat, "220", 220)}},
	},
	{
		file: "embed_2024_lexfridman_272.html", ws: wsTrim,
		embed: &cfPost{id: 272, channel: "lexfridman", unix: 1686937023, views: "13.1K", viewsN: 13100, textFull: true,
			text: "All humans are capable of both good and evil. And most who do evil believe they are doing good.\nHistory shows this over and over again."},
	},
	{
		// 2018 markup: no data-post (the id comes from the post link), no js-message_text class.
		file: "embed_2018_K1inUSA_3_persian.html", ws: wsExact,
		embed: &cfPost{id: 3, channel: "k1inusa", unix: 1443504928, views: "2.5K", viewsN: 2500,
			text: "یک کانال تلگرامی متفاوت\nبه درخواست چند تن از دوستان"},
	},
	{
		file: "embed_2021_honeykingdom_one-audio.html", ws: wsLoose,
		embed: &cfPost{id: 129, channel: "melhagram", unix: 1620464489, views: "3.5K", viewsN: 3500, noText: true,
			media: []cfMedia{{kind: MediaVoice, dur: "0:51", raw: 51, url: "db43c128e1.ogg", waves: "28,1,22,10,8,0,8,0,0,2"}}},
	},
	{
		// The reply block has its own author and tgme_widget_message_text divs.
		file: "embed_2021_honeykingdom_reply.html", ws: wsLoose,
		embed: &cfPost{id: 40957, channel: "meduzalive", unix: 1617993506, views: "75.5K", viewsN: 75500, textFull: true,
			text:  "Обыск у главного редактора «Важных историй» Романа Анина продолжается уже пятый час подряд, сообщает журналист Алеся Мароховская.",
			reply: &cfReply{to: 40953, name: "Медуза — LIVE", text: "«Важные истории» уточнили, что обыск у главреда издания Романа Анина"}},
	},
	{
		file: "embed_2021_honeykingdom_repost.html", ws: wsLoose,
		embed: &cfPost{id: 40984, channel: "meduzalive", unix: 1618129234, views: "51.7K", viewsN: 51700,
			text:  "За последние сутки в России выявлено 8 702 случая COVID-19 в 84 регионах",
			media: []cfMedia{img()},
			fwd:   &Forwarded{Name: Rich{String: "СТОПКОРОНАВИРУС.РФ"}, URL: "https://t.me/stopcoronavirusrussia/4268"}},
	},
	{
		file: "embed_2021_honeykingdom_many-images.html", ws: wsLoose,
		embed: &cfPost{id: 42166, channel: "tvrain", unix: 1617980425, views: "29.0K", viewsN: 29000, media: imgs(7),
			text: "Сегодня умер принц Филипп — муж королевы Елизаветы II."},
	},
	{
		file: "embed_2021_honeykingdom_many-videos.html", ws: wsLoose,
		embed: &cfPost{id: 42053, channel: "tvrain", unix: 1617797690, views: "31.5K", viewsN: 31500,
			media: []cfMedia{vid("0:11", 11), vid("0:11", 11), vid("0:13", 13)},
			text:  "Из Мосгорсуда эвакуируют людей."},
	},
	{
		file: "embed_2021_honeykingdom_one-video.html", ws: wsLoose,
		embed: &cfPost{id: 42161, channel: "tvrain", unix: 1617973254, views: "80.3K", viewsN: 80300, edited: true,
			media: []cfMedia{bigVid("0:48", 48)},
			text:  "На основателя «Артдокфеста» Виталия Манского напали активисты группы SERB."},
	},
	{
		file: "embed_2021_honeykingdom_one-image.html", ws: wsLoose,
		embed: &cfPost{id: 40978, channel: "meduzalive", unix: 1618076439, views: "94.0K", viewsN: 94000,
			media: []cfMedia{img()}, text: "Во Франции аномальные холода, пришедшие в 10 из 13 регионов страны"},
	},
	{
		file: "embed_2021_honeykingdom_videos-and-images.html", ws: wsLoose,
		embed: &cfPost{id: 2252, channel: "streaminside", unix: 1618133581, views: "3.7K", viewsN: 3700,
			media: []cfMedia{img(), vid("0:12", 12)}, textFull: true,
			text: "\U0001f440 Моргенштерн встретился с «кумиром всей своей жизни» — #Valakas'ом"},
	},
	{
		// &nbsp; in text and preview.
		file: "embed_2021_honeykingdom_text-only.html", ws: wsLoose,
		embed: &cfPost{id: 40973, channel: "meduzalive", unix: 1618072032, views: "69.3K", viewsN: 69300,
			text: "Похороны супруга королевы Елизаветы II, герцога Эдинбургского Филиппа состоятся в Виндзоре 17 апреля.",
			link: &cfLink{url: "https://mdza.io/KIvp8C9R7Kg", site: "Meduza",
				title: "Похороны принца Филиппа состоятся 17 апреля. До них в Великобритании продлится восьмидневный национальный траур",
				desc:  "Похороны супруга королевы Елизаветы II, герцога Эдинбургского Филиппа состоятся в Виндзоре 17 апреля.", thumb: true}},
	},
	{
		file: "embed_2021_honeykingdom_text-only-2.html", ws: wsLoose,
		embed: &cfPost{id: 40988, channel: "meduzalive", unix: 1618140378, views: "68.9K", viewsN: 68900,
			text: "Ожидание: красиво уходишь от погони Реальность: жаришь курицу https://mdza.io/xMT5Sg1Sfss", textFull: true,
			link: &cfLink{url: "https://mdza.io/xMT5Sg1Sfss", site: "Meduza",
				title: "Британский блогер показал, как собрал для Top Gear машину Джеймса Бонда. Он даже встроил в нее огнемет — и пожарил им себе курицу…",
				desc:  "Британский блогер и постоянный гость Top Gear Колин Ферз", thumb: true}},
	},
	{
		// The embed shows only the label "Service message".
		file: "embed_2021_honeykingdom_service-message.html", ws: wsLoose,
		embed: &cfPost{id: 1, channel: "meduzalive", unix: 1459943098, noText: true, service: "*"},
	},
	{file: "embed_2021_honeykingdom_post-not-found.html", err: ErrPostNotFound},

	// ---- message fragments (ParseBody) ----
	{
		file: "fragments/frag_2023_tchan_parse_poll.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{11}, posts: []cfPost{
			{id: 11, unix: 1677223943, views: "2", viewsN: 2, noText: true,
				poll: &Poll{Question: "Let's do a quick poll quizz mode", Type: "Anonymous Quiz", Votes: "0", VotesCount: 0,
					Options: []PollOption{{Name: "Opt1"}, {Name: "Opt2"}, {Name: "Opt3"}}}},
		}},
	},
	{
		file: "fragments/frag_2023_any2feed_message_poll.html", ws: wsLoose,
		body: &cfBody{user: "it_begin", ids: []int{488}, posts: []cfPost{
			{id: 488, unix: 1677514862, views: "1.1K", viewsN: 1100, noText: true,
				poll: &Poll{Question: "Как лучше?", Type: "Anonymous Poll", Votes: "222", VotesCount: 222,
					Options: []PollOption{{Name: "Несколько постов в день", Percent: 16},
						{Name: "Один пост в несколько дней", Percent: 83}, {Name: "Свой вариант в комментарии", Percent: 3}}}},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_location_message.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{10}, posts: []cfPost{
			{id: 10, unix: 1677223898, views: "2", viewsN: 2, noText: true,
				loc: &Location{Latitude: -23.930587176407, Longitude: -44.086305367818}},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_location_message_2.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{83}, posts: []cfPost{
			{id: 83, unix: 1677236482, views: "1", viewsN: 1, noText: true,
				loc: &Location{Latitude: -23.532363086523, Longitude: -46.689620092745}},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_location_message_3.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{88}, posts: []cfPost{
			{id: 88, unix: 1677237820, views: "2", viewsN: 2, noText: true,
				loc: &Location{Latitude: -23.531972140424, Longitude: -46.689076113848}},
		}},
	},
	{
		// A static sticker; the bubble also holds a "not supported in your browser" block.
		file: "fragments/frag_2023_tchan_parse_sticker_message.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{9}, posts: []cfPost{
			{id: 9, unix: 1677223866, views: "2", viewsN: 2, noText: true,
				media: []cfMedia{{kind: MediaSticker, url: "5b5c6e1325.webp"}}},
		}},
	},
	{
		// An animated (tgs) sticker inside <picture>, and a signature that starts with an emoji.
		file: "fragments/frag_2023_any2feed_message_sticker.html", ws: wsLoose,
		body: &cfBody{user: "channel", ids: []int{5}, posts: []cfPost{
			{id: 5, unix: 1677657710, views: "1", viewsN: 1, noText: true, author: "\U0001f170\ufe0fUser",
				media: []cfMedia{{kind: MediaSticker, url: "sticker.tgs"}}},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_round_video_single.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{17}, posts: []cfPost{
			{id: 17, unix: 1677224145, views: "2", viewsN: 2, noText: true,
				media: []cfMedia{{kind: MediaRoundVideo, dur: "0:05", raw: 5, url: "68145c80a1.mp4"}}},
		}},
	},
	{
		file: "fragments/frag_2023_any2feed_message_media_round_video.html", ws: wsLoose,
		body: &cfBody{user: "bolshiepushki", ids: []int{3495}, posts: []cfPost{
			{id: 3495, unix: 1677663331, views: "54.2K", viewsN: 54200, noText: true,
				media: []cfMedia{{kind: MediaRoundVideo, dur: "0:44", raw: 44, url: "abbcfd1c60.mp4"}}},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_audio_message.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{13}, posts: []cfPost{
			{id: 13, unix: 1677224045, views: "2", viewsN: 2, noText: true,
				media: []cfMedia{{kind: MediaVoice, dur: "0:01", raw: 1, url: "29881a3f30.ogg", waves: "0,0,0,0"}}},
		}},
	},
	{
		// Voice forwarded from a source that is not public: the name is a <span>, no link.
		file: "fragments/frag_2023_any2feed_message_voice.html", ws: wsLoose,
		body: &cfBody{user: "oper_goblin", ids: []int{939}, posts: []cfPost{
			{id: 939, unix: 1524583726, views: "746", viewsN: 746,
				media:   []cfMedia{{kind: MediaVoice, dur: "27:40", raw: 1660, url: "e7ba63f364.ogg"}},
				fwd:     &Forwarded{Name: Rich{String: "Спортивный Екб"}},
				text:    "Обсудили: - Сталина не забыть - Плохие фильмы",
				textEnd: "Пишите нам: @kakberadiobot"},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_audio_document.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{12}, posts: []cfPost{
			{id: 12, unix: 1677224038, views: "2", viewsN: 2, text: "Povo hebreu", textFull: true,
				media: []cfMedia{{kind: MediaAudio, title: "AUD-20130329-WA0000", extra: "portadosfundos"}}},
		}},
	},
	{
		file: "fragments/frag_2023_any2feed_message_media_file.html", ws: wsLoose,
		body: &cfBody{user: "oper_goblin", ids: []int{16936}, posts: []cfPost{
			{id: 16936, unix: 1659555070, views: "171.9K", viewsN: 171900,
				media:   []cfMedia{{kind: MediaDocument, title: "Оппозиционные медиапроекты.pdf", extra: "2.1 MB"}},
				fwd:     &Forwarded{Name: Rich{String: "Кремлёвская прачка"}, URL: "https://t.me/kremlinprachka/20294"},
				text:    "Центр изучения новых коммуникаций подготовил исследование",
				textEnd: "на фоне СВО»"},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_service_message_channel_created.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{1}, posts: []cfPost{
			{id: 1, unix: 1677223609, service: "channel_created", svcText: "Channel created"},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_service_message_channel_name_changed.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{2}, posts: []cfPost{
			{id: 2, unix: 1677223681, service: "title_changed", svcText: "tchan's test channel"},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_service_message_channel_photo_updated.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{3}, posts: []cfPost{
			{id: 3, unix: 1677223763, service: "photo_changed", anyMedia: true},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_service_message_pinned.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{92}, posts: []cfPost{
			{id: 92, unix: 1677241219, service: "pinned", svcText: "Going to pin this message"},
		}},
	},
	{
		// Despite its name this is an ordinary text message (with views), not a service message.
		file: "fragments/frag_2023_tchan_parse_service_message_channel_video_changed.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{82}, posts: []cfPost{
			{id: 82, unix: 1677233733, views: "3.1M", viewsN: 3100000, text: "+ \"Channel video changed\"", textFull: true},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_forwarded_text_message.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{89}, posts: []cfPost{
			{id: 89, unix: 1677240811, views: "2", viewsN: 2, text: ";)", textFull: true,
				fwd: &Forwarded{Name: Rich{String: "Some user"}, URL: "https://t.me/some_user"}},
		}},
	},
	{
		// Reply whose snippet is tgme_widget_message_metatext ("Video"), with a thumbnail.
		file: "fragments/frag_2023_tchan_parse_text_reply_to_video.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{20}, posts: []cfPost{
			{id: 20, unix: 1677224311, views: "2", viewsN: 2, text: "Reply to a video (not recorded in telegram)", textFull: true,
				reply: &cfReply{to: 19, name: "tchan's test channel \U0001f44d", text: "Video", cover: true}},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_multimedia_message.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{84}, posts: []cfPost{
			{id: 84, unix: 1677236506, views: "436.6K", viewsN: 436600, text: "Multiple videos and pictures", textFull: true, once: true,
				htmlFrom: "Multiple videos and pictures",
				media:    []cfMedia{vid("0:27", 27), img(), vid("0:08", 8), img()}},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_photo_multiple.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{14}, posts: []cfPost{
			{id: 14, unix: 1677224060, views: "2", viewsN: 2, text: "Multiple pics", textFull: true, once: true, media: imgs(2),
				htmlFrom: "Multiple pics"},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_photo_single.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{16}, posts: []cfPost{
			{id: 16, unix: 1677224128, views: "2", viewsN: 2, text: "Picture by telegram camera", textFull: true,
				media: []cfMedia{{kind: MediaImage, url: ".jpg"}}},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_video_big.html", ws: wsLoose,
		body: &cfBody{user: "some_random_user", ids: []int{5343}, posts: []cfPost{
			{id: 5343, unix: 1675121440, views: "436.6K", viewsN: 436600, text: "some text", textFull: true,
				media: []cfMedia{bigVid("0:52", 52)}},
		}},
	},
	{
		// Two <video> elements (a blurred copy and the real one): one video.
		file: "fragments/frag_2023_tchan_parse_video_single.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{18}, posts: []cfPost{
			{id: 18, unix: 1677224209, views: "2", viewsN: 2, text: "Video by telegram camera", textFull: true,
				media: []cfMedia{{kind: MediaVideo, dur: "0:06", raw: 6, url: "61dc623809.mp4"}}},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_video_single_2.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{19}, posts: []cfPost{
			{id: 19, unix: 1677224293, views: "2", viewsN: 2, noText: true, media: []cfMedia{vid("0:27", 27)}},
		}},
	},
	{
		// <br/> inside links, nested <b> and <i>, a preview without image or description.
		file: "fragments/frag_2023_tchan_parse_message_weird_preview.html", ws: wsLoose,
		body: &cfBody{user: "camaradosdeputados", ids: []int{7334}, posts: []cfPost{
			{id: 7334, unix: 1668033834, views: "1.2K", viewsN: 1200, edited: true,
				text: "_ \u270d\ufe0f C\u00c2MARA APROVA _ \U0001f538 Projeto que aumenta penas para crimes sexuais contra crian\u00e7as #Puni\u00e7\u00e3o_ampliada",
				link: &cfLink{url: "http://bit.ly/3Tq1C4G", site: "Portal da C\u00e2mara dos Deputados",
					title: "C\u00e2mara aprova projeto que aumenta penas para crimes sexuais contra crian\u00e7as; acompanhe - Not\u00edcias"}},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_signed_edited_text_message.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{5}, posts: []cfPost{
			{id: 5, unix: 1677223797, views: "2", viewsN: 2, edited: true, author: "\u00c1lvaro Justen",
				text: "Hello! Signed and edited message", textFull: true},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_text_message_signed_not_edited.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{79}, posts: []cfPost{
			{id: 79, unix: 1677226071, views: "2", viewsN: 2, author: "\u00c1lvaro Justen",
				text: "Signed and not edited", textFull: true},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_unsigned_text_message.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{6}, posts: []cfPost{
			{id: 6, unix: 1677223839, views: "2", viewsN: 2, text: "Unsigned message", textFull: true},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_text_message_multiline.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{62}, posts: []cfPost{
			{id: 62, unix: 1677225686, views: "2", viewsN: 2, ws: wsTrim,
				text: "Bigger\ntext\nmessage\nnumber\n34", textFull: true},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_text_message_link_no_preview.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{24}, posts: []cfPost{
			{id: 24, unix: 1677224882, views: "2", viewsN: 2, edited: true, ws: wsTrim,
				text: "This is a message with a link\n\nhttps://brasil.io/", textFull: true},
		}},
	},
	{
		// The preview image is not post media.
		file: "fragments/frag_2023_tchan_parse_text_message_link_with_regular_preview.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{94}, posts: []cfPost{
			{id: 94, unix: 1677246458, views: "1", viewsN: 1, textFull: true,
				text: "https://agenciabrasil.ebc.com.br/justica/noticia/2022-08/operacao-guardioes-do-bioma-apreende-239-toneladas-de-minerio",
				link: &cfLink{url: "https://agenciabrasil.ebc.com.br/justica/noticia/2022-08/operacao-guardioes-do-bioma-apreende-239-toneladas-de-minerio",
					site: "Ag\u00eancia Brasil", title: "Opera\u00e7\u00e3o Guardi\u00f5es do Bioma apreende 23,9 toneladas de min\u00e9rio",
					desc: "A\u00e7\u00e3o contra o garimpo ilegal em Terra Ind\u00edgena Yanomami", thumb: true}},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_text_message_link_with_right_preview.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{81}, posts: []cfPost{
			{id: 81, unix: 1677226578, views: "2", viewsN: 2, text: "link with preview https://python.org/", textFull: true,
				link: &cfLink{url: "https://www.python.org/", site: "Python.org", title: "Welcome to Python.org",
					desc: "The official home of the Python Programming Language", thumb: true}},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_emoji_message.html", ws: wsLoose,
		body: &cfBody{user: "tchantest", ids: []int{7}, posts: []cfPost{
			{id: 7, unix: 1677223853, views: "2", viewsN: 2, text: "\U0001f44d", textFull: true},
		}},
	},
	{
		file: "fragments/frag_2023_any2feed_message_link_preview.html", ws: wsLoose,
		body: &cfBody{user: "oper_goblin", ids: []int{22360}, posts: []cfPost{
			{id: 22360, unix: 1677483194, views: "226.2K", viewsN: 226200,
				text: "https://vnnews.ru/georgiy-zotov-okkupaciya-volosatym-kr/", textFull: true,
				link: &cfLink{url: "https://vnnews.ru/georgiy-zotov-okkupaciya-volosatym-kr/", site: "Ваши новости — интернет-газета",
					title: "Георгий Зотов: ОККУПАЦИЯ ВОЛОСАТЫМ КРАБОМ",
					desc:  "Современная журналистика превратилась в комедию и тщетную охоту за лайками", thumb: true}},
		}},
	},
	{
		// &amp; inside href and link text: decoded once.
		file: "fragments/frag_2023_any2feed_message_link_preview_text_only.html", ws: wsLoose,
		body: &cfBody{user: "oper_goblin", ids: []int{22368}, posts: []cfPost{
			{id: 22368, unix: 1677510485, views: "246.8K", viewsN: 246800, textFull: true,
				text: "http://publication.pravo.gov.ru/Document/View/0001202302270011?index=7&rangeSize=1",
				link: &cfLink{url: "http://publication.pravo.gov.ru/Document/View/0001202302270011?index=7&rangeSize=1",
					site: "publication.pravo.gov.ru", title: "Распоряжение Президента Российской Федерации от 27.02.2023 № 59-рп",
					desc: "Распоряжение Президента Российской Федерации от 27.02.2023 № 59-рп"}},
		}},
	},
	{
		// A message div without the wrap; the link preview holds a video (its thumbnail is
		// the preview's thumb), which is not post media.
		file: "fragments/frag_2023_any2feed_message_link_preview_video.html", ws: wsLoose,
		body: &cfBody{user: "fighter_bomber", ids: []int{11226}, posts: []cfPost{
			{id: 11226, unix: 1677656222, views: "69.4K", viewsN: 69400, edited: true,
				text: "Жениться вам, барин, пора! \U0001f601",
				link: &cfLink{url: "https://t.me/shalnyak/5410", site: "Telegram", title: "Shalnyak",
					desc: "Дядь @fighter_bomber глянь!!!", thumb: true}},
		}},
	},
	{
		// background-image:url(&quot;…&quot;) as a browser serialises it.
		file: "fragments/frag_2023_any2feed_message_media_photo_and_video.html", ws: wsLoose,
		body: &cfBody{user: "anna_news", ids: []int{46908}, posts: []cfPost{
			{id: 46908, unix: 1677566916, views: "59.5K", viewsN: 59500, once: true,
				text:     "Ночью над Белгородом сбили 3 беспилотника Они упали на улицы города.",
				htmlFrom: "<b>Ночью над Белгородом",
				media: []cfMedia{vid("0:05", 5), {kind: MediaImage, url: "https://cdn4.telegram-cdn.org/file/"},
					{kind: MediaImage, url: "https://cdn4.telegram-cdn.org/file/"}}},
		}},
	},
	{
		file: "fragments/frag_2023_any2feed_message_media_forwarded_from.html", ws: wsLoose,
		body: &cfBody{user: "oper_goblin", ids: []int{22358}, posts: []cfPost{
			{id: 22358, unix: 1677482450, views: "214.4K", viewsN: 214400, textFull: true,
				text:  "Британская разведка выяснила, почему Ким Чен Ын начал выводить дочку в свет",
				media: []cfMedia{img()},
				fwd:   &Forwarded{Name: Rich{String: "Пул N3"}, URL: "https://t.me/dimsmirnov175/44604"}},
		}},
	},
	{
		file: "fragments/frag_2023_any2feed_message_with_from_author.html", ws: wsLoose,
		body: &cfBody{user: "channel", ids: []int{4}, posts: []cfPost{
			{id: 4, unix: 1677602314, views: "1", viewsN: 1, author: "\U0001f170\ufe0frkadiy Ivanov", text: "test", textFull: true},
		}},
	},
	{
		file: "fragments/frag_2023_any2feed_message_text.html", ws: wsLoose,
		body: &cfBody{user: "topwar_official", ids: []int{70991}, posts: []cfPost{
			{id: 70991, unix: 1677574081, views: "33.4K", viewsN: 33400,
				text:    "Неопознанный летающий объект замечен в 160 – 200 км от Петербурга По данным «Фонтанки»",
				textEnd: "«Звуки как на параде»."},
		}},
	},
	{
		file: "fragments/frag_2023_tchan_parse_no_posts_found.html", ws: wsLoose,
		body: &cfBody{ids: []int{}},
	},
}

// TestConformanceRealPages parses every real page and checks the hand-written
// expectations.
func TestConformanceRealPages(t *testing.T) {
	dir := cfRealPagesDir(t)
	files := cfRealPageFiles(t, dir)
	if len(files) == 0 {
		t.Fatalf("no .html pages in %s", dir)
	}
	wants := make(map[string]*cfPage, len(conformancePages))
	for i := range conformancePages {
		w := &conformancePages[i]
		if wants[w.file] != nil {
			t.Fatalf("%s: expectations listed twice", w.file)
		}
		wants[w.file] = w
	}
	present := make(map[string]bool, len(files))
	for _, rel := range files {
		present[rel] = true
		t.Run(rel, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			cfCheckFile(t, rel, b, wants[rel])
		})
	}
	for _, w := range conformancePages {
		if !present[w.file] {
			t.Errorf("%s: hand-written expectations exist but the page is missing from %s", w.file, dir)
		}
	}
}

// TestConformanceRealPagesAsMore feeds each real channel page through
// ParseMore as the JSON string a POST /s/<channel>?before=N answer is (escaped
// as PHP's json_encode does: \/ and \uXXXX with surrogate pairs), and wants
// the same posts as ParseBody gives for the raw page. Fragments, which hold
// the same wraps a "more" answer holds, go in as raw HTML.
func TestConformanceRealPagesAsMore(t *testing.T) {
	dir := cfRealPagesDir(t)
	for _, rel := range cfRealPageFiles(t, dir) {
		base := path.Base(rel)
		isPage := strings.HasPrefix(base, "s_")
		if !isPage && !strings.HasPrefix(base, "frag_") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if !isPage && !strings.Contains(string(b), `data-post="`) {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			var body *Page
			if !cfNoPanic(t, rel+": ParseBody", func() { body, _ = ParseBody(b) }) {
				return
			}
			if body == nil {
				t.Fatalf("%s: ParseBody gave no page", rel)
			}
			in := b
			if isPage {
				in = cfPHPJSON(b)
				if got := Detect(in); got != tme.KindMore {
					t.Errorf("%s as a JSON string: Detect = %q, want %q", rel, got, tme.KindMore)
				}
			}
			var more *Page
			var err error
			if !cfNoPanic(t, rel+": ParseMore", func() { more, err = ParseMore(in) }) {
				return
			}
			if err != nil {
				t.Fatalf("%s: ParseMore: %v", rel, err)
			}
			if more == nil {
				t.Fatalf("%s: ParseMore returned a nil page", rel)
			}
			if g, w := cfIDs(more.Content.Posts), cfIDs(body.Content.Posts); !slices.Equal(g, w) {
				t.Fatalf("%s: ParseMore post ids %v, ParseBody post ids %v", rel, g, w)
			}
			for i := range more.Content.Posts {
				g, w := &more.Content.Posts[i], &body.Content.Posts[i]
				if !reflect.DeepEqual(g, w) {
					gj, _ := json.Marshal(g)
					wj, _ := json.Marshal(w)
					t.Errorf("%s: post %d differs between ParseMore and ParseBody:\nmore: %s (channel %q)\nbody: %s (channel %q)",
						rel, w.ID, gj, g.Channel, wj, w.Channel)
				}
			}
		})
	}
}

// cfRealPagesDir is the folder of real pages: TMEFEED_REALPAGES, else
// ../shared/realpages. Without either the test skips, except under CI,
// where only TMEFEED_REALPAGES=none lets it skip.
func cfRealPagesDir(t *testing.T) string {
	t.Helper()
	switch d := os.Getenv(cfRealPagesEnv); d {
	case cfRealPagesNone:
		t.Skipf("%s=%s: the real pages are absent; conformance against real t.me pages skipped", cfRealPagesEnv, cfRealPagesNone)
	case "":
	default:
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Fatalf("%s=%q is not a directory", cfRealPagesEnv, d)
		}
		return d
	}
	// The package directory is <module>/parser; the pages sit beside the module.
	d := filepath.Join("..", "..", "shared", "realpages")
	if fi, err := os.Stat(d); err == nil && fi.IsDir() {
		return d
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("../shared/realpages not found under CI=true: give the folder as %s, or set %s=%s if it is truly absent", cfRealPagesEnv, cfRealPagesEnv, cfRealPagesNone)
	}
	t.Skip("../shared/realpages not found: conformance against real t.me pages skipped")
	return ""
}

// cfRealPageFiles lists the .html pages, slash-separated and relative to dir.
func cfRealPageFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	for _, sub := range []string{".", "fragments", "anonymized"} {
		m, err := filepath.Glob(filepath.Join(dir, sub, "*.html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, filepath.ToSlash(rel))
		}
	}
	slices.Sort(files)
	return files
}

// cfKindOf picks the parse function from the file name.
func cfKindOf(rel string) (kind tme.Kind, fragment bool) {
	base := path.Base(rel)
	switch {
	case strings.HasPrefix(base, "s_"):
		return tme.KindBody, false
	case strings.HasPrefix(base, "preview_"):
		return tme.KindPreview, false
	case strings.HasPrefix(base, "embed_"):
		return tme.KindEmbed, false
	case strings.HasPrefix(base, "frag_"):
		return tme.KindBody, true
	}
	return "", false
}

func cfCheckFile(t *testing.T, rel string, b []byte, w *cfPage) {
	kind, frag := cfKindOf(rel)
	if kind == "" {
		if kind = Detect(b); kind == "" {
			t.Fatalf("%s: no kind from the file name and Detect found none", rel)
		}
	} else if !frag {
		if got := Detect(b); got != kind {
			t.Errorf("%s: Detect = %q, want %q", rel, got, kind)
		}
	}
	var wantErr error
	ws := wsExact
	if w != nil {
		wantErr = w.err
		if w.ws != wsDefault {
			ws = w.ws
		}
	}
	switch kind {
	case tme.KindBody, tme.KindMore:
		var p *Page
		var err error
		fn, name := ParseBody, "ParseBody"
		if kind == tme.KindMore {
			fn, name = ParseMore, "ParseMore"
		}
		if !cfNoPanic(t, rel+": "+name, func() { p, err = fn(b) }) {
			return
		}
		cfCheckErr(t, rel, name, err, wantErr, frag)
		if frag && strings.Contains(string(b), `data-post="`) && (p == nil || len(p.Content.Posts) == 0) {
			t.Errorf("%s: %s found no post in a fragment holding a message", rel, name)
		}
		if p != nil {
			for i := range p.Content.Posts {
				cfPostInvariants(t, fmt.Sprintf("%s: post %d", rel, p.Content.Posts[i].ID), &p.Content.Posts[i])
			}
		}
		if w != nil && w.body != nil {
			w.body.check(t, rel, ws, p)
		}
	case tme.KindPreview:
		var p *Preview
		var err error
		if !cfNoPanic(t, rel+": ParsePreview", func() { p, err = ParsePreview(b) }) {
			return
		}
		cfCheckErr(t, rel, "ParsePreview", err, wantErr, false)
		if w != nil && w.preview != nil {
			w.preview.check(t, rel, ws, p)
		}
	case tme.KindEmbed:
		var p *Post
		var err error
		if !cfNoPanic(t, rel+": ParseEmbed", func() { p, err = ParseEmbed(b) }) {
			return
		}
		cfCheckErr(t, rel, "ParseEmbed", err, wantErr, false)
		if p != nil && err == nil {
			cfPostInvariants(t, fmt.Sprintf("%s: post %d", rel, p.ID), p)
		}
		if w != nil && w.embed != nil {
			where := fmt.Sprintf("%s: post %d", rel, w.embed.id)
			if p == nil {
				t.Errorf("%s: ParseEmbed returned no post", where)
				return
			}
			cfEq(t, where, "Channel", p.Channel, w.embed.channel)
			w.embed.check(t, where, ws, p)
		}
	}
}

func cfCheckErr(t *testing.T, rel, fn string, err, want error, fragment bool) {
	t.Helper()
	switch {
	case want != nil:
		if !errors.Is(err, want) {
			t.Errorf("%s: %s error = %v, want %v", rel, fn, err, want)
		}
	case fragment:
		// A fragment is not a whole page; saying so is allowed.
		if err != nil && !errors.Is(err, ErrNotPage) {
			t.Errorf("%s: %s error = %v, want nil or ErrNotPage", rel, fn, err)
		}
	case err != nil:
		t.Errorf("%s: %s error = %v, want nil", rel, fn, err)
	}
}

// cfNoPanic runs f and reports a panic as a test error, so one bad page does
// not hide the others.
func cfNoPanic(t *testing.T, what string, f func()) (ok bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v\n%s", what, r, debug.Stack())
			ok = false
		}
	}()
	f()
	return true
}

func (w *cfBody) check(t *testing.T, rel string, ws cfWS, p *Page) {
	if p == nil {
		if w.channel != nil || len(w.ids) > 0 {
			t.Errorf("%s: ParseBody returned no page", rel)
		}
		return
	}
	if c := w.channel; c != nil {
		where := rel + ": channel"
		if p.Channel == nil {
			t.Errorf("%s: Channel is nil", where)
		} else {
			ch := p.Channel
			cfUnwrapped(t, where, "Title.HTML", ch.Title.HTML)
			if ch.Description != nil {
				cfUnwrapped(t, where, "Description.HTML", ch.Description.HTML)
			}
			if !strings.EqualFold(ch.Username, c.username) {
				t.Errorf("%s: Username = %q, want %q", where, ch.Username, c.username)
			}
			cfEq(t, where, "Title.String", cfField(ws, ch.Title.String), c.title)
			desc := ""
			if ch.Description != nil {
				desc = ch.Description.String
			}
			cfPrefix(t, where, "Description.String", cfField(ws, desc), c.desc, c.desc == "")
			cfEq(t, where, "Counters", ch.Counters, c.counters)
			cfEq(t, where, `Labels has "verified"`, slices.Contains(ch.Labels, "verified"), c.verified)
		}
		cfEq(t, rel, "Meta.Offset.Before", p.Meta.Offset.Before, w.before)
		cfEq(t, rel, "Meta.Offset.After", p.Meta.Offset.After, w.after)
	}
	if w.ids != nil {
		if got := cfIDs(p.Content.Posts); !slices.Equal(got, w.ids) {
			t.Errorf("%s: post ids = %v (%d posts), want %v (%d posts)", rel, got, len(got), w.ids, len(w.ids))
		}
	}
	if w.user != "" {
		for _, q := range p.Content.Posts {
			cfEq(t, fmt.Sprintf("%s: post %d", rel, q.ID), "Channel", q.Channel, w.user)
		}
	}
	for i := range w.posts {
		want := &w.posts[i]
		where := fmt.Sprintf("%s: post %d", rel, want.id)
		var got *Post
		for j := range p.Content.Posts {
			if p.Content.Posts[j].ID == want.id {
				got = &p.Content.Posts[j]
				break
			}
		}
		if got == nil {
			t.Errorf("%s: missing", where)
			continue
		}
		want.check(t, where, ws, got)
	}
}

func (w *cfPreview) check(t *testing.T, rel string, ws cfWS, p *Preview) {
	if p == nil {
		t.Errorf("%s: ParsePreview returned no preview", rel)
		return
	}
	where := rel + ": preview"
	if !strings.EqualFold(p.Username, w.username) {
		t.Errorf("%s: Username = %q, want %q", where, p.Username, w.username)
	}
	cfEq(t, where, "Title", cfField(ws, p.Title), w.title)
	cfEq(t, where, "Subscribers", p.Subscribers, w.subs)
	cfEq(t, where, "SubscribersCount", p.SubscribersCount, w.subsN)
	desc := ""
	if p.Description != nil {
		desc = p.Description.String
	}
	cfEq(t, where, "Description.String", cfField(ws, desc), w.desc)
	if !strings.Contains(p.Avatar, w.avatar) {
		t.Errorf("%s: Avatar = %q, want it to contain %q", where, p.Avatar, w.avatar)
	}
	cfEq(t, where, "IsVerified", p.IsVerified, w.verified)
}

func (w *cfPost) check(t *testing.T, where string, pageWS cfWS, p *Post) {
	ws := pageWS
	if w.ws != wsDefault {
		ws = w.ws
	}
	cfEq(t, where, "ID", p.ID, w.id)
	cfEq(t, where, "Footer.Date.Unix", p.Footer.Date.Unix, w.unix)
	cfEq(t, where, "Footer.Views", p.Footer.Views, w.views)
	cfEq(t, where, "Footer.ViewsCount", p.Footer.ViewsCount, w.viewsN)
	cfEq(t, where, "Footer.Edited", p.Footer.Edited, w.edited)
	author := ""
	if p.Footer.Author != nil {
		author = p.Footer.Author.String
	}
	cfEq(t, where, "Footer.Author.String", cfField(ws, author), w.author)

	// Service mark.
	switch {
	case w.service == "" && p.Service != nil:
		t.Errorf("%s: Service = %+v, want nil (not a service message)", where, *p.Service)
	case w.service != "" && p.Service == nil:
		t.Errorf("%s: Service = nil, want a service message (%s)", where, w.service)
	case w.service != "" && p.Service != nil:
		if w.service != "*" {
			cfEq(t, where, "Service.Type", p.Service.Type, w.service)
		}
		if !strings.Contains(cfField(ws, p.Service.Text), w.svcText) {
			t.Errorf("%s: Service.Text = %q, want it to contain %q", where, p.Service.Text, w.svcText)
		}
	}

	// Text.
	text, html := "", ""
	var ents []Entity
	if p.Content.Text != nil {
		text, html, ents = p.Content.Text.String, p.Content.Text.HTML, p.Content.Text.Entities
	}
	nt := cfNorm(ws, text)
	switch {
	case w.noText:
		if text != "" {
			t.Errorf("%s: Text.String = %q, want no text", where, cfTrunc(text, 60))
		}
	case w.textFull:
		cfEq(t, where, "Text.String", nt, w.text)
	case w.text != "":
		cfPrefix(t, where, "Text.String", nt, w.text, false)
	}
	if w.textEnd != "" && !strings.HasSuffix(nt, w.textEnd) {
		t.Errorf("%s: Text.String = …%q, want it to end with %q", where, cfTail(nt, len([]rune(w.textEnd))+20), w.textEnd)
	}
	if w.once && w.text != "" {
		if n := strings.Count(nt, w.text); n != 1 {
			t.Errorf("%s: Text.String holds %q %d times, want once (nested text divs counted twice?)", where, cfTrunc(w.text, 40), n)
		}
	}
	if w.html != "" && !strings.Contains(html, w.html) {
		t.Errorf("%s: Text.HTML = %q, want it to contain %q", where, cfTrunc(html, 120), w.html)
	}
	if w.htmlFrom != "" && !strings.HasPrefix(html, w.htmlFrom) {
		t.Errorf("%s: Text.HTML = %q, want it to start with %q", where, cfTrunc(html, 120), w.htmlFrom)
	}
	for _, e := range w.ents {
		if !slices.ContainsFunc(ents, func(g Entity) bool {
			return g.Offset == e.Offset && g.Length == e.Length && g.Type == e.Type &&
				(e.URL == "" || g.URL == e.URL) && (e.EmojiID == "" || g.EmojiID == e.EmojiID)
		}) {
			t.Errorf("%s: Text.Entities = %+v, want one with %+v (offsets in UTF-16 units)", where, ents, e)
		}
	}

	// Media.
	if !w.anyMedia {
		got := p.Content.Media
		if len(got) != len(w.media) {
			t.Errorf("%s: Media kinds = %v (%d), want %v (%d)", where, cfKinds(got), len(got), cfWantKinds(w.media), len(w.media))
		} else {
			for i := range w.media {
				w.media[i].check(t, fmt.Sprintf("%s: Media[%d]", where, i), ws, got[i])
			}
		}
	}

	// Reactions.
	if w.reacts != nil {
		got := p.Content.Reacts
		if len(got) != len(w.reacts) {
			t.Errorf("%s: Reacts = %+v (%d), want %d reactions", where, got, len(got), len(w.reacts))
		} else {
			for i, r := range w.reacts {
				f := fmt.Sprintf("Reacts[%d].", i)
				cfEq(t, where, f+"Type", got[i].Type, r.typ)
				cfEq(t, where, f+"Count", got[i].Count, r.count)
				cfEq(t, where, f+"CountValue", got[i].CountValue, r.n)
				if r.emoji != "" {
					cfEq(t, where, f+"Emoji", got[i].Emoji, r.emoji)
				}
				if r.id != "" {
					cfEq(t, where, f+"EmojiID", got[i].EmojiID, r.id)
				}
			}
		}
	}

	// Link preview.
	switch pl := p.Content.PreviewLink; {
	case w.link == nil && pl != nil:
		t.Errorf("%s: PreviewLink = %+v, want none", where, *pl)
	case w.link != nil && pl == nil:
		t.Errorf("%s: PreviewLink = nil, want %s", where, w.link.url)
	case w.link != nil:
		l := w.link
		cfEq(t, where, "PreviewLink.URL", pl.URL, l.url)
		cfEq(t, where, "PreviewLink.SiteName", cfField(ws, pl.SiteName), l.site)
		if l.title == "" {
			cfEq(t, where, "PreviewLink.Title", pl.Title, "")
		} else {
			cfPrefix(t, where, "PreviewLink.Title", cfField(ws, pl.Title), l.title, false)
		}
		desc := ""
		if pl.Description != nil {
			desc = pl.Description.String
		}
		cfPrefix(t, where, "PreviewLink.Description.String", cfField(ws, desc), l.desc, l.desc == "")
		cfEq(t, where, "PreviewLink.Thumb set", pl.Thumb != "", l.thumb)
	}

	// Reply.
	switch r := p.Content.Reply; {
	case w.reply == nil && r != nil:
		t.Errorf("%s: Reply = %+v, want none", where, *r)
	case w.reply != nil && r == nil:
		t.Errorf("%s: Reply = nil, want a reply to %d", where, w.reply.to)
	case w.reply != nil:
		cfEq(t, where, "Reply.ToMessage", r.ToMessage, w.reply.to)
		cfEq(t, where, "Reply.Name.String", cfField(ws, r.Name.String), w.reply.name)
		cfPrefix(t, where, "Reply.Text.String", cfField(ws, r.Text.String), w.reply.text, false)
		cfEq(t, where, "Reply.Cover set", r.Cover != "", w.reply.cover)
	}

	// Forwarded.
	switch f := p.Forwarded; {
	case w.fwd == nil && f != nil:
		t.Errorf("%s: Forwarded = %+v, want none", where, *f)
	case w.fwd != nil && f == nil:
		t.Errorf("%s: Forwarded = nil, want from %q", where, w.fwd.Name.String)
	case w.fwd != nil:
		cfEq(t, where, "Forwarded.Name.String", cfField(ws, f.Name.String), w.fwd.Name.String)
		cfEq(t, where, "Forwarded.URL", f.URL, w.fwd.URL)
	}

	// Poll.
	switch pl := p.Content.Poll; {
	case w.poll == nil && pl != nil:
		t.Errorf("%s: Poll = %+v, want none", where, *pl)
	case w.poll != nil && pl == nil:
		t.Errorf("%s: Poll = nil, want %q", where, w.poll.Question)
	case w.poll != nil:
		cfEq(t, where, "Poll.Question", cfField(ws, pl.Question), w.poll.Question)
		cfEq(t, where, "Poll.Type", cfField(ws, pl.Type), w.poll.Type)
		cfEq(t, where, "Poll.Votes", pl.Votes, w.poll.Votes)
		cfEq(t, where, "Poll.VotesCount", pl.VotesCount, w.poll.VotesCount)
		if len(pl.Options) != len(w.poll.Options) {
			t.Errorf("%s: Poll.Options = %+v, want %+v", where, pl.Options, w.poll.Options)
		} else {
			for i, o := range w.poll.Options {
				cfEq(t, where, fmt.Sprintf("Poll.Options[%d].Name", i), cfField(ws, pl.Options[i].Name), o.Name)
				cfEq(t, where, fmt.Sprintf("Poll.Options[%d].Percent", i), pl.Options[i].Percent, o.Percent)
			}
		}
	}

	// Inline buttons.
	if len(p.Content.Inline) != len(w.inline) {
		t.Errorf("%s: Inline = %+v, want %+v", where, p.Content.Inline, w.inline)
	} else {
		for i, in := range w.inline {
			cfEq(t, where, fmt.Sprintf("Inline[%d].Title", i), cfField(ws, p.Content.Inline[i].Title), in.Title)
			cfEq(t, where, fmt.Sprintf("Inline[%d].URL", i), p.Content.Inline[i].URL, in.URL)
		}
	}

	// Location.
	switch l := p.Content.Location; {
	case w.loc == nil && l != nil:
		t.Errorf("%s: Location = %+v, want none", where, *l)
	case w.loc != nil && l == nil:
		t.Errorf("%s: Location = nil, want %v,%v", where, w.loc.Latitude, w.loc.Longitude)
	case w.loc != nil:
		if math.Abs(l.Latitude-w.loc.Latitude) > 1e-9 || math.Abs(l.Longitude-w.loc.Longitude) > 1e-9 {
			t.Errorf("%s: Location = %v,%v, want %v,%v", where, l.Latitude, l.Longitude, w.loc.Latitude, w.loc.Longitude)
		}
	}
}

func (w *cfMedia) check(t *testing.T, where string, ws cfWS, m Media) {
	cfEq(t, where, "Type", m.Type, w.kind)
	switch {
	case w.dur == "" && m.Duration != nil && m.Duration.Formatted != "":
		t.Errorf("%s: Duration = %+v, want none", where, *m.Duration)
	case w.dur != "" && m.Duration == nil:
		t.Errorf("%s: Duration = nil, want %s", where, w.dur)
	case w.dur != "":
		cfEq(t, where, "Duration.Formatted", m.Duration.Formatted, w.dur)
		cfEq(t, where, "Duration.Raw", m.Duration.Raw, w.raw)
	}
	cfEq(t, where, "Title", cfField(ws, m.Title), w.title)
	cfEq(t, where, "Extra", cfField(ws, m.Extra), w.extra)
	cfEq(t, where, "Available", m.Available, !w.unavailable)
	if !strings.Contains(m.URL, w.url) {
		t.Errorf("%s: URL = %q, want it to contain %q", where, m.URL, w.url)
	}
	if !strings.Contains(m.Thumb, w.thumb) {
		t.Errorf("%s: Thumb = %q, want it to contain %q", where, m.Thumb, w.thumb)
	}
	if !strings.HasPrefix(m.Waves, w.waves) {
		t.Errorf("%s: Waves = %q, want it to start with %q", where, cfTrunc(m.Waves, 40), w.waves)
	}
}

// cfPostInvariants holds for every post of every real page.
func cfPostInvariants(t *testing.T, where string, p *Post) {
	t.Helper()
	if p.ID <= 0 {
		t.Errorf("%s: ID = %d", where, p.ID)
	}
	if p.Channel == "" || p.Channel != strings.ToLower(p.Channel) {
		t.Errorf("%s: Channel = %q, want the lower-cased username", where, p.Channel)
	}
	if p.Footer.Date.Unix <= 0 || p.Footer.Date.String == "" {
		t.Errorf("%s: Footer.Date = %+v, want the <time datetime> of the post", where, p.Footer.Date)
	}
	if (p.Footer.Views == "") != (p.Footer.ViewsCount == 0) {
		t.Errorf("%s: Footer.Views = %q but ViewsCount = %d", where, p.Footer.Views, p.Footer.ViewsCount)
	}
	if p.Content.Text != nil {
		// No real page holds a literal U+00A0; only &nbsp;, which becomes a space.
		for _, bad := range []string{"<br", "&#", "&nbsp;", "&quot;", "&amp;", "&lt;", "\u00a0"} {
			if strings.Contains(p.Content.Text.String, bad) {
				t.Errorf("%s: Text.String holds %q: %q", where, bad, cfTrunc(p.Content.Text.String, 80))
			}
		}
	}
	cfPostUnwrapped(t, where, p)
	if s := p.Service; s != nil && !slices.Contains([]string{"channel_created", "title_changed", "photo_changed",
		"photo_removed", "video_changed", "pinned", "other"}, s.Type) {
		t.Errorf("%s: Service.Type = %q, not one of the documented types", where, s.Type)
	}
	for i, m := range p.Content.Media {
		if m.Type == MediaUnsupported || !slices.Contains(MediaKinds(), m.Type) {
			t.Errorf("%s: Media[%d].Type = %q", where, i, m.Type)
		}
		for _, u := range []string{m.URL, m.Thumb} {
			if strings.ContainsAny(u, `"'`) || strings.Contains(u, "&quot;") || strings.Contains(u, "url(") {
				t.Errorf("%s: Media[%d] URL %q still holds CSS or entity syntax", where, i, u)
			}
		}
	}
	for i, r := range p.Content.Reacts {
		ok := r.Count != "" && r.CountValue > 0
		switch r.Type {
		case ReactEmoji:
			ok = ok && r.Emoji != ""
		case ReactCustomEmoji:
			ok = ok && r.EmojiID != ""
		case ReactStars:
		default:
			ok = false
		}
		if !ok {
			t.Errorf("%s: Reacts[%d] = %+v", where, i, r)
		}
	}
	if pl := p.Content.Poll; pl != nil {
		for i, o := range pl.Options {
			if o.Percent < 0 || o.Percent > 100 || o.Name == "" {
				t.Errorf("%s: Poll.Options[%d] = %+v", where, i, o)
			}
		}
	}
}

// cfPostUnwrapped checks every HTML field of a post with cfUnwrapped.
func cfPostUnwrapped(t *testing.T, where string, p *Post) {
	t.Helper()
	if x := p.Content.Text; x != nil {
		cfUnwrapped(t, where, "Text.HTML", x.HTML)
	}
	if r := p.Content.Reply; r != nil {
		cfUnwrapped(t, where, "Reply.Name.HTML", r.Name.HTML)
		cfUnwrapped(t, where, "Reply.Text.HTML", r.Text.HTML)
	}
	if l := p.Content.PreviewLink; l != nil && l.Description != nil {
		cfUnwrapped(t, where, "PreviewLink.Description.HTML", l.Description.HTML)
	}
	if f := p.Forwarded; f != nil {
		cfUnwrapped(t, where, "Forwarded.Name.HTML", f.Name.HTML)
	}
	if a := p.Footer.Author; a != nil {
		cfUnwrapped(t, where, "Footer.Author.HTML", a.HTML)
	}
}

// cfUnwrapped fails when an HTML field holds t.me's text block class or is
// enclosed, as a whole, by one of t.me's layout elements: a div or span with
// a tgme_ class, or a bare one such as <span dir="auto">. Formatting that
// encloses a whole text (<b>…</b>, an emoji) is content and passes.
func cfUnwrapped(t *testing.T, where, field, h string) {
	t.Helper()
	if strings.Contains(h, "tgme_widget_message_text") {
		t.Errorf("%s: %s holds t.me's text block: %q", where, field, cfTrunc(h, 120))
		return
	}
	if w := cfWrapper(h); w != "" {
		t.Errorf("%s: %s is wrapped in %s: %q", where, field, w, cfTrunc(h, 120))
	}
}

// cfWrapper returns the start tag of the layout element that encloses all of
// h, or "" when there is none.
func cfWrapper(h string) string {
	z := html.NewTokenizer(strings.NewReader(h))
	first, depth := "", 0
	for {
		tt := z.Next()
		raw := string(z.Raw())
		switch tt {
		case html.ErrorToken:
			return first // an element left open at the end encloses the rest
		case html.TextToken:
			if depth == 0 && strings.TrimSpace(raw) != "" {
				return ""
			}
		case html.SelfClosingTagToken:
			if depth == 0 {
				return ""
			}
		case html.StartTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			if depth == 0 {
				if first != "" {
					return "" // a second element after the first closed
				}
				class := ""
				for hasAttr {
					var k, v []byte
					k, v, hasAttr = z.TagAttr()
					if string(k) == "class" {
						class = string(v)
					}
				}
				if (a != atom.Div && a != atom.Span) || (class != "" && !strings.Contains(class, "tgme_")) {
					return ""
				}
				first = raw
			}
			switch a {
			case atom.Br, atom.Img, atom.Hr, atom.Wbr, atom.Input, atom.Source, atom.Meta, atom.Link:
			default:
				depth++
			}
		case html.EndTagToken:
			if depth--; depth < 0 {
				return ""
			}
			if depth == 0 {
				// The first element closed: it wraps h only if nothing follows.
				for {
					switch z.Next() {
					case html.ErrorToken:
						return first
					case html.TextToken:
						if strings.TrimSpace(string(z.Raw())) != "" {
							return ""
						}
					default:
						return ""
					}
				}
			}
		}
	}
}

func cfEq[T comparable](t *testing.T, where, field string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: %s = %#v, want %#v", where, field, got, want)
	}
}

// cfPrefix checks that got starts with want; with none set, got must be empty.
func cfPrefix(t *testing.T, where, field, got, want string, none bool) {
	t.Helper()
	if none {
		if got != "" {
			t.Errorf("%s: %s = %q, want none", where, field, cfTrunc(got, 60))
		}
		return
	}
	if !strings.HasPrefix(got, want) {
		t.Errorf("%s: %s = %q…, want it to start with %q", where, field, cfTrunc(got, len([]rune(want))+20), want)
	}
}

func cfIsSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' }

// cfNorm applies a whitespace mode. Only ASCII whitespace counts, so a U+00A0
// left over from &nbsp; still fails a comparison.
func cfNorm(ws cfWS, s string) string {
	switch ws {
	case wsTrim:
		return strings.TrimFunc(s, cfIsSpace)
	case wsLoose:
		return strings.Join(strings.FieldsFunc(s, cfIsSpace), " ")
	}
	return s
}

// cfField normalises a short plain field (title, name, signature) where an
// &nbsp; kept as U+00A0 is tolerated; Text.String is held to the stricter cfNorm.
func cfField(ws cfWS, s string) string {
	return cfNorm(ws, strings.ReplaceAll(s, "\u00a0", " "))
}

func cfTrunc(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

func cfTail(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[len(r)-n:])
}

func cfIDs(ps []Post) []int {
	ids := make([]int, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	return ids
}

func cfKinds(ms []Media) []MediaKind {
	k := make([]MediaKind, len(ms))
	for i, m := range ms {
		k[i] = m.Type
	}
	return k
}

func cfWantKinds(ms []cfMedia) []MediaKind {
	k := make([]MediaKind, len(ms))
	for i, m := range ms {
		k[i] = m.kind
	}
	return k
}

// cfPHPJSON encodes b as a JSON string the way PHP's json_encode does by
// default: "/" as \/ and every non-ASCII character as \uXXXX (astral ones as
// surrogate pairs).
func cfPHPJSON(b []byte) []byte {
	var sb strings.Builder
	sb.Grow(len(b) + len(b)/4)
	sb.WriteByte('"')
	for _, r := range string(b) {
		switch r {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '/':
			sb.WriteString(`\/`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		default:
			switch {
			case r >= 0x20 && r < 0x7f:
				sb.WriteRune(r)
			case r > 0xffff:
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&sb, `\u%04x\u%04x`, r1, r2)
			default:
				fmt.Fprintf(&sb, `\u%04x`, r)
			}
		}
	}
	sb.WriteByte('"')
	return []byte(sb.String())
}
