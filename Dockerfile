# syntax=docker/dockerfile:1
#
# agentgate: a static binary on a distroless base, running as a non-root
# user, with the offline demo config.yaml built in.
#
#   docker build -t agentgate .
#   docker run --rm -p 8080:8080 agentgate
#
# Your own configuration: mount it and point AGENTGATE_CONFIG at it
#   docker run --rm -p 8080:8080 -v $PWD/my.yaml:/config/config.yaml:ro \
#     -e AGENTGATE_CONFIG=/config/config.yaml -e OPENAI_API_KEY agentgate

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
# Dependencies first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -ldflags "-s -w -X main.version=${VERSION}" -o /out/agentgate ./cmd/gateway

# distroless/static: CA certificates and tzdata, no shell, no libc; the
# "nonroot" tag runs as uid/gid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/agentgate /usr/local/bin/agentgate
COPY --from=build /src/config.yaml /etc/agentgate/config.yaml
ENV AGENTGATE_CONFIG=/etc/agentgate/config.yaml
USER 65532:65532
EXPOSE 8080
# SIGTERM drains: running requests get server.shutdown_grace (30s by
# default); give the container at least that (docker stop -t 35).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/agentgate"]
