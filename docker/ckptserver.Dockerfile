# ckptserver: the stores as an HTTP service (docs/http-api.md).
#
#   docker build -f docker/ckptserver.Dockerfile -t ckptserver .
#   docker run --rm -p 127.0.0.1:7070:7070 -v $PWD/tokens.txt:/etc/ckptserver/tokens.txt:ro \
#     ckptserver --store redis://redis:6379 --tokens /etc/ckptserver/tokens.txt
#
# A static binary without the fdb tag (the FoundationDB binding needs cgo
# and libfdb_c): stores mem, memkv and redis.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/ckptserver ./cmd/ckptserver

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ckptserver /ckptserver
EXPOSE 7070
ENTRYPOINT ["/ckptserver", "--listen", ":7070"]
