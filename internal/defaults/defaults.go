// Package defaults fills in configuration left unset.
package defaults

// Set sets *v to def when *v is zero or negative: configuration structs
// take their zero values to mean "the default".
func Set[T ~int | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
