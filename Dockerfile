# Callisto in a container: Debian 12, installed and built through the Makefile's own targets
# (`make deps-build`, `make build`, and `make deps-image` for the last stage), so building this
# image from a bare Debian 12 proves `make run`'s package list and build.
#   docker build -t callisto .                      (FROM debian:12 from a registry)
#   docker build --build-arg BASE_IMAGE=mybase .    (any Debian 12 base, e.g. one made with
#                                                   debootstrap, as tests/deploy/ does)
# The kernels inside stay sandboxed; compose.yaml says what the container needs for that.
ARG BASE_IMAGE=debian:12

FROM ${BASE_IMAGE} AS build
# make is the one package named here: a debootstrap minbase has none; the Makefile lists the rest.
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The packages before the sources, so a change to the sources reuses the installed layer.
COPY Makefile ./
RUN make deps-build && rm -rf /var/lib/apt/lists/*
COPY CMakeLists.txt ./
COPY cmake cmake
COPY common common
COPY kernelproto kernelproto
COPY transport transport
COPY launcher launcher
COPY gateway gateway
COPY docs/openapi.json docs/openapi.json
RUN make build BUILD_TYPE=Release BUILD_TARGETS="callisto callisto-zygote" \
      CMAKE_ARGS=-DCALLISTO_BUILD_LOAD=OFF JOBS="$(nproc)" \
 && strip build/gateway/callisto build/gateway/callisto-zygote build/gateway/callisto-jail-init \
          build/gateway/callisto-enter

FROM ${BASE_IMAGE}
# The binaries' shared libraries and the kernels, no compiler (the Makefile's IMAGE_PACKAGES).
COPY Makefile /tmp/callisto-deps/Makefile
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends make \
 && make -C /tmp/callisto-deps deps-image \
 && rm -rf /var/lib/apt/lists/* /tmp/callisto-deps
COPY --from=build /src/build/gateway/callisto /usr/local/bin/callisto
# Beside the gateway, where it looks for it: the fork server of Python kernels (--zygote).
COPY --from=build /src/build/gateway/callisto-zygote /usr/local/bin/callisto-zygote
# Beside the zygote, where it looks for it: each zygote kernel's pid 1.
COPY --from=build /src/build/gateway/callisto-jail-init /usr/local/bin/callisto-jail-init
# Beside the gateway, where it looks for it: what runs an E2B command inside a kernel's sandbox.
COPY --from=build /src/build/gateway/callisto-enter /usr/local/bin/callisto-enter
# Where the gateway finds its web UI by default: <binary dir>/../share/callisto/web.
COPY web /usr/local/share/callisto/web
COPY deploy/container-entrypoint.sh /usr/local/bin/callisto-entrypoint
# Kernels' working directories (one per kernel) and the audit log: volumes in compose.yaml.
RUN mkdir -p /var/lib/callisto/work /var/log/callisto
EXPOSE 8888
HEALTHCHECK --interval=5s --timeout=3s --start-period=60s \
  CMD curl -fsS http://127.0.0.1:8888/readyz || exit 1
ENTRYPOINT ["/usr/local/bin/callisto-entrypoint"]
CMD ["--ip=0.0.0.0", "--port=8888"]
