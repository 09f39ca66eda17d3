module github.com/tmefeed/tmefeed

go 1.26.0

require (
	github.com/99designs/gqlgen v0.17.98
	github.com/coder/websocket v1.8.15
	github.com/go-chi/chi/v5 v5.5.0
	github.com/go-chi/cors v1.2.2
	github.com/klauspost/compress v1.20.4
	github.com/maypok86/otter/v2 v2.4.0
	github.com/sony/gobreaker/v2 v2.4.0
	github.com/valkey-io/valkey-go v1.0.79
	github.com/vektah/gqlparser/v2 v2.5.64
	github.com/zeebo/xxh3 v1.0.2
	golang.org/x/net v0.62.0
	golang.org/x/sync v0.25.0
)

require (
	github.com/agnivade/levenshtein v1.2.2 // indirect
	github.com/go-viper/mapstructure/v2 v2.5.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	github.com/sosodev/duration v1.4.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
