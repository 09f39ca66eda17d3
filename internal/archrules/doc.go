// Package archrules holds the import rules of docs/ARCHITECTURE.md: its
// test reads the package table there and fails on any import the table
// does not allow, so the document and the code cannot drift apart.
package archrules
