# The image the manifests of deploy/ run: kaudit, a static binary, on a minimal
# base with a shell (the manifests run their scripts with /bin/sh), as a non-root
# user, its root file system read-only at run time (kaudit writes only its --output
# files, and its spill to --spill-dir or TMPDIR, both on volumes).
#
# Build and push it (docs/operations.md, "The image"):
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t REGISTRY/kaudit:TAG .
#   docker push REGISTRY/kaudit:TAG
#
# cmd/kaudit/deploy_test.go parses this file and checks what it copies and runs.

ARG GO_VERSION=1.26
ARG ALPINE_VERSION=3.22

FROM golang:${GO_VERSION}-alpine AS build
WORKDIR /src
# the modules first: a change of the sources does not download them again
COPY go.mod go.sum ./
RUN go mod download
COPY audit/ audit/
COPY cmd/ cmd/
COPY internal/ internal/
COPY report/ report/
ARG VERSION=dev
# static: no cgo, so it runs on any base (and on none)
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=${VERSION}" -o /out/kaudit ./cmd/kaudit \
 && /out/kaudit version

FROM alpine:${ALPINE_VERSION}
# the user the manifests name (runAsUser 65532), with no login and no home
RUN adduser -D -H -u 65532 -s /sbin/nologin kaudit
COPY --from=build /out/kaudit /usr/local/bin/kaudit
USER 65532:65532
# a read-only root: temporary files go to the /tmp volume the manifests mount
ENV TMPDIR=/tmp
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/kaudit"]
CMD ["--help"]
