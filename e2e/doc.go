// Package e2e drives the GraphQL playground in headless Chromium against
// the demo server, each test in a browser with a fresh profile: every
// preloaded example tab runs as shown and answers data without errors; a
// query typed into the editor runs; nothing loads from outside the server.
// The widget's tests (widget_test.go) intercept every request the browser
// makes: the test servers' go through, images on the Telegram CDN hosts the
// widget's policy allows are answered inside the browser (a stub picture),
// and any other request fails the test, so nothing leaves the machine.
// The offline test (offline_test.go) runs the demo server in a Chromium
// whose resolver maps every name to nothing and whose requests off
// loopback fail: the widget's pictures and those a playground feed query
// names must all load from the demo's own origin.
// eventsource_test.go opens Chromium's own EventSource from a page of
// another origin on the demo server's feedUpdates.
// Screenshots are saved as artifacts. The tests carry the e2e build tag;
// run them with `make e2e` (needs Debian's chromium package). A missing
// browser fails the tests; it never skips them.
//
// Settings: CHROMIUM (browser binary; default chromium on PATH, else
// /usr/bin/chromium), TMEFEED_BIN (a built tmefeed; default: built by the
// test), E2E_BASE_URL (use a server already running instead of starting
// one), E2E_ARTIFACTS (where the screenshots go; default e2e/artifacts).
package e2e
