module github.com/tmefeed/tmefeed

go 1.26.0

require (
	github.com/99designs/gqlgen v0.17.98
	github.com/chromedp/cdproto v0.159.0
	github.com/chromedp/chromedp v0.23.0
	github.com/coder/websocket v1.8.15
	github.com/go-chi/chi/v5 v5.5.0
	github.com/go-chi/cors v1.2.2
	github.com/hashicorp/golang-lru/v2 v2.0.7
	github.com/klauspost/compress v1.20.4
	github.com/maypok86/otter/v2 v2.4.0
	github.com/microcosm-cc/bluemonday v1.0.27
	github.com/mmcdole/gofeed v1.4.2
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.74.0
	github.com/sony/gobreaker/v2 v2.4.0
	github.com/valkey-io/valkey-go v1.0.79
	github.com/vektah/gqlparser/v2 v2.5.64
	github.com/zeebo/xxh3 v1.0.2
	golang.org/x/net v0.62.0
	golang.org/x/sync v0.25.0
)

require (
	github.com/agnivade/levenshtein v1.2.2 // indirect
	github.com/aymerick/douceur v0.2.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/go-viper/mapstructure/v2 v2.5.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/gorilla/css v1.0.1 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/mmcdole/goxpp/v2 v2.0.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pandatix/go-abnf v0.5.5 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/sosodev/duration v1.4.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
