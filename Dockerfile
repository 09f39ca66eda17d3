# tmefeed: a static binary on a small base, run as a user without privileges; the
# health check is the binary's own (`tmefeed healthcheck`), so the image needs no curl or wget.
#   docker build -t tmefeed .
#   docker run -p 8080:8080 tmefeed serve --demo
FROM golang:1.26-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/tmefeed ./cmd/tmefeed

FROM alpine:3.22
RUN adduser -D -H -u 10001 tmefeed
COPY --from=build /out/tmefeed /usr/local/bin/tmefeed
USER tmefeed
ENV PORT=8080
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
	CMD ["tmefeed", "healthcheck", "--timeout", "2s"]
ENTRYPOINT ["tmefeed"]
CMD ["serve"]
