# syntax=docker/dockerfile:1
#
# The test image: Go, the FoundationDB client package (libfdb_c and its
# headers, which the cgo binding needs), and redis-server for the Redis
# store's tests. It runs every test of the module with the build tag fdb,
# so the FoundationDB adapter and the store suites run against the cluster
# named by $FDB_CLUSTER_FILE (compose.yaml sets it).
#
# Build context: the repository root.
#   docker build -f docker/test.Dockerfile -t ckptstore-test .

ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm

# FDB_VERSION must match the server's major.minor (7.3): the client library
# speaks one protocol version. FDB_CLIENTS_SHA256, when set, pins the
# package's checksum (from the release page of that version).
ARG FDB_VERSION=7.3.69
ARG FDB_CLIENTS_SHA256=""
ARG TARGETARCH

RUN set -eux; \
    case "${TARGETARCH:-amd64}" in \
        amd64) deb_arch=amd64 ;; \
        arm64) deb_arch=aarch64 ;; \
        *) echo "unsupported architecture ${TARGETARCH}" >&2; exit 1 ;; \
    esac; \
    deb="foundationdb-clients_${FDB_VERSION}-1_${deb_arch}.deb"; \
    curl -fsSL -o "/tmp/${deb}" "https://github.com/apple/foundationdb/releases/download/${FDB_VERSION}/${deb}"; \
    if [ -n "${FDB_CLIENTS_SHA256}" ]; then echo "${FDB_CLIENTS_SHA256}  /tmp/${deb}" | sha256sum -c -; fi; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "/tmp/${deb}" redis-server redis-tools; \
    rm -rf "/tmp/${deb}" /var/lib/apt/lists/*; \
    test -f /usr/include/foundationdb/fdb_c.h; \
    ldconfig -p | grep -q libfdb_c

WORKDIR /src

# Modules first, so that editing code does not re-download them.
COPY go.mod go.sum ./
RUN go mod download

COPY . .

ENV CGO_ENABLED=1
# Compile everything, including the fdb-tagged code, at build time: a
# broken build fails `docker compose build`, not the test run.
RUN go vet -tags fdb ./... && go test -tags fdb -count=1 -run '^$' ./... >/dev/null

# -race as in `make test`; -p 2 keeps the packages that share the one
# cluster from crowding it. Each fdb test uses its own key prefix and
# clears it afterwards.
CMD ["go", "test", "-tags", "fdb", "-race", "-count=1", "-p", "2", "-timeout", "30m", "./..."]
