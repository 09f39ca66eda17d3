package tme

// Class is a request's priority for the origin budget. When the budget is
// short the lower classes get less of it: each class leaves a reserve of
// the bucket to the classes above it (see origin.Budget), so a flood of
// history walks cannot take the tokens a reader waiting for a page needs.
type Class uint8

// The classes, highest first. The zero Class is a reader's.
const (
	// ClassReader: a reader waits for a page no tier holds.
	ClassReader Class = iota
	// ClassRefresh: a stale page readers are reading is refreshed; they
	// are served the stale copy meanwhile, and longer when it is refused.
	ClassRefresh
	// ClassUpdater: the background updater keeps popular and subscribed
	// channels fresh; refused, it stretches its cadence.
	ClassUpdater
	// ClassHistory: history walks, search and media re-resolves.
	ClassHistory
)

// Classes lists every Class, highest first.
func Classes() []Class { return []Class{ClassReader, ClassRefresh, ClassUpdater, ClassHistory} }

func (c Class) String() string {
	switch c {
	case ClassReader:
		return "reader"
	case ClassRefresh:
		return "refresh"
	case ClassUpdater:
		return "updater"
	case ClassHistory:
		return "history"
	}
	return "unknown"
}
