// Package e2e drives the GraphQL playground in headless Chromium against
// the demo server: the page loads with its embedded assets, a query typed
// into the editor runs, and the answer shows data. A screenshot is saved
// as an artifact. The test carries the e2e build tag; run it with
// `make e2e` (needs Debian's chromium package).
//
// Settings: CHROMIUM (browser binary, default "chromium"), TMEFEED_BIN (a
// built tmefeed; default: built by the test), E2E_BASE_URL (use a server
// already running instead of starting one), E2E_ARTIFACTS (where the
// screenshot goes; default e2e/artifacts).
package e2e
